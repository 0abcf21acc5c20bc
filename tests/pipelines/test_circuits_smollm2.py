"""Circuits on the real SmolLM2: the graph pass (heads recomputed from per-receiver inputs) is the
model's own forward, circuit runs reduce to the clean / corrupted passes, and EAP's top edges on an
induction pair agree in rank with exact path patching (an independent computation: one patched
forward per edge)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.pipelines.circuits.attribution import eap
from attnscope.pipelines.circuits.extract import exact_recheck
from attnscope.pipelines.circuits.patching import prepare, run_circuit
from attnscope.pipelines.circuits.tasks import induction_pairs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prep(smollm2):
    pairs = induction_pairs(smollm2.model.config.vocab_size, n=1, half=10, seed=0, bos=0, low=1000)
    return prepare(smollm2.model, smollm2.sites, pairs.clean, pairs.corrupted, pairs.metric)


def test_graph_pass_matches_the_model_and_circuits_reduce(smollm2, prep):
    with torch.no_grad():
        logits = smollm2.model(input_ids=prep.clean_ids, use_cache=False).logits
    torch.testing.assert_close(prep.clean.logits, logits, rtol=1e-4, atol=1e-4)
    assert prep.m_clean < prep.m_corrupted - 2.0  # it does induction: the repeat lowers the loss
    valid = prep.graph.valid()
    assert run_circuit(prep, valid) == pytest.approx(prep.m_clean, abs=1e-3)
    assert run_circuit(prep, np.zeros_like(valid)) == pytest.approx(prep.m_corrupted, abs=1e-3)


def test_eap_ranks_agree_with_exact_patching(prep):
    agree = exact_recheck(prep, eap(prep), n=20)
    assert agree.spearman > 0.3, agree
    signs = np.sign(agree.attributed) == np.sign(agree.exact)
    assert signs.mean() >= 0.7, agree


def test_capital_pairs_keep_only_what_the_model_gets_right(smollm2):
    from attnscope.pipelines.circuits.tasks import CAPITALS, capital_pairs

    tok = smollm2.tokenizer

    def encode(text):
        return tok(text, add_special_tokens=False)["input_ids"]

    def predict(ids):
        with torch.no_grad():
            return int(smollm2.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].argmax())

    pairs = capital_pairs(encode, predict)
    n = pairs.clean.shape[0]
    assert 3 <= n <= len(CAPITALS) and pairs.clean.shape == pairs.corrupted.shape
    for row, (right, wrong) in zip(pairs.clean.tolist(), pairs.metric.answers, strict=True):
        assert predict(row) == right != wrong
    prep = prepare(smollm2.model, smollm2.sites, pairs.clean, pairs.corrupted, pairs.metric)
    assert prep.m_clean > prep.m_corrupted  # the right capital wins on its own country only
