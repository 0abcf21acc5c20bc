"""A decoder LLM's head census in one call: attention-sink, previous-token, duplicate-token and
induction heads, each with its score.

- sink (Xiao et al. 2023) and previous-token scores are measured on a fixed English paragraph
  (``TEXT``): mean attention on the first position from every later row, and the shift scan's
  mass at offset -1;
- duplicate-token and induction scores (Olsson et al. 2022) on repeated random tokens
  ``r_1..r_m r_1..r_m`` for each seed: mean attention from each token of the second copy to its
  earlier copy, and to the token after it. The report gives the mean and the minimum over seeds, each
  seed's score of every head (``per_seed``), and which heads are labelled with confidence: per head the
  95 % t interval of the mean over the seeds and the one-sided p that it exceeds ``THRESHOLD``, corrected
  across all the heads by Holm and by Benjamini-Hochberg (``tests``; the probe seeds are the examples).

``attnscope heads --model smollm2`` prints the tables (docs/results/llm.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from attnscope.analysis.heads import classify_heads, duplicate_token_scores, induction_scores
from attnscope.analysis.stats import CORRECTIONS, adjust, one_sample_p, t_summary
from attnscope.models.capture import capture_truncated
from attnscope.models.loading import Backend
from attnscope.pipelines.induction_probe import probe_ids

TEXT = (
    "The history of the city begins with a small settlement on the river. Over the centuries it grew into "
    "a market town, then into a busy port, and finally into the capital of a large region. Today its old "
    "streets are full of visitors who come to see the cathedral, the bridges and the museums."
)
THRESHOLD = 0.5
LEVEL, ALPHA = 0.95, 0.05


def threshold_tests(scores: np.ndarray, threshold: float = THRESHOLD, alpha: float = ALPHA) -> dict:
    """Which heads score above ``threshold`` with confidence, from ``scores`` ``[seed, layer, head]``.

    Per head (``[layer, head]`` arrays under ``arrays``): the ``LEVEL`` t interval of the mean over the
    seeds (``low``, ``high``), the one-sided p of the t test that the mean exceeds ``threshold`` (``p``) and
    its Holm and Benjamini-Hochberg adjustments across all the heads (``p_holm``, ``p_bh``; NaN: no spread
    over the seeds, no test). ``holm`` / ``bh``: how many heads, and which (most certain first), have an
    adjusted p under ``alpha``; ``tested``: the size of the family."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] < 2:
        raise ValueError(f"threshold tests need [seed, layer, head] scores of at least 2 seeds; got {x.shape}")
    low, high, _ = t_summary(x.mean(0), x.std(0, ddof=1), np.full(x.shape[1:], x.shape[0]), LEVEL)
    with warnings.catch_warnings():  # scipy warns on the no-spread heads, set to NaN just below
        warnings.simplefilter("ignore", RuntimeWarning)
        p = one_sample_p(x, axis=0, popmean=threshold, alternative="greater")
    p[np.ptp(x, axis=0) == 0] = np.nan  # the same score on every seed: no spread, no t test (scipy's p is noise)
    arrays = {"low": low, "high": high, "p": p, **{f"p_{c}": adjust(p, c) for c in CORRECTIONS}}
    out: dict = {
        "test": f"one-sided t over {x.shape[0]} seeds: mean score > {threshold}",
        "alpha": alpha,
        "tested": int(np.isfinite(p).sum()),
    }
    for c in CORRECTIONS:
        adj = arrays[f"p_{c}"]
        hits = sorted((float(adj[i]), i) for i in np.ndindex(adj.shape) if np.isfinite(adj[i]) and adj[i] < alpha)
        out[c] = {"count": len(hits), "heads": [f"L{a}H{b}" for _, (a, b) in hits]}
    out["arrays"] = arrays
    return out


def _public(tests: dict) -> dict:
    """``threshold_tests`` without its arrays (what the report keeps beside the per-seed scores)."""
    return {k: v for k, v in tests.items() if k != "arrays"}


def _table(scores: np.ndarray, top: int, threshold: float, extra: dict[str, np.ndarray] | None = None) -> list[dict]:
    order = np.argsort(-scores, axis=None, kind="stable")[:top]
    rows = []
    for flat in order:
        layer, head = (int(v) for v in np.unravel_index(flat, scores.shape))
        row = {
            "head": f"L{layer}H{head}",
            "layer": layer,
            "head_index": head,
            "score": round(float(scores[layer, head]), 4),
        }
        for name, arr in (extra or {}).items():
            v = float(arr[layer, head])
            row[name] = None if not np.isfinite(v) else float(f"{v:.4g}") if name.startswith("p") else round(v, 4)
        row["labelled"] = bool(scores[layer, head] >= threshold)
        rows.append(row)
    return rows


