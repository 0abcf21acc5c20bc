"""``Sites`` and the recording session on real models: every decomposition the sites name sums to
the whole (SmolLM2, pre-norm Llama; MiniLM, post-norm BERT; zoo models), the weights are views of
the model's own parameters, q/k from ``W_Q``/``W_K`` (+ RoPE) equal what ``attnscope_qk`` records,
nothing is left on the model after a session, and concurrent sessions each see their own values."""

import threading

import pytest
import torch

from attnscope.models.attention_fn import QKRecorder, current_context
from attnscope.models.session import SiteRecorder, StopAt, session
from attnscope.models.sites import SiteOutOfRangeError, SitesUnavailableError

TEXT = "The capital of France is Paris, and the cat sat on the mat."


def _ids(backend, text=TEXT):
    return backend.encode_text(text).ids_tensor(backend.device)


def _close(a, b, tol=1e-5):
    a, b = a.double(), b.double()
    scale = max(1.0, float(b.abs().max()))
    assert float((a - b).abs().max()) <= tol * scale, float((a - b).abs().max())


def _head_sum(blk, z):
    """``sum_h z[..., h, :] @ W_O[h] + b_O`` (times the layer scale where there is one)."""
    out = torch.einsum("bphd,hdm->bpm", z.double(), blk.W_O.double())
    if blk.b_O is not None:
        out = out + blk.b_O.double()
    if blk.out_scale is not None:
        out = out * blk.out_scale.double()
    return out


def _pre_norm_conservation(sites, rec):
    v = rec.values
    for layer, blk in enumerate(sites.blocks):
        pre, attn, mlp, post = (v[s][layer] for s in ("resid_pre", "attn_out", "mlp_out", "resid_post"))
        _close(post, pre + attn + mlp)
        _close(v["resid_mid"][layer], pre + attn)
        _close(attn, _head_sum(blk, v["head_z"][layer]))
        if layer + 1 < sites.n_layers:
            _close(v["resid_pre"][layer + 1], post, 0)


# ------------------------------------------------------------------------------------ SmolLM2
@pytest.fixture(scope="module")
def smol_run(smollm2):
    rec, qk = SiteRecorder(), QKRecorder()
    ids = _ids(smollm2)
    with torch.inference_mode(), session(rec, recorder=qk):
        out = smollm2.model(input_ids=ids, use_cache=False, output_hidden_states=True)
    return ids, rec, qk, out


def test_smollm2_sites_are_views_of_its_weights(smollm2):
    sites = smollm2.sites
    assert (sites.family, sites.n_layers, sites.n_heads, sites.n_kv_heads, sites.d_head) == ("llama", 30, 9, 3, 64)
    blk = sites.blocks[4]
    attn = smollm2.model.model.layers[4].self_attn
    assert blk.W_Q.shape == (9, 576, 64) and blk.W_K.shape == (3, 576, 64) and blk.W_O.shape == (9, 64, 576)
    assert blk.W_Q.untyped_storage().data_ptr() == attn.q_proj.weight.untyped_storage().data_ptr()
    assert torch.equal(blk.W_Q[2, :, 5], attn.q_proj.weight[2 * 64 + 5])
    assert torch.equal(blk.W_O[2, 5], attn.o_proj.weight[:, 2 * 64 + 5])
    assert sites.unembed.W_U.shape == (576, 49152) and sites.norm_placement == "pre"
    assert blk.ln_attn.kind == "rmsnorm" and blk.rope is not None


def test_smollm2_residual_stream_is_conserved(smollm2, smol_run):
    _, rec, _, out = smol_run
    sites = smollm2.sites
    _pre_norm_conservation(sites, rec)
    for layer in range(sites.n_layers - 1):  # transformers' hidden states are the stream between blocks
        _close(rec.values["resid_post"][layer], out.hidden_states[layer + 1], 0)


def test_smollm2_final_norm_and_unembedding_give_the_logits(smollm2, smol_run):
    _, rec, _, out = smol_run
    sites = smollm2.sites
    last = rec.values["resid_post"][sites.n_layers - 1]
    logits = sites.final_norm.apply(last) @ sites.unembed.W_U
    _close(logits, out.logits)


