"""A run's thumbnails (``analysis.thumbnails``), computed once and kept: the model view of Explore
reads them instead of a pooled read of every layer, and ``POST /runs`` with ``thumbnails: true``
computes them with the run. On a 4,096-token SmolLM2 run that pass is every layer's softmax once
(the measured cost is in docs/results/benchmarks.md). Each layer is kept as it is done: a pass
stopped by its request's cancellation (client gone, deadline) resumes at that layer on the next
request, and a request for some layers computes only those. Concurrent requests for one run wait
for the one pass instead of starting their own."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from attnscope.analysis.thumbnails import Thumbnails, compute_thumbnails
from attnscope.models.cancel import checker

MAX_BYTES = 1 << 27  # 128 MiB of thumbnails kept (a 4,096-token SmolLM2 run: 4.5 MB)


def _nbytes(layers: dict[int, tuple[np.ndarray, np.ndarray]]) -> int:
    return sum(int(a.nbytes + b.nbytes) for a, b in layers.values())


class RunThumbnails:
    """Thumbnails per run id, each layer computed once (LRU bounded in bytes, thread-safe)."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._done: OrderedDict[str, tuple[object, dict]] = OrderedDict()  # run id -> (maps, {layer: pair})
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.layers_computed = 0  # layer passes made (for tests and benchmarks)

    def _layers(self, run) -> dict:
        """The run's kept layers (a fresh dict when none, or when the run was made again: new maps)."""
        kept = self._done.get(run.id)
        if kept is None or kept[0] is not run.capture.maps:
            kept = self._done[run.id] = (run.capture.maps, {})
        self._done.move_to_end(run.id)
        return kept[1]

    def get(self, run, layers: Sequence[int] | None = None) -> Thumbnails:
        """The run's thumbnails of ``layers`` (default all), computing the layers not kept yet."""
        with self._lock:
            lock = self._locks.setdefault(run.id, threading.Lock())
        check = checker()
        with lock:  # one pass per run; the others wait for it, then read what it kept
            with self._lock:
                done = self._layers(run)
                before = len(done)
            try:
                return compute_thumbnails(run.capture.maps, check=check, layers=layers, done=done)
            finally:
                with self._lock:
                    self.layers_computed += len(done) - before
                    self._evict()

    def _evict(self) -> None:
        while len(self._done) > 1 and sum(_nbytes(d) for _, d in self._done.values()) > self.max_bytes:
            old, _ = self._done.popitem(last=False)
            self._locks.pop(old, None)

    def kept(self, run_id: str) -> int:
        """How many of the run's layers are kept."""
        with self._lock:
            kept = self._done.get(run_id)
            return 0 if kept is None else len(kept[1])
