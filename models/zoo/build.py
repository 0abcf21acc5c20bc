"""``build_model(arch) -> nn.Module`` for every architecture config in the zoo."""

from __future__ import annotations

from torch import nn


def build_model(arch: dict) -> nn.Module:
    """A fresh (untrained) model of ``arch`` (see ``attnscope.models.zoo.configs``)."""
    kind = arch.get("kind")
    if kind == "vision":
        attention = arch.get("attention")
        if attention in ("san-pairwise", "san-patchwise"):
            from attnscope.models.zoo.san import SAN

            return SAN(arch)
        if attention == "conv-as-attention":
            from attnscope.models.zoo.conv_attention import ConvAttentionDemo

            return ConvAttentionDemo(arch)
        from attnscope.models.zoo.nets import VisionTransformer

        return VisionTransformer(arch)
    if kind == "text":
        from attnscope.models.zoo.nets import TextTransformer

        return TextTransformer(arch)
    raise ValueError(f"unknown model kind {kind!r} in architecture config {arch}")


def count_params(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))
