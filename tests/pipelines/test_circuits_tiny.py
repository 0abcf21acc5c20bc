"""Circuits on tiny Hugging Face decoders (Llama with grouped-query attention, GPT-2) built here:
a planted two-head circuit recovered exactly, EAP against the finite-difference derivative of exact
patching, zero effects for identical inputs, the stream as the sum of the senders, circuit runs that
reduce to the clean / corrupted passes, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

from attnscope.models import attention_fn
from attnscope.models.session import SiteRecorder, attach, session
from attnscope.pipelines.circuits.attribution import eap, eap_ig, receiver_grads
from attnscope.pipelines.circuits.extract import exact_recheck, top_edges
from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import fixed_delta, patch_edge, prepare, run_circuit
from attnscope.pipelines.circuits.stream import run_graph
from attnscope.pipelines.circuits.tasks import induction_pairs

V, N = 40, 10
METRIC = CircuitMetric("answer_logit_diff", answers=((3, 7),))


def _model(arch: str, seed: int = 0):
    attention_fn.register()
    if arch == "llama":
        cfg = LlamaConfig(
            vocab_size=V,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        )
    else:
        cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=4)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attention_fn.NAME).eval().double()
    return model, attach(model, arch)


def _pair(seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, V, (1, N), generator=g), torch.randint(0, V, (1, N), generator=g)


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def prep(request):
    model, sites = _model(request.param)
    clean, corr = _pair()
    return prepare(model, sites, clean, corr, METRIC)


def test_the_graph_pass_is_the_models_forward(prep):
    logits = prep.model(input_ids=prep.clean_ids).logits
    torch.testing.assert_close(prep.clean.logits, logits, rtol=0, atol=1e-10)


def test_circuit_runs_reduce_to_the_clean_and_corrupted_passes(prep):
    valid = prep.graph.valid()
    assert run_circuit(prep, valid) == pytest.approx(prep.m_clean, abs=1e-10)
    assert run_circuit(prep, np.zeros_like(valid)) == pytest.approx(prep.m_corrupted, abs=1e-10)


def test_one_edge_patch_is_the_circuit_without_that_edge(prep):
    valid = prep.graph.valid()
    for s, r in [
        (0, 0),
        (prep.graph.head_sender(0, 1), prep.graph.receiver(1, "k", 1)),
        (prep.graph.mlp_sender(0), prep.graph.receiver(0, "logits")),
    ]:
        keep = valid.copy()
        keep[s, r] = False
        assert patch_edge(prep, s, r) == pytest.approx(run_circuit(prep, keep) - prep.m_clean, abs=1e-10)


def test_eap_is_the_derivative_of_exact_patching(prep):
    """score(u -> v) = d/de M(x_v + e (corr_u - clean_u)) at e = 0, by central differences. Llama's
    RMSNorm runs in float32 even in a float64 model (transformers upcasts), so there the step is
    larger and the tolerance looser; GPT-2's LayerNorm stays float64."""
    scores = eap(prep)
    g = prep.graph
    eps, rel = (1e-5, 1e-6) if prep.sites.family == "gpt2" else (1e-2, 5e-3)
    edges = [
        (0, g.receiver(0, "q", 2)),
        (g.head_sender(0, 3), g.receiver(1, "v", 0)),
        (g.mlp_sender(0), g.receiver(1, "mlp")),
        (g.head_sender(1, 0), g.receiver(0, "logits")),
    ]
    for s, r in edges:
        delta = prep.corrupted.senders[s] - prep.clean.senders[s]
        ms = []
        for sign in (1, -1):
            with torch.no_grad():
                out, _ = run_graph(
                    prep.model, prep.sites, prep.clean_ids, fixed_delta(g, r, sign * eps * delta), prep.params
                )
            ms.append(float(prep.metric(out.logits, prep.clean_ids)))
        fd = (ms[0] - ms[1]) / (2 * eps)
        assert scores[s, r] == pytest.approx(fd, rel=rel, abs=1e-9)


def test_receiver_gradients_sum_to_the_embedding_gradient(prep):
    """Every receiver reads the embedding directly, so sum_v dM/dx_v = dM/dE (conservation of the split)."""
    grads = receiver_grads(prep, prep.clean_ids)
    leaf = prep.clean.senders[0].clone().requires_grad_(True)

    class Embed:
        def wants(self, site, layer):
            return site == "resid_pre" and layer == 0

        def edit_site(self, site, layer, value):
            return leaf

    with torch.enable_grad(), session(Embed()):
        m = prep.metric(prep.model(input_ids=prep.clean_ids).logits, prep.clean_ids)
        (want,) = torch.autograd.grad(m, [leaf])
    torch.testing.assert_close(grads.sum(0), want, rtol=1e-4, atol=1e-6)  # float32 norms (Llama)


