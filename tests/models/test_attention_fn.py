"""The registered attention function ``attnscope_qk``: plain SDPA outside a request context, the
same outputs as eager attention, per-request recording and hooks that no other thread sees, and
probabilities when the caller asks ``output_attentions=True``."""

import threading

import numpy as np
import pytest
import torch

from attnscope.models.attention_fn import NAME, QKRecorder, attention_context, current_context

TEXT = "The capital of France is Paris. The cat sat on the mat."


@pytest.fixture(scope="module")
def llama(tiny_causal_lms):
    from transformers import AutoModelForCausalLM

    _, folders = tiny_causal_lms
    model = AutoModelForCausalLM.from_pretrained(folders["llama"], attn_implementation=NAME)
    return model.eval()


@pytest.fixture(scope="module")
def ids(tiny_tokenizer):
    return torch.tensor([tiny_tokenizer(TEXT)["input_ids"]])


def _eager_logits(model, ids, **kw):
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            return model(ids, **kw)
    finally:
        model.set_attn_implementation(NAME)


def test_outputs_equal_eager_and_nothing_is_recorded_outside_a_context(llama, ids):
    ref = _eager_logits(llama, ids).logits
    with torch.no_grad():
        out = llama(ids).logits
    assert current_context() is None
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


def test_output_attentions_gives_eager_probabilities(llama, ids):
    ref = _eager_logits(llama, ids, output_attentions=True).attentions
    with torch.no_grad():
        got = llama(ids, output_attentions=True).attentions
    assert len(got) == 2 and all(g is not None for g in got)
    for g, r in zip(got, ref):
        torch.testing.assert_close(g, r, atol=1e-6, rtol=0)


class KnockOut:
    """Pre-softmax knockout of the edge (query q -> key k) in one layer."""

    def __init__(self, layer: int, q: int, k: int):
        self.layer, self.q, self.k = layer, q, k

    def edit_logits(self, layer, logits):
        if layer == self.layer:
            logits = logits.clone()
            logits[:, :, self.q, self.k] = float("-inf")
        return logits


class AblateHead:
    def __init__(self, layer: int, head: int):
        self.layer, self.head = layer, head
        self.seen = []

    def edit_output(self, layer, output):
        self.seen.append(layer)
        if layer == self.layer:
            output = output.clone()
            output[:, :, self.head] = 0.0
        return output


def test_hooks_edit_one_request_and_the_recorder_sees_the_inputs(llama, ids):
    with torch.no_grad():
        base = llama(ids, output_attentions=True)
        with attention_context(hooks=[KnockOut(1, 5, 0)]):
            knocked = llama(ids, output_attentions=True)
        ablate = AblateHead(0, 2)
        with attention_context(hooks=[ablate]):
            ablated = llama(ids).logits
    assert knocked.attentions[1][0, :, 5, 0].abs().max() == 0.0
    assert base.attentions[1][0, :, 5, 0].min() > 0.0
    np.testing.assert_allclose(knocked.attentions[1][0, :, 5].sum(-1).numpy(), 1.0, atol=1e-5)
    torch.testing.assert_close(knocked.attentions[0], base.attentions[0])  # layer 0 untouched
    assert ablate.seen == [0, 1] and (ablated - base.logits).abs().max() > 1e-4
    with torch.no_grad():
        again = llama(ids).logits
    torch.testing.assert_close(again, base.logits)  # the hooks left nothing behind


def test_hooks_say_which_layers_they_edit(llama, ids):
    """A hook that declares no logit edits at a layer is not asked for them there (that layer keeps
    SDPA), and output edits still apply on the SDPA output."""

    class Declared(AblateHead):
        def __init__(self):
            super().__init__(1, 0)
            self.logit_layers = []

        def layer_edits(self, layer):
            return False, layer == 1

        def edit_logits(self, layer, logits):  # pragma: no cover - must not be called
            self.logit_layers.append(layer)
            return logits

    with torch.no_grad():
        base = llama(ids).logits
        declared = Declared()
        with attention_context(hooks=[declared]):
            got = llama(ids).logits
        plain = AblateHead(1, 0)
        with attention_context(hooks=[plain]):
            ref = llama(ids).logits
    assert declared.logit_layers == [] and declared.seen == [1]
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    assert (got - base).abs().max() > 1e-4


def test_contexts_are_per_thread(llama, ids):
    """Two threads run the same shared model at once: one records and knocks every edge to the
    first key out, the other runs plain; neither sees the other's context."""
    with torch.no_grad():
        plain = llama(ids).logits
    results, errors = {}, []
    start = threading.Barrier(2)

    class AllToFirst:
        def edit_logits(self, layer, logits):
            logits = logits.clone()
            logits[..., 1:, 0] = float("-inf")
            return logits

    def hooked():
        try:
            rec = QKRecorder()
            start.wait()
            for _ in range(5):
                with torch.no_grad(), attention_context(rec, hooks=[AllToFirst()]):
                    results["hooked"] = llama(ids).logits
            results["records"] = len(rec.layers)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def free():
        try:
            start.wait()
            outs = []
            for _ in range(5):
                with torch.no_grad():
                    outs.append(llama(ids).logits)
            results["free"] = outs
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hooked), threading.Thread(target=free)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert results["records"] == 2
    assert (results["hooked"] - plain).abs().max() > 1e-4
    for out in results["free"]:
        torch.testing.assert_close(out, plain)


def test_contexts_nest_and_restore(llama):
    outer, inner = QKRecorder(), QKRecorder()
    with attention_context(outer, hooks=["a"]) as c1:
        with attention_context(inner, hooks=["b"], return_probs=True) as c2:
            assert current_context() is c2 and c2.hooks == ("a", "b") and c2.recorder is inner
        assert current_context() is c1 and not c1.return_probs
    assert current_context() is None
