"""What the routes call: load models through the cache, capture runs, keep them in the store."""

from __future__ import annotations

import hashlib
import json
import logging
import threading

import numpy as np
from cachetools import LRUCache

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.capture import (
    GenerateOptions,
    NotAGeneratorError,
    capture_image,
    capture_prompt,
)
from attnscope.models.inputs import decode_image
from attnscope.models.loading import ModelCache
from attnscope.models.registry import get_spec, require_modality
from attnscope.models.zoo import samples
from attnscope.pipelines.interventions.apply import HeadMeans
from attnscope.pipelines.qk.explain import CompositionCache
from attnscope.pipelines.writes.cache import DEFAULT_MAX_BYTES, RecordingCache
from attnscope.server.predictions import prediction_fields
from attnscope.server.store import Run, RunStore, run_key
from attnscope.server.structure_pass import StructurePasses
from attnscope.server.thumbnails import RunThumbnails

log = logging.getLogger(__name__)


class RunService:
    """Creates runs (model work, called from threadpool routes) and serves them from the store."""

    def __init__(self, models: ModelCache, store: RunStore, records=None, recording_bytes: int = DEFAULT_MAX_BYTES):
        self.models = models
        self.store = store
        self.records = records  # server.db.run_records.RunRecords: a run's input outlives the process
        # the repeated-token probe per model: as many as the model cache holds (a model evicted there may come back)
        self._probes: LRUCache[str, tuple[AttentionMaps, np.ndarray]] = LRUCache(
            maxsize=max(1, getattr(models, "max_models", 4))
        )
        self._probe_lock = threading.Lock()
        self.head_means = HeadMeans()  # mean head outputs per model, for mean ablation (computed once)
        self.composition = CompositionCache()  # composition scores per model and mode (from weights, once)
        # recorded forwards per run id (lens, attribution, value-weighted maps, graph), LRU bounded in bytes
        self.recordings = RecordingCache(recording_bytes)
        self.structure = StructurePasses()  # one pass over a run's maps for every structure route
        self.thumbnails = RunThumbnails()  # the model view's pooled maps of a run, computed once

    def _cached_run(
        self, model: str, modality: str, key: str, make, generates: bool = False, record: dict | None = None
    ) -> Run:
        """The stored run for ``(model, key)``, or ``make(loaded) -> Run`` stored under that id.
        Refuses a model of the wrong modality (or, with ``generates``, one that is no causal LM)
        before any loading."""
        spec = get_spec(model)  # raises UnknownModelError before any loading
        hint = (
            "takes an image: send 'sample' or upload with POST /api/v1/runs/image"
            if spec.modality == "vision"
            else "takes a text, not an image; pick a vision model from GET /api/v1/models"
        )
        require_modality(spec, modality, hint)
        if generates and spec.task != "causal-lm":
            raise NotAGeneratorError(
                f"model {model!r} is a {spec.task} model: it does not generate text and has no chat template; "
                "'generate' and 'chat' need a causal LM (task causal-lm in GET /api/v1/models, e.g. smollm2)"
            )
        run_id = run_key(model, key)
        cached = self.store.get(run_id)
        if cached is not None:
            return cached
        run = self.store.put(make(self.models.get(model), run_id))
        self._save(run, record or {})
        return run

    def _save(self, run: Run, record: dict) -> None:
        if self.records is None or not record:
            return
        cap = run.capture
        try:
            self.records.save(
                run.id,
                run.model,
                token_ids=None if cap.token_ids is None else [int(i) for i in cap.token_ids],
                prediction=prediction_fields(cap.output),
                n_tokens=int(cap.maps.shape[2]),  # [layer, head, query, key]: the positions
                **record,
            )
        except Exception:  # the run is served from memory all the same; the log says why it was not kept
            log.exception("could not save run %s in the database", run.id)

    def restore(self, run_id: str) -> Run | None:
        """A run no longer in memory (evicted, or the process restarted), computed again from the
        input the database kept; None when the database has no such run."""
        if self.records is None:
            return None
        inp = self.records.get(run_id)
        if inp is None:
            return None
        if inp.source_kind == "upload":
            run = self.create_upload_run(inp.model, inp.image)
        elif inp.source_kind == "sample":
            run = self.create_sample_run(inp.model, inp.source["dataset"], int(inp.source["index"]))
        else:
            opts = inp.options or {}
            g = opts.get("generate")
            generate = None if g is None else GenerateOptions(g["max_new_tokens"], g.get("temperature"), g["seed"])
            run = self.create_run(inp.model, inp.text, generate=generate, chat=bool(opts.get("chat")))
        if run.id != run_id:
            log.warning("run %s recomputed under id %s (its content hash changed)", run_id, run.id)
            return None
        return run

    def delete_run(self, run_id: str) -> bool:
        """Forget the run everywhere: its database record, its maps in memory and its recordings;
        whether there was anything to delete."""
        held = self.store.discard(run_id)
        self.recordings.discard(run_id)
        kept = self.records.delete(run_id) if self.records is not None else False
        return held or kept

    def create_run(self, model: str, text: str, generate: GenerateOptions | None = None, chat: bool = False) -> Run:
        """A text run; causal LMs may ``generate`` after the text and wrap it in their ``chat``
        template. The run id is a content hash of the model, the text and these options."""
        options = None
        key = text
        if generate is not None or chat:
            options = {"generate": None if generate is None else generate.as_dict(), "chat": chat}
            key = text + "\x00" + json.dumps(options, sort_keys=True)

        def make(loaded, run_id: str) -> Run:
            cap = capture_prompt(loaded, text, generate, chat)
            return Run(id=run_id, model=model, text=text, capture=cap, options=options)

        record = {"source_kind": "text", "text": text, "options": options}
        return self._cached_run(model, "text", key, make, generates=options is not None, record=record)

    def probe(self, model: str) -> tuple[AttentionMaps, np.ndarray]:
        """Maps and ids of the repeated-random-token probe for ``model`` (computed once)."""
        from attnscope.pipelines.induction_probe import repeated_token_probe

        with self._probe_lock:
            if model not in self._probes:
                self._probes[model] = repeated_token_probe(self.models.get(model))
            return self._probes[model]

    def _image_run(self, model: str, key: str, image: np.ndarray, source: dict, record: dict) -> Run:
        def make(loaded, run_id: str) -> Run:
            prepared = loaded.prepare_image(image)
            cap = capture_image(loaded, prepared)
            src = {**source, "height": int(prepared.shape[0]), "width": int(prepared.shape[1])}
            return Run(id=run_id, model=model, text="", capture=cap, image=prepared, source=src)

        return self._cached_run(model, "vision", key, make, record=record)

    def create_sample_run(self, model: str, dataset: str, index: int) -> Run:
        image, label = samples.sample(dataset, index)
        return self._image_run(
            model,
            f"sample:{dataset}:{index}",
            image,
            {"kind": "sample", "dataset": dataset, "index": index, "label": label},
            {"source_kind": "sample", "source": {"dataset": dataset, "index": index}},
        )

    def create_upload_run(self, model: str, blob: bytes) -> Run:
        image = decode_image(blob)
        digest = hashlib.sha256(blob).hexdigest()
        source = {"kind": "upload", "sha256": digest}
        record = {"source_kind": "upload", "source": source, "image": blob, "image_sha256": digest}
        return self._image_run(model, f"image:{digest}", image, source, record)
