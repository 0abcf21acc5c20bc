"""The faithfulness conventions (ERASER's code, ERASER's paper, ferret) and the perturbations each one
defines: which positions may go, which are removed (comprehensiveness) and kept (sufficiency) at a bin,
and how ids are removed (deleted or masked). ``attnscope.analysis.faithfulness`` scores them; the table
of conventions is in its docstring and on the ERASER methods page of the docs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from attnscope.analysis.rationale_count import (
    COUNTING_RULES,
    DEFAULT_RULE,
    SCORE_ORDERED_RULES,
    CountingRule,
    rationale_counts,
)


@dataclass(frozen=True)
class Convention:
    """How comprehensiveness/sufficiency/AOPC are computed (see the module table)."""

    name: str
    bins: tuple[float, ...]
    target: Literal["predicted", "explained"] = "predicted"
    only_positive: bool = False
    skip_repeats: bool = False
    zero_bin: bool = False
    removal: Literal["delete", "mask"] = "delete"
    count: CountingRule = DEFAULT_RULE


ERASER = Convention("eraser", (0.01, 0.05, 0.1, 0.2, 0.5))
ERASER_PAPER = replace(ERASER, name="eraser-paper", zero_bin=True)
FERRET = Convention(
    "ferret",
    tuple(round(0.1 * i, 1) for i in range(1, 11)),
    target="explained",
    only_positive=True,
    skip_repeats=True,
    count="ferret",
)
CONVENTIONS = {c.name: c for c in (ERASER, ERASER_PAPER, FERRET)}
ENTROPY_KL_METRICS = ("comprehensiveness_entropy", "comprehensiveness_kl", "sufficiency_entropy", "sufficiency_kl")


def get_convention(name: str = "eraser", removal: str | None = None, count: str | None = None) -> Convention:
    """A named convention, optionally with ``removal`` ("delete" or "mask") and the counting rule ``count``
    ("eraser-code", "eraser-order", "ceil" or "ferret"; ``attnscope.analysis.rationale_count``) overridden.
    ``eraser-order`` reorders the tokens it feeds, which only deletion allows: with ``removal="mask"`` it is
    refused."""
    if name not in CONVENTIONS:
        raise ValueError(f"unknown convention {name!r}; choose one of {', '.join(CONVENTIONS)}")
    conv = CONVENTIONS[name]
    if removal is not None:
        if removal not in ("delete", "mask"):
            raise ValueError(f"removal must be 'delete' or 'mask'; got {removal!r}")
        conv = replace(conv, removal=removal)
    if count is not None:
        if count not in COUNTING_RULES:
            raise ValueError(f"count must be one of {', '.join(COUNTING_RULES)}; got {count!r}")
        conv = replace(conv, count=count)
    if conv.count in SCORE_ORDERED_RULES and conv.removal != "delete":
        raise ValueError(
            f"count {conv.count!r} feeds the tokens in score order, which needs removal 'delete'; "
            f"got removal {conv.removal!r}"
        )
    return conv


def candidate_positions(n_tokens: int, special: Sequence[int]) -> np.ndarray:
    """Positions that may be removed: every position that is not special."""
    keep = np.ones(n_tokens, dtype=bool)
    keep[list(special)] = False
    return np.flatnonzero(keep)


def _top(scores: np.ndarray, count: int, candidates: np.ndarray, only_positive: bool) -> np.ndarray:
    """The ``count`` best-scored candidates (ties: earlier position first), in document order; with
    ``only_positive`` those scoring 0 or less are dropped."""
    order = candidates[np.argsort(-scores[candidates], kind="stable")][:count]
    if only_positive:
        order = order[scores[order] > 0]
    return np.sort(order)


def select_rationales(
    scores: np.ndarray, fraction: float, candidates: np.ndarray, convention: Convention = ERASER
) -> tuple[np.ndarray, np.ndarray] | None:
    """The positions removed (comprehensiveness) and kept (sufficiency) at ``fraction``, each sorted in
    document order, counted by the convention's rule; ``None`` when the bin is skipped (no candidates;
    ferret: ``int(k n)`` is 0 or no positive score). ``eraser-code`` may keep an empty set."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(candidates) == 0:
        return None
    counts = rationale_counts(fraction, len(candidates), convention.count)
    if counts.remove is None:
        return None
    removed = _top(scores, counts.remove, candidates, convention.only_positive)
    kept = _top(scores, counts.keep, candidates, convention.only_positive)
    if convention.only_positive and len(removed) == 0:
        return None
    return removed, kept


