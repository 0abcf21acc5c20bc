"""Circuits over a pair set, in shards (the ``circuit`` job): every pair scored by EAP or EAP-IG on its
own, each edge's mean score over the pairs with its 95 % t interval, and each pair's faithfulness.

Pairs: ``induction`` (pair ``i`` is ``tasks.induction_pairs(n=1, seed=seed + i)``: the tokenizer's
bos token, then ``half`` random tokens from ids ``induction_low(vocab)`` up, repeated against other
random tokens; metric the loss over the second copy) or text pairs (``TextPair``: posted, or the
``capitals``/``ioi`` items the model solves, ``task_sets.solved_pairs``; each pair's clean and
corrupted texts the same number of tokens, pairs may differ in length; pairs the model fails are
refused, ``texts.refuse_failures``).

A shard (``circuit_shard``) returns JSON-able running statistics of the scores over the graph's
edges (``mean``, ``m2``, ``n``: Chan's update folds shards, ``merge_circuit``) and one record per
pair: its metric clean / corrupted / with every edge patched (``m_empty``), the faithfulness of the
circuit (``edges`` given: that circuit on every pair; else the pair's own top ``k`` edges, or its
edges with ``|score| >= threshold``), its edge count, and the faithfulness curve of the pair's own
ranking at ``curve_ks``. Edges outside the circuit read their
corrupted values or (``ablation="mean"``) each sender's mean output over the whole pair set
(``patching.mean_senders``; every pair the same number of tokens).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from attnscope.analysis.census import RunningStats
from attnscope.analysis.stats import t_interval, t_summary
from attnscope.pipelines.circuits.attribution import eap, eap_ig
from attnscope.pipelines.circuits.extract import faithfulness_curve, top_edges
from attnscope.pipelines.circuits.graph import CircuitInputError, Graph
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import empty_metric, faithfulness, mean_senders, prepare
from attnscope.pipelines.circuits.tasks import induction_pairs
from attnscope.pipelines.circuits.texts import ABLATIONS, TextPair, encode_pair, refuse_failures

Progress = Callable[[int, int], None]


def induction_low(vocab: int) -> int:
    """The lowest token id an induction pair draws: 1000 (past the special, byte and merge tokens at the
    start of a BPE vocabulary), or ``vocab // 10`` for a small vocabulary."""
    return min(1000, vocab // 10)


def _bos(backend) -> int | None:
    bos = getattr(backend.tokenizer, "bos_token_id", None)
    return None if bos is None else int(bos)


def pair_ids(
    backend, task: str, index: int, *, half: int, seed: int, metric: str, pairs, bos: int | None = None
) -> tuple:
    """``(clean [1, pos], corrupted [1, pos], CircuitMetric, label)`` of pair ``index`` of the set
    (induction: ``bos`` first, default the tokenizer's bos token)."""
    dev = backend.device
    if task == "induction":
        vocab = backend.model.config.vocab_size
        bos = _bos(backend) if bos is None else int(bos)
        if bos is not None and not 0 <= bos < vocab:
            raise CircuitInputError(f"bos={bos} is not a token id of this model (0..{vocab - 1})")
        ps = induction_pairs(vocab, n=1, half=half, seed=seed + index, bos=bos, low=induction_low(vocab))
        return ps.clean.to(dev), ps.corrupted.to(dev), ps.metric, f"seed {seed + index}"
    if index >= len(pairs):
        raise CircuitInputError(f"task {task} reads its pairs, and pair {index} is not among the {len(pairs)} given")
    a, b, ans = encode_pair(backend, pairs[index], metric, f"pair {index}'s")
    m = CircuitMetric(metric, answers=None if ans is None else (ans,))
    label = pairs[index].label or f"pair {index}"
    return torch.tensor([a], device=dev), torch.tensor([b], device=dev), m, label


def _mean_source(backend, task: str, n: int, half: int, seed: int, metric: str, pairs, bos) -> torch.Tensor:
    ids = [pair_ids(backend, task, i, half=half, seed=seed, metric=metric, pairs=pairs, bos=bos)[0] for i in range(n)]
    lengths = sorted({int(x.shape[1]) for x in ids})
    if len(lengths) > 1:
        raise CircuitInputError(
            f"mean ablation averages each sender over the pairs position by position, so every pair must have the "
            f"same number of tokens; these have {', '.join(map(str, lengths))}: use ablation corrupted or equal lengths"
        )
    return mean_senders(backend.model, backend.sites, torch.cat(ids))


_MEANS: dict[tuple, torch.Tensor] = {}


def _cached_mean(backend, task: str, n: int, half: int, seed: int, metric: str, pairs: tuple, bos) -> torch.Tensor:
    """``_mean_source``, kept for the last few pair sets of each loaded model (a job's shards in one
    process compute it once)."""
    key = (id(backend.model), task, n, half, seed, metric, pairs, bos)
    if key not in _MEANS:
        while len(_MEANS) >= 4:
            _MEANS.pop(next(iter(_MEANS)))
        _MEANS[key] = _mean_source(backend, task, n, half, seed, metric, list(pairs), bos)
    return _MEANS[key]


def circuit_shard(
    backend,
    task: str,
    n: int,
    start: int,
    stop: int,
    *,
    half: int = 15,
    seed: int = 0,
    bos: int | None = None,
    metric: str = "loss",
    pairs: tuple[TextPair, ...] = (),
    method: str = "eap",
    steps: int = 5,
    k: int = 50,
    threshold: float | None = None,
    edges: tuple[tuple[str, str], ...] | None = None,
    ablation: str = "corrupted",
    curve_ks: tuple[int, ...] = (),
    progress: Progress | None = None,
) -> dict:
    """Pairs ``[start, stop)`` of a set of ``n``: see the module docstring for what it returns."""
    if method not in ("eap", "eap-ig"):
        raise CircuitInputError(f"method {method!r} is not eap or eap-ig")
    if ablation not in ABLATIONS:
        raise CircuitInputError(f"ablation {ablation!r} is not one of {', '.join(ABLATIONS)}")
    if ablation == "mean" and n < 2:
        raise CircuitInputError("mean ablation needs two pairs at least (the mean over one pair is the pair)")
    graph = Graph.of(backend.sites)
    valid = graph.valid()
    keep_given = None
    if edges is not None:
        keep_given = np.zeros(valid.shape, bool)
        for s_name, r_name in edges:
            keep_given[graph.edge(s_name, r_name)] = True
    source = _cached_mean(backend, task, n, half, seed, metric, tuple(pairs), bos) if ablation == "mean" else None
    stats = RunningStats()
    records = []
    for i in range(start, stop):
        clean, corrupted, m, label = pair_ids(
            backend, task, i, half=half, seed=seed, metric=metric, pairs=pairs, bos=bos
        )
        prep = prepare(backend.model, backend.sites, clean, corrupted, m)
        if task != "induction":
            refuse_failures(prep, [label])
        scores = eap(prep) if method == "eap" else eap_ig(prep, steps)
        stats.add(scores[valid])
        m_empty = empty_metric(prep, source)
        k_own = min(k, int(valid.sum()))
        curve = [f for _, f in faithfulness_curve(prep, scores, list(curve_ks), source, m_empty)]
        if keep_given is None and threshold is None and k_own in curve_ks:  # the circuit is a point of its curve
            faith, n_kept = curve[list(curve_ks).index(k_own)], k_own
        else:
            keep = keep_given
            if keep is None:
                keep = top_edges(scores, k=None if threshold is not None else k_own, threshold=threshold)
            faith, n_kept = faithfulness(prep, keep, source, m_empty), int((keep & valid).sum())
        records.append(
            {
                "index": i,
                "label": label,
                "tokens": int(clean.shape[1]),
                "m_clean": prep.m_clean,
                "m_corrupted": prep.m_corrupted,
                "m_empty": m_empty,
                "faithfulness": faith,
                "edges": n_kept,
                "curve": curve,
            }
        )
        if progress is not None:
            progress(i + 1 - start, stop - start)
    state = stats.state()
    return {
        "graph": [graph.n_layers, graph.n_heads, graph.n_kv],
        "n": len(records),
        "mean": state["mean"],
        "m2": state["m2"],
        "pairs": records,
    }


def _iv(values: list[float]) -> dict:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return {"mean": None, "low": None, "high": None, "n": 0}
    return t_interval(vals).as_dict(6)


def _r(x: float) -> float | None:
    return None if not math.isfinite(float(x)) else float(f"{float(x):.9g}")  # 9 significant digits


def merge_circuit(partials: list[dict], *, top: int, curve_ks: tuple[int, ...], **about) -> dict:
    """The job's result from ``circuit_shard`` partials in shard order: the ``top`` edges by |mean score|
    (``rows``: mean, sd, 95 % t interval and n over the pairs), the metrics and faithfulness with their
    intervals, the faithfulness curve, and every pair's values (``per_example``). ``about``: the
    params echoed in the result (model, task, method, ...)."""
    partials = [p for p in partials if p["n"]]
    if not partials:
        raise ValueError("the circuit job got no pairs")
    graph = Graph(*partials[0]["graph"])
    stats = RunningStats()
    for p in partials:
        n_edges = len(p["mean"])
        stats.merge(RunningStats.from_state({"count": [p["n"]] * n_edges, "mean": p["mean"], "m2": p["m2"]}))
    n = stats.count.astype(np.float64)
    mean = stats.result_mean()
    sd = np.where(n >= 2, stats.std * np.sqrt(n / np.maximum(n - 1, 1)), np.nan)
    low, high, p_value = t_summary(mean, sd, n)
    s_idx, r_idx = np.nonzero(graph.valid())
    order = np.argsort(-np.abs(mean), kind="stable")[:top]
    sn, rn = graph.sender_names(), graph.receiver_names()
    rows = []
    for rank, e in enumerate(order):
        rows.append(
            {
                "rank": rank + 1,
                "sender": sn[s_idx[e]],
                "receiver": rn[r_idx[e]],
                "mean": _r(mean[e]),
                "sd": _r(sd[e]),
                "low": _r(low[e]),
                "high": _r(high[e]),
                "p": _r(p_value[e]),
                "n": int(stats.count[e]),
            }
        )
    records = [r for p in partials for r in p["pairs"]]
    curve = [{"k": int(k), **_iv([r["curve"][j] for r in records])} for j, k in enumerate(curve_ks)]
    return {
        "kind": "circuit",
        **about,
        "n": len(records),
        "n_layers": graph.n_layers,
        "n_heads": graph.n_heads,
        "n_kv_heads": graph.n_kv,
        "n_edges": int(graph.valid().sum()),
        "m_clean": _iv([r["m_clean"] for r in records]),
        "m_corrupted": _iv([r["m_corrupted"] for r in records]),
        "m_empty": _iv([r["m_empty"] for r in records]),
        "faithfulness": _iv([r["faithfulness"] for r in records]),
        "curve": curve,
        "interval": {"level": 0.95, "method": "t", "over": "examples"},
        "rows": rows,
        "per_example": {
            key: [r[key] for r in records]
            for key in (
                "index",
                "label",
                "tokens",
                "m_clean",
                "m_corrupted",
                "m_empty",
                "faithfulness",
                "edges",
                "curve",
            )
        },
    }


def pair_rows(result: dict) -> list[dict]:
    """The long-format table of a circuit job's pairs (``table=examples``): one row per pair, its
    metrics, faithfulness and each point of its faithfulness curve (``faithfulness@k``)."""
    pe = result.get("per_example") or {}
    ks = [c["k"] for c in result.get("curve", [])]
    out = []
    for i in range(len(pe.get("index", []))):
        row = {key: pe[key][i] for key in ("index", "label", "tokens", "m_clean", "m_corrupted", "m_empty")}
        row["faithfulness"] = pe["faithfulness"][i]
        if pe.get("edges"):
            row["edges"] = pe["edges"][i]
        row.update({f"faithfulness@{k}": v for k, v in zip(ks, pe["curve"][i], strict=True)})
        out.append(row)
    return out
