"""Explain and score: one example (explainers' scores + ERASER metrics + plausibility), or a data
set (the explainer x metric table, with the random baseline, accuracy and truncation losses).

Long inputs are truncated to the model's limit (512 tokens for MiniLM), keeping the head of the
text and the closing [SEP]; the data-set result reports how many human-rationale tokens that cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from attnscope.analysis.faithfulness import (
    ENTROPY_KL_METRICS,
    Scored,
    aggregate,
    candidate_positions,
    evaluate_many,
    get_convention,
    select_rationale,
)
from attnscope.analysis.plausibility import aggregate_plausibility, plausibility
from attnscope.models.loading import Backend
from attnscope.pipelines.explainers import Encoded, make_explainer, make_predict, require_classifier
from attnscope.pipelines.explainers.base import text_tokenizer

log = logging.getLogger(__name__)

FAITHFULNESS_METRICS = (
    "comprehensiveness",
    "sufficiency",
    "aopc_comprehensiveness",
    "aopc_sufficiency",
    *ENTROPY_KL_METRICS,
)
PLAUSIBILITY_METRICS = ("token_f1", "iou_f1", "auprc")
METRICS = FAITHFULNESS_METRICS + PLAUSIBILITY_METRICS


# Longest input an explainer takes by default: max-flow is costly beyond 64 tokens; occlusion runs
# one forward pass per token (512 tokens: about 75 s of MiniLM on 2 CPU cores), so a single
# interactive request caps it at 128 while data-set jobs (with progress) do not, unless asked.
# ``options[name]["max_tokens"]`` overrides either.
JOB_TOKEN_CAPS = {"flow": 64}
INTERACTIVE_TOKEN_CAPS = {"flow": 64, "occlusion": 128}


def token_cap(name: str, options: dict | None, interactive: bool = False) -> int | None:
    """The longest input explainer ``name`` runs on (None: no cap)."""
    given = (options or {}).get(name, {}).get("max_tokens")
    if given is not None:
        return int(given)
    return (INTERACTIVE_TOKEN_CAPS if interactive else JOB_TOKEN_CAPS).get(name)


class UnknownMetricError(ValueError):
    pass


def check_metrics(metrics: Sequence[str]) -> list[str]:
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        raise UnknownMetricError(f"unknown metric(s) {bad}; choose from {', '.join(METRICS)}")
    return list(metrics)


def hard_mask(scores: np.ndarray, ex: Encoded, k: float) -> np.ndarray:
    """0/1 mask of the top-k% non-special tokens (ERASER count: ceil(k n), at least one)."""
    mask = np.zeros(len(ex), dtype=np.int8)
    picked = select_rationale(scores, k, candidate_positions(len(ex), ex.special))
    if picked is not None:
        mask[picked] = 1
    return mask


def explain_example(
    loaded: Backend,
    ex: Encoded,
    explainers: Sequence[str],
    *,
    k: float = 0.2,
    convention: str = "eraser",
    removal: str | None = None,
    count: str | None = None,
    metrics: Sequence[str] = METRICS,
    options: dict | None = None,
    predict: Callable | None = None,
) -> dict:
    """Scores of each explainer on ``ex`` and the chosen metrics (plausibility needs ``ex.human``).

    ``options`` maps an explainer name to its keyword options (e.g. ``{"attention": {"layer": 3}}``);
    ``count`` overrides the convention's counting rule (``attnscope.analysis.rationale_count``).
    """
    return explain_examples(
        loaded,
        [ex],
        [explainers],
        k=k,
        convention=convention,
        removal=removal,
        count=count,
        metrics=metrics,
        options=options,
        predict=predict,
    )[0]


def explain_examples(
    loaded: Backend,
    examples: Sequence[Encoded],
    explainers: Sequence[Sequence[str]],
    *,
    k: float = 0.2,
    convention: str = "eraser",
    removal: str | None = None,
    count: str | None = None,
    metrics: Sequence[str] = METRICS,
    options: dict | None = None,
    predict: Callable | None = None,
) -> list[dict]:
    """``explain_example`` of several examples (``explainers[i]``: the names run on ``examples[i]``), the
    predictions in one ``predict`` call and every perturbation of every example in one more
    (``evaluate_many``: inputs of like length batched across examples)."""
    require_classifier(loaded)
    metrics = check_metrics(metrics)
    conv = get_convention(convention, removal, count)
    predict = predict or make_predict(loaded)
    options = options or {}
    all_probs = predict([ex.input_ids for ex in examples]) if examples else []
    out, scored = [], []
    for ex, names, probs in zip(examples, explainers, all_probs):
        target = int(probs.argmax()) if ex.target is None or conv.target == "predicted" else int(ex.target)
        with_target = replace(ex, target=target)
        scores, seconds = {}, {}
        for name in names:
            start = time.perf_counter()
            s = np.asarray(make_explainer(name, loaded, **options.get(name, {})).explain(with_target), dtype=np.float64)
            if s.shape != (len(ex),) or not np.all(np.isfinite(s)):
                raise ValueError(
                    f"explainer {name!r} gave {s.shape} scores (finite: {np.isfinite(s).all()}) for {len(ex)} tokens"
                )
            scores[name], seconds[name] = s, time.perf_counter() - start
        plaus = {}
        if ex.human is not None and any(m in PLAUSIBILITY_METRICS for m in metrics):
            plaus = {n: plausibility(s, ex.human, hard_mask(s, ex, k), ex.special) for n, s in scores.items()}
        out.append(
            {
                "probs": probs.tolist(),
                "target": target,
                "scores": scores,
                "seconds": seconds,
                "faithfulness": {},
                "plausibility": plaus,
            }
        )
        scored.append(Scored(ex.input_ids, scores, ex.special, target))
    if any(m in FAITHFULNESS_METRICS for m in metrics):
        mask_id = text_tokenizer(loaded).mask_token_id
        for res, faith in zip(out, evaluate_many(predict, scored, k=k, convention=conv, mask_id=mask_id)):
            res["faithfulness"] = faith
    return out


def _row(name: str, faith: list, plaus: list, seconds: list[float], metrics: Sequence[str]) -> dict:
    row: dict = {"explainer": name, "n": len(faith) or len(plaus)}
    agg = aggregate(faith) if faith else {}
    agg_p = aggregate_plausibility(plaus) if plaus else {}
    for m in metrics:
        value = agg.get(m) if m in FAITHFULNESS_METRICS else agg_p.get(m)
        row[m] = None if value is None else round(float(value), 4)
    if "iou_f1" in metrics and agg_p:  # IOU F1 is F1(mean P, mean R): keep P and R so tables merge
        row["iou_precision"] = round(agg_p["iou_precision"], 4)
        row["iou_recall"] = round(agg_p["iou_recall"], 4)
    row["seconds_per_example"] = round(float(np.mean(seconds)), 3) if seconds else None
    return row
