"""What the routes call: load models through the cache, capture runs, keep them in the store."""

from __future__ import annotations

import threading

import numpy as np

from analysis.maps import AttentionMaps
from models.capture import capture
from models.loading import ModelCache
from models.registry import get_spec
from server.store import Run, RunStore, run_key


class RunService:
    """Creates runs (model work, called from threadpool routes) and serves them from the store."""

    def __init__(self, models: ModelCache, store: RunStore):
        self.models = models
        self.store = store
        self._probes: dict[str, tuple[AttentionMaps, np.ndarray]] = {}
        self._probe_lock = threading.Lock()

    def create_run(self, model: str, text: str) -> Run:
        get_spec(model)  # raises UnknownModelError before any loading
        run_id = run_key(model, text)
        cached = self.store.get(run_id)
        if cached is not None:
            return cached
        loaded = self.models.get(model)
        cap = capture(loaded, text)
        return self.store.put(Run(id=run_id, model=model, text=text, capture=cap))

    def probe(self, model: str) -> tuple[AttentionMaps, np.ndarray]:
        """Maps and ids of the repeated-random-token probe for ``model`` (computed once)."""
        from models.probes import repeated_token_probe

        with self._probe_lock:
            if model not in self._probes:
                self._probes[model] = repeated_token_probe(self.models.get(model))
            return self._probes[model]