def decoder_heads(
    loaded: Backend, half: int = 30, seeds: Sequence[int] = (0, 1, 2, 3, 4), top: int = 5, text: str = TEXT
) -> dict:
    """Sink, previous-token, duplicate-token and induction heads of a causal LM (see module docstring).
    Each table lists the ``top`` heads by score; ``counts`` the heads at or over ``THRESHOLD``."""
    if not loaded.attention.causal:
        raise ValueError(f"model {loaded.spec.name!r} is not a causal LM; the decoder head census needs one")
    text_maps = capture_truncated(loaded, text).maps  # cut to the model's limit, if longer
    types = classify_heads(text_maps)
    induction, duplicate, first_loss, second_loss = [], [], [], []
    for seed in seeds:
        ids = probe_ids(loaded, 2 * half, seed=seed)
        cap = loaded.run(loaded.encode_ids(ids), hidden_states=False)
        induction.append(induction_scores(cap.maps, ids))
        duplicate.append(duplicate_token_scores(cap.maps, ids))
        # loss (nats) of predicting each copy's tokens 2..m from inside the copy (BOS, if any, first)
        loss, b = cap.output.get("loss"), len(ids) - 2 * half
        if loss is not None:
            first_loss.append(np.mean(loss[b : b + half - 1]))
            second_loss.append(np.mean(loss[b + half : b + 2 * half - 1]))
    ind, dup = np.stack(induction), np.stack(duplicate)  # [seed, layer, head]
    sink, prev = types.scores["sink"], types.scores["previous"]
    tests = {"duplicate": threshold_tests(dup), "induction": threshold_tests(ind)} if len(seeds) >= 2 else None

    def extra(kind: str, scores: np.ndarray) -> dict[str, np.ndarray]:
        more = {"min_over_seeds": scores.min(0)}
        if tests is not None:
            a = tests[kind]["arrays"]
            more.update({k: a[k] for k in ("low", "high", "p", "p_holm", "p_bh")})
        return more

    return {
        "model": loaded.spec.name,
        "text_tokens": text_maps.n_tokens,
        "probe": f"{half} random tokens repeated once, seeds {list(seeds)}",
        "probe_loss": {
            "first_copy": round(float(np.mean(first_loss)), 3) if first_loss else None,
            "second_copy": round(float(np.mean(second_loss)), 3) if second_loss else None,
        },
        "threshold": THRESHOLD,
        "counts": {
            "sink": int((sink >= THRESHOLD).sum()),
            "previous": int((prev >= THRESHOLD).sum()),
            "duplicate": int((dup.mean(0) >= THRESHOLD).sum()),
            "induction": int((ind.mean(0) >= THRESHOLD).sum()),
            "heads": int(sink.size),
        },
        "sink": _table(sink, top, THRESHOLD),
        "previous": _table(prev, top, THRESHOLD),
        "duplicate": _table(dup.mean(0), top, THRESHOLD, extra("duplicate", dup)),
        "induction": _table(ind.mean(0), top, THRESHOLD, extra("induction", ind)),
        "tests": None if tests is None else {k: _public(v) for k, v in tests.items()},
        "per_seed": {
            "seeds": list(seeds),
            "duplicate": np.round(dup, 4).tolist(),  # [seed][layer][head]
            "induction": np.round(ind, 4).tolist(),
        },
    }


def markdown(report: dict) -> str:
    """The report as Markdown tables (what docs/results/llm.md shows)."""
    lines = [
        f"Model `{report['model']}`; sink and previous-token scores on a {report['text_tokens']}-token English "
        f"paragraph, duplicate and induction scores on {report['probe']} (mean, and minimum over seeds). "
        f"Heads at or over {report['threshold']}: "
        + ", ".join(f"{k} {v}" for k, v in report["counts"].items() if k != "heads")
        + f" (of {report['counts']['heads']}). Loss on the probe, nats per token: first copy "
        f"{report['probe_loss']['first_copy']}, second copy {report['probe_loss']['second_copy']}.",
        "",
    ]
    for kind in ("sink", "previous", "duplicate", "induction"):
        rows = report[kind]
        extra = "min_over_seeds" in rows[0]
        lines.append(f"| {kind} head | score |" + (" min over seeds |" if extra else ""))
        lines.append("|---|---|" + ("---|" if extra else ""))
        for r in rows:
            lines.append(f"| {r['head']} | {r['score']:.3f} |" + (f" {r['min_over_seeds']:.3f} |" if extra else ""))
        lines.append("")
    return "\n".join(lines) + ("\n" + tests_markdown(report) if report.get("tests") else "")


def tests_markdown(report: dict) -> str:
    """The duplicate and induction tables' heads with their interval over the seeds and corrected p, then how
    many heads stand out after each correction (what docs/results/llm.md shows)."""
    n = len(report["per_seed"]["seeds"])
    lines = [
        f"| head | kind | mean score [95 % t interval, {n} seeds] | p (mean > {report['threshold']}) | Holm p | BH p |",
        "|---|---|---|---|---|---|",
    ]
    for kind in ("induction", "duplicate"):
        for r in report[kind]:
            ps = " | ".join("–" if r[k] is None else f"{r[k]:.2g}" for k in ("p", "p_holm", "p_bh"))
            lines.append(f"| {r['head']} | {kind} | {r['score']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | {ps} |")
    lines.append("")
    for kind, t in report["tests"].items():
        lines.append(
            f"{kind}: of {t['tested']} heads tested ({t['test']}), {t['holm']['count']} stand out after Holm "
            f"({', '.join(t['holm']['heads']) or 'none'}) and {t['bh']['count']} after Benjamini-Hochberg "
            f"({', '.join(t['bh']['heads']) or 'none'}) at {t['alpha']}."
        )
    return "\n".join(lines)
