"""One layer's recorded attention inputs, what ``attnscope.models.lazy_maps.QKMapSource`` computes
its maps from: the post-RoPE queries and keys as ``attnscope_qk`` recorded them, or the stream they are
projected from (``attnscope.models.stream_qk.StreamQK``), with the mask inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class QKLayer:
    """One example's recorded attention inputs of one layer.

    ``query [head, token, dim]``, ``key [kv_head, token, dim]``, or both None and ``stream`` (a
    ``StreamQK``) that rebuilds them on request; ``mask``: ``[1 | head, token, token]`` bool (True:
    attend) or float (added), or None with ``is_causal`` for the plain causal mask; ``sinks [head]``
    or None.
    """

    query: torch.Tensor | None
    key: torch.Tensor | None
    mask: torch.Tensor | None
    is_causal: bool
    scale: float
    softcap: float | None = None
    sinks: torch.Tensor | None = None
    stream: Any = None

    def __post_init__(self) -> None:
        if (self.stream is None) == (self.query is None or self.key is None):
            raise ValueError("a QK layer holds its queries and keys, or the stream they are projected from")

    @property
    def n_heads(self) -> int:
        return int(self.query.shape[0]) if self.stream is None else self.stream.n_heads

    @property
    def n_kv_heads(self) -> int:
        return int(self.key.shape[0]) if self.stream is None else self.stream.n_kv_heads

    @property
    def n_tokens(self) -> int:
        return int(self.query.shape[1]) if self.stream is None else self.stream.n_tokens

    @property
    def device(self) -> torch.device:
        return self.query.device if self.stream is None else self.stream.stream.device

    def stored(self) -> list[torch.Tensor | None]:
        """The tensors this layer holds (what its bytes are)."""
        held = [self.query, self.key] if self.stream is None else [self.stream.stream]
        return [*held, self.mask, self.sinks]

    def queries_keys(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(query [head, token, dim], key [kv_head, token, dim])``: as held, or rebuilt from the
        stream (a new pair each call; ``QKMapSource`` keeps the last layer's)."""
        return (self.query, self.key) if self.stream is None else self.stream.rebuild()
