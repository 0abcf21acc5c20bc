"""``build_model(arch) -> nn.Module`` for every architecture of the zoo."""

from __future__ import annotations

from torch import nn

from attnscope.models.zoo.arch import Arch, ConvAttentionArch, SANArch, TextArch, VisionArch, parse


def build_model(arch: dict | Arch) -> nn.Module:
    """A fresh (untrained) model of ``arch``: a JSON config (see ``attnscope.models.zoo.configs``), parsed by
    ``attnscope.models.zoo.arch.parse`` (``ValueError`` naming what is wrong), or a typed architecture."""
    typed = parse(arch)
    match typed:
        case SANArch():
            from attnscope.models.zoo.san import SAN

            return SAN(typed)
        case ConvAttentionArch():
            from attnscope.models.zoo.conv_attention import ConvAttentionDemo

            return ConvAttentionDemo(typed)
        case VisionArch():
            from attnscope.models.zoo.nets import VisionTransformer

            return VisionTransformer(typed)
        case TextArch():
            from attnscope.models.zoo.nets import TextTransformer

            return TextTransformer(typed)
    raise TypeError(f"not a zoo architecture: {arch!r}")


def count_params(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))
