"""Bounded LRU store of runs, keyed by a content hash of (model, input)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from attnscope.models.capture import Capture


def run_key(model: str, text: str) -> str:
    """Content hash of a run: the same model and text always give the same id."""
    h = hashlib.sha256()
    h.update(model.encode())
    h.update(b"\x00")
    h.update(text.encode())
    return h.hexdigest()[:24]


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


class RunStore:
    """Thread-safe LRU of at most ``max_runs`` runs; the least recently used run is dropped."""

    def __init__(self, max_runs: int = 256):
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        self.max_runs = max_runs
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str) -> Run | None:
        with self._lock:
            run = self._runs.get(run_id)
            if run is not None:
                self._runs.move_to_end(run_id)
            return run

    def put(self, run: Run) -> Run:
        with self._lock:
            self._runs[run.id] = run
            self._runs.move_to_end(run.id)
            while len(self._runs) > self.max_runs:
                self._runs.popitem(last=False)
            return run

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)
