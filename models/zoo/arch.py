"""The zoo's architectures as typed values: what a model is made of, parsed once from its JSON config.

The catalog (``attnscope.models.zoo.configs``) and every checkpoint's manifest keep an architecture as a
JSON-able dict (the manifest is a file; a dict compares and prints plainly). ``parse(arch)`` turns that dict
into one of the frozen dataclasses below, refusing unknown keys and missing fields with a message naming
them; the networks (``nets``, ``san``, ``conv_attention``) are built from the typed value only.

An attention layer is composed of parts (``AttentionParts``) rather than chosen by a mode string:

- ``content``: the ``q . k / sqrt(d)`` term (absent in Cordonnier's content-free heads);
- ``position``: one additive logit bias, ``GaussianPosition`` (Cordonnier's quadratic encoding),
  ``Learned2DPosition`` (learned relative 2-D embeddings) or ``ShiftPosition`` (Andreoli's shift
  matrices), or none;
- ``evolving``: Evolving Attention's residual convolution on the logits (``EAConfig``), or none;
- ``hierarchical``: Hierarchical Attention, one shared block whose keys are fixed from the first pass.

The JSON key ``attention`` names the combination the paper used (``content``, ``gaussian``,
``gaussian-full``, ``learned2d``, ``shift``, ``san-pairwise``, ``san-patchwise``, ``conv-as-attention``);
the defaults each implied are applied here, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from attnscope.models.zoo.attention import EAConfig


@dataclass(frozen=True)
class GaussianPosition:
    """Cordonnier's Gaussian heads: isotropic spread, or a full 2x2 covariance when ``full``."""

    full: bool = False


@dataclass(frozen=True)
class Learned2DPosition:
    """Learned relative 2-D position embeddings of width ``pos_dim`` scored against a per-head query."""

    pos_dim: int


@dataclass(frozen=True)
class ShiftPosition:
    """A learnable mixture of shift matrices S_delta, delta in [-radius, radius], per head; ``tap_init``
    starts one tap per head there (the pure-shift limit of content-free heads)."""

    radius: int = 2
    tap_init: float | None = None


Position = GaussianPosition | Learned2DPosition | ShiftPosition


@dataclass(frozen=True)
class AttentionParts:
    """One attention layer's parts (module docstring). ``head_dim`` None: ``dim // heads``."""

    content: bool
    position: Position | None = None
    evolving: EAConfig | None = None
    hierarchical: bool = False
    head_dim: int | None = None
    dropout: float = 0.0


@dataclass(frozen=True, kw_only=True)
class VisionArch:
    """A vision transformer on 28x28 digits: ``patch`` x ``patch`` space-to-depth tokens on a grid, an
    optional CLS token and learned absolute positions, ``depth`` blocks, then ``pool`` -> ``classes``."""

    dim: int
    depth: int
    heads: int
    mlp: int
    patch: int
    attention: AttentionParts
    cls: bool = False
    abs_pos: bool = False
    pool: str = "mean"
    dropout: float = 0.0
    classes: int = 10
    kind: Literal["vision"] = "vision"
    sites_family: str = "zoo"


@dataclass(frozen=True, kw_only=True)
class TextArch:
    """A text encoder classifier: word embeddings (pad id 0), learned positions unless the position part
    is a shift bias, ``depth`` blocks, masked mean pooling -> ``classes``. ``vocab_size`` comes from the
    vocabulary at training time and from the manifest when loading."""

    dim: int
    depth: int
    heads: int
    mlp: int
    max_len: int
    attention: AttentionParts
    vocab_size: int | None = None
    dropout: float = 0.0
    classes: int = 2
    kind: Literal["text"] = "text"
    sites_family: str = "zoo"

    @property
    def learned_positions(self) -> bool:
        return not isinstance(self.attention.position, ShiftPosition)


@dataclass(frozen=True, kw_only=True)
class SANArch:
    """Zhao et al.'s local self-attention (SAN) in a ``kernel`` x ``kernel`` window, ``pairwise``
    (subtraction) or ``patchwise``; ``hierarchical``: one shared block with the key side fixed."""

    dim: int
    depth: int
    heads: int
    mlp: int
    patch: int
    mode: Literal["pairwise", "patchwise"]
    kernel: int = 3
    rel_dim: int = 16
    hierarchical: bool = False
    pool: str = "mean"
    dropout: float = 0.0
    classes: int = 10
    kind: Literal["vision"] = "vision"
    sites_family: str = "zoo-san"


@dataclass(frozen=True, kw_only=True)
class ConvAttentionArch:
    """A small CNN whose first 3x3 convolution is served as the 9-head attention layer built from its
    kernel (Cordonnier's construction, quadratic encoding sharpness ``alpha``)."""

    patch: int
    channels: tuple[int, int]
    alpha: float
    heads: int = 9
    depth: int = 1
    classes: int = 10
    kind: Literal["vision"] = "vision"
    sites_family: str = "zoo"


