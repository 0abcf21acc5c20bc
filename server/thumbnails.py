"""A run's thumbnails (``analysis.thumbnails``), computed once and kept: the model view of Explore
reads them in one request instead of a pooled read of every layer, and ``POST /runs`` with
``thumbnails: true`` computes them with the run. On a 4,096-token SmolLM2 run that pass is every
layer's softmax once (the measured cost is in docs/results/benchmarks.md); concurrent requests for
the same run wait for the one pass instead of starting their own, and the pass stops at its next
layer when its request is cancelled (client gone, deadline)."""

from __future__ import annotations

import threading
from collections import OrderedDict

from attnscope.analysis.thumbnails import Thumbnails, compute_thumbnails
from attnscope.models.cancel import checker

MAX_BYTES = 1 << 27  # 128 MiB of thumbnails kept (a 4,096-token SmolLM2 run: 4.5 MB)


class RunThumbnails:
    """Thumbnails per run id, computed once (LRU bounded in bytes, thread-safe)."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._done: OrderedDict[str, tuple[object, Thumbnails]] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.passes = 0  # thumbnail passes made (for tests and benchmarks)

    def _hit(self, run) -> Thumbnails | None:
        hit = self._done.get(run.id)
        if hit is not None and hit[0] is run.capture.maps:  # a run made again has new maps
            self._done.move_to_end(run.id)
            return hit[1]
        return None

    def get(self, run) -> Thumbnails:
        """The run's thumbnails, computed now unless kept (or being computed by another request)."""
        with self._lock:
            hit = self._hit(run)
            if hit is not None:
                return hit
            lock = self._locks.setdefault(run.id, threading.Lock())
        check = checker()
        with lock:  # one pass per run; the others wait for it
            with self._lock:
                hit = self._hit(run)
                if hit is not None:
                    return hit
            thumbs = compute_thumbnails(run.capture.maps, check=check)
            with self._lock:
                self.passes += 1
                self._done[run.id] = (run.capture.maps, thumbs)
                self._done.move_to_end(run.id)
                while len(self._done) > 1 and sum(t.nbytes for _, t in self._done.values()) > self.max_bytes:
                    old, _ = self._done.popitem(last=False)
                    self._locks.pop(old, None)
            return thumbs

    def kept(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._done
