"""The class lens and the direct attribution of a class logit (``pipelines.writes.class_readout``) on a
tiny post-norm BERT classifier built here (tanh pooler, three classes, weights scaled so that the
norms and the tanh are far from linear), on the zoo's pre-norm mean-pooled classifier and on the
real MiniLM SST-2 classifier: the last layer's lens is the model's own distribution, the parts sum
to the logit, the source splits to the head's part, planted zeros stay zero, and every part equals an
independent computation with hooks (the model's own forward with the norm scales and the pooler's
gain detached, gradients taken along the residual stream only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.pipelines.writes.class_readout import class_attribution, class_lens, class_logits
from attnscope.pipelines.writes.recorded import record_writes

TEXT = "a gripping , funny and moving film about nothing much"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, tiny_tokenizer):
    """``(backend, planted backend)``: a 2-layer, 2-head BERT classifier of 3 classes (random, seeded),
    and a copy whose layer 1 head 1, layer 0 MLP, LayerNorm biases, attention output biases and head
    biases are zero (planted zeros), each loaded as a local checkpoint."""
    from transformers import BertConfig, BertForSequenceClassification

    from attnscope.models.loading import load_model

    root = tmp_path_factory.mktemp("classifiers")
    config = BertConfig(
        vocab_size=len(tiny_tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64, num_labels=3,
        id2label={0: "sad", 1: "flat", 2: "glad"}, label2id={"sad": 0, "flat": 1, "glad": 2},
    )  # fmt: skip
    backends = []
    for name in ("tinybert", "planted"):
        torch.manual_seed(0)
        model = BertForSequenceClassification(config).eval()
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if p.dim() == 2 and "embeddings" not in pname:
                    p.mul_(4.0)  # saturating tanh, uneven norm scales
                elif "bias" in pname or "LayerNorm" in pname:
                    p.add_(torch.randn_like(p) * 0.5)
            if name == "planted":
                layers = model.bert.encoder.layer
                layers[1].attention.output.dense.weight[:, 8:] = 0.0  # head 1 of layer 1 writes nothing
                layers[0].output.dense.weight.zero_()
                layers[0].output.dense.bias.zero_()
                for layer in layers:
                    layer.attention.output.dense.bias.zero_()
                    layer.attention.output.LayerNorm.bias.zero_()
                    layer.output.LayerNorm.bias.zero_()
                model.bert.pooler.dense.bias.zero_()
                model.classifier.bias.zero_()
        model.save_pretrained(root / name)
        tiny_tokenizer.save_pretrained(root / name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        backends = [load_model(f"local:{name}", device="cpu") for name in ("tinybert", "planted")]
    return backends


@pytest.fixture(scope="module")
def minilm_sst2():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


def _own_logits(backend, inp) -> torch.Tensor:
    with torch.inference_mode():
        return backend.model(**backend.model_inputs([inp])).logits[0].float()


def hooked_parts(backend, inp, target: int, contrast: int | None) -> dict:
    """The parts computed independently: the model's own forward with every LayerNorm's scale and the
    pooler's tanh gain detached (their clean values), each sub-layer reading a detached copy of its
    input (so gradients run along the residual stream only), and each write made a leaf; a part is
    ``grad . write`` (the function is linear in the writes along that path)."""
    model = backend.model.base_model
    leaves: dict = {}
    hooks = []

    def frozen_ln(mod, args, out):
        x = args[0]
        mu = x.mean(-1, keepdim=True)
        s = (x.var(-1, unbiased=False, keepdim=True) + mod.eps).sqrt().detach()
        return (x - mu) / s * mod.weight + mod.bias

    def leaf(name):
        def hook(mod, args, out):
            t = out.detach().requires_grad_(True)
            leaves[name] = t
            return t

        return hook

    def detach_input(mod, args, kwargs):
        return (args[0].detach(), *args[1:]), kwargs

    def frozen_tanh(mod, args, out):
        z = args[0]
        return z * (torch.tanh(z) / z).detach()

    def z_leaf(layer):
        def pre(mod, args):
            t = args[0].detach().requires_grad_(True)
            leaves[("z", layer)] = t
            return (t,)

        return pre

    def out_grad(layer):
        def hook(mod, args, out):
            out.register_hook(lambda g: leaves.__setitem__(("g_out", layer), g))

        return hook

    try:
        hooks.append(model.embeddings.register_forward_hook(leaf("embed")))
        hooks.append(model.pooler.activation.register_forward_hook(frozen_tanh))
        for layer, blk in enumerate(model.encoder.layer):
            hooks.append(blk.attention.self.register_forward_pre_hook(detach_input, with_kwargs=True))
            hooks.append(blk.intermediate.register_forward_pre_hook(detach_input, with_kwargs=True))
            hooks.append(blk.attention.output.dense.register_forward_pre_hook(z_leaf(layer)))
            hooks.append(blk.attention.output.dense.register_forward_hook(out_grad(layer)))
            hooks.append(blk.output.dense.register_forward_hook(leaf(("mlp", layer))))
            for ln in (blk.attention.output.LayerNorm, blk.output.LayerNorm):
                hooks.append(ln.register_forward_hook(frozen_ln))
        out = backend.model(**backend.model_inputs([inp])).logits[0]
        logit = out[target] - (0 if contrast is None else out[contrast])
        logit.backward()
    finally:
        for h in hooks:
            h.remove()
    n_heads = backend.sites.n_heads
    heads, attn_bias, mlp = [], [], []
    for layer, blk in enumerate(model.encoder.layer):
        z = leaves[("z", layer)]  # [1, pos, head * d_head]: the output projection's input
        heads.append((z.grad * z).reshape(*z.shape[:2], n_heads, -1).sum((0, 1, 3)))
        bias = blk.attention.output.dense.bias.detach()
        attn_bias.append(float(leaves[("g_out", layer)].sum((0, 1)) @ bias))
        m = leaves[("mlp", layer)]
        mlp.append(float((m.grad * m).sum().detach()))
    e = leaves["embed"]
    return {
        "logit": float(logit.detach()),
        "embed": float((e.grad * e).sum()),
        "heads": torch.stack(heads).detach().numpy(),
        "attn_bias": np.array(attn_bias),
        "mlp": np.array(mlp),
    }


def test_the_last_layers_class_lens_is_the_models_own_distribution(tiny_bert, minilm_sst2):
    for backend in (*tiny_bert, minilm_sst2):
        inp = backend.encode_text(TEXT)
        writes = record_writes(backend, inp)
        own = torch.softmax(_own_logits(backend, inp), -1)
        lens = class_lens(writes, k=2)
        n_classes = own.shape[0]
        assert lens.top_probs.shape == (backend.sites.n_layers + 1, 2)
        np.testing.assert_allclose(torch.softmax(class_logits(writes)[-1], -1), own, atol=1e-5)
        assert lens.top_ids[-1, 0] == int(own.argmax()) and lens.target[-1] == int(own.argmax())
        assert lens.top_probs[-1, 0] == pytest.approx(float(own.max()), abs=1e-5) and n_classes >= 2


@pytest.mark.parametrize("contrast", [None, 0])
def test_the_parts_sum_to_the_class_logit_and_the_splits_to_each_head(tiny_bert, contrast):
    backend = tiny_bert[0]
    inp = backend.encode_text(TEXT)
    att = class_attribution(record_writes(backend, inp), 2, contrast)
    own = _own_logits(backend, inp)
    assert att.logit == pytest.approx(float(own[2] - (0 if contrast is None else own[contrast])), abs=1e-5)
    assert abs(att.residual_error) < 1e-4 and att.total() == pytest.approx(att.logit, abs=1e-4)
    assert att.norm_bias is not None and np.abs(att.norm_bias).max() > 1e-3  # post-norm: the biases count
    np.testing.assert_allclose(att.sources.sum(-1), att.heads, atol=1e-5)
    assert att.sources.shape == (2, 2, len(inp))  # every key: the encoder's attention is not causal


def test_planted_zeros_stay_zero(tiny_bert):
    backend = tiny_bert[1]
    inp = backend.encode_text(TEXT)
    att = class_attribution(record_writes(backend, inp), 1, 2)
    assert att.heads[1, 1] == 0.0 and np.all(att.sources[1, 1] == 0.0)
    assert att.mlp[0] == 0.0 and np.all(att.attn_bias == 0.0) and np.all(att.norm_bias == 0.0)
    assert att.bias == 0.0  # no pooler or head bias, and a post-norm model has no final norm
    assert abs(att.residual_error) < 1e-4 and abs(att.heads[1, 0]) > 1e-3


@pytest.mark.parametrize("which", ["tiny", "minilm-sst2"])
def test_every_part_equals_a_hooked_computation(tiny_bert, minilm_sst2, which):
    backend = tiny_bert[0] if which == "tiny" else minilm_sst2
    inp = backend.encode_text(TEXT)
    target, contrast = (2, 0) if which == "tiny" else (1, 0)
    att = class_attribution(record_writes(backend, inp), target, contrast, split=False)
    ref = hooked_parts(backend, inp, target, contrast)
    assert att.logit == pytest.approx(ref["logit"], abs=1e-5)
    # relative as well as absolute: MiniLM's early parts are 1e-5..1e-4 (their direct path crosses up to
    # 12 frozen LayerNorms) and must match too
    assert att.embed == pytest.approx(ref["embed"], rel=1e-3, abs=1e-8)
    np.testing.assert_allclose(att.heads, ref["heads"], rtol=1e-3, atol=1e-8)
    np.testing.assert_allclose(att.mlp, ref["mlp"], rtol=1e-3, atol=1e-8)
    np.testing.assert_allclose(att.attn_bias, ref["attn_bias"], rtol=1e-3, atol=1e-8)


def test_a_pre_norm_mean_pooled_classifier_conserves_and_its_lens_ends_at_its_output():
    from attnscope.models.loading import load_model

    backend = load_model("text-vanilla", device="cpu")
    assert backend.sites.norm_placement == "pre" and backend.sites.unembed.pooling == "mean"
    inp = backend.encode_text("a gripping , funny and moving film")
    writes = record_writes(backend, inp)
    with torch.inference_mode():
        own, _ = backend.model(inp.ids_tensor())
    np.testing.assert_allclose(class_logits(writes)[-1], own[0].float(), atol=1e-5)
    att = class_attribution(writes, 1, 0)
    assert abs(att.residual_error) < 1e-4 and att.norm_bias is None
    np.testing.assert_allclose(att.sources.sum(-1), att.heads, atol=1e-5)
