"""One pass over a run's maps for every structure route (``analysis.passes.reduce_maps``).

The Structure page asks, at once, for the shift scan, the implied convolutions, the head types, the
attention distance, the evolution statistics and the rollout. Each used to run its own pass over the
whole ``[layer, head, query, key]`` stack; on a lazy long run every pass recomputes every layer's
softmax from the queries and keys (SmolLM2 at 1,524 tokens: 30 x 9 maps of 2.3 M weights, each pass
tens of seconds on two cores, the page 419 s). ``StructurePasses`` computes the union of the parts
once per (run, offsets) and serves every route from it; concurrent requests for the same key wait for
the one pass instead of starting their own. The pass checks its request's cancellation before each
band of rows (``models.cancel.checker``), so a client that leaves (or the heavy executor's deadline)
stops it.

``head_mean [layer, query, key]`` (evolution, rollout) is kept only while it is at most
``MEAN_BYTES``; beyond, those two routes make their own pass as before (``mean_for`` returns None).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from attnscope.analysis.passes import PARTS, Reductions, reduce_maps
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS
from attnscope.models.cancel import checker

MEAN_BYTES = 1 << 29  # 512 MiB of head means kept per run at most (SmolLM2: 2,048 tokens)
MAX_ENTRIES = 4  # (run, offsets) passes kept (LRU)


def _parts(maps) -> frozenset[str]:
    n_layers, _, n, _ = maps.shape
    keep_mean = n_layers * n * n * 4 <= MEAN_BYTES
    return PARTS if keep_mean else PARTS - {"mean"}


class StructurePasses:
    """Reductions per ``(run id, k, radius, include_special)``, computed once (bounded LRU, thread-safe)."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self._done: OrderedDict[tuple, tuple[object, Reductions]] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self.passes = 0  # passes made (for tests and benchmarks)

    def get(self, run, k: int = DEFAULT_K, radius: int = DEFAULT_RADIUS, include_special: bool = False) -> Reductions:
        """Every part of ``run.capture.maps`` (``head_mean`` only within ``MEAN_BYTES``) for these offsets."""
        maps = run.capture.maps
        key = (run.id, int(k), int(radius), bool(include_special))
        with self._lock:
            hit = self._done.get(key)
            if hit is not None and hit[0] is maps:
                self._done.move_to_end(key)
                return hit[1]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one pass per key; the others wait for it
            with self._lock:
                hit = self._done.get(key)
                if hit is not None and hit[0] is maps:
                    return hit[1]
            # stops at the next band of rows when this request is cancelled (client gone, deadline): a
            # request waiting on the same key then makes the pass itself
            red = reduce_maps(maps, _parts(maps), k=k, radius=radius, include_special=include_special, check=checker())
            with self._lock:
                self.passes += 1
                self._done[key] = (maps, red)
                self._done.move_to_end(key)
                while len(self._done) > self.max_entries:
                    old, _ = self._done.popitem(last=False)
                    self._locks.pop(old, None)
            return red

    def mean_for(self, run):
        """``head_mean [layer, query, key]`` of the run from the default pass, or None beyond ``MEAN_BYTES``."""
        maps = run.capture.maps
        if _parts(maps) != PARTS:
            return None
        return self.get(run).head_mean
