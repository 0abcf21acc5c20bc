"""Head types: what each head mostly does, as scores in [0, 1] and labels (a head may carry several).

Types and scores (``[layer, head]``), computed on the example's maps:

- ``previous`` / ``next`` / ``self``: shift-scan mass at offset ``-1`` / ``+1`` / ``0`` (1D; in 2D
  only ``self``, offset ``(0, 0)``). A shift head (``ShiftScan.is_shift``) is labelled by its best
  offset: ``previous``, ``next``, ``self``, ``shift-3``, ``shift(+1,+0)``.
- ``cls_sink`` / ``sep_sink``: mean attention (over non-special query rows) on the CLS-like special
  position (special position 0) / on the other special positions (SEP, EOS). Label when
  ``>= sink_threshold``. Scan masses are not renormalised, so a sink head is not a shift head.
- ``sink`` (causal maps only): mean attention on the first position (BOS, or the first token when
  there is none) from every later row: the attention sink of decoder LLMs (Xiao et al. 2023,
  StreamingLLM). Label ``sink`` when ``>= sink_threshold``.
- ``broad``: mean normalised row entropy (``H / log(keys)``) over non-special rows; near-uniform heads
  score near 1. Label when ``>= broad_threshold``.
- ``local``: mass within ``local_window`` of the query (``|delta| <= w``; Chebyshev in 2D),
  averaged over rows; labelled when ``>= local_threshold`` and the head is not a single shift.

On a repeated-random-token probe (``make_probe_ids``; maps and ids captured by the caller):

- ``duplicate``: mass on other copies of the query's own token (earlier copies only if causal).
- ``induction``: mass on the token right after an earlier copy of the query's token.
  Both average over the rows that have a target (rows without one do not dilute the score).
  On the causal probe ``r_1..r_m r_1..r_m`` the induction rows are the second copy's tokens, as in
  Olsson et al. 2022.

On causal maps only offsets ``<= 0`` exist (no ``next`` score) and the first row, whose only key is
itself, is left out of every mean (``attnscope.analysis.offsets``).

Attention distance per head and its per-layer profile live in ``attnscope.analysis.distance`` (re-exported
here as ``attention_distance``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis.distance import AttentionDistance, attention_distance  # noqa: F401 (re-export)
from attnscope.analysis.evolution import normalised_entropy
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.passes import Reductions, reduce_maps
from attnscope.analysis.shift import DEFAULT_K, DEFAULT_RADIUS, DEFAULT_THRESHOLD, ShiftScan, shift_scan_from

SINK_THRESHOLD = 0.5
BROAD_THRESHOLD = 0.9
LOCAL_THRESHOLD = 0.7
LOCAL_WINDOW = 2
PROBE_THRESHOLD = 0.4


@dataclass(frozen=True)
class HeadTypes:
    """Scores ``name -> [layer, head]`` and labels ``[layer][head] -> tuple of names``."""

    scores: dict[str, np.ndarray]
    labels: tuple[tuple[tuple[str, ...], ...], ...]
    layer_ids: tuple[int, ...]
    head_ids: tuple[int, ...]

    def labels_of(self, layer: int, head: int) -> tuple[str, ...]:
        """Labels of one head (positional indices)."""
        return self.labels[layer][head]

    def heads_with(self, label: str) -> list[str]:
        """``L{layer}H{head}`` of every head carrying ``label``."""
        return [
            f"L{self.layer_ids[li]}H{self.head_ids[hi]}"
            for li, row in enumerate(self.labels)
            for hi, labels in enumerate(row)
            if label in labels
        ]

    def table(self) -> list[dict]:
        """One JSON-safe dict per head: label, labels and every score."""
        out = []
        for li, row in enumerate(self.labels):
            for hi, labels in enumerate(row):
                rec = {"head": f"L{self.layer_ids[li]}H{self.head_ids[hi]}", "labels": list(labels)}
                rec.update({k: float(v[li, hi]) for k, v in self.scores.items()})
                out.append(rec)
        return out


def shift_label(scan: ShiftScan, layer: int, head: int) -> str:
    """Name of a head's best offset: previous / next / self / shift-3 / shift(+1,+0)."""
    off = scan.offset(scan.best[layer, head])
    if isinstance(off, tuple):
        return "self" if off == (0, 0) else f"shift({off[0]:+d},{off[1]:+d})"
    return {-1: "previous", 0: "self", 1: "next"}.get(off, f"shift{off:+d}")