def test_the_stream_is_the_sum_of_its_senders(prep):
    rec = SiteRecorder({"resid_pre", "resid_post"})
    with torch.no_grad(), session(rec):
        prep.model(input_ids=prep.clean_ids)
    g, sites, senders = prep.graph, prep.sites, prep.clean.senders
    bias = torch.zeros(sites.d_model, dtype=senders.dtype)
    for layer in range(sites.n_layers + 1):
        upto = 1 + layer * (g.n_heads + 1)
        want = rec.values["resid_post"][layer - 1] if layer == sites.n_layers else rec.values["resid_pre"][layer]
        torch.testing.assert_close(senders[:upto].sum(0) + bias, want, rtol=0, atol=1e-10)
        if layer < sites.n_layers and sites.blocks[layer].b_O is not None:
            bias = bias + sites.blocks[layer].b_O


def test_identical_inputs_give_zero_everywhere():
    model, sites = _model("llama")
    clean, _ = _pair()
    p = prepare(model, sites, clean, clean.clone(), METRIC)
    assert np.nanmax(np.abs(eap(p))) == 0.0
    assert np.nanmax(np.abs(eap_ig(p, 3))) == 0.0
    g = p.graph
    for s, r in [(0, 0), (g.head_sender(0, 2), g.receiver(1, "q", 1)), (g.mlp_sender(1), g.receiver(0, "logits"))]:
        assert patch_edge(p, s, r) == pytest.approx(0.0, abs=1e-12)
        assert patch_edge(p, s, r, "denoising") == pytest.approx(0.0, abs=1e-12)


def test_eap_ig_completeness_on_the_embedding_edges(prep):
    """IG: the embedding's edges sum to M(corrupted) - M(clean) as the steps grow (Riemann sum)."""
    gap = prep.m_corrupted - prep.m_clean
    errs = [abs(np.nansum(eap_ig(prep, k)[0]) - gap) for k in (4, 32)]
    assert errs[1] < errs[0]
    assert errs[1] < 0.1 * abs(gap)


def _planted():
    """A Llama whose only live parts are L0H1 and L1H2 (every other head's W_O and every MLP's
    down projection zeroed): the circuit lives on edges among E, a0.h1, a1.h2 and the logits."""
    model, _ = _model("llama", seed=3)
    with torch.no_grad():
        for layer, live in ((0, 1), (1, 2)):
            attn = model.model.layers[layer].self_attn
            w = attn.o_proj.weight.view(32, 4, 8)
            keep = w[:, live].clone()
            w.zero_()
            w[:, live] = keep * 3.0
            model.model.layers[layer].mlp.down_proj.weight.zero_()
    return model, attach(model, "llama")


def test_a_planted_two_head_circuit_is_recovered_exactly():
    model, sites = _planted()
    clean, corr = _pair(5)
    p = prepare(model, sites, clean, corr, METRIC)
    g = p.graph
    live_s = {0, g.head_sender(0, 1), g.head_sender(1, 2)}
    live_r = {
        g.receiver(0, "q", 1),
        g.receiver(0, "k", 0),
        g.receiver(0, "v", 0),
        g.receiver(1, "q", 2),
        g.receiver(1, "k", 1),
        g.receiver(1, "v", 1),
        g.receiver(0, "logits"),
    }
    planted = np.zeros(g.valid().shape, bool)
    planted[np.ix_(sorted(live_s), sorted(live_r))] = True
    planted &= g.valid()
    for scores in (eap(p), eap_ig(p, 4)):
        nz = np.nan_to_num(np.abs(scores)) > 0
        assert not (nz & ~planted).any(), np.argwhere(nz & ~planted)
        assert abs(scores[g.head_sender(0, 1), g.receiver(1, "k", 1)]) > 0  # the head-to-head edge is found
        keep = top_edges(scores, k=int(nz.sum()))
        assert (keep == nz).all()
        assert run_circuit(p, keep) == pytest.approx(p.m_clean, abs=1e-10)  # faithfulness 1, exactly
    for s in range(g.n_senders):  # exact patching agrees: nothing outside the planted edges matters
        for r in range(g.n_receivers):
            if g.valid()[s, r] and not planted[s, r]:
                assert patch_edge(p, s, r) == pytest.approx(0.0, abs=1e-12)
    agree = exact_recheck(p, eap(p), n=int(planted.sum()))
    assert len(agree.edges) == int(planted.sum())


def test_refusals():
    model, sites = _model("llama")
    clean, corr = _pair()
    with pytest.raises(CircuitInputError, match="same number of tokens"):
        prepare(model, sites, clean, corr[:, :-1], METRIC)
    p = prepare(model, sites, clean, corr, METRIC)
    with pytest.raises(CircuitInputError, match="steps=0"):
        eap_ig(p, 0)
    with pytest.raises(CircuitInputError, match="unknown sender"):
        p.graph.parse_sender("a9.h0")
    with pytest.raises(CircuitInputError, match="not an edge"):
        p.graph.edge("a1.h0", "a0.h1<q>")
    with pytest.raises(CircuitInputError, match="k=10000"):
        top_edges(eap(p), k=10000)
    with pytest.raises(CircuitInputError, match="answer pair"):
        prepare(model, sites, clean, corr, CircuitMetric("answer_logit_diff"))
    assert p.graph.parse_receiver("a1.h3<k>") == p.graph.receiver(1, "k", 1)  # a query head names its kv head


