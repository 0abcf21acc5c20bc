"""Interventions on real models: each kind against a reference computed another way, batched grids
against one-at-a-time runs, concurrent requests against sequential ones, and no state left behind."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
import torch

from attnscope.models.attention_fn import current_context
from attnscope.pipelines.interventions import (
    EdgeKnockout,
    HeadAblation,
    HeadPatch,
    InterventionError,
    InterventionSet,
    MetricSpec,
    ResidualPatch,
    head_effects,
    intervene,
)
from attnscope.pipelines.interventions.runner import Runner

TEXT = "a gorgeous, witty, seductive movie."
CORRUPT = "a boring, witty, seductive movie."  # same number of tokens


@pytest.fixture(scope="module")
def sst2():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


@pytest.fixture(scope="module")
def zoo_text():
    from attnscope.models.loading import load_model

    return load_model("text-vanilla", device="cpu")


def one(*items):
    return InterventionSet(tuple(items))


def hooks_of(model: torch.nn.Module) -> dict:
    """Every forward (pre-)hook on the model's modules but transformers' own output collectors (it
    installs them once per model, at the first forward that collects outputs, whoever calls it)."""

    def ours(hooks) -> tuple:
        return tuple(k for k, fn in hooks.items() if "output_capturing_hook" not in getattr(fn, "__qualname__", ""))

    return {
        name: (ours(mod._forward_hooks), ours(mod._forward_pre_hooks), "logits" in vars(mod) or "forward" in vars(mod))
        for name, mod in model.named_modules()
    }


@pytest.fixture(autouse=True)
def no_hooks_left(request):
    """Every test: the shared models' hooks are the same after it as before, and no attention
    context is left set."""
    models = [request.getfixturevalue(n).model for n in ("sst2", "zoo_text") if n in request.fixturenames]
    if "smollm2" in request.fixturenames:
        models.append(request.getfixturevalue("smollm2").model)
    before = [hooks_of(m) for m in models]
    yield
    assert [hooks_of(m) for m in models] == before
    assert all(not any(v[2] for v in hooks_of(m).values()) for m in models)  # wrapped logits, gates: on shells
    assert current_context() is None


def _zeroed_copy(backend, heads, out_proj):
    """A deep copy of the model whose output projection ignores the given heads (the reference)."""
    model = copy.deepcopy(backend.model)
    d = backend.attention.head_dim or backend.attention_modules()[0].head_dim
    mods = [m for m in model.modules() if m.__class__ is type(backend.attention_modules()[0])]
    if len(mods) == 1:  # a shared block
        mods = mods * backend.n_layers
    with torch.no_grad():
        for layer, head in heads:
            out_proj(mods[layer]).weight[:, head * d : (head + 1) * d] = 0
    return model


def test_zero_ablation_equals_zeroing_the_output_projection_encoder(sst2):
    heads = ((0, 1), (3, 2), (5, 11))
    res = intervene(sst2, sst2.encode_text(TEXT), one(HeadAblation(heads, "zero")), want_maps=False)
    ref = _zeroed_copy(sst2, heads, lambda m: m.output.dense)
    with torch.no_grad():
        logits = ref(**sst2.model_inputs([sst2.encode_text(TEXT)])).logits[0]
    np.testing.assert_allclose(res["altered"]["probs"], torch.softmax(logits, -1).numpy(), atol=1e-5)
    assert res["effects"]["prob"] != 0


def test_zero_ablation_equals_zeroing_the_output_projection_zoo(zoo_text):
    heads = ((0, 0), (1, 3))
    inp = zoo_text.encode_text("a gorgeous witty movie")
    res = intervene(zoo_text, inp, one(HeadAblation(heads, "zero")), want_maps=False)
    ref = _zeroed_copy(zoo_text, heads, lambda m: m.out)
    with torch.no_grad():
        logits, _ = ref(inp.ids_tensor())
    np.testing.assert_allclose(res["altered"]["probs"], torch.softmax(logits[0], -1).numpy(), atol=1e-5)


def test_clean_pass_and_maps_equal_the_backend_run(sst2):
    inp = sst2.encode_text(TEXT)
    res = intervene(sst2, inp, one(HeadAblation(((2, 0),), "uniform"), EdgeKnockout((1,), ((0, 1), (3, 4)))))
    cap = sst2.run(inp)
    np.testing.assert_allclose(res["clean"]["probs"], cap.output["probs"], atol=1e-5)
    np.testing.assert_allclose(res["clean_maps"].weights, cap.maps.weights, atol=1e-5)
    w = res["altered_maps"].weights
    np.testing.assert_allclose(w[2, 0], 1.0 / len(inp), atol=1e-6)  # uniform head
    assert np.all(w[1, :, 0, 1] == 0) and np.all(w[1, :, 3, 4] == 0)  # knocked-out edges
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(w[0], cap.maps.weights[0], atol=1e-5)  # layers before the edits unchanged


def test_residual_patch_of_the_last_layer_gives_the_source_output(sst2, zoo_text):
    for backend, clean, corrupt in ((sst2, TEXT, CORRUPT), (zoo_text, "a gorgeous movie", "a tedious movie")):
        inp, src = backend.encode_text(clean), backend.encode_text(corrupt)
        patch = one(ResidualPatch(backend.n_layers - 1, tuple(range(len(inp)))))
        res = intervene(backend, inp, patch, source=src, want_maps=False)
        np.testing.assert_allclose(res["altered"]["probs"], backend.run(src).output["probs"], atol=1e-5)
        back = intervene(backend, inp, patch, source=src, direction="denoising", want_maps=False)
        np.testing.assert_allclose(back["altered"]["probs"], backend.run(inp).output["probs"], atol=1e-5)


def test_patching_from_the_same_input_changes_nothing(sst2):
    inp = sst2.encode_text(TEXT)
    res = intervene(sst2, inp, one(HeadPatch(((0, 0), (4, 5)))), source=inp, want_maps=False)
    assert abs(res["effects"]["prob"]) < 1e-6


def test_batched_grid_equals_one_intervention_at_a_time(sst2):
    inp = sst2.encode_text(TEXT)
    for method in ("zero", "mean", "uniform"):
        grid = head_effects(sst2, inp, method, chunk=7)["effect"]
        assert grid.shape == (6, 12)
        for layer, head in ((0, 0), (2, 5), (5, 11)):
            single = intervene(sst2, inp, one(HeadAblation(((layer, head),), method)), want_maps=False)
            assert grid[layer, head] == pytest.approx(single["effects"]["prob"], abs=1e-6)


def test_concurrent_interventions_equal_their_sequential_values(sst2):
    inp = sst2.encode_text(TEXT)
    sets = [
        one(HeadAblation(((layer, layer + 1),), "zero"), HeadAblation(((5, layer),), "uniform")) for layer in range(5)
    ]
    sequential = [intervene(sst2, inp, s, want_maps=False)["effects"]["logit_diff"] for s in sets]
    assert len(set(np.round(sequential, 6))) == len(sets)  # they differ, so a mix-up would show
    results: dict[int, float] = {}

    def work(i: int) -> None:
        for _ in range(2):
            results[i] = intervene(sst2, inp, sets[i], want_maps=False)["effects"]["logit_diff"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(sets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, value in enumerate(sequential):
        assert results[i] == pytest.approx(value, abs=1e-6)


def test_causal_lm_zero_ablation_uniform_rows_and_residual_patch(smollm2):
    inp = smollm2.encode_text("The cat sat on the mat. The cat sat on the")
    heads = ((3, 1), (9, 4))
    res = intervene(smollm2, inp, one(HeadAblation(heads, "zero")), want_maps=False)
    ref = _zeroed_copy(smollm2, heads, lambda m: m.o_proj)
    with torch.no_grad():
        logits = ref(input_ids=inp.ids_tensor()).logits[0].float()
    loss = torch.nn.functional.cross_entropy(logits[:-1], inp.ids_tensor()[0, 1:]).item()
    clean = np.mean([v for v in smollm2.run(inp).output["loss"] if v is not None])
    assert res["effects"]["loss"] == pytest.approx(loss - clean, abs=1e-4)
    uni = intervene(smollm2, inp, one(HeadAblation(((0, 2),), "uniform")))["altered_maps"].weights[0, 2]
    n = len(inp)
    np.testing.assert_allclose(uni, np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None], atol=1e-6)
    src = smollm2.encode_text("The dog sat on the rug. The dog sat on the")
    assert len(src) == n
    patched = intervene(smollm2, inp, one(ResidualPatch(29, (n - 1,))), source=src, want_maps=False)
    assert patched["altered"]["top_k"][0][0]["token_id"] == smollm2.run(src).output["top_k"][-1][0]["token_id"]


def test_causal_lm_grid_reuses_the_clean_prefix_and_equals_one_at_a_time(smollm2):
    """The causal LM's grid runs each layer's heads from the clean residual stream entering that
    layer (blocks before it are skipped); logit edits (uniform) equal full one-at-a-time passes, and a
    chunk smaller than a layer's heads splits it without changing a value (zero: the test below)."""
    inp = smollm2.encode_text("The cat sat on the mat.")
    grid = head_effects(smollm2, inp, "uniform", chunk=4)["effect"]
    assert grid.shape == (30, 9) and np.abs(grid).max() > 1e-3
    for layer, head in ((0, 0), (1, 8), (14, 4), (29, 8)):
        single = intervene(smollm2, inp, one(HeadAblation(((layer, head),), "uniform")), want_maps=False)
        assert grid[layer, head] == pytest.approx(single["effects"]["loss"], abs=2e-5), (layer, head)


