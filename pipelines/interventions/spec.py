"""Interventions as data: small frozen descriptions of what to change in a forward pass.

Nothing here touches a model. ``attnscope.pipelines.interventions.apply`` turns an
``InterventionSet`` into per-request attention hooks (``attnscope.models.attention_fn``) or hooks on a
per-request module shell (``attnscope.models.shell``), removed when the forward ends.

| description | what it does (layer ``l``, head ``h``) |
|---|---|
| ``HeadAblation(heads, "zero")`` | head ``h``'s output (before the output projection) ``[query, dim]`` is set to 0 |
| ``HeadAblation(heads, "mean")`` | ... set to the head's mean output over a reference set of inputs (every position) |
| ``HeadAblation(heads, "uniform")`` | the head's logits are replaced by 0 on every key it may see: uniform attention |
| ``EdgeKnockout(layers, edges, heads)`` | logits of the ``query -> key`` edges set to ``-inf`` before the softmax |
| ``HeadPatch(heads)`` | head ``h``'s output is taken from the *source* input's forward pass |
| ``ResidualPatch(layer, positions)`` | the residual stream after block ``l`` at the positions, from the source |

Patching needs a source input of the same number of positions as the target (the rule: token for
token, no alignment); ``docs/methods/interventions.md`` has the definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from attnscope.analysis.indices import OutOfRangeError, check_index

Head = tuple[int, int]  # (layer, head), zero-based
ABLATIONS = ("zero", "mean", "uniform")


class InterventionError(ValueError):
    """An intervention that does not fit the model or the input; the message says what to change."""


@dataclass(frozen=True)
class HeadAblation:
    heads: tuple[Head, ...]
    method: Literal["zero", "mean", "uniform"] = "zero"

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple((int(a), int(b)) for a, b in self.heads))
        if self.method not in ABLATIONS:
            raise InterventionError(f"ablation method {self.method!r}: use one of {', '.join(ABLATIONS)}")


@dataclass(frozen=True)
class EdgeKnockout:
    """Block ``query -> key`` edges in ``layers`` (every head, or only ``heads`` given as indices)."""

    layers: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    heads: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(v) for v in self.layers))
        object.__setattr__(self, "edges", tuple((int(q), int(k)) for q, k in self.edges))
        if self.heads is not None:
            object.__setattr__(self, "heads", tuple(int(v) for v in self.heads))


@dataclass(frozen=True)
class HeadPatch:
    """Take the listed heads' outputs from the source input's forward pass."""

    heads: tuple[Head, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple((int(a), int(b)) for a, b in self.heads))


@dataclass(frozen=True)
class ResidualPatch:
    """Take the residual stream after block ``layer`` at ``positions`` from the source input."""

    layer: int
    positions: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", tuple(int(p) for p in self.positions))


Intervention = HeadAblation | EdgeKnockout | HeadPatch | ResidualPatch


@dataclass(frozen=True)
class InterventionSet:
    """Interventions applied together in one forward pass (composable: ``a + b``)."""

    items: tuple[Intervention, ...]

    def __add__(self, other: InterventionSet) -> InterventionSet:
        return InterventionSet(self.items + other.items)

    @property
    def needs_source(self) -> bool:
        return any(isinstance(i, (HeadPatch, ResidualPatch)) for i in self.items)

    @property
    def needs_means(self) -> bool:
        return any(isinstance(i, HeadAblation) and i.method == "mean" for i in self.items)

    @property
    def edits_logits(self) -> bool:
        return any(
            isinstance(i, EdgeKnockout) or (isinstance(i, HeadAblation) and i.method == "uniform") for i in self.items
        )

    @property
    def residual(self) -> tuple[ResidualPatch, ...]:
        return tuple(i for i in self.items if isinstance(i, ResidualPatch))

    def heads_touched(self) -> set[Head]:
        out: set[Head] = set()
        for i in self.items:
            if isinstance(i, (HeadAblation, HeadPatch)):
                out |= set(i.heads)
        return out


def _range(name: str, value: int, size: int, owner: str = "the model", what: str | None = None) -> None:
    try:
        check_index(name, value, size, owner, what)
    except OutOfRangeError as exc:
        raise InterventionError(str(exc)) from None


def validate(
    iset: InterventionSet, n_layers: int, n_heads: int, n_tokens: int, causal: bool, source_tokens: int | None = None
) -> None:
    """Refuse (``InterventionError``) what does not fit a model of ``n_layers`` x ``n_heads`` and an
    input of ``n_tokens`` positions: empty sets, unknown heads, layers and positions, knockouts that
    leave a query no key, patches without a source of the same length."""
    if not iset.items:
        raise InterventionError("the intervention set is empty; give at least one ablation, knockout or patch")
    for item in iset.items:
        if isinstance(item, (HeadAblation, HeadPatch)):
            if not item.heads:
                raise InterventionError(f"{type(item).__name__} lists no heads; give at least one [layer, head]")
            for layer, head in item.heads:
                _range("layer", layer, n_layers)
                _range("head", head, n_heads, what="heads per layer")
        elif isinstance(item, EdgeKnockout):
            if not item.layers or not item.edges:
                raise InterventionError("an edge knockout needs at least one layer and one [query, key] edge")
            for layer in item.layers:
                _range("layer", layer, n_layers)
            for head in item.heads or ():
                _range("head", head, n_heads, what="heads per layer")
            for q, k in item.edges:
                _range("query", q, n_tokens, "the input", "positions")
                _range("key", k, n_tokens, "the input", "positions")
                if causal and k > q:
                    raise InterventionError(
                        f"edge {q}->{k}: in a causal model query {q} never sees the later key {k}; use key <= query"
                    )
            blocked: dict[int, set[int]] = {}
            for q, k in item.edges:
                blocked.setdefault(q, set()).add(k)
            for q, keys in blocked.items():
                visible = q + 1 if causal else n_tokens
                if len(keys) >= visible:
                    raise InterventionError(
                        f"the knockout blocks every key query {q} can see; keep at least one edge of that row"
                    )
        elif isinstance(item, ResidualPatch):
            _range("layer", item.layer, n_layers)
            if not item.positions:
                raise InterventionError("a residual patch needs at least one position")
            for p in item.positions:
                _range("position", p, n_tokens, "the input", "positions")
    if iset.needs_source:
        if source_tokens is None:
            raise InterventionError("patching needs a source input: send 'corrupted' (a text of the same length)")
        if source_tokens != n_tokens:
            raise InterventionError(
                f"patching replaces activations position by position, so both inputs must have the same number "
                f"of tokens: the run has {n_tokens}, the corrupted input {source_tokens}; change the corrupted "
                "text (e.g. swap one word for another of one token)"
            )
