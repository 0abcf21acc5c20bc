"""Per-head effect grids over a data set: one grid per example (``apply.head_effects``), folded
into the mean and spread of each head's effect and, for classifiers, its flip rate.

Beside each example's grid, its attention-based head importance (``head_confidence`` of the clean
maps, ``[layer, head]``) and the Spearman rank correlation of ``|effect|`` with it on that example
(``rank_rho``); the result summarises those correlations over the examples (mean, std, median,
range) and gives the correlation of the mean grid with the mean importance
(``of_means``).

Used by the API's ``head-effects`` job (sharded: ``grid_shard`` on examples ``[start, stop)``, then
``merge_grids`` in shard order) and by ``attnscope head-effects``. Texts are cut to the model's limit
and then to ``max_tokens`` positions (an encoder loses its closing ``[SEP]`` when cut there).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnscope.analysis.census import RunningStats
from attnscope.analysis.interventions import head_confidence, rank_agreement, top_heads
from attnscope.analysis.stats import CORRECTIONS, adjust, t_summary
from attnscope.pipelines.datasets import Example
from attnscope.pipelines.interventions.apply import HeadMeans, head_effects
from attnscope.pipelines.interventions.metrics import MetricSpec

Progress = Callable[[int, int], None]
IMPORTANCE = "importance"  # the stats key of the attention-based importance (no metric has that name)


def encode_example(backend, text: str, max_tokens: int):
    inp = backend.encode_text(text, truncate=True)
    if len(inp) > max_tokens:
        inp = backend.encode_ids(list(inp.token_ids)[:max_tokens])
    return inp


def grid_shard(
    backend,
    examples: list[Example],
    method: str = "zero",
    metric: str | None = None,
    max_tokens: int = 64,
    chunk: int = 32,
    means: HeadMeans | None = None,
    progress: Progress | None = None,
) -> dict:
    """Running statistics of every head's effect and importance over ``examples``: ``{"stats":
    {metric | "importance": RunningStats state}, "examples": [{id, tokens, predicted, rank_rho,
    rank_p, effect}]}`` (JSON-able; ``rank_rho`` is None where the example's grid or importance is constant;
    ``effect`` is the example's ``[layer][head]`` grid of the metric's change)."""
    stats: dict[str, RunningStats] = {}
    records = []
    for i, ex in enumerate(examples):
        inp = encode_example(backend, ex.text, max_tokens)
        res = head_effects(backend, inp, method, MetricSpec(metric), means=means, chunk=chunk)
        for kind, grid in res["grids"].items():
            stats.setdefault(kind, RunningStats()).add(grid)
        importance = head_confidence(backend.run(inp, hidden_states=False).maps)  # [layer, head]
        stats.setdefault(IMPORTANCE, RunningStats()).add(importance)
        agree = rank_agreement(res["effect"], importance)
        records.append(
            {
                "id": ex.id,
                "tokens": len(inp),
                "predicted": res["clean"].get("predicted"),
                "rank_rho": agree.rho,
                "rank_p": agree.p,
                "effect": np.round(np.asarray(res["effect"], dtype=np.float64), 6).tolist(),  # [layer][head]
            }
        )
        if progress is not None:
            progress(i + 1, len(examples))
    return {
        "metric": res["metric"].kind if examples else (metric or ""),
        "stats": {k: s.state() for k, s in stats.items()},
        "examples": records,
    }


def merge_grids(partials: list[dict], model: str, method: str, dataset: str) -> dict:
    """The job's result: per head the mean and std of the effect (and classifiers' flip rate), its 95 %
    interval and corrected p (``head_tests``), the heads that stand out after correction
    (``standouts``), the heads of largest mean |effect|, the mean |effect| per layer, one CSV row per
    head and each example's grid."""
    partials = [p for p in partials if p["stats"]]
    if not partials:
        raise ValueError("the head-effects job got no examples")
    metric = partials[0]["metric"]
    kinds = [k for k in partials[0]["stats"] if all(k in p["stats"] for p in partials)]  # shards of any version
    merged = {k: RunningStats() for k in kinds}
    for part in partials:
        for k, s in merged.items():
            s.merge(RunningStats.from_state(part["stats"][k]))
    mean, std = merged[metric].result_mean(), merged[metric].std
    tests = head_tests(mean, std, merged[metric].count)
    flip = merged["flip"].mean if "flip" in merged and metric != "flip" else None
    importance = merged[IMPORTANCE].result_mean() if IMPORTANCE in merged else None
    rows = []
    for layer, head in np.ndindex(mean.shape):
        row = {"head": f"L{layer}H{head}", "layer": layer, "head_index": head, "mean_effect": float(mean[layer, head])}
        row["std_effect"] = float(std[layer, head])
        row["n"] = int(merged[metric].count[layer, head])
        if flip is not None:
            row["flip_rate"] = float(flip[layer, head])
        if importance is not None:
            row["mean_importance"] = float(importance[layer, head])
        for name in ("effect_low", "effect_high", "p", "p_holm", "p_bh"):
            v = tests[name][layer, head]
            row[name] = None if not np.isfinite(v) else float(v)
        rows.append(row)
    examples = [r for p in partials for r in p["examples"]]
    return {
        "model": model,
        "dataset": dataset,
        "method": method,
        "metric": metric,
        "n": len(examples),
        "mean_effect": mean.tolist(),
        "std_effect": std.tolist(),
        "flip_rate": None if flip is None else flip.tolist(),
        "layer_mean_abs_effect": np.abs(mean).mean(axis=1).tolist(),
        "top": [{"layer": a, "head": b, "mean_effect": e} for a, b, e in top_heads(mean, 10)],
        "mean_importance": None if importance is None else importance.tolist(),
        "rank_agreement": None if importance is None else rank_summary(examples, mean, importance),
        "interval": {"level": LEVEL, "method": "t", "over": "examples"},
        "effect_low": _grid(tests["effect_low"]),
        "effect_high": _grid(tests["effect_high"]),
        "standouts": standouts(tests),
        "rows": rows,
        "examples": examples,
    }


