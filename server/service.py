"""What the routes call: load models through the cache, capture runs, keep them in the store."""

from __future__ import annotations

from models.capture import capture
from models.loading import ModelCache
from models.registry import get_spec
from server.store import Run, RunStore, run_key


class RunService:
    """Creates runs (model work, called from threadpool routes) and serves them from the store."""

    def __init__(self, models: ModelCache, store: RunStore):
        self.models = models
        self.store = store

    def create_run(self, model: str, text: str) -> Run:
        get_spec(model)  # raises UnknownModelError before any loading
        run_id = run_key(model, text)
        cached = self.store.get(run_id)
        if cached is not None:
            return cached
        loaded = self.models.get(model)
        cap = capture(loaded, text)
        return self.store.put(Run(id=run_id, model=model, text=text, capture=cap))
