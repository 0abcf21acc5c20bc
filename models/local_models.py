"""Local Hugging Face checkpoints: the model roots, what a checkpoint folder is, discovery.

Local checkpoints are only accepted from the folders named in ``ATTNSCOPE_MODEL_DIRS``
(``os.pathsep``-separated); anything outside those roots (a folder, or a file of it linked from
elsewhere) is refused. A local folder is an encoder (embedding or sequence classifier) or a causal LM,
as its ``config.json`` says; any other model (encoder-decoder, vision, audio, a ``model_type``
transformers does not know) is refused with the reason (``UnsupportedModelError``) when it is asked
for, and left out of the list.
"""

from __future__ import annotations

import os
from pathlib import Path

from attnscope.models.locks import LOAD_LOCK
from attnscope.models.settings import causal_token_cap, model_settings
from attnscope.models.spec import ModelOutsideRootsError, ModelSpec, UnknownModelError, UnsupportedModelError


def model_roots() -> list[Path]:
    """Configured roots for local checkpoints (existing folders only, resolved)."""
    roots = []
    for part in model_settings().model_dirs:
        p = Path(part).expanduser().resolve()
        if p.is_dir():
            roots.append(p)
    return roots


def check_under_roots(path: str | os.PathLike) -> Path:
    """Resolve ``path`` and refuse it unless it lies under a configured model root."""
    p = Path(path).expanduser().resolve()
    roots = model_roots()
    if not roots:
        raise ModelOutsideRootsError(
            "no model roots are configured; set ATTNSCOPE_MODEL_DIRS to the folder(s) that hold "
            "your Hugging Face checkpoints"
        )
    if not any(p == r or r in p.parents for r in roots):
        raise ModelOutsideRootsError(
            f"{p} is outside the configured model roots ({', '.join(map(str, roots))}); "
            "move the checkpoint under one of them or add its folder to ATTNSCOPE_MODEL_DIRS"
        )
    if not (p / "config.json").is_file():
        raise UnknownModelError(f"{p} is not a Hugging Face checkpoint (no config.json)")
    return p


def _model_tables():
    with LOAD_LOCK:  # transformers' lazy imports are not thread-safe (see models/locks.py)
        from transformers.models.auto import modeling_auto as auto

    return (
        auto.MODEL_MAPPING_NAMES,
        auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )


def classify_config(config: dict, where: str = "this checkpoint") -> tuple[str, bool]:
    """``(task, causal)`` of a Hugging Face ``config.json``: ``"causal-lm"`` (its architectures name a
    causal-LM head, or a decoder-only model without one named), ``"classification"`` (a sequence
    classifier) or ``"embedding"`` (an encoder, or a bare decoder); ``causal`` when the attention
    is causal. Anything else raises ``UnsupportedModelError`` saying what it is."""
    known, causal_lm, masked_lm = _model_tables()
    model_type = str(config.get("model_type", ""))
    archs = [str(a) for a in config.get("architectures") or []]
    supported = "attnscope runs text encoders (BERT-like) and causal LMs (GPT-2, Llama, Qwen2, Mistral, Gemma, Phi)"
    if config.get("is_encoder_decoder"):
        raise UnsupportedModelError(f"{where} is an encoder-decoder model ({model_type}); {supported}")
    if model_type not in known:
        raise UnsupportedModelError(
            f"{where} has model_type {model_type!r}, which this transformers version does not know; {supported}"
        )
    decoder_only = model_type in causal_lm and model_type not in masked_lm
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "causal-lm", True
    if any("SequenceClassification" in a for a in archs):
        return "classification", decoder_only
    if model_type in masked_lm:
        return "embedding", False
    if decoder_only:
        return ("embedding", True) if archs else ("causal-lm", True)
    raise UnsupportedModelError(
        f"{where} is a {model_type} model ({', '.join(archs) or 'no architectures listed'}), neither a text "
        f"encoder nor a causal LM; {supported}"
    )


def _files_inside(folder: Path, root: Path, rel: str) -> None:
    """``ModelOutsideRootsError`` when a file of the checkpoint (a symlink) resolves outside ``root``:
    folders are resolved before they are accepted, the files in them must be too."""
    for path in folder.rglob("*"):
        if path.is_symlink():
            target = path.resolve()
            if target != root and root not in target.parents:
                raise ModelOutsideRootsError(
                    f"local checkpoint {rel}: {path.relative_to(folder).as_posix()} is a link to a file outside the "
                    "model roots; copy the file into the checkpoint's folder or add its folder to ATTNSCOPE_MODEL_DIRS"
                )


def _read_config(folder: Path, rel: str) -> dict:
    """The checkpoint's ``config.json`` as a dict; ``UnsupportedModelError`` (a 4xx) when it is not one."""
    import json

    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OSError) else type(exc).__name__
        raise UnsupportedModelError(
            f"local checkpoint {rel}: its config.json cannot be read as JSON ({reason}); fix or replace the file"
        ) from None
    if not isinstance(config, dict):
        raise UnsupportedModelError(
            f"local checkpoint {rel}: its config.json holds a {type(config).__name__}, not a JSON object"
        )
    return config


def local_spec(folder: Path, root: Path) -> ModelSpec:
    rel = folder.relative_to(root).as_posix() or folder.name
    _files_inside(folder, root, rel)
    config = _read_config(folder, rel)
    try:
        task, causal = classify_config(config, f"local checkpoint {rel}")
        context = int(config.get("max_position_embeddings") or config.get("n_positions") or config.get("n_ctx") or 512)
    except UnsupportedModelError:
        raise
    except (TypeError, ValueError) as exc:  # a field of the wrong type (architectures: 5, n_positions: "x")
        raise UnsupportedModelError(f"local checkpoint {rel}: its config.json has a malformed field ({exc})") from None
    return ModelSpec(
        name=f"local:{rel}",
        family=str(config.get("model_type", "unknown")),
        modality="text",
        source="local",
        task=task,
        description=f"local checkpoint {rel} (under one of ATTNSCOPE_MODEL_DIRS)",  # never the absolute path
        locator=str(folder),
        max_tokens=min(context, causal_token_cap()) if causal else context,
        extra={
            "causal": causal,
            "context": context,
            "kv_heads": config.get("num_key_value_heads") or config.get("num_attention_heads") or config.get("n_head"),
        },
    )


def _discover() -> tuple[dict[str, ModelSpec], dict[str, str]]:
    found: dict[str, ModelSpec] = {}
    refused: dict[str, str] = {}
    for root in model_roots():
        for cfg in sorted([*root.glob("config.json"), *root.glob("*/config.json"), *root.glob("*/*/config.json")]):
            name = f"local:{cfg.parent.relative_to(root).as_posix() or cfg.parent.name}"
            try:
                spec = local_spec(cfg.parent, root)
            except (UnsupportedModelError, ModelOutsideRootsError) as exc:
                refused.setdefault(name, str(exc))
                continue
            except (ValueError, OSError) as exc:
                refused.setdefault(name, f"{cfg} cannot be read ({exc})")
                continue
            found.setdefault(spec.name, spec)
    return found, refused


def discover_local() -> dict[str, ModelSpec]:
    """Every supported checkpoint folder (one holding ``config.json``) up to two levels under each root."""
    return _discover()[0]


def refused_local() -> dict[str, str]:
    """Checkpoint folders under the roots that attnscope cannot run: name -> the reason."""
    return _discover()[1]