def test_induction_pairs_are_seeded_and_aligned():
    a, b = induction_pairs(V, n=3, half=5, seed=2, bos=0), induction_pairs(V, n=3, half=5, seed=2, bos=0)
    assert torch.equal(a.clean, b.clean) and torch.equal(a.corrupted, b.corrupted)
    assert a.clean.shape == a.corrupted.shape == (3, 11)
    assert torch.equal(a.clean[:, 1:6], a.clean[:, 6:])
    assert torch.equal(a.clean[:, :6], a.corrupted[:, :6])
    assert a.metric.positions == tuple(range(6, 10))  # positions 6..9 predict the copy's tokens 7..10


def test_concurrent_requests_do_not_interfere():
    """Each pass's hooks live in its own session (a ContextVar): EAP and exact patches of two pairs run
    on two threads at once equal their sequential values."""
    from concurrent.futures import ThreadPoolExecutor

    model, sites = _model("llama")
    pairs = [_pair(11), _pair(12)]

    def work(pair):
        p = prepare(model, sites, *pair, METRIC)
        return eap(p), patch_edge(p, 0, p.graph.receiver(1, "k", 0)), run_circuit(p, top_edges(eap(p), k=5))

    sequential = [work(pair) for pair in pairs]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            concurrent = list(pool.map(work, pairs))
            for (s1, e1, c1), (s2, e2, c2) in zip(sequential, concurrent, strict=True):
                np.testing.assert_array_equal(s1, s2)
                assert e1 == e2 and c1 == c2


@pytest.mark.parametrize("metric", [CircuitMetric("loss"), CircuitMetric("answer_prob", (4, 9), ((3, 7),))])
def test_the_other_metrics_are_differentiated_exactly(metric):
    """GPT-2 (float64 throughout): EAP of the loss and of the answer's probability at two positions
    equals the central difference of exact patching, and the circuit runs reduce."""
    model, sites = _model("gpt2")
    p = prepare(model, sites, *_pair(4), metric)
    g, eps = p.graph, 1e-5
    s, r = g.head_sender(0, 2), g.receiver(1, "q", 3)
    delta = p.corrupted.senders[s] - p.clean.senders[s]
    ms = []
    for sign in (1, -1):
        with torch.no_grad():
            out, _ = run_graph(model, sites, p.clean_ids, fixed_delta(g, r, sign * eps * delta), p.params)
        ms.append(float(metric(out.logits, p.clean_ids)))
    assert eap(p)[s, r] == pytest.approx((ms[0] - ms[1]) / (2 * eps), rel=1e-4, abs=1e-12)
    assert run_circuit(p, g.valid()) == pytest.approx(p.m_clean, abs=1e-12)


def _dense_run(prep, keep, source=None) -> float:
    """The circuit run by the definition, ``x_v + sum_u patched[u, v] (source_u - run_u)`` with every
    sender stacked at every receiver (the reference for ``circuit_deltas``' running total)."""
    g = prep.graph
    patched = torch.as_tensor(g.valid() & ~keep)
    source = prep.corrupted.senders if source is None else source

    def deltas(layer, part, senders):
        sl = g.slots(layer, part) if part != "logits" else slice(g.n_receivers - 1, g.n_receivers)
        diff = source[: len(senders)] - torch.stack(senders)
        d = torch.einsum("nr,nbpd->bprd", patched[: len(senders), sl].to(diff.dtype), diff)
        return d if part in ("q", "k", "v") else d[:, :, 0]

    with torch.no_grad():
        out, _ = run_graph(prep.model, prep.sites, prep.clean_ids, deltas, prep.params)
    return float(prep.metric(out.logits, prep.clean_ids))


@pytest.mark.parametrize("share", [0.0, 0.01, 0.1, 0.4, 0.6, 0.95, 1.0])
def test_circuit_runs_equal_the_dense_definition(prep, share):
    """A circuit run with ``share`` of the edges kept (sparse circuits take the running total less the
    kept edges, dense ones the stacked senders) equals the definition, with corrupted and mean values."""
    valid = prep.graph.valid()
    rng = np.random.default_rng(int(share * 100))
    keep = valid & (rng.random(valid.shape) < share)
    assert run_circuit(prep, keep) == pytest.approx(_dense_run(prep, keep), abs=1e-10)
    source = 0.5 * (prep.clean.senders + prep.corrupted.senders)
    assert run_circuit(prep, keep, source) == pytest.approx(_dense_run(prep, keep, source), abs=1e-10)
