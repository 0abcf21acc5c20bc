"""What a model gives. ``Capture.output`` is one of the typed outputs ``Classification``,
``Embedding`` or ``NextToken`` (frozen dataclasses; ``ModelOutput``), built by the backends and by
the interventions' readable prediction; the server converts them once into the API's
``Prediction`` (``attnscope.server.predictions``). Each reads like the API's prediction object too
(``out["probs"]``, ``out.get("loss")``, ``dict(out)``: its ``kind`` and its fields that are set).

``BatchOutput`` is what a batched forward pass of any backend gives (``Backend.forward_batch``): the
model's raw output for engines that compare passes (interventions), with the maps when asked.

``forward_batch`` runs inside whatever request session the caller opened
(``attnscope.models.session``), so attention hooks, site edits and a start block apply to it; it
never looks at them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

import numpy as np
import torch


class _Readable(Mapping):
    """The API's view of a typed output: ``kind`` and every field that is not None."""

    kind: ClassVar[str]

    def _present(self) -> dict[str, Any]:
        out = {"kind": self.kind}
        out.update({f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None})
        return out

    def __getitem__(self, key: str) -> Any:
        return self._present()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._present())

    def __len__(self) -> int:
        return len(self._present())


@dataclass(frozen=True, eq=False)
class Classification(_Readable):
    """Class probabilities ``probs [classes]`` over ``labels``, and the most probable label."""

    kind: ClassVar[str] = "classification"
    labels: list[str]
    probs: list[float]
    predicted: str


@dataclass(frozen=True, eq=False)
class Embedding(_Readable):
    """A pooled, L2-normalised embedding ``[dim]``."""

    kind: ClassVar[str] = "embedding"
    dim: int
    embedding: list[float]


@dataclass(frozen=True, eq=False)
class NextToken(_Readable):
    """A causal LM's next-token prediction: ``top_k [position][rank]`` of ``{token_id, token, text,
    prob}`` (one row, after the last position, in an intervention's prediction), the top token after
    the prompt, per position the loss of the token that follows (None at the last), and for
    interactive runs a greedy ``continuation`` or the ``generation`` (text and steps)."""

    kind: ClassVar[str] = "next-token"
    predicted: str
    predicted_id: int
    predicted_token: str
    top_k: list[list[dict]]
    loss: list[float | None] | None = None
    mean_loss: float | None = None
    prompt_tokens: int | None = None
    continuation: str | None = None
    generation: dict | None = None


ModelOutput = Classification | Embedding | NextToken


@dataclass
class BatchOutput:
    """One batched forward, ``B`` rows.

    ``kind``: ``classification`` (``logits [B, classes]``), ``embedding`` (``embedding [B, D]``,
    L2-normalised pooling as the backend's own output) or ``next-token`` (``logits [B, P, vocab]``
    at the kept positions ``positions``, float32). ``maps``: per row ``[layer, head, query, key]``
    float32 cut to its length and renormalised (when asked). ``lengths [B]``: real positions.
    """

    kind: Literal["classification", "embedding", "next-token"]
    lengths: list[int]
    logits: torch.Tensor | None = None
    embedding: torch.Tensor | None = None
    positions: tuple[int, ...] | None = None
    maps: list[np.ndarray] | None = None


def cut_maps(att: np.ndarray, lengths: list[int], always: bool = False) -> list[np.ndarray]:
    """``att [B, layer, head, N, N]`` -> per row ``[layer, head, n, n]`` (padding keys dropped, rows
    renormalised over the kept keys; with ``always`` every row is renormalised)."""
    out = []
    for b, n in enumerate(lengths):
        w = att[b, :, :, :n, :n]
        if always or n != att.shape[-1]:
            w = w / np.maximum(w.sum(-1, keepdims=True), 1e-30)
        out.append(np.ascontiguousarray(w))
    return out