def _rows_mean(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mean of ``x[..., rows]`` over ``rows`` (most rows: sum all, subtract the others)."""
    if rows.size == 0:
        return np.zeros(x.shape[:-1])
    others = np.setdiff1d(np.arange(x.shape[-1]), rows)
    total = x.sum(axis=-1, dtype=np.float64) - x[..., others].sum(axis=-1, dtype=np.float64)
    return total / rows.size


def sink_scores(maps: AttentionMaps, position: int = 0) -> np.ndarray:
    """``[layer, head]`` mean attention on ``position`` from every later non-special row (the
    attention sink: ``position`` 0, BOS or the first token); 0 where no such row exists."""
    rows = _sink_rows(maps, position)
    if rows.size == 0:
        return np.zeros((maps.n_layers, maps.n_heads), dtype=np.float32)
    if not maps.is_lazy:
        return maps.weights[:, :, rows, position].mean(axis=-1, dtype=np.float64).astype(np.float32)
    out = np.empty((maps.n_layers, maps.n_heads), dtype=np.float32)
    for li in range(maps.n_layers):  # one column of one layer at a time
        col = maps.block(li, rows=slice(position + 1, maps.n_tokens), cols=slice(position, position + 1))[..., 0]
        out[li] = col[:, rows - position - 1].mean(axis=-1, dtype=np.float64)
    return out


def _sink_rows(maps: AttentionMaps, position: int) -> np.ndarray:
    special = set(maps.special)
    return np.array([q for q in range(position + 1, maps.n_tokens) if q not in special], dtype=np.int64)


def _sink_from(red: Reductions, maps: AttentionMaps) -> np.ndarray:
    """``sink_scores(maps)`` (position 0) from a pass with the ``first`` part."""
    rows = _sink_rows(maps, 0)
    if rows.size == 0:
        return np.zeros(red.first_col.shape[:2], dtype=np.float32)
    return red.first_col[..., rows].mean(axis=-1, dtype=np.float64).astype(np.float32)


def _sink_scores(red: Reductions, special: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    mean = _rows_mean(red.special_cols, red.index.rows)  # [layer, head, special]
    is_cls = np.array([s == 0 for s in special], dtype=bool)
    return mean[..., is_cls].sum(-1), mean[..., ~is_cls].sum(-1)


def head_types_from(
    red: Reductions,
    maps: AttentionMaps,
    scan: ShiftScan | None = None,
    *,
    local_window: int = LOCAL_WINDOW,
    sink_threshold: float = SINK_THRESHOLD,
    broad_threshold: float = BROAD_THRESHOLD,
    local_threshold: float = LOCAL_THRESHOLD,
    extra_scores: dict[str, np.ndarray] | None = None,
    extra_threshold: float = PROBE_THRESHOLD,
) -> HeadTypes:
    """Head types from a pass with the ``band``, ``special`` and ``entropy`` parts.
    ``extra_scores`` (e.g. ``duplicate``/``induction`` from a probe) are labelled at
    ``extra_threshold``."""
    if red.band_sum is None or red.special_cols is None or red.entropy is None:
        raise ValueError("head types need the 'band', 'special' and 'entropy' parts")
    scan = scan or shift_scan_from(red, maps.layer_ids, maps.head_ids)
    idx = red.index
    rows = idx.rows
    scores: dict[str, np.ndarray] = {}
    named = {"self": (0, 0)} if idx.is_2d else {"previous": -1, "next": 1, "self": 0}
    for name, delta in named.items():
        try:
            scores[name] = scan.mass_at(delta)
        except KeyError:  # window too narrow for this offset
            continue
    scores["shift"] = scan.shift_score
    scores["cls_sink"], scores["sep_sink"] = _sink_scores(red, maps.special)
    if maps.causal:
        scores["sink"] = sink_scores(maps) if red.first_col is None else _sink_from(red, maps)
    scores["broad"] = _rows_mean(normalised_entropy(red.entropy, maps.causal), rows)
    cheb = np.abs(idx.offsets.reshape(idx.n_offsets, -1)).max(-1)
    window = cheb <= local_window
    scores["local"] = red.band_sum[..., window].sum(-1) / max(rows.size, 1)
    scores.update(extra_scores or {})
    scores = {k: np.clip(np.asarray(v, dtype=np.float32), 0.0, 1.0) for k, v in scores.items()}
    masks = {  # label -> [layer, head] bool, in the order labels are listed
        "cls-sink": scores["cls_sink"] >= sink_threshold,
        "sep-sink": scores["sep_sink"] >= sink_threshold,
        **({"sink": scores["sink"] >= sink_threshold} if "sink" in scores else {}),
        "broad": scores["broad"] >= broad_threshold,
        "local": (scores["local"] >= local_threshold) & ~scan.is_shift,
    }
    masks.update({k: scores[k] >= extra_threshold for k in (extra_scores or {})})
    flags = {k: v.tolist() for k, v in masks.items()}
    is_shift = scan.is_shift.tolist()
    labels = []
    for li in range(scan.best.shape[0]):
        row = []
        for hi in range(scan.best.shape[1]):
            lab = [shift_label(scan, li, hi)] if is_shift[li][hi] else []
            row.append(tuple(lab + [k for k, f in flags.items() if f[li][hi]]))
        labels.append(tuple(row))
    return HeadTypes(scores, tuple(labels), tuple(maps.layer_ids), tuple(maps.head_ids))


def classify_heads(
    maps: AttentionMaps,
    *,
    k: int = DEFAULT_K,
    radius: int = DEFAULT_RADIUS,
    threshold: float = DEFAULT_THRESHOLD,
    probe: tuple[AttentionMaps, np.ndarray] | None = None,
    workers: int | None = None,
    reductions: Reductions | None = None,
    **thresholds,
) -> HeadTypes:
    """Score and label every head of ``maps`` (``[layer, head, query, key]``). ``probe``: maps of
    the same model on a ``make_probe_ids`` sequence and the ids (aligned to its positions), to add
    ``duplicate`` and ``induction``. ``reductions``: a pass over ``maps`` already made with these
    offsets (``k``/``radius``) and at least the parts below (then no pass is made here). Keyword
    thresholds as in ``head_types_from``."""
    parts = {"band", "special", "entropy", *(("first",) if maps.causal else ())}
    red = reductions if reductions is not None else reduce_maps(maps, parts, k=k, radius=radius, workers=workers)
    scan = shift_scan_from(red, maps.layer_ids, maps.head_ids, threshold)
    extra = None
    if probe is not None:
        pmaps, ids = probe
        if (pmaps.n_layers, pmaps.n_heads) != (maps.n_layers, maps.n_heads):
            raise ValueError("the probe maps must come from the same model (same layers and heads)")
        extra = {"duplicate": duplicate_token_scores(pmaps, ids), "induction": induction_scores(pmaps, ids)}
    return head_types_from(red, maps, scan, extra_scores=extra, **thresholds)


# ---------------------------------------------------------------- repeated-random-token probe
def make_probe_ids(vocab_size: int, length: int, seed: int = 0, exclude_ids=()) -> np.ndarray:
    """``[length]`` int64 token ids whose second half repeats the first: ``length // 2`` distinct
    ids drawn (seeded) from ``0..vocab_size-1`` minus ``exclude_ids`` (special tokens), twice.
    ``length`` must be even and at least 4. Add the model's special tokens around it yourself."""
    if length < 4 or length % 2:
        raise ValueError(f"probe length must be an even number >= 4; got {length}")
    allowed = np.setdiff1d(np.arange(int(vocab_size)), np.asarray(list(exclude_ids), dtype=np.int64))
    half = length // 2
    if allowed.size < half:
        raise ValueError(f"need {half} distinct token ids but only {allowed.size} are allowed")
    first = np.random.default_rng(seed).choice(allowed, size=half, replace=False)
    return np.concatenate([first, first]).astype(np.int64)


def _pattern_score(maps: AttentionMaps, pattern: np.ndarray, what: str) -> np.ndarray:
    keep = np.ones(maps.n_tokens, dtype=bool)
    keep[list(maps.special)] = False
    pattern = pattern & keep[:, None] & keep[None, :]
    rows = np.flatnonzero(pattern.any(axis=1))
    if rows.size == 0:
        raise ValueError(
            f"no query has a {what} target; pass ids with repeated tokens (make_probe_ids) aligned to the map positions"
        )
    w = maps.weights[:, :, rows]  # [layer, head, row, key]
    return np.einsum("lhrk,rk->lh", w, pattern[rows].astype(np.float32)) / rows.size


def _check_ids(maps: AttentionMaps, ids) -> np.ndarray:
    ids = np.asarray(ids).reshape(-1)
    if ids.size != maps.n_tokens:
        raise ValueError(
            f"got {ids.size} ids for maps over {maps.n_tokens} positions; pass the "
            "full input ids, special tokens included"
        )
    return ids


def duplicate_token_scores(maps: AttentionMaps, ids) -> np.ndarray:
    """``[layer, head]`` mean mass on other copies of the query's token (earlier ones if causal)."""
    ids = _check_ids(maps, ids)
    same = ids[:, None] == ids[None, :]
    np.fill_diagonal(same, False)
    if maps.causal:
        same &= np.tri(ids.size, k=-1, dtype=bool)
    return _pattern_score(maps, same, "duplicate-token")


def induction_scores(maps: AttentionMaps, ids) -> np.ndarray:
    """``[layer, head]`` mean mass on the token right after an earlier copy of the query's token."""
    ids = _check_ids(maps, ids)
    n = ids.size
    pat = np.zeros((n, n), dtype=bool)
    earlier = (ids[:, None] == ids[None, :]) & np.tri(n, k=-1, dtype=bool)  # [q, j]: j < q copy
    pat[:, 1:] = earlier[:, :-1]  # attend to k = j + 1
    return _pattern_score(maps, pat, "induction")
