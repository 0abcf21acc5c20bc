"""The [CLS] readout (``attnscope.models.cls_readout``): a BERT classifier's last block computed for
position 0 alone gives the whole model's logits, leaves the shared model as it was, and is refused
where the arithmetic does not hold."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.models.cls_readout import ClsReadout, cls_readout
from attnscope.models.loading import load_model
from attnscope.models.site_table import build_sites


def _tiny_bert(layers: int):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=50, hidden_size=24, num_hidden_layers=layers, num_attention_heads=3,
        intermediate_size=40, max_position_embeddings=32, num_labels=3,
    )  # fmt: skip
    torch.manual_seed(layers)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and "embeddings" not in name:
                p.mul_(3.0)  # uneven attention, saturating pooler
            elif "bias" in name or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.5)
    return model


def _right_padded(lengths: list[int], vocab: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    n = max(lengths)
    ids = torch.zeros(len(lengths), n, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, m in enumerate(lengths):
        ids[i, :m] = torch.randint(1, vocab, (m,), generator=g)
        mask[i, :m] = 1
    return ids, mask


@pytest.mark.parametrize("layers", [2, 3])
def test_the_readout_equals_the_whole_models_logits_on_a_padded_batch(layers):
    model = _tiny_bert(layers)
    readout = ClsReadout(model, build_sites(model, "bert"))
    ids, mask = _right_padded([9, 4, 1, 12, 7], vocab=50)
    with torch.inference_mode():
        want = model(input_ids=ids, attention_mask=mask).logits
    got = readout(ids, mask)
    assert got.shape == want.shape == (5, 3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=0)
    assert float((want[:, 0] - want[:, 1]).abs().max()) > 1e-2  # the logits differ: not a trivial model


def test_the_readout_reads_position_0_only_of_its_last_block():
    # planted: tokens after [CLS] change the logits only through the last block's keys and values, so
    # a readout that ignored them (or read another position) would not follow them
    model = _tiny_bert(2)
    readout = ClsReadout(model, build_sites(model, "bert"))
    ids, mask = _right_padded([8, 8], vocab=50, seed=3)
    ids[1, 1:] = (ids[0, 1:] % 49) + 1  # same [CLS] token, different rest
    ids[1, 0] = ids[0, 0]
    with torch.inference_mode():
        want = model(input_ids=ids, attention_mask=mask).logits
    got = readout(ids, mask)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=0)
    assert float((got[0] - got[1]).abs().max()) > 1e-3


def test_building_a_readout_leaves_the_shared_model_whole():
    model = _tiny_bert(3)
    ids, mask = _right_padded([6, 3], vocab=50)
    with torch.inference_mode():
        before = model(input_ids=ids, attention_mask=mask).logits
    readout = ClsReadout(model, build_sites(model, "bert"))
    readout(ids, mask)
    assert len(model.bert.encoder.layer) == 3
    assert len(readout.body.encoder.layer) == 2
    assert (
        readout.body.encoder.layer[0].attention.self.query.weight
        is model.bert.encoder.layer[0].attention.self.query.weight
    )
    with torch.inference_mode():
        after = model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(before, after)


def test_minilm_sst2_reads_cls_alone_and_gives_its_logits():
    lm = load_model("minilm-sst2", device="cpu")
    readout = cls_readout(lm)
    assert readout is not None and cls_readout(lm) is readout  # built once per loaded model
    texts = [
        "a gorgeous, witty, seductive movie.",
        "the film is bad",
        "not bad at all, and I liked it more than I expected",
    ]
    enc = lm.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        want = lm.classifier(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    got = readout(enc["input_ids"], enc["attention_mask"])
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=0)
    assert len(lm.classifier.bert.encoder.layer) == lm.sites.n_layers


def test_models_that_do_not_read_cls_get_no_readout(tiny_causal_lms, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(tiny_causal_lms[0]))
    assert cls_readout(load_model("local:llama", device="cpu")) is None  # a causal LM: every position's logits
    assert cls_readout(load_model("minilm", device="cpu")) is None  # an embedding model: no classifier
