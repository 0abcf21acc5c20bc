"""The "hide first token / special tokens" switch of the map views (issue 26 item 4).

Most heads of a decoder LLM put most of each row on the first token (the attention sink) and an
encoder's on [CLS]/[SEP]: drawn as is, the map is one bright column and the rest is black. Hiding
those keys blanks their columns and renormalises every query row over the keys that remain::

    w'[q, k] = w[q, k] / (1 - sum_{h in hidden} w[q, h])      (k not hidden)

so each row of what is shown sums to 1 again (a row that had everything on the hidden keys stays 0).
At full resolution this is exact. A pooled overview (each cell the maximum of a stride x stride block)
divides each cell by one minus the hidden keys' *mean* weight over its block of rows, an approximation
that the figure says ("≈ renormalised").
"""

from __future__ import annotations

import numpy as np

HIDES = ("none", "first", "special")
HIDE_LABELS = {"none": "nothing", "first": "first token", "special": "special tokens"}
_FULL = 1.0 - 1e-6  # a row with everything on the hidden keys: nothing left to renormalise


def hidden_positions(hide: str, n_tokens: int, special: list[int] | tuple[int, ...]) -> list[int]:
    """The key positions ``hide`` blanks in a run of ``n_tokens`` whose special positions are
    ``special``: none, ``[0]``, or the special ones (``[0]`` when the tokenizer marked none: a
    decoder's first token is its sink)."""
    if hide == "first":
        return [0] if n_tokens else []
    if hide == "special":
        inside = sorted({int(p) for p in special if 0 <= int(p) < n_tokens})
        return inside or ([0] if n_tokens else [])
    if hide != "none":
        raise ValueError(f"hide must be one of {', '.join(HIDES)}, not {hide!r}")
    return []


def renormalise(weights: np.ndarray, hidden_mass: np.ndarray, blank: list[int]) -> np.ndarray:
    """``weights`` ``[query, key]`` with the columns ``blank`` (indices into its key axis) set to NaN
    and each row divided by ``1 - hidden_mass[row]`` (``hidden_mass`` ``[query]``: the row's weight
    on the hidden keys). A row with all its weight hidden becomes 0."""
    w = np.asarray(weights, dtype=np.float64)
    mass = np.asarray(hidden_mass, dtype=np.float64).reshape(-1, 1)
    if mass.shape[0] != w.shape[0]:
        raise ValueError(f"hidden_mass has {mass.shape[0]} rows, weights {w.shape[0]}")
    rest = 1.0 - np.clip(mass, 0.0, 1.0)
    out = np.divide(w, rest, out=np.zeros_like(w), where=rest > 1.0 - _FULL)
    out[:, [c for c in blank if 0 <= c < w.shape[1]]] = np.nan
    return out.astype(np.float32)


def hide_note(hide: str, positions: list[int], tokens: list[str], pooled: bool) -> str:
    """The sentence a figure's title carries about what is hidden ("" when nothing is)."""
    if not positions:
        return ""
    names = ", ".join(f"{tokens[p]!s}@{p}" if p < len(tokens) else str(p) for p in positions[:3])
    more = f" +{len(positions) - 3}" if len(positions) > 3 else ""
    how = "≈ renormalised (pooled rows)" if pooled else "rows renormalised over the rest"
    return f"{HIDE_LABELS[hide]} hidden ({names}{more}), {how}"


def hide_top_k(indices: np.ndarray, weights: np.ndarray, hidden_mass: np.ndarray, hidden: list[int]) -> np.ndarray:
    """Top-k weights ``[head, query, k]`` (``indices`` the keys) with the hidden keys' entries set to
    0 (no line) and every row divided by ``1 - hidden_mass[head, query]``: the weights a row gives
    the keys that remain, renormalised over them (exact: the top-k are full-resolution weights)."""
    w = np.asarray(weights, dtype=np.float64)
    rest = 1.0 - np.clip(np.asarray(hidden_mass, dtype=np.float64), 0.0, 1.0)[..., None]
    out = np.divide(w, rest, out=np.zeros_like(w), where=rest > 1.0 - _FULL)
    out[np.isin(np.asarray(indices), hidden)] = 0.0
    return out.astype(np.float32)


def hide_map(weights: np.ndarray, hidden: list[int]) -> np.ndarray:
    """A full-resolution map ``[query, key]`` with the keys ``hidden`` blanked (NaN) and every row
    renormalised over the rest (exact: each row's hidden mass is read from the map itself)."""
    w = np.asarray(weights, dtype=np.float32)
    keys = [h for h in hidden if 0 <= h < w.shape[-1]]
    if not keys:
        return w
    return renormalise(w, w[:, keys].sum(axis=1, dtype=np.float64), keys)


def with_note(title: str, note: str) -> str:
    """A figure title with the hide note under it (``title`` alone when nothing is hidden)."""
    return title + (f"<br><sub>{note}</sub>" if note else "")
