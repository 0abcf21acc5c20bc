"""Circuits over pair sets on the tiny Llama of ``test_circuits_tiny``: mean ablation (the planted
circuit's faithfulness is 1 under corrupted values and under means; the mean is the pairs' mean), the
job's shards (merged in any split they equal one shard; each edge's mean and t interval are those of
the pairs' own EAP scores) and its refusals."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnscope.analysis.stats import t_interval
from attnscope.pipelines.circuits.attribution import eap
from attnscope.pipelines.circuits.dataset import circuit_shard, merge_circuit, pair_ids, pair_rows
from attnscope.pipelines.circuits.extract import top_edges
from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.patching import empty_metric, faithfulness, mean_senders, prepare, run_circuit
from attnscope.pipelines.circuits.stream import run_graph
from tests.pipelines.test_circuits_tiny import METRIC, V, _model, _pair, _planted


def _pairs(n: int, seed: int = 20):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, V, (n, 10), generator=g), torch.randint(0, V, (n, 10), generator=g)


def test_mean_senders_is_the_mean_of_the_pairs_senders():
    model, sites = _model("llama")
    clean, _ = _pairs(5)
    mean = mean_senders(model, sites, clean, chunk=2)  # three passes of 2, 2 and 1 rows
    with torch.no_grad():
        each = torch.stack([run_graph(model, sites, clean[i : i + 1])[0].senders[:, 0] for i in range(5)], 1)
    assert mean.shape == (each.shape[0], 1, 10, sites.d_model)
    torch.testing.assert_close(mean[:, 0], each.double().mean(1), rtol=0, atol=1e-12)


def _planted_edges(g) -> np.ndarray:
    """The edges among ``E``, ``a0.h1``, ``a1.h2`` and their inputs (kv head 0 of layer 0, 1 of layer 1)
    and the logits: the planted circuit of ``_planted``."""
    live_s = [0, g.head_sender(0, 1), g.head_sender(1, 2)]
    live_r = [g.receiver(0, "q", 1), g.receiver(0, "k", 0), g.receiver(0, "v", 0), g.receiver(1, "q", 2)]
    live_r += [g.receiver(1, "k", 1), g.receiver(1, "v", 1), g.receiver(0, "logits")]
    keep = np.zeros(g.valid().shape, bool)
    keep[np.ix_(live_s, live_r)] = True
    return keep & g.valid()


def test_the_planted_circuit_is_faithful_under_corrupted_values_and_under_means():
    model, sites = _planted()
    clean, corr = _pairs(6)
    source = mean_senders(model, sites, clean)
    for i in range(3):
        p = prepare(model, sites, clean[i : i + 1], corr[i : i + 1], METRIC)
        planted = _planted_edges(p.graph)
        m_empty = empty_metric(p, source)
        assert abs(m_empty - p.m_clean) > 1e-3  # mean ablation of every edge changes the metric
        assert abs(m_empty - p.m_corrupted) > 1e-6  # ... and differs from the corrupted run
        assert faithfulness(p, planted) == pytest.approx(1.0, abs=1e-9)
        assert faithfulness(p, planted, source) == pytest.approx(1.0, abs=1e-9)
        assert run_circuit(p, p.graph.valid(), source) == pytest.approx(p.m_clean, abs=1e-10)
        assert faithfulness(p, np.zeros_like(planted), source, m_empty) == pytest.approx(0.0, abs=1e-12)


def test_mean_ablation_of_a_single_pair_has_nothing_to_recover():
    model, sites = _model("llama")
    clean, corr = _pair(3)
    p = prepare(model, sites, clean, corr, METRIC)
    with pytest.raises(CircuitInputError, match="mean-ablated graph give the same metric"):
        faithfulness(p, top_edges(eap(p), k=5), mean_senders(model, sites, clean))


@pytest.fixture(scope="module")
def backend():
    model, sites = _model("llama")
    return SimpleNamespace(model=model, sites=sites, device="cpu", tokenizer=SimpleNamespace(bos_token_id=0))


ARGS = {"half": 4, "seed": 3, "metric": "loss", "method": "eap", "k": 6, "curve_ks": (0, 6, 30)}


@pytest.mark.parametrize("ablation", ["corrupted", "mean"])
def test_shards_merge_to_one_shard_and_to_the_pairs_own_scores(backend, ablation):
    n = 5
    whole = circuit_shard(backend, "induction", n, 0, n, ablation=ablation, **ARGS)
    split = [circuit_shard(backend, "induction", n, a, b, ablation=ablation, **ARGS) for a, b in ((0, 2), (2, 5))]
    about = {"model": "tiny", "task": "induction"}
    one = merge_circuit([whole], top=40, curve_ks=ARGS["curve_ks"], **about)
    two = merge_circuit(split, top=40, curve_ks=ARGS["curve_ks"], **about)
    assert [r["sender"] + r["receiver"] for r in one["rows"]] == [r["sender"] + r["receiver"] for r in two["rows"]]
    for a, b in zip(one["rows"], two["rows"], strict=True):
        assert a["mean"] == pytest.approx(b["mean"], rel=1e-9, abs=1e-12)
        assert a["low"] == pytest.approx(b["low"], rel=1e-6, abs=1e-9)
    assert one["per_example"] == two["per_example"] and one["n"] == n
    # each edge's mean and interval are those of the pairs' own EAP scores (pair i: seed + i)
    scores = []
    for i in range(n):
        clean, corr, metric, label = pair_ids(backend, "induction", i, half=4, seed=3, metric="loss", pairs=())
        assert label == f"seed {3 + i}" and clean.shape == (1, 9) and int(clean[0, 0]) == 0
        scores.append(eap(prepare(backend.model, backend.sites, clean, corr, metric)))
    names_s, names_r = _names(backend)
    for row in one["rows"][:10]:
        s, r = names_s.index(row["sender"]), names_r.index(row["receiver"])
        iv = t_interval([sc[s, r] for sc in scores])
        assert row["mean"] == pytest.approx(iv.mean, rel=1e-6, abs=1e-9)
        assert (row["low"], row["high"]) == pytest.approx((iv.low, iv.high), rel=1e-5, abs=1e-8)
        assert row["n"] == n
    means = [abs(r["mean"]) for r in one["rows"]]
    assert means == sorted(means, reverse=True)
    # the faithfulness curve: 0 at k = 0, every pair's value kept, the long table has one row per pair
    assert one["curve"][0]["mean"] == pytest.approx(0.0, abs=1e-9) and one["curve"][0]["n"] == n
    rows = pair_rows(one)
    assert len(rows) == n and rows[0]["faithfulness@6"] == one["per_example"]["curve"][0][1]
    if ablation == "corrupted":
        assert one["m_empty"]["mean"] == pytest.approx(one["m_corrupted"]["mean"], abs=1e-9)


def _names(backend):
    from attnscope.pipelines.circuits.graph import Graph

    g = Graph.of(backend.sites)
    return g.sender_names(), g.receiver_names()


def test_a_given_circuit_is_measured_on_every_pair(backend):
    every = merge_circuit(
        [circuit_shard(backend, "induction", 2, 0, 2, **{**ARGS, "k": 1})], top=5, curve_ks=(0, 6, 30)
    )
    names_s, names_r = _names(backend)
    from attnscope.pipelines.circuits.graph import Graph

    g = Graph.of(backend.sites)
    edges = tuple((names_s[s], names_r[r]) for s, r in zip(*np.nonzero(g.valid()), strict=True))
    full = circuit_shard(backend, "induction", 2, 0, 2, edges=edges, **ARGS)
    assert [r["faithfulness"] for r in full["pairs"]] == pytest.approx([1.0, 1.0], abs=1e-9)
    assert every["faithfulness"]["n"] == 2
    with pytest.raises(CircuitInputError, match="not an edge"):
        circuit_shard(backend, "induction", 2, 0, 1, edges=(("a1.h0", "a0.h1<q>"),), **ARGS)
    with pytest.raises(CircuitInputError, match="two pairs at least"):
        circuit_shard(backend, "induction", 1, 0, 1, ablation="mean", **ARGS)
    with pytest.raises(CircuitInputError, match="bos=40 is not a token id"):
        circuit_shard(backend, "induction", 1, 0, 1, bos=40, **ARGS)
    first = circuit_shard(backend, "induction", 1, 0, 1, bos=7, **ARGS)["pairs"][0]
    assert first["tokens"] == 9 and first["label"] == "seed 3"


def test_a_threshold_circuit_is_the_pairs_edges_above_it(backend):
    """``threshold``: each pair's circuit is its edges with |score| >= threshold; 0 keeps every edge
    (faithfulness 1), a threshold above every score keeps none (0), and each pair's count is reported."""
    from attnscope.pipelines.circuits.graph import Graph

    n_edges = int(Graph.of(backend.sites).valid().sum())
    every = circuit_shard(backend, "induction", 2, 0, 2, threshold=0.0, **ARGS)["pairs"]
    assert [r["edges"] for r in every] == [n_edges, n_edges]
    assert [r["faithfulness"] for r in every] == pytest.approx([1.0, 1.0], abs=1e-9)
    none = circuit_shard(backend, "induction", 2, 0, 2, threshold=1e9, **ARGS)["pairs"]
    assert [r["edges"] for r in none] == [0, 0] and [r["faithfulness"] for r in none] == pytest.approx([0, 0], abs=1e-9)
    clean, corr, metric, _ = pair_ids(backend, "induction", 0, half=4, seed=3, metric="loss", pairs=())
    scores = eap(prepare(backend.model, backend.sites, clean, corr, metric))
    cut = float(np.sort(np.abs(scores[~np.isnan(scores)]))[-7])  # the 7th largest |score|
    some = circuit_shard(backend, "induction", 1, 0, 1, threshold=cut, **ARGS)["pairs"][0]
    assert some["edges"] == 7
    keep = top_edges(scores, threshold=cut)
    assert some["faithfulness"] == pytest.approx(
        faithfulness(prepare(backend.model, backend.sites, clean, corr, metric), keep), abs=1e-9
    )
