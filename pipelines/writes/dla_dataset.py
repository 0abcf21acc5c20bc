"""Direct logit attribution averaged over a data set: each example's next-token logit at its last
position split into the embedding, every head, every MLP and the biases (``recorded.attribute``, the
final norm frozen per example), folded into each head's mean over the examples with its 95 % t
interval and ``n`` (``docs/methods/direct-logit-attribution.md``).

The target of an example is ``predicted`` (the model's own top next token at the last position of
the text cut to ``max_tokens``) or ``next`` (the text cut to ``max_tokens + 1`` tokens; its last
token is the target, read at the position before it: the model's logit of the text's true next
token). Every example's parts sum to its logit; so do the means.

A classifier (``class_readout``: every norm's scale and the pooler's gain frozen per example) has
its class logit attributed instead, the text cut as the head-effects job cuts it
(``interventions.dataset.encode_example``): ``predicted`` (its own class) or ``label`` (the
example's gold class); its post-norm blocks' LayerNorm biases are one more part (``norm_bias``).

Used by the API's ``dla`` job (sharded: ``dla_shard`` on examples ``[start, stop)``, then
``merge_dla`` in shard order).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from attnscope.analysis.census import RunningStats
from attnscope.analysis.stats import t_summary
from attnscope.pipelines.datasets import Example
from attnscope.pipelines.interventions.dataset import encode_example
from attnscope.pipelines.writes.class_readout import class_attribution, class_logits, classifier_sites
from attnscope.pipelines.writes.readouts import class_id, is_classifier
from attnscope.pipelines.writes.recorded import attribute, readout_parts, record_writes

Progress = Callable[[int, int], None]
LEVEL = 0.95
PARTS = ("heads", "attn_bias", "mlp", "norm_bias", "embed", "bias", "logit")  # the running statistics kept
SCALARS = ("embed", "bias", "logit")


def example_input(backend, text: str, max_tokens: int, target: str):
    """``(inp, target_id | None)``: the model input of ``text`` cut to the model's limit and to
    ``max_tokens`` positions, and for ``target="next"`` the text's token after them (None: the model's
    own prediction is the target). A ``next`` text of one token has no next token: ``ValueError``."""
    ids = list(backend.encode_text(text, truncate=True).token_ids)
    if target == "predicted":
        return backend.encode_ids(ids[:max_tokens]), None
    ids = ids[: max_tokens + 1]
    if len(ids) < 2:
        raise ValueError(f"the text {text[:40]!r} is {len(ids)} token; target 'next' needs at least 2")
    return backend.encode_ids(ids[:-1]), int(ids[-1])


@torch.inference_mode()
def dla_shard(
    backend,
    examples: list[Example],
    max_tokens: int = 64,
    target: str = "predicted",
    progress: Progress | None = None,
) -> dict:
    """Running statistics of every part over ``examples``: ``{"stats": {part: RunningStats state},
    "examples": [{id, tokens, target_id, target, logit, residual_error, heads}]}`` (JSON-able;
    ``heads`` the example's ``[layer][head]`` parts). Examples too short for ``next`` are skipped
    (counted in ``skipped``)."""
    feature = "direct logit attribution over a data set"
    classifier = is_classifier(backend.sites, feature)
    if classifier:
        classifier_sites(backend.sites, feature)
        if target not in ("predicted", "label"):
            raise ValueError(f"target {target!r} reads a causal LM's next token; a classifier takes predicted or label")
    else:
        norm, unembed = readout_parts(backend.sites, feature)
        if target not in ("predicted", "next"):
            raise ValueError(f"target {target!r} reads a classifier's gold class; a causal LM takes predicted or next")
    stats = {k: RunningStats() for k in PARTS}
    records, skipped = [], 0
    for i, ex in enumerate(examples):
        if classifier:  # a gold label the model does not have is the job's error, not a skipped example
            tid = class_id(backend, ex.labels[ex.label], "label") if target == "label" else None
        try:
            if classifier:
                inp = encode_example(backend, ex.text, max_tokens)
            else:
                inp, tid = example_input(backend, ex.text, max_tokens, target)
        except ValueError:
            skipped += 1
        else:
            writes = record_writes(backend, inp)
            if classifier:
                tid = int(class_logits(writes)[-1].argmax()) if tid is None else tid
                att = class_attribution(writes, tid, split=False)
                name = backend.labels[tid]
            else:
                pos = len(inp) - 1
                if tid is None:
                    tid = int(unembed.logits(norm(writes.resid[-1, pos])).argmax())
                att = attribute(writes, pos, tid, split=False)
                name = backend.tokenizer.decode([tid])
            for part, value in (
                ("heads", att.heads),
                ("attn_bias", att.attn_bias),
                ("mlp", att.mlp),
                ("norm_bias", att.norm_bias),
                ("embed", np.array([att.embed])),
                ("bias", np.array([att.bias])),
                ("logit", np.array([att.logit])),
            ):
                if value is not None:
                    stats[part].add(np.asarray(value, dtype=np.float64))
            records.append(
                {
                    "id": ex.id,
                    "tokens": len(inp),
                    "target_id": tid,
                    "target": name,
                    "logit": float(att.logit),
                    "residual_error": float(att.residual_error),
                    "heads": np.round(np.asarray(att.heads, dtype=np.float64), 6).tolist(),  # [layer][head]
                }
            )
        if progress is not None:
            progress(i + 1, len(examples))
    return {"stats": {k: s.state() for k, s in stats.items()}, "examples": records, "skipped": skipped}


def _interval(stats: RunningStats) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(mean, low, high, n)`` of the 95 % t interval (``RunningStats.std`` is the population sd)."""
    n = np.asarray(stats.count, dtype=np.float64)
    sd = np.where(n >= 2, stats.std * np.sqrt(n / np.maximum(n - 1, 1)), np.nan)
    mean = stats.result_mean()
    low, high, _ = t_summary(mean, sd, n, LEVEL)
    return mean, low, high, np.asarray(stats.count, dtype=np.int64)


def _none(x: np.ndarray) -> list:
    """Nested lists with NaN as None."""
    if x.ndim == 0:
        return None if not np.isfinite(x) else float(x)
    return [_none(v) for v in x]


def merge_dla(
    partials: list[dict], model: str, dataset: str, split: str | None, seed: int, target: str, max_tokens: int
) -> dict:
    """The job's result: per head the mean part with its 95 % t interval and n (``[layer][head]``), the
    same for each MLP, the attention biases, the embedding, the bias term and the logit; the heads of
    largest mean |part|; one CSV row per head; each example's record."""
    merged = {k: RunningStats() for k in PARTS}
    for part in partials:
        for k, s in merged.items():
            state = part["stats"].get(k, {})  # shards saved before norm_bias was kept have none
            if state.get("mean") is not None:
                s.merge(RunningStats.from_state(state))
    examples = [r for p in partials for r in p["examples"]]
    if not examples:
        raise ValueError("the dla job got no examples it could attribute (target 'next' needs 2 tokens)")
    summary = {"norm_bias": None}  # pre-norm blocks add no norm bias to the stream
    for name, stats in merged.items():
        if stats.mean is None:
            continue
        mean, low, high, n = _interval(stats)
        if name in SCALARS:
            mean, low, high, n = mean[0], low[0], high[0], n[0]
        summary[name] = {"mean": _none(mean), "low": _none(low), "high": _none(high), "n": n.tolist()}
    heads = np.asarray(summary["heads"]["mean"], dtype=np.float64)
    order = np.argsort(-np.abs(heads), axis=None)[:10]
    top = [
        {"layer": int(a), "head": int(b), "mean": float(heads[a, b])}
        for a, b in (np.unravel_index(o, heads.shape) for o in order)
    ]
    rows = []
    h = summary["heads"]
    for layer, head in np.ndindex(heads.shape):
        row = {"head": f"L{layer}H{head}", "layer": layer, "head_index": head, "mean": h["mean"][layer][head]}
        row.update(low=h["low"][layer][head], high=h["high"][layer][head], n=h["n"][layer][head])
        rows.append(row)
    return {
        "model": model,
        "dataset": dataset,
        "split": split,
        "seed": seed,
        "target": target,
        "max_tokens": max_tokens,
        "n": len(examples),
        "skipped": int(sum(p.get("skipped", 0) for p in partials)),
        "interval": {"level": LEVEL, "method": "t", "over": "examples"},
        **{name: summary[name] for name in PARTS},
        "top": top,
        "rows": rows,
        "examples": examples,
    }


def dla_example_rows(result: dict) -> list[dict]:
    """The long-format table of the examples' parts: one row per example and head (``part``)."""
    return [
        {"example": ex["id"], "head": f"L{layer}H{head}", "layer": layer, "head_index": head, "part": v}
        for ex in result["examples"]
        for layer, by_head in enumerate(ex["heads"])
        for head, v in enumerate(by_head)
    ]
