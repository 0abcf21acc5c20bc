"""Checkpoints on disk: ``checkpoints/<name>/{model.safetensors, manifest.json}``.

``save_checkpoint`` writes both; ``load_checkpoint`` rebuilds the model from the manifest's
architecture config and refuses (``CheckpointMismatchError``) a checkpoint whose manifest does not
match the catalog's config or whose tensors do not match the model's shapes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from attnscope.models.zoo.build import build_model

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent / "checkpoints"


class CheckpointMismatchError(RuntimeError):
    """A checkpoint's manifest or tensors do not fit the architecture it claims."""


class CheckpointMissingError(FileNotFoundError):
    """The checkpoint was never trained (or was removed)."""


def folder(name: str, root: Path | None = None) -> Path:
    return (root or ROOT) / name


def read_manifest(name: str, root: Path | None = None) -> dict | None:
    path = folder(name, root) / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


def save_checkpoint(name: str, model: torch.nn.Module, manifest: dict, root: Path | None = None) -> Path:
    out = folder(name, root)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"name": name})
    manifest = {**manifest, "tensors": {k: list(v.shape) for k, v in state.items()}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    log.info("wrote %s", out)
    return out


def load_checkpoint(name: str, arch: dict, root: Path | None = None) -> tuple[torch.nn.Module, dict]:
    """The trained model (eval mode, CPU) and its manifest; refuses any mismatch with a clear error."""
    src = folder(name, root)
    manifest = read_manifest(name, root)
    weights = src / "model.safetensors"
    if manifest is None or not weights.is_file():
        raise CheckpointMissingError(
            f"no checkpoint for zoo model {name!r} in {src}; run `make zoo` (or "
            f"`python -m attnscope.pipelines.train {name}`) to train it"
        )
    if manifest.get("arch") != arch:
        raise CheckpointMismatchError(
            f"checkpoint {src} was trained with architecture {manifest.get('arch')} but the catalog "
            f"now says {arch}; retrain it with `python -m attnscope.pipelines.train {name}`"
        )
    model = build_model(arch)
    state = load_file(str(weights))
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    if missing or extra or wrong:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing[:5]}")
        if extra:
            parts.append(f"unexpected tensors {extra[:5]}")
        if wrong:
            parts.append("shape mismatch " + ", ".join(f"{k}: file {got[k]} vs model {expected[k]}" for k in wrong[:5]))
        raise CheckpointMismatchError(
            f"checkpoint {weights} does not fit its architecture: {'; '.join(parts)}; "
            f"retrain it with `python -m attnscope.pipelines.train {name}`"
        )
    if manifest.get("tensors") and {k: tuple(v) for k, v in manifest["tensors"].items()} != got:
        raise CheckpointMismatchError(
            f"{src}/manifest.json lists other tensor shapes than {weights}; the two "
            "files come from different runs; retrain the model"
        )
    model.load_state_dict(state)
    return model.eval(), manifest