def test_smollm2_q_and_k_from_the_weights_and_rope_equal_the_recorded_ones(smollm2, smol_run):
    ids, rec, qk, _ = smol_run
    sites = smollm2.sites
    positions = torch.arange(ids.shape[1])[None]
    for layer in (0, 13, 29):
        blk = sites.blocks[layer]
        x = blk.ln_attn.apply(rec.values["resid_pre"][layer])  # [1, pos, d_model]
        q = torch.einsum("bpm,hmd->bhpd", x, blk.W_Q)
        k = torch.einsum("bpm,hmd->bhpd", x, blk.W_K)
        q, k = blk.rope.apply(q, k, positions)
        _close(q, qk.layers[layer].query)
        _close(k, qk.layers[layer].key)


# ------------------------------------------------------------------------------------ MiniLM
def test_minilm_post_norm_stream_is_conserved(minilm):
    sites = minilm.sites
    assert (sites.family, sites.norm_placement, sites.unembed) == ("bert", "post", None)
    enc = minilm.model_inputs([minilm.encode_text(TEXT)])
    rec, qk = SiteRecorder(), QKRecorder()
    with torch.inference_mode(), session(rec, recorder=qk):
        out = minilm.model(**enc, output_hidden_states=True)
    v = rec.values
    for layer, blk in enumerate(sites.blocks):
        pre, attn, mid = v["resid_pre"][layer], v["attn_out"][layer], v["resid_mid"][layer]
        _close(attn, _head_sum(blk, v["head_z"][layer]))
        _close(mid, blk.ln_attn.apply(pre + attn))
        _close(v["resid_post"][layer], blk.ln_mlp.apply(mid + v["mlp_out"][layer]))
        _close(v["resid_post"][layer], out.hidden_states[layer + 1], 0)
        q = torch.einsum("bpm,hmd->bhpd", pre, blk.W_Q) + blk.b_Q[None, :, None]
        k = torch.einsum("bpm,hmd->bhpd", pre, blk.W_K) + blk.b_K[None, :, None]
        _close(q, qk.layers[layer].query)
        _close(k, qk.layers[layer].key)
    with pytest.raises(SitesUnavailableError, match="unembed"):
        sites.require("unembed", feature="the logit lens")
    with pytest.raises(SitesUnavailableError, match="a classification head"):
        sites.require("classifier", feature="the class lens")


def test_minilm_sst2_classification_head_is_the_pooler_and_classifier_it_runs():
    """A BERT sequence classifier's sites name its head: [CLS] pooling, the tanh pooler, the class
    weights; read from the last block's stream they give the model's own logits. A bare BertModel
    (minilm, an embedding) has no head."""
    from attnscope.models.loading import load_model

    backend = load_model("minilm-sst2", device="cpu")
    head = backend.sites.unembed
    assert (head.kind, head.pooling, head.pooler.act, tuple(head.W_U.shape)) == ("classifier", "cls", "tanh", (384, 2))
    assert backend.sites.final_norm is None and backend.sites.norm_placement == "post"
    enc = backend.model_inputs([backend.encode_text(TEXT)])
    rec = SiteRecorder()
    with torch.inference_mode(), session(rec):
        out = backend.model(**enc)
    last = rec.values["resid_post"][backend.sites.n_layers - 1]  # [batch, pos, d_model]
    _close(head.logits(last[:, 0]), out.logits)
    backend.sites.require("classifier", feature="the class lens")


# ------------------------------------------------------------------------------------ zoo
@pytest.mark.parametrize("name", ["text-vanilla", "ha-vit"])
def test_zoo_stream_is_conserved_and_its_head_gives_the_logits(name):
    from attnscope.models.loading import load_model

    backend = load_model(name, device="cpu")
    sites = backend.sites
    assert sites.family == "zoo" and sites.shared == (name == "ha-vit")
    if name == "text-vanilla":
        inp = backend.encode_text("a gripping , funny and moving film")
        x = inp.ids_tensor()
    else:
        from attnscope.models.zoo import samples

        inp = backend.encode_image(backend.prepare_image(samples.sample(next(iter(samples.datasets())), 0)[0]))
        x = inp.pixels
    rec = SiteRecorder()
    with torch.inference_mode(), session(rec):
        logits, _ = backend.model(x)
    assert sorted(rec.values["resid_pre"]) == list(range(sites.n_layers))
    _pre_norm_conservation(sites, rec)
    if sites.unembed is not None:
        last = sites.final_norm.apply(rec.values["resid_post"][sites.n_layers - 1])
        pooled = last.mean(1) if sites.unembed.pooling == "mean" else last[:, 0]
        _close(pooled @ sites.unembed.W_U + sites.unembed.b_U, logits)