Arch = VisionArch | TextArch | SANArch | ConvAttentionArch

_COMMON = {"kind", "attention", "dim", "depth", "heads", "mlp", "dropout", "classes"}
_PARTS = {"content", "head_dim", "ea", "hierarchical", "attn_dropout", "pos_dim", "radius", "tap_init"}
_KEYS = {
    "vision": _COMMON | _PARTS | {"patch", "cls", "abs_pos", "pool"},
    "text": _COMMON | _PARTS | {"max_len", "vocab_size"},
    "san": _COMMON | {"patch", "kernel", "rel_dim", "hierarchical", "pool"},
    "conv": {"kind", "attention", "patch", "channels", "alpha", "heads", "depth", "classes"},
}
_ATTENTION = ("content", "gaussian", "gaussian-full", "learned2d", "shift")


def parse(arch: dict | Arch) -> Arch:
    """The typed architecture of a JSON config (module docstring); a typed value is returned as it is.

    Raises ``ValueError`` naming an unknown kind or attention, unknown keys or a missing field.
    """
    if not isinstance(arch, dict):
        return arch
    kind, attention = arch.get("kind"), arch.get("attention")
    if kind not in ("vision", "text"):
        raise ValueError(f"unknown model kind {kind!r} in architecture config {arch}; use vision or text")
    if kind == "vision" and attention in ("san-pairwise", "san-patchwise"):
        group = "san"
    elif kind == "vision" and attention == "conv-as-attention":
        group = "conv"
    elif attention in _ATTENTION and not (kind == "text" and attention in ("gaussian", "gaussian-full", "learned2d")):
        group = kind
    else:
        raise ValueError(f"unknown attention {attention!r} for a {kind} model in architecture config {arch}")
    unknown = sorted(set(arch) - _KEYS[group])
    if unknown:
        raise ValueError(f"architecture config {arch} has unknown keys {unknown} for {attention!r}")
    try:
        return _build(group, arch)
    except KeyError as exc:
        raise ValueError(f"architecture config {arch} lacks {exc.args[0]!r}") from None


def _build(group: str, a: dict) -> Arch:
    if group == "conv":
        c1, c2 = a["channels"]
        return ConvAttentionArch(
            patch=a["patch"],
            channels=(c1, c2),
            alpha=float(a["alpha"]),
            heads=a.get("heads", 9),
            depth=a.get("depth", 1),
            classes=a.get("classes", 10),
        )
    common = {"dim": a["dim"], "depth": a["depth"], "heads": a["heads"], "mlp": a["mlp"]}
    common["dropout"] = a.get("dropout", 0.0)
    if group == "san":
        mode = a["attention"].removeprefix("san-")
        return SANArch(
            **common,
            patch=a["patch"],
            mode=mode,
            kernel=a.get("kernel", 3),
            rel_dim=a.get("rel_dim", 16),
            hierarchical=bool(a.get("hierarchical")),
            pool=a.get("pool", "mean"),
            classes=a.get("classes", 10),
        )
    parts = attention_parts(a)
    if group == "vision":
        return VisionArch(
            **common,
            patch=a["patch"],
            attention=parts,
            cls=bool(a.get("cls")),
            abs_pos=bool(a.get("abs_pos")),
            pool=a.get("pool", "mean"),
            classes=a.get("classes", 10),
        )
    return TextArch(
        **common,
        max_len=a["max_len"],
        attention=parts,
        vocab_size=a.get("vocab_size"),
        classes=a.get("classes", 2),
    )


def attention_parts(a: dict) -> AttentionParts:
    """The parts a JSON ``attention`` name implies, with the defaults the zoo was trained with: content
    heads use ``dim // heads`` per head unless ``head_dim`` says otherwise; Gaussian and learned-2D heads
    default to ``head_dim = dim`` (Cordonnier's d = D) and no content; shift heads keep content unless told."""
    name, dim = a["attention"], a["dim"]
    position: Position | None = None
    content, head_dim = True, a.get("head_dim")
    if name in ("gaussian", "gaussian-full"):
        position, content, head_dim = GaussianPosition(full=name == "gaussian-full"), False, a.get("head_dim", dim)
    elif name == "learned2d":
        position = Learned2DPosition(a.get("pos_dim", dim))
        content, head_dim = bool(a.get("content")), a.get("head_dim", dim)
    elif name == "shift":
        content = bool(a.get("content", True))
        position = ShiftPosition(a.get("radius", 2), None if content else a.get("tap_init"))
    return AttentionParts(
        content=content,
        position=position,
        evolving=EAConfig(**a["ea"]) if a.get("ea") else None,
        hierarchical=bool(a.get("hierarchical")),
        head_dim=head_dim,
        dropout=a.get("attn_dropout", 0.0),
    )
