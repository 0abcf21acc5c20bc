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

A pass reports its progress (bands of rows done out of the pass's total, ``status``) and can be
cancelled for a run (``cancel``, the page's Cancel button): the pass in flight stops at its next band
and every request waiting on one of the run's passes raises ``PassCancelled`` (409); a request made
after the cancel starts a fresh pass.

``head_mean [layer, query, key]`` (evolution, rollout) is kept only while it is at most
``MEAN_BYTES`` (SmolLM2: 2,048 tokens). Beyond, ``mean_for`` returns None and those two routes read
``walk``: one walk over the head means that keeps two layers at a time (``analysis.mean_walk``: the
layers' similarity and the rollout of the asked rows through every layer), registered here like a
pass, so its panels show its progress and Cancel stops it too (it counts in ``status`` and
``passes``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from attnscope.analysis.mean_walk import MeanWalk, walk_head_means
from attnscope.analysis.passes import PARTS, Reductions, reduce_maps
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS
from attnscope.models.cancel import Cancelled, checker

MEAN_BYTES = 1 << 29  # 512 MiB of head means kept per run at most (SmolLM2: 2,048 tokens)
MAX_ENTRIES = 4  # (run, offsets) passes kept (LRU); as many (run, rows) walks (a few MB each)


def _parts(maps) -> frozenset[str]:
    n_layers, _, n, _ = maps.shape
    keep_mean = n_layers * n * n * 4 <= MEAN_BYTES
    return PARTS if keep_mean else PARTS - {"mean"}


def _kind(key: tuple) -> str:
    return "walk" if key[1:2] == ("walk",) else "pass"


class PassCancelled(Cancelled):
    """A run's structure pass was cancelled by ``StructurePasses.cancel`` (a user, not a gone client)."""


@dataclass(frozen=True)
class PassStatus:
    """Where a run's structure pass stands: ``state`` ``idle`` (none made or kept), ``running``,
    ``done`` (kept, every route answers from it) or ``cancelled`` (the last one was, none since);
    ``done``/``total`` the bands of rows (``total`` = layers x bands per layer; 0 when idle);
    ``waiting`` the requests waiting for a pass of the run that another request makes."""

    state: str
    done: int = 0
    total: int = 0
    waiting: int = 0


class StructurePasses:
    """Reductions per ``(run id, k, radius, include_special)`` and head-mean walks per ``(run id, "walk",
    rows)``, each computed once (bounded LRU, thread-safe)."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self._done: OrderedDict[tuple, tuple[object, Reductions]] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._running: dict[tuple, list[int]] = {}  # key -> [bands done, total] of the pass in flight
        self._generation: dict[str, int] = {}  # run id -> cancels so far
        self._cancelled: set[str] = set()  # runs whose last pass was cancelled and none made since
        self._waiting: dict[str, int] = {}  # run id -> requests blocked on another request's pass
        self.passes = 0  # passes made (for tests and benchmarks)

    def ticket(self, run_id: str) -> int:
        """The run's cancels so far: a request takes it when it arrives (before it queues for a worker)
        and hands it to ``get``, so a cancel made while it queued stops it too."""
        with self._lock:
            return self._generation.get(run_id, 0)

    def get(
        self,
        run,
        k: int = DEFAULT_K,
        radius: int = DEFAULT_RADIUS,
        include_special: bool = False,
        ticket: int | None = None,
    ) -> Reductions:
        """Every part of ``run.capture.maps`` (``head_mean`` only within ``MEAN_BYTES``) for these offsets;
        ``ticket`` (``ticket(run.id)`` when the request arrived; default: now): ``PassCancelled`` when the
        run's passes were cancelled since, unless the pass is already kept."""
        maps = run.capture.maps
        key = (run.id, int(k), int(radius), bool(include_special))

        def compute(check, progress) -> Reductions:
            parts = _parts(maps)
            return reduce_maps(
                maps, parts, k=k, radius=radius, include_special=include_special, check=check, progress=progress
            )

        return self._once(run, key, compute, ticket)

    def walk(self, run, rows: tuple, ticket: int | None = None) -> MeanWalk:
        """Evolution's layer similarity and rollout of ``rows`` (positions, or None: the mean over rows)
        through every layer, from one walk over the head means that keeps two layers at a time
        (``analysis.mean_walk``): what evolution and rollout read when ``mean_for`` is None. Made once per
        (run, rows), with the pass's progress and cancel."""
        maps = run.capture.maps
        rows = tuple(rows)
        return self._once(
            run,
            (run.id, "walk", rows),
            lambda check, progress: walk_head_means(maps, rows, check=check, progress=progress),
            ticket,
        )

    def _once(self, run, key: tuple, compute, ticket: int | None):
        """``compute(check, progress)`` for ``key`` (``key[0]`` the run id) once: kept (LRU) while the run
        holds the same maps; concurrent requests for the key wait for the one computation."""
        maps = run.capture.maps
        with self._lock:
            hit = self._done.get(key)
            if hit is not None and hit[0] is maps:
                self._done.move_to_end(key)
                return hit[1]
            lock = self._locks.setdefault(key, threading.Lock())
            generation = self._generation.get(run.id, 0) if ticket is None else ticket
        request_check = checker()

        def check() -> None:
            request_check()  # this request's client gone, or its deadline passed
            if self._generation.get(run.id, 0) != generation:
                raise PassCancelled(f"the structure pass of run {run.id} was cancelled")

        with self._lock:
            self._waiting[run.id] = self._waiting.get(run.id, 0) + lock.locked()
            counted = lock.locked()
        with lock:  # one computation per key; the others wait for it
            with self._lock:
                if counted:
                    self._waiting[run.id] -= 1
                hit = self._done.get(key)
                if hit is not None and hit[0] is maps:
                    return hit[1]
                counts = self._running[key] = [0, 0]
            progress = lambda done, total: counts.__setitem__(slice(None), [done, total])  # noqa: E731
            # stops at the next band of rows when this request is cancelled (client gone, deadline) or the
            # run's passes are (cancel): a request waiting on the same key then makes it itself,
            # or after a cancel raises too
            try:
                check()  # cancelled while this request waited for another's pass
                value = compute(check, progress)
            except PassCancelled:
                with self._lock:
                    self._cancelled.add(run.id)
                raise
            finally:
                with self._lock:
                    self._running.pop(key, None)
            with self._lock:
                self.passes += 1
                self._cancelled.discard(run.id)
                self._done[key] = (maps, value)
                self._done.move_to_end(key)
                same = [k for k in self._done if _kind(k) == _kind(key)]  # passes and walks each keep max_entries
                for old in same[: max(0, len(same) - self.max_entries)]:
                    del self._done[old]
                    self._locks.pop(old, None)
            return value

    def status(self, run_id: str) -> PassStatus:
        """The run's pass in flight (the least advanced, when several offsets are), else ``done`` when
        one is kept, ``cancelled`` when the last was cancelled, else ``idle``."""
        with self._lock:
            running = [c for key, c in self._running.items() if key[0] == run_id]
            if running:
                done, total = min(running, key=lambda c: c[0] / c[1] if c[1] else 0.0)
                return PassStatus("running", done, total, self._waiting.get(run_id, 0))
            if run_id in self._cancelled:
                return PassStatus("cancelled")
            if any(key[0] == run_id for key in self._done):
                return PassStatus("done")
            return PassStatus("idle")

    def cancel(self, run_id: str) -> PassStatus:
        """Stop the run's passes in flight (at their next band of rows) and the requests waiting on
        them; returns the status just before."""
        before = self.status(run_id)
        with self._lock:
            self._generation[run_id] = self._generation.get(run_id, 0) + 1
            if before.state == "running":
                self._cancelled.add(run_id)
        return before

    def mean_for(self, run, ticket: int | None = None):
        """``head_mean [layer, query, key]`` of the run from the default pass, or None beyond ``MEAN_BYTES``
        (then ``walk`` serves evolution and rollout)."""
        maps = run.capture.maps
        if _parts(maps) != PARTS:
            return None
        return self.get(run, ticket=ticket).head_mean
