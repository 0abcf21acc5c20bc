"""A per-run cache of recorded forwards (``RecordedWrites``), bounded in bytes, so the lens, the
attribution, the value-weighted maps and the contribution graph of one run record it once.

Keyed by the caller's run id (a run id names one model and one input, ``server.store.run_key``), an
LRU over the bytes the recordings hold (``RecordedWrites.nbytes``); a recording larger than the whole
bound is computed and returned but not kept. Thread-safe; two requests on one run that miss together
may both record (the second one's is kept), never block each other on the model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from cachetools import LRUCache

from attnscope.pipelines.writes.recorded import RecordedWrites

DEFAULT_MAX_BYTES = 2 * 2**30  # SmolLM2 at 4,096 tokens records about 1.1 GiB (with its queries and keys)


class RecordingCache:
    """``get(run_id, make)``: the recording of ``run_id``, or ``make()`` kept under it."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_bytes < 1:
            raise ValueError(f"max_bytes={max_bytes} must be at least 1")
        self.max_bytes = int(max_bytes)
        self._lru: LRUCache[str, RecordedWrites] = LRUCache(maxsize=self.max_bytes, getsizeof=lambda w: w.nbytes)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, run_id: str, make: Callable[[], RecordedWrites]) -> RecordedWrites:
        with self._lock:
            found = self._lru.get(run_id)
            if found is not None:
                self.hits += 1
                return found
            self.misses += 1
        writes = make()  # outside the lock: a recording takes seconds
        if writes.nbytes <= self.max_bytes:
            with self._lock:
                self._lru[run_id] = writes
        return writes

    def discard(self, run_id: str) -> None:
        """Forget ``run_id``'s recording (its run was deleted)."""
        with self._lock:
            self._lru.pop(run_id, None)

    @property
    def nbytes(self) -> int:
        with self._lock:
            return int(self._lru.currsize)

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)