LEVEL, ALPHA = 0.95, 0.05


def _grid(x: np.ndarray) -> list[list[float | None]]:
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in x]


def head_tests(mean: np.ndarray, std: np.ndarray, count: np.ndarray) -> dict[str, np.ndarray]:
    """Per head (``[layer, head]`` arrays): the 95 % t interval of the mean effect over the examples, the
    two-sided p of "mean effect 0" and its Holm and Benjamini-Hochberg adjustments across all the heads
    (``attnscope.analysis.stats``). ``std`` is the population sd of ``RunningStats``; NaN: no test."""
    n = np.asarray(count, dtype=np.float64)
    sd = np.where(n >= 2, std * np.sqrt(n / np.maximum(n - 1, 1)), np.nan)  # ddof 0 -> ddof 1
    low, high, p = t_summary(mean, sd, n, LEVEL)
    return {"effect_low": low, "effect_high": high, "p": p, **{f"p_{c}": adjust(p, c) for c in CORRECTIONS}}


def standouts(tests: dict[str, np.ndarray], alpha: float = ALPHA) -> dict:
    """The heads whose mean effect differs from 0 after correction at ``alpha``: per correction their
    count and labels (smallest adjusted p first), with the size of the family tested."""
    tested = int(np.isfinite(tests["p"]).sum())
    out: dict = {"alpha": alpha, "tested": tested}
    for c in CORRECTIONS:
        adj = tests[f"p_{c}"]
        hits = [(float(adj[i]), i) for i in np.ndindex(adj.shape) if np.isfinite(adj[i]) and adj[i] < alpha]
        out[c] = {"count": len(hits), "heads": [f"L{a}H{b}" for _, (a, b) in sorted(hits)]}
    return out


def effect_rows(result: dict) -> list[dict]:
    """The long-format table of the examples' grids: one row per example and head (``effect``)."""
    return [
        {"example": ex["id"], "head": f"L{layer}H{head}", "effect": v}
        for ex in result["examples"]
        if ex.get("effect") is not None
        for layer, by_head in enumerate(ex["effect"])
        for head, v in enumerate(by_head)
    ]


def rank_summary(examples: list[dict], mean: np.ndarray, importance: np.ndarray) -> dict:
    """The per-example rank correlations ``rank_rho`` over the examples (``n`` of them defined: mean,
    std, median, min, max; None when none is) and ``of_means``: the correlation of the mean effect
    grid with the mean importance ``[layer, head]``."""
    rhos = np.array([r["rank_rho"] for r in examples if r.get("rank_rho") is not None], dtype=np.float64)
    per = {"n": int(rhos.size)}
    for name, fn in (("mean", np.mean), ("std", np.std), ("median", np.median), ("min", np.min), ("max", np.max)):
        per[name] = float(fn(rhos)) if rhos.size else None
    agree = rank_agreement(mean, importance)
    return {"per_example": per, "of_means": {"rho": agree.rho, "p": agree.p, "n": agree.n}}