def test_a_start_refuses_what_it_cannot_skip(sst2):
    runner = Runner(sst2)
    inp = sst2.encode_text(TEXT)
    from attnscope.pipelines.interventions.runner import Start

    with pytest.raises(ValueError, match="one input"):
        runner.forward([inp, inp], start=Start(1, None, 2))
    with pytest.raises(ValueError, match="maps"):
        runner.forward([inp], want_maps=True, start=Start(1, None, 2))


def test_causal_lm_answer_logit_difference(smollm2):
    inp = smollm2.encode_text("The capital of France is")
    paris, london = (smollm2.tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in (" Paris", " London"))
    metric = MetricSpec("answer_logit_diff", answers=(paris, london))
    grid = head_effects(smollm2, inp, "zero", metric=metric, chunk=64)["effect"]
    assert grid.shape == (30, 9) and np.abs(grid).max() > 0.05
    for layer, head in ((0, 3), (17, 0), (29, 8)):  # output edits from the clean prefix: as full passes
        single = intervene(smollm2, inp, one(HeadAblation(((layer, head),))), metric=metric, want_maps=False)
        assert grid[layer, head] == pytest.approx(single["effects"]["answer_logit_diff"], abs=2e-5)


def test_bad_interventions_are_refused_with_what_to_change(sst2, zoo_text):
    inp = sst2.encode_text(TEXT)
    n = len(inp)
    cases = [
        (one(), "empty"),
        (one(HeadAblation(((6, 0),))), "layer=6 is out of range"),
        (one(HeadAblation(((0, 12),))), "head=12 is out of range"),
        (one(HeadAblation(())), "no heads"),
        (one(EdgeKnockout((0,), ((0, n),))), f"key={n} is out of range"),
        (one(EdgeKnockout((0,), tuple((0, k) for k in range(n)))), "every key"),
        (one(HeadPatch(((0, 0),))), "needs a source"),
        (one(ResidualPatch(0, (n,))), "position"),
    ]
    for iset, message in cases:
        with pytest.raises(InterventionError, match=message):
            intervene(sst2, inp, iset)
    with pytest.raises(InterventionError, match="same number of tokens"):
        intervene(sst2, inp, one(HeadPatch(((0, 0),))), source=sst2.encode_text("a much longer sentence than that one"))
    with pytest.raises(InterventionError, match="does not fit"):
        intervene(sst2, inp, one(HeadAblation(((0, 0),))), metric=MetricSpec("loss"))
    with pytest.raises(InterventionError, match="causal LMs"):
        intervene(sst2, inp, one(HeadAblation(((0, 0),))), metric=MetricSpec("prob", positions=(1,)))


def test_models_without_per_head_outputs_are_refused():
    from attnscope.models.loading import load_model

    with pytest.raises(InterventionError, match="no per-head attention output"):
        Runner(load_model("conv-attention", device="cpu"))
    ea = load_model("ea-vit", device="cpu")
    from attnscope.models.zoo import samples

    inp = ea.encode_image(ea.prepare_image(samples.sample("mnist", 0)[0]))
    with pytest.raises(InterventionError, match="Evolving Attention"):
        intervene(ea, inp, one(HeadAblation(((0, 0),), "uniform")))
    assert intervene(ea, inp, one(HeadAblation(((0, 0),), "zero")), want_maps=False)["effects"]["prob"] != 0
