"""Fine-tuned weights committed as a *delta*: only the tensors training changed, plus a manifest.

A delta folder holds ``delta.safetensors`` (the trained tensors, float16) and ``manifest.json``
(base model, tensor names and shapes, labels, data, steps, seed, dev accuracy, wall time). The rest
of the model comes from the base package. ``apply_delta`` refuses a delta whose base model, names or
shapes do not match the model it is applied to.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

MANIFEST = "manifest.json"
WEIGHTS = "delta.safetensors"
CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


class DeltaMismatchError(ValueError):
    """The delta does not fit the model it is applied to."""


def build_minilm_classifier(labels: tuple[str, ...]):
    """``BertForSequenceClassification`` on the package's MiniLM weights (eager attention) and its
    tokenizer; the head is freshly initialised until a delta is applied."""
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    from attnscope.models.registry import _minilm_path

    folder = _minilm_path()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "classifier newly initialised" is expected here
    try:
        model = BertForSequenceClassification.from_pretrained(
            folder,
            num_labels=len(labels),
            attn_implementation="eager",
            local_files_only=True,
            id2label=dict(enumerate(labels)),
            label2id={l: i for i, l in enumerate(labels)},
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    return model, AutoTokenizer.from_pretrained(folder, local_files_only=True)


def load_delta_classifier(spec) -> tuple[torch.nn.Module, object, list[str]]:
    """``(model, tokenizer, labels)`` for a registry spec with ``extra["delta"]``: base package + delta
    (``attnscope.models.loading`` wraps them in a backend)."""
    folder = CHECKPOINTS / spec.extra["delta"]
    manifest = read_manifest(folder)
    labels = tuple(manifest["labels"])
    model, tokenizer = build_minilm_classifier(labels)
    apply_delta(model, folder, spec.locator)
    return model, tokenizer, list(labels)


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; train the delta with `make finetune`")
    return json.loads(path.read_text())


def save_delta(model: torch.nn.Module, names: list[str], folder: str | Path, manifest: dict) -> dict:
    """Write ``names`` of ``model``'s state (float16) and the manifest; returns the manifest."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = model.state_dict()
    tensors = {n: state[n].detach().to(torch.float16).contiguous().cpu() for n in names}
    save_file(tensors, str(folder / WEIGHTS), metadata={"base_model": manifest["base_model"]})
    manifest = {**manifest, "dtype": "float16", "tensors": {n: list(t.shape) for n, t in tensors.items()}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def apply_delta(model: torch.nn.Module, folder: str | Path, base_model: str) -> dict:
    """Overlay the delta in ``folder`` onto ``model`` (in place); returns the manifest.

    Raises ``DeltaMismatchError`` when the manifest names another base model, when a tensor is
    missing from the model or the file, or when a shape differs.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest.get("base_model") != base_model:
        raise DeltaMismatchError(
            f"delta {folder} was trained on base model {manifest.get('base_model')!r}, not {base_model!r}; "
            "retrain it with `make finetune` or point the spec at the right base"
        )
    tensors = load_file(str(folder / WEIGHTS))
    declared = manifest.get("tensors", {})
    if set(declared) != set(tensors):
        raise DeltaMismatchError(
            f"delta {folder}: manifest and {WEIGHTS} list different tensors "
            f"({sorted(set(declared) ^ set(tensors))[:5]}); the files are out of sync, retrain"
        )
    state = model.state_dict()
    for name, tensor in tensors.items():
        if name not in state:
            raise DeltaMismatchError(f"delta {folder}: tensor {name!r} does not exist in the model")
        if list(state[name].shape) != list(tensor.shape) or list(tensor.shape) != list(declared[name]):
            raise DeltaMismatchError(
                f"delta {folder}: tensor {name!r} has shape {list(tensor.shape)} (manifest "
                f"{declared[name]}) but the model expects {list(state[name].shape)}"
            )
    with torch.no_grad():
        for name, tensor in tensors.items():
            state[name].copy_(tensor.to(state[name].dtype))
    return manifest
