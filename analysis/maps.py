"""`AttentionMaps`: the one data type that flows from models to analyses to views.

One example, no batch axis. ``weights`` is float32 ``[layer, head, query, key]`` and every row
(a query's distribution over keys) sums to 1. Methods return new objects and never mutate.

Maps are either *eager* (``weights`` holds the whole stack) or *lazy* (``AttentionMaps.lazy``:
a ``MapSource`` computes a layer or a block ``[head, row, col]`` when asked; see
``docs/methods/lazy-maps.md``). ``head``, ``layer``, ``block`` and ``iter_layers`` work on both
and never build the whole stack; reading ``weights`` of lazy maps does (the caller asked for it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace

import numpy as np

from attnscope.analysis.indices import check_index
from attnscope.analysis.map_source import MapSource, SelectedSource, holding

ROW_SUM_ATOL = 2e-3  # float16 round trips and softmax in reduced precision stay inside this


class _Weights:
    """The ``weights`` field: the stored array, or for lazy maps the whole stack computed from the
    source on each read (nothing cached: a lazy run stays small)."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            raise AttributeError("weights")  # no class-level default: the field stays required
        w = obj.__dict__.get("_weights")
        return obj._materialise() if w is None else w

    def __set__(self, obj, value) -> None:
        obj.__dict__["_weights"] = value


@dataclass(frozen=True, eq=False, repr=False)
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
        source: for lazy maps (``weights=None``), what computes blocks on demand.
    """

    weights: np.ndarray | None = _Weights()  # type: ignore[assignment]
    tokens: tuple[str, ...]
    grid: tuple[int, int] | None = None
    special: tuple[int, ...] = ()
    model: str = ""
    causal: bool = False
    layer_ids: tuple[int, ...] = field(default=())
    head_ids: tuple[int, ...] = field(default=())
    source: MapSource | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        kind = "lazy" if self.is_lazy else "eager"
        return f"AttentionMaps({kind}, shape={self.shape}, model={self.model!r}, causal={self.causal})"

    @classmethod
    def lazy(cls, source: MapSource, tokens: Sequence[str], **kwargs) -> AttentionMaps:
        """Maps backed by ``source`` (shape ``source.shape``); ``kwargs`` as for the constructor."""
        return cls(weights=None, tokens=tokens, source=source, **kwargs)

    def __post_init__(self) -> None:
        if self.__dict__.get("_weights") is None:
            self._check_lazy()
            return
        w = np.asarray(self.weights)
        if w.ndim != 4:
            raise ValueError(
                f"weights must have 4 axes [layer, head, query, key]; got shape {w.shape}. "
                "For a single head pass weights[None, None]."
            )
        if w.dtype != np.float32:
            w = w.astype(np.float32)
        object.__setattr__(self, "weights", w)
        if min(w.shape) == 0:
            raise ValueError(f"weights has an empty axis: shape {w.shape}")
        self._check_meta(w.shape)
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

    def _check_lazy(self) -> None:
        if self.source is None:
            raise ValueError("pass weights [layer, head, query, key], or a source for lazy maps")
        shape = tuple(int(s) for s in self.source.shape)
        if len(shape) != 4 or min(shape) == 0:
            raise ValueError(f"a map source must have 4 non-empty axes [layer, head, query, key]; got {shape}")
        self._check_meta(shape)

    def _check_meta(self, shape: tuple[int, ...]) -> None:
        """Tokens, square maps, special positions, grid and index labels against ``shape``."""
        n_layer, n_head, n_query, n_key = shape
        tokens = tuple(str(t) for t in self.tokens)
        object.__setattr__(self, "tokens", tokens)
        if len(tokens) != n_key:
            raise ValueError(f"got {len(tokens)} tokens for {n_key} key positions; pass one label per position")
        if n_query != n_key:
            raise ValueError(f"self-attention maps must be square [query == key]; got query={n_query}, key={n_key}")
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
        w = self.__dict__.get("_weights")
        return tuple(int(s) for s in (self.source.shape if w is None else w.shape))  # type: ignore[return-value]

    @property
    def n_layers(self) -> int:
        return self.shape[0]

    @property
    def n_heads(self) -> int:
        return self.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.shape[3]

    @property
    def is_lazy(self) -> bool:
        """True when blocks are computed from a source on request."""
        return self.__dict__.get("_weights") is None

    @property
    def nbytes(self) -> int:
        """Bytes these maps hold: the stack, or for lazy maps what the source stores."""
        return int(self.source.nbytes) if self.is_lazy else int(self.weights.nbytes)

    def _materialise(self) -> np.ndarray:
        """The whole stack ``[layer, head, query, key]`` of lazy maps (computed layer by layer)."""
        out = np.empty(self.shape, dtype=np.float32)
        for i in range(self.n_layers):
            out[i] = self.layer(i)
        return out

    def head_label(self, layer: int, head: int) -> str:
        """Label ``L{layer}H{head}`` with the original (zero-based) indices."""
        return f"L{self.layer_ids[layer]}H{self.head_ids[head]}"

    def _check_index(self, name: str, value: int, size: int) -> int:
        return int(check_index(name, value, size, "this map", negative=True)) % size

    # ------------------------------------------------------------------ slicing
    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's map ``[query, key]`` (read-only; lazy maps compute it)."""
        return self.block(layer, [head])[0]

    def layer(self, layer: int) -> np.ndarray:
        """One layer's maps ``[head, query, key]`` (read-only; lazy maps compute it)."""
        return self.block(layer)

    def block(
        self, layer: int, heads: Sequence[int] | None = None, rows: slice | None = None, cols: slice | None = None
    ) -> np.ndarray:
        """``[len(heads), rows, cols]`` of one layer (all heads, rows and columns by default); rows
        keep their normalisation over all keys, so a column range sums to at most 1. Read-only."""
        layer = self._check_index("layer", layer, self.n_layers)
        hs = list(range(self.n_heads)) if heads is None else [self._check_index("head", h, self.n_heads) for h in heads]
        if not hs:
            raise ValueError("block needs at least one head")
        rows = slice(None) if rows is None else rows
        cols = slice(None) if cols is None else cols
        for name, sl in (("rows", rows), ("cols", cols)):
            if sl.step not in (None, 1):
                raise ValueError(f"{name} must be a contiguous range (step 1); got step {sl.step}")
        if self.is_lazy:
            out = np.asarray(self.source.block(layer, hs, rows, cols), dtype=np.float32)
        else:
            w = self.__dict__["_weights"][layer]
            out = (w if heads is None else w[hs])[:, rows, cols]
        out.flags.writeable = False
        return out

    def reading_layer(self, layer: int) -> AbstractContextManager:
        """``with maps.reading_layer(i):`` around several ``block`` calls on layer ``i`` (bands of rows):
        lazy maps whose source rebuilds a layer's inputs keep them for the duration, whichever thread
        reads; for other maps it does nothing."""
        layer = self._check_index("layer", layer, self.n_layers)
        return holding(self.source, layer) if self.is_lazy else nullcontext()

    def iter_layers(self) -> Iterator[np.ndarray]:
        """Each layer's ``[head, query, key]`` in turn (at most one layer alive per step for lazy maps)."""
        for i in range(self.n_layers):
            yield self.layer(i)

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
        if self.is_lazy:
            return AttentionMaps.lazy(
                SelectedSource(self.source, li, hi),
                self.tokens,
                grid=self.grid,
                special=self.special,
                model=self.model,
                causal=self.causal,
                layer_ids=tuple(self.layer_ids[i] for i in li),
                head_ids=tuple(self.head_ids[i] for i in hi),
            )
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
