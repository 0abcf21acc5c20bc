"""ERASER faithfulness metrics (comprehensiveness, sufficiency, AOPC) of token scores.

Metrics take a callable, never a model: ``predict(batch) -> probs`` where ``batch`` is a list of
1-D int arrays of token ids (lengths may differ) and ``probs`` is ``[batch, class]``. Perturbations
happen on token ids (never on decoded text) and special positions (CLS/SEP) always stay. Every
perturbation of one example (``evaluate``), or of several (``evaluate_many``), for every explainer, goes
to ``predict`` in a single call (the model side batches it), and identical perturbed inputs are sent once.

Conventions (DeYoung et al. 2020, ERASER, its code, and ferret; docs/methods/eraser.md):

=============  ==========================  =========  ========  =======  ======  =============
name           bins                        target     only >0   repeats  mean    counting rule
=============  ==========================  =========  ========  =======  ======  =============
eraser         1, 5, 10, 20, 50 %          predicted  no        kept     1/|B|   eraser-code
eraser-paper   same                        predicted  no        kept     1/(|B|+1) (k=0 term is 0)
ferret         10, 20, ..., 100 %          explained  yes       skipped  1/kept  ferret
=============  ==========================  =========  ========  =======  ======  =============

The counting rule (how many tokens ``k`` means on each side) is ``attnscope.analysis.rationale_count``:
``eraser-code`` removes ``n - int((1-k) n)`` and keeps ``int(k n)`` tokens exactly as ERASER's code (a 1% bin
of a short text keeps nothing: sufficiency is then scored on the special tokens alone), ``ceil`` removes and
keeps ceil(k n) (the rule before 0.2), ``ferret`` removes and keeps ``int(k n)`` and skips a bin where that is
0. ``eraser-order`` counts as ``eraser-code`` and also feeds the tokens as ERASER's ``encode_attend.py`` does,
in score order (kept: highest first; remaining: lowest first) instead of document order.
``get_convention(name, count=...)`` overrides a convention's rule; ``docs/claims.md`` says why
``eraser-code`` is the default.
``n`` is the number of non-special tokens. Removal is ``delete`` by default in all three; ``mask``
replaces removed ids with ``mask_id`` instead (``get_convention(name, removal="mask")``).
Comprehensiveness = p_t(x) - p_t(x without r) (higher is better); sufficiency = p_t(x) - p_t(r only)
(lower is better). ferret's empty cases: comprehensiveness 0, sufficiency 1 when no bin is kept.
As in ERASER's ``metrics.py``, the hard rationale at k is also scored on the whole class
distribution: ``*_entropy = H(p(x)) - H(p(perturbed))`` and ``*_kl = KL(p(perturbed) || p(x))`` (nats).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import entropy as scipy_entropy

from attnscope.analysis.conventions import (  # noqa: F401 (re-exported: callers import them from here)
    CONVENTIONS,
    ENTROPY_KL_METRICS,
    ERASER,
    ERASER_PAPER,
    FERRET,
    Convention,
    candidate_positions,
    get_convention,
    keep_tokens,
    perturb,
    remove_tokens,
    score_ordered,
    select_rationale,
    select_rationales,
)
from attnscope.analysis.rationale_count import DEFAULT_RULE, token_count  # noqa: F401 (token_count: re-exported)

Predict = Callable[[list[np.ndarray]], np.ndarray]


@dataclass
class FaithfulnessResult:
    """One example, one explainer. ``*_curve[b]`` is the drop at ``bins[b]`` (``None``: skipped)."""

    target: int
    p_full: float
    k: float
    comprehensiveness: float | None
    sufficiency: float | None
    bins: tuple[float, ...]
    comp_curve: list[float | None]
    suff_curve: list[float | None]
    aopc_comprehensiveness: float
    aopc_sufficiency: float
    convention: str
    rationale: list[int] = field(default_factory=list)
    count: str = DEFAULT_RULE  # the counting rule (attnscope.analysis.rationale_count)
    # ERASER's code also reports, at k: H(p(x)) - H(p(perturbed)) and KL(p(perturbed) || p(x))
    # over the whole class distribution (natural log), for removal (comp.) and keeping (suff.).
    comprehensiveness_entropy: float | None = None
    comprehensiveness_kl: float | None = None
    sufficiency_entropy: float | None = None
    sufficiency_kl: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def entropy_drop(p_full: np.ndarray, p_pert: np.ndarray) -> float:
    """``H(p_full) - H(p_pert)`` in nats (ERASER's ``*_entropy``: the change in the model's uncertainty)."""
    return float(scipy_entropy(p_full) - scipy_entropy(p_pert))


def kl_from_full(p_full: np.ndarray, p_pert: np.ndarray) -> float:
    """``KL(p_pert || p_full)`` in nats (ERASER's ``*_kl``: how far the perturbation moved the distribution)."""
    return float(scipy_entropy(p_pert, p_full))


def _aopc(curve: list[float | None], conv: Convention, empty: float) -> float:
    kept = [v for v in curve if v is not None]
    if not kept:
        return empty
    return float(sum(kept) / (len(kept) + (1 if conv.zero_bin else 0)))


@dataclass(frozen=True)
class Scored:
    """One example to evaluate: ``ids`` [token], ``scores`` (explainer -> one score per token), the special
    positions and the explained class (``None``: the prediction; ERASER conventions always use it)."""

    ids: np.ndarray
    scores: Mapping[str, np.ndarray]
    special: Sequence[int]
    target: int | None = None


class _Inputs:
    """The perturbed inputs of a whole evaluation, each distinct id sequence once."""

    def __init__(self):
        self.seqs: list[np.ndarray] = []
        self.index: dict[bytes, int] = {}

    def slot(self, seq: np.ndarray) -> int:
        key = seq.astype(np.int64).tobytes()  # same bytes <=> same sequence (fixed itemsize)
        if key not in self.index:
            self.index[key] = len(self.seqs)
            self.seqs.append(seq)
        return self.index[key]


def _plan(ex: Scored, k: float, convention: Convention, mask_id: int | None, inputs: _Inputs):
    """``(full slot, {explainer: [(bin index or -1 for k, comp slot, suff slot, rationale)]})``."""
    ids = np.asarray(ex.ids, dtype=np.int64)
    cand = candidate_positions(len(ids), ex.special)
    full = inputs.slot(ids)
    plans = {}
    for name, s in ex.scores.items():
        s = np.asarray(s, dtype=np.float64)
        if s.shape != ids.shape:
            raise ValueError(f"explainer {name!r} gave {s.shape[0] if s.ndim else 0} scores for {len(ids)} tokens")
        entries = []
        previous = None
        for b, frac in [(-1, k), *enumerate(convention.bins)]:
            sel = select_rationales(s, frac, cand, convention)
            r = None if sel is None else sel[0]
            if sel is None or (
                b >= 0 and convention.skip_repeats and previous is not None and np.array_equal(r, previous)
            ):
                entries.append((b, None, None, r))
            else:
                comp_ids, suff_ids = perturb(ids, s, sel, cand, ex.special, convention, mask_id)
                entries.append((b, inputs.slot(comp_ids), inputs.slot(suff_ids), r))
            if b >= 0 and r is not None:
                previous = r
        plans[name] = entries
    return full, plans


def _results(
    probs: np.ndarray, full: int, plans: dict, target: int | None, k: float, convention: Convention
) -> dict[str, FaithfulnessResult]:
    p_x = probs[full]
    t = int(p_x.argmax())
    if convention.target == "explained" and target is not None:
        t = int(target)
    p_full = float(p_x[t])
    out = {}
    for name, entries in plans.items():
        comp_k = suff_k = None
        comp_curve: list[float | None] = []
        suff_curve: list[float | None] = []
        rationale: list[int] = []
        variants: dict[str, float | None] = {}
        for b, comp, suff, r in entries:
            dc = None if comp is None else p_full - float(probs[comp, t])
            ds = None if suff is None else p_full - float(probs[suff, t])
            if b < 0:
                comp_k, suff_k = dc, ds
                rationale = [] if r is None else [int(i) for i in r]
                for which, slot_ in (("comprehensiveness", comp), ("sufficiency", suff)):
                    variants[f"{which}_entropy"] = None if slot_ is None else entropy_drop(p_x, probs[slot_])
                    variants[f"{which}_kl"] = None if slot_ is None else kl_from_full(p_x, probs[slot_])
            else:
                comp_curve.append(dc)
                suff_curve.append(ds)
        out[name] = FaithfulnessResult(
            target=t,
            p_full=p_full,
            k=k,
            comprehensiveness=comp_k,
            sufficiency=suff_k,
            bins=tuple(convention.bins),
            comp_curve=comp_curve,
            suff_curve=suff_curve,
            aopc_comprehensiveness=_aopc(comp_curve, convention, 0.0),
            aopc_sufficiency=_aopc(suff_curve, convention, 1.0 if convention.name == "ferret" else 0.0),
            convention=convention.name,
            rationale=rationale,
            count=convention.count,
            **variants,
        )
    return out


def evaluate_many(
    predict: Predict,
    examples: Sequence[Scored],
    *,
    k: float,
    convention: Convention = ERASER,
    mask_id: int | None = None,
) -> list[dict[str, FaithfulnessResult]]:
    """``evaluate`` of several examples with **one** ``predict`` call: every perturbation of every example
    and explainer, each distinct id sequence once. The model side then batches inputs of like length
    across examples (less padding, fewer and fuller batches than one call per example: the numbers are
    the same, bench/peers/ferret_eraser.py measures the time)."""
    inputs = _Inputs()
    planned = [_plan(ex, k, convention, mask_id, inputs) for ex in examples]
    if not planned:
        return []
    probs = np.asarray(predict(inputs.seqs), dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != len(inputs.seqs):
        raise ValueError(f"predict returned shape {probs.shape} for {len(inputs.seqs)} inputs; expected [batch, class]")
    return [_results(probs, full, plans, ex.target, k, convention) for ex, (full, plans) in zip(examples, planned)]


def evaluate(
    predict: Predict,
    ids: np.ndarray,
    scores: Mapping[str, np.ndarray],
    *,
    special: Sequence[int],
    k: float,
    convention: Convention = ERASER,
    target: int | None = None,
    mask_id: int | None = None,
) -> dict[str, FaithfulnessResult]:
    """Comprehensiveness and sufficiency at ``k`` and AOPC over the convention's bins, for every
    explainer in ``scores`` (name -> one score per token of ``ids``), with one ``predict`` call.

    ``target``: the class explained. ERASER conventions always use the predicted class of the full
    input; ferret uses ``target`` when given (else the predicted class).
    """
    ex = Scored(np.asarray(ids, dtype=np.int64), scores, special, target)
    return evaluate_many(predict, [ex], k=k, convention=convention, mask_id=mask_id)[0]


def comprehensiveness(
    predict: Predict,
    ids,
    scores,
    k: float,
    *,
    special: Sequence[int] = (),
    convention: Convention = ERASER,
    target: int | None = None,
    mask_id: int | None = None,
) -> float | None:
    """p_t(x) - p_t(x without the top-k rationale) for one example."""
    return evaluate(
        predict, ids, {"s": scores}, special=special, k=k, convention=convention, target=target, mask_id=mask_id
    )["s"].comprehensiveness


def sufficiency(
    predict: Predict,
    ids,
    scores,
    k: float,
    *,
    special: Sequence[int] = (),
    convention: Convention = ERASER,
    target: int | None = None,
    mask_id: int | None = None,
) -> float | None:
    """p_t(x) - p_t(only the top-k rationale) for one example."""
    return evaluate(
        predict, ids, {"s": scores}, special=special, k=k, convention=convention, target=target, mask_id=mask_id
    )["s"].sufficiency


def aopc(
    predict: Predict,
    ids,
    scores,
    *,
    special: Sequence[int] = (),
    convention: Convention = ERASER,
    target: int | None = None,
    mask_id: int | None = None,
) -> tuple[float, float]:
    """(AOPC comprehensiveness, AOPC sufficiency) over the convention's bins for one example."""
    r = evaluate(
        predict,
        ids,
        {"s": scores},
        special=special,
        k=convention.bins[0],
        convention=convention,
        target=target,
        mask_id=mask_id,
    )["s"]
    return r.aopc_comprehensiveness, r.aopc_sufficiency


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def aggregate(results: Sequence[FaithfulnessResult]) -> dict:
    """Means over examples: comprehensiveness, sufficiency, both AOPCs and the per-bin curves."""
    if not results:
        return {}
    bins = results[0].bins
    return {
        "n": len(results),
        "comprehensiveness": _mean([r.comprehensiveness for r in results]),
        "sufficiency": _mean([r.sufficiency for r in results]),
        "aopc_comprehensiveness": _mean([r.aopc_comprehensiveness for r in results]),
        "aopc_sufficiency": _mean([r.aopc_sufficiency for r in results]),
        **{m: _mean([getattr(r, m) for r in results]) for m in ENTROPY_KL_METRICS},
        "bins": list(bins),
        "comp_curve": [_mean([r.comp_curve[b] for r in results]) for b in range(len(bins))],
        "suff_curve": [_mean([r.suff_curve[b] for r in results]) for b in range(len(bins))],
    }