def select_rationale(
    scores: np.ndarray, fraction: float, candidates: np.ndarray, convention: Convention = ERASER
) -> np.ndarray | None:
    """The positions comprehensiveness removes at ``fraction`` (``select_rationales``' first set)."""
    sel = select_rationales(scores, fraction, candidates, convention)
    return None if sel is None else sel[0]


def remove_tokens(
    ids: np.ndarray, positions: np.ndarray, removal: str = "delete", mask_id: int | None = None
) -> np.ndarray:
    """``ids`` without ``positions`` (delete) or with them replaced by ``mask_id`` (mask)."""
    ids = np.asarray(ids)
    if removal == "mask":
        if mask_id is None:
            raise ValueError("removal='mask' needs the tokenizer's mask_id")
        out = ids.copy()
        out[positions] = mask_id
        return out
    return np.delete(ids, positions)


def keep_tokens(
    ids: np.ndarray, positions: np.ndarray, special: Sequence[int], removal: str = "delete", mask_id: int | None = None
) -> np.ndarray:
    """Only ``positions`` and the special tokens, in document order (others deleted or masked)."""
    keep = np.zeros(len(ids), dtype=bool)
    keep[list(special)] = True
    keep[positions] = True
    return remove_tokens(ids, np.flatnonzero(~keep), removal, mask_id)


def score_ordered(ids: np.ndarray, positions: np.ndarray, special: Sequence[int]) -> np.ndarray:
    """The tokens at ``positions`` (non-special, in the order given) and the special tokens: each special
    token stays in its place among the kept ones, the other places are filled in the given order.
    ``ids``: ``[token]``; returns ``[len(positions) + len(special)]``."""
    ids = np.asarray(ids)
    positions = np.asarray(positions, dtype=np.int64)
    special = np.asarray(list(special), dtype=np.int64)
    places = np.sort(np.concatenate([special, positions]))
    out = ids[places].copy()
    out[~np.isin(places, special)] = ids[positions]
    return out


def perturb(
    ids: np.ndarray,
    scores: np.ndarray,
    selection: tuple[np.ndarray, np.ndarray],
    candidates: np.ndarray,
    special: Sequence[int],
    convention: Convention = ERASER,
    mask_id: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The two inputs scored at one bin: ``ids`` without the removed positions (comprehensiveness) and
    with only the kept ones (sufficiency), from ``select_rationales``' ``selection``.

    In document order, except under a score-ordered rule (``eraser-order``, as ERASER's ``encode_attend.py``
    feeds them): the kept tokens from the highest score down, the remaining ones from the lowest score up
    (ties: earlier position first), special tokens in their places.
    """
    removed, kept = selection
    if convention.count not in SCORE_ORDERED_RULES:
        return (
            remove_tokens(ids, removed, convention.removal, mask_id),
            keep_tokens(ids, kept, special, convention.removal, mask_id),
        )
    scores = np.asarray(scores, dtype=np.float64)
    rest = np.setdiff1d(candidates, removed)
    rest = rest[np.argsort(scores[rest], kind="stable")]
    top = np.asarray(kept, dtype=np.int64)
    top = top[np.argsort(-scores[top], kind="stable")]
    return score_ordered(ids, rest, special), score_ordered(ids, top, special)