# ------------------------------------------------------------------------------------ the session
def _hook_counts(model):
    return [
        (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks), len(m.__dict__))
        for m in model.modules()
    ]


def test_a_session_leaves_nothing_on_the_model_and_records_nothing_outside(minilm):
    before = _hook_counts(minilm.model)
    enc = minilm.model_inputs([minilm.encode_text(TEXT)])
    rec = SiteRecorder({"head_z"}, layers={2})
    with torch.inference_mode(), session(rec):
        minilm.model(**enc)
    assert current_context() is None and _hook_counts(minilm.model) == before
    assert list(rec.values) == ["head_z"] and list(rec.values["head_z"]) == [2]
    assert rec.values["head_z"][2].shape == (1, enc["input_ids"].shape[1], 12, 32)
    outside = SiteRecorder()
    with torch.inference_mode():
        minilm.model(**enc)
    assert outside.values == {}
    with pytest.raises(RuntimeError), session(SiteRecorder()):
        raise RuntimeError("fails inside")
    assert current_context() is None and _hook_counts(minilm.model) == before


def test_a_session_stops_the_pass_at_a_site_and_only_its_own_stop(minilm):
    """``stop_at`` ends the forward pass at the site (the session's recorder sees it first), skips the
    rest of the block and no later block runs; an outer session's stop passes through an inner
    session to its own; a stop the pass never reaches leaves it whole; other errors still raise."""
    enc = minilm.model_inputs([minilm.encode_text(TEXT)])
    rec, stop, after = SiteRecorder({"resid_pre", "resid_post"}), StopAt("resid_pre", 3), []
    with torch.inference_mode(), session(rec, stop_at=stop):
        minilm.model(**enc)
        after.append("ran")  # skipped: the pass stopped
    assert stop.reached and after == [] and current_context() is None
    assert sorted(rec.values["resid_pre"]) == [0, 1, 2, 3] and sorted(rec.values["resid_post"]) == [0, 1, 2]

    outer, inner = StopAt("resid_post", 1), SiteRecorder({"resid_post"})
    with torch.inference_mode(), session(stop_at=outer):
        with session(inner):
            minilm.model(**enc)
        after.append("inner ran")
    assert outer.reached and after == [] and sorted(inner.values["resid_post"]) == [0]

    never = StopAt("resid_pre", 6)  # MiniLM has blocks 0..5
    with torch.inference_mode(), session(stop_at=never):
        out = minilm.model(**enc)
    assert not never.reached and out.last_hidden_state.shape[1] == enc["input_ids"].shape[1]
    with pytest.raises(RuntimeError, match="fails"), session(stop_at=StopAt("resid_pre", 1)):
        raise RuntimeError("fails inside")
    with pytest.raises(SiteOutOfRangeError, match="unknown site"):
        StopAt("resid_middle", 1)


def test_two_threads_recording_different_sites_each_get_their_own(smollm2):
    texts = ["The cat sat on the mat.", "Paris is the capital of France and a large city."]
    asks = [({"resid_post"}, {3}), ({"head_z", "mlp_out"}, {7, 20})]

    def record(i):
        rec = SiteRecorder(*asks[i])
        with torch.inference_mode(), session(rec):
            smollm2.model(input_ids=_ids(smollm2, texts[i]), use_cache=False)
        return rec.values

    alone = [record(0), record(1)]
    barrier, got = threading.Barrier(2), [None, None]

    def worker(i):
        barrier.wait()
        for _ in range(3):
            got[i] = record(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        assert {s: sorted(v) for s, v in got[i].items()} == {s: sorted(asks[i][1]) for s in asks[i][0]}
        for s, layers in got[i].items():
            for layer, value in layers.items():
                assert torch.equal(value, alone[i][s][layer])


def test_out_of_range_sites_and_unknown_families_are_refused(minilm):
    from attnscope.models.site_table import build_sites

    with pytest.raises(SiteOutOfRangeError, match="0..5"):
        minilm.sites.block(6)
    with pytest.raises(SiteOutOfRangeError, match="unknown sites"):
        SiteRecorder({"resid_middle"})
    with pytest.raises(SitesUnavailableError, match="'t5' has no Sites entry"):
        build_sites(minilm.model, "t5")
