"""`AttentionMaps`: the one data type that flows from models to analyses to views.

One example, no batch axis. ``weights`` is float32 ``[layer, head, query, key]`` and every row
(a query's distribution over keys) sums to 1. Methods return new objects and never mutate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

ROW_SUM_ATOL = 2e-3  # float16 round trips and softmax in reduced precision stay inside this


@dataclass(frozen=True)
class AttentionMaps:
    """Attention of one example: ``weights[layer, head, query, key]``.

    Attributes:
        weights: float32 array ``[layer, head, query, key]``; each row sums to 1.
        tokens: one label per position (``len(tokens) == key``).
        grid: ``(rows, cols)`` when the non-special positions are image patches/pixels in
            row-major order, else ``None``.
        special: indices of CLS/SEP/BOS-like positions (left out of grid and of shift scans).
        model: registry name of the model that produced the maps.
        causal: whether the model masks future keys.
        layer_ids / head_ids: original indices of the layers/heads kept (``select`` keeps them,
            so labels such as ``L3H7`` stay correct after slicing).
    """

    weights: np.ndarray
    tokens: tuple[str, ...]
    grid: tuple[int, int] | None = None
    special: tuple[int, ...] = ()
    model: str = ""
    causal: bool = False
    layer_ids: tuple[int, ...] = field(default=())
    head_ids: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        w = np.asarray(self.weights)
        if w.ndim != 4:
            raise ValueError(
                f"weights must have 4 axes [layer, head, query, key]; got shape {w.shape}. "
                "For a single head pass weights[None, None]."
            )
        if w.dtype != np.float32:
            w = w.astype(np.float32)
        object.__setattr__(self, "weights", w)
        n_layer, n_head, n_query, n_key = w.shape
        if min(w.shape) == 0:
            raise ValueError(f"weights has an empty axis: shape {w.shape}")
        tokens = tuple(str(t) for t in self.tokens)
        object.__setattr__(self, "tokens", tokens)
        if len(tokens) != n_key:
            raise ValueError(f"got {len(tokens)} tokens for {n_key} key positions; pass one label per position")
        if n_query != n_key:
            raise ValueError(f"self-attention maps must be square [query == key]; got query={n_query}, key={n_key}")
        if not np.all(np.isfinite(w)):
            raise ValueError("weights contain NaN or infinity; check the model's masking")
        if w.min() < -1e-6:
            raise ValueError(f"weights must be non-negative; found {w.min():.3g}")
        row_sums = w.sum(axis=-1, dtype=np.float64)
        worst = float(np.abs(row_sums - 1.0).max())
        if worst > ROW_SUM_ATOL:
            idx = np.unravel_index(np.abs(row_sums - 1.0).argmax(), row_sums.shape)
            raise ValueError(
                f"every attention row must sum to 1; row (layer={idx[0]}, head={idx[1]}, "
                f"query={idx[2]}) sums to {row_sums[idx]:.6f}. Pass softmax probabilities, "
                "not logits."
            )
        special = tuple(sorted({int(i) for i in self.special}))
        object.__setattr__(self, "special", special)
        for i in special:
            if not 0 <= i < n_key:
                raise ValueError(f"special index {i} is outside 0..{n_key - 1}")
        if self.grid is not None:
            rows, cols = (int(v) for v in self.grid)
            object.__setattr__(self, "grid", (rows, cols))
            if rows <= 0 or cols <= 0 or rows * cols != n_key - len(special):
                raise ValueError(
                    f"grid {rows}x{cols} must cover the {n_key - len(special)} non-special "
                    f"positions ({n_key} keys minus {len(special)} special)"
                )
        layer_ids = tuple(self.layer_ids) or tuple(range(n_layer))
        head_ids = tuple(self.head_ids) or tuple(range(n_head))
        if len(layer_ids) != n_layer or len(head_ids) != n_head:
            raise ValueError(
                f"layer_ids/head_ids must have {n_layer}/{n_head} entries; got {len(layer_ids)}/{len(head_ids)}"
            )
        object.__setattr__(self, "layer_ids", tuple(int(i) for i in layer_ids))
        object.__setattr__(self, "head_ids", tuple(int(i) for i in head_ids))

    # ------------------------------------------------------------------ shape helpers
    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(layer, head, query, key)``."""
        return tuple(self.weights.shape)  # type: ignore[return-value]

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.weights.shape[3]

    def head_label(self, layer: int, head: int) -> str:
        """Label ``L{layer}H{head}`` with the original (zero-based) indices."""
        return f"L{self.layer_ids[layer]}H{self.head_ids[head]}"

    def _check_index(self, name: str, value: int, size: int) -> int:
        if not isinstance(value, (int, np.integer)) or not -size <= value < size:
            raise IndexError(f"{name} {value} is out of range: this map has {size} {name}s (0..{size - 1})")
        return int(value) % size

    # ------------------------------------------------------------------ slicing
    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's map ``[query, key]`` (a read-only view)."""
        layer = self._check_index("layer", layer, self.n_layers)
        head = self._check_index("head", head, self.n_heads)
        out = self.weights[layer, head]
        out.flags.writeable = False
        return out

    def layer(self, layer: int) -> np.ndarray:
        """One layer's maps ``[head, query, key]`` (a read-only view)."""
        layer = self._check_index("layer", layer, self.n_layers)
        out = self.weights[layer]
        out.flags.writeable = False
        return out

    def select(self, layers: Sequence[int] | None = None, heads: Sequence[int] | None = None) -> AttentionMaps:
        """A new ``AttentionMaps`` with only the given layer and head positions (in this object's
        indexing); the original indices are kept in ``layer_ids``/``head_ids``."""
        li = (
            list(range(self.n_layers))
            if layers is None
            else [self._check_index("layer", i, self.n_layers) for i in layers]
        )
        hi = list(range(self.n_heads)) if heads is None else [self._check_index("head", i, self.n_heads) for i in heads]
        if not li or not hi:
            raise ValueError("select needs at least one layer and one head")
        w = self.weights[np.ix_(li, hi)].copy()
        return replace(
            self,
            weights=w,
            layer_ids=tuple(self.layer_ids[i] for i in li),
            head_ids=tuple(self.head_ids[i] for i in hi),
        )

    def grid_positions(self) -> np.ndarray:
        """Indices of the positions that lie on the grid, row-major ``[rows * cols]``."""
        if self.grid is None:
            raise ValueError("these maps have no image grid")
        special = set(self.special)
        return np.array([i for i in range(self.n_tokens) if i not in special], dtype=np.int64)

    # ------------------------------------------------------------------ serialisation
    def to_compact(self, encoding: str = "float16") -> dict:
        """A JSON-safe dict with the weights in a compact binary encoding (see ``attnscope.analysis.codec``)."""
        from attnscope.analysis.codec import encode_array

        payload, meta = encode_array(self.weights, encoding)
        return {
            "meta": {
                "tokens": list(self.tokens),
                "grid": list(self.grid) if self.grid else None,
                "special": list(self.special),
                "model": self.model,
                "causal": self.causal,
                "layer_ids": list(self.layer_ids),
                "head_ids": list(self.head_ids),
                **meta,
            },
            "data": payload,
        }

    @classmethod
    def from_compact(cls, blob: dict) -> AttentionMaps:
        """Inverse of ``to_compact`` (rows are renormalised after quantisation)."""
        from attnscope.analysis.codec import decode_array

        meta = blob["meta"]
        w = decode_array(blob["data"], meta)
        w = w / np.maximum(w.sum(axis=-1, keepdims=True), np.float32(1e-12))
        return cls(
            weights=w,
            tokens=tuple(meta["tokens"]),
            grid=tuple(meta["grid"]) if meta.get("grid") else None,
            special=tuple(meta.get("special", ())),
            model=meta.get("model", ""),
            causal=bool(meta.get("causal", False)),
            layer_ids=tuple(meta.get("layer_ids", ())),
            head_ids=tuple(meta.get("head_ids", ())),
        )
