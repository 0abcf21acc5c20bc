"""The run store: runs keyed by a content hash of (model, input), bounded in bytes (LRU).

Each run is counted by what it really holds (``run_nbytes``): its maps (for lazy maps the stored
queries, keys and masks, ``MapSource.nbytes``; for eager maps the whole ``weights`` stack), its
hidden states when it keeps them (a lazy causal-LM run does not: ``Capture.hidden()`` recomputes
them), extras and image arrays, and the Python objects of its output (a causal LM's next-token
lists) and token ids. When the bytes held would exceed ``max_bytes`` (``ATTNSCOPE_MAX_RUN_BYTES``,
default ``DEFAULT_MEMORY_SHARE`` of physical memory) or the runs exceed ``max_runs``, the least
recently used runs are dropped. An evicted id is remembered (``evicted``) so that a read of it can
say it was evicted for memory rather than that it never existed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache

from attnscope.models.capture import Capture

log = logging.getLogger(__name__)

DEFAULT_MEMORY_SHARE = 0.25  # ATTNSCOPE_MAX_RUN_BYTES default: a quarter of physical memory
FALLBACK_MAX_BYTES = 4 << 30  # when physical memory cannot be read
EVICTED_REMEMBERED = 100_000  # ids of evicted runs kept to explain a 404 (a few MB at most)


def run_key(model: str, text: str) -> str:
    """Content hash of a run: the same model and text always give the same id."""
    h = hashlib.sha256()
    h.update(model.encode())
    h.update(b"\x00")
    h.update(text.encode())
    return h.hexdigest()[:24]


def default_max_bytes(share: float = DEFAULT_MEMORY_SHARE) -> int:
    """``share`` of this machine's physical memory in bytes (``FALLBACK_MAX_BYTES`` if unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_MAX_BYTES
    return int(total * share) if total > 0 else FALLBACK_MAX_BYTES


@dataclass
class Run:
    id: str
    model: str
    text: str
    capture: Capture
    created: float = field(default_factory=time.time)
    image: np.ndarray | None = field(default=None, repr=False)  # vision: the prepared model input
    source: dict | None = None  # vision: where the image came from (sample or upload)
    options: dict | None = None  # causal LMs: {"generate": {...}, "chat": bool} (part of the id)
    # what the maps are when they are not the model's own forward on the tokens (an intervention's altered maps,
    # a run's value-weighted maps): routes that run the model again on the tokens refuse such a run
    derived: str | None = None
    # per layer [head, key]: ||v_j W_O[h]|| of the forward that made a derived run's maps (an intervention's altered
    # forward), so the value-weighted route serves its maps without running the clean model again
    value_norms: list[np.ndarray] | None = field(default=None, repr=False)


def object_nbytes(obj, seen: set[int] | None = None) -> int:
    """Bytes of a tree of Python objects (dicts, lists, tuples, strings, numbers, numpy arrays):
    ``sys.getsizeof`` of each distinct object plus array buffers; shared objects count once."""
    seen = set() if seen is None else seen
    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if o is None or id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            total += int(o.nbytes)
            continue
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif isinstance(o, Mapping):  # a model's typed output (attnscope.models.outputs): its fields
            stack.extend(o.values())
    return total


def run_nbytes(run: Run) -> int:
    """What ``run`` holds in memory (see the module docstring); device memory of lazy maps on a
    GPU counts as well."""
    cap = run.capture
    maps = getattr(cap, "maps", None)
    total = 0 if maps is None else int(maps.nbytes)
    for arr in (cap.hidden_states, run.image, *cap.extras.values(), *(run.value_norms or ())):
        if isinstance(arr, np.ndarray):
            total += int(arr.nbytes)
    seen: set[int] = set()
    total += object_nbytes(cap.output, seen)
    total += object_nbytes(cap.token_ids, seen)  # what a lazy run recomputes its hidden states from
    if maps is not None:
        total += object_nbytes(maps.tokens, seen)
    return total + len(run.text.encode())


class _RunCache(LRUCache):
    """``cachetools.LRUCache`` sized in bytes, at most ``max_runs`` entries, telling its store
    about every eviction."""

    def __init__(self, max_bytes: int, max_runs: int, on_evict):
        super().__init__(maxsize=max_bytes, getsizeof=run_nbytes)
        self.max_runs = max_runs
        self._on_evict = on_evict

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        while len(self) > self.max_runs:
            self.popitem()

    def popitem(self):
        key, run = super().popitem()
        self._on_evict(key, run)
        return key, run


class RunStore:
    """Thread-safe LRU of runs bounded by ``max_bytes`` held and ``max_runs`` entries.

    A run larger than ``max_bytes`` on its own is served to its caller but not kept (and counted
    as evicted). ``evicted`` remembers the ids dropped for memory (the most recent
    ``EVICTED_REMEMBERED``) with their size.
    """

    def __init__(self, max_runs: int = 256, max_bytes: int | None = None):
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1 (ATTNSCOPE_MAX_RUN_BYTES)")
        self.max_runs = max_runs
        self.max_bytes = max_bytes
        self._evicted: LRUCache = LRUCache(maxsize=EVICTED_REMEMBERED)
        self._runs = _RunCache(max_bytes, max_runs, self._note_evicted)
        self._lock = threading.Lock()

    def _note_evicted(self, run_id: str, run: Run) -> None:
        nbytes = run_nbytes(run)
        self._evicted[run_id] = nbytes
        log.info("run %s evicted from memory (%d bytes; store cap %d bytes)", run_id, nbytes, self.max_bytes)

    def get(self, run_id: str) -> Run | None:
        with self._lock:
            return self._runs.get(run_id)

    def put(self, run: Run) -> Run:
        """Keep ``run`` (evicting least recently used runs as needed) and return it."""
        with self._lock:
            size = run_nbytes(run)
            if size > self.max_bytes:
                self._runs.pop(run.id, None)
                self._evicted[run.id] = size
                log.warning("run %s holds %d bytes, over the store's cap %d: not kept", run.id, size, self.max_bytes)
                return run
            self._runs[run.id] = run
            self._evicted.pop(run.id, None)
            return run

    def discard(self, run_id: str) -> bool:
        """Drop ``run_id`` (deleted by its user, not evicted: a later read says it never existed);
        whether it was held."""
        with self._lock:
            self._evicted.pop(run_id, None)
            return self._runs.pop(run_id, None) is not None

    def evicted(self, run_id: str) -> int | None:
        """Bytes the run held when it was evicted for memory, or None when it was not."""
        with self._lock:
            return self._evicted.get(run_id)

    @property
    def nbytes(self) -> int:
        """Bytes the stored runs hold now."""
        with self._lock:
            return int(self._runs.currsize)

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)
