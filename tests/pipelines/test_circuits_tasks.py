"""The shipped pair sets: indirect-object pairs drawn with a seed (the corrupted prompt names a third
person instead of the repeated subject, nothing else changes), the capitals a model names right, and
on SmolLM2 the sets it solves (capitals, IOI) and the refusal of a model that solves none."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.tasks import CAPITALS, IOI_NAMES, capital_items, ioi_pairs


def _names(text: str) -> list[str]:
    return [w.strip(",.") for w in text.split() if w.strip(",.") in IOI_NAMES]


def test_ioi_pairs_are_seeded_and_differ_only_in_the_repeated_subject():
    a, b, other = ioi_pairs(60, seed=4), ioi_pairs(60, seed=4), ioi_pairs(60, seed=5)
    assert a == b and a != other
    orders = Counter()
    for p in a:
        io, s = p.answer.strip(), p.wrong.strip()
        clean, corrupted = _names(p.clean), _names(p.corrupted)
        assert clean[2] == s and sorted(clean[:2]) == sorted([io, s])  # A and B, then the subject again
        assert corrupted[:2] == clean[:2] and corrupted[2] not in (io, s)  # a third name instead
        assert len(set(corrupted)) == 3 and Counter(clean)[s] == 2 and Counter(clean)[io] == 1
        cw, kw = p.clean.split(), p.corrupted.split()
        assert len(cw) == len(kw) and sum(x != y for x, y in zip(cw, kw, strict=True)) == 1
        orders["ABBA" if clean[0] == io else "BABA"] += 1
    assert orders["ABBA"] > 10 and orders["BABA"] > 10  # both orders of the first two names
    only = ioi_pairs(20, seed=1, one_token=lambda t: t in (" Mary", " John", " Kate"))
    assert {n for p in only for n in _names(p.clean) + _names(p.corrupted)} == {"Mary", "John", "Kate"}
    with pytest.raises(CircuitInputError, match="three one-token names"):
        ioi_pairs(5, one_token=lambda t: t == " Mary")
    with pytest.raises(CircuitInputError, match="n=0"):
        ioi_pairs(0)


def test_capital_items_keep_the_named_capitals_paired_by_prompt_length():
    """A planted predictor names the capital of every country but Spain and Peru; Cuba's prompt is
    made one token longer: its item finds no partner of its length and is left out."""
    wrong = {"Spain", "Peru"}

    vocab: dict[str, int] = {}  # one id per word, in order of first sight (hash() is salted per process)

    def encode(text: str) -> list[int]:
        return [vocab.setdefault(w, len(vocab) + 1) for w in text.split()] + ([0] if "Cuba" in text else [])

    def predict(ids: list[int]) -> int:
        for country, city in CAPITALS.items():
            if encode(f"The capital of {country} is") == ids:
                return -1 if country in wrong else encode(" " + city)[0]
        raise AssertionError(ids)

    items = capital_items(encode, predict)
    countries = [p.label.split("/")[0] for p in items]
    assert countries == [c for c in CAPITALS if c not in wrong | {"Cuba"}]
    for p in items:
        country, other = p.label.split("/")
        assert other not in wrong | {"Cuba"} and other != country
        assert (p.answer, p.wrong) == (" " + CAPITALS[country], " " + CAPITALS[other])
        assert p.clean == f"The capital of {country} is" and p.corrupted == f"The capital of {other} is"
    assert capital_items(encode, lambda ids: -1) == []


@pytest.mark.slow
def test_smollm2_solves_the_capitals_and_most_ioi_items(smollm2):
    from attnscope.pipelines.circuits.task_sets import answer_logit_diffs, solved_pairs, task_batch

    caps = solved_pairs(smollm2, "capitals")
    assert caps.candidates == 20 and 12 <= len(caps.pairs) <= 20
    assert (answer_logit_diffs(smollm2, caps.pairs) > 0).all()
    ioi = solved_pairs(smollm2, "ioi", n=24, seed=0)
    assert ioi.candidates == 24 and len(ioi.pairs) >= 17  # >= 70 %: SmolLM2 solves the task
    diffs = answer_logit_diffs(smollm2, ioi.pairs)
    assert (diffs > 0).all()
    drawn = ioi_pairs(24, 0, one_token=lambda t: len(smollm2.tokenizer(t, add_special_tokens=False)["input_ids"]) == 1)
    assert [p for p, d in zip(drawn, answer_logit_diffs(smollm2, drawn), strict=True) if d > 0] == ioi.pairs
    batch = task_batch(smollm2, "ioi", 5, n=24)
    assert len(batch) == 5 and len({len(smollm2.encode_text(p.clean).token_ids) for p in batch}) == 1


@pytest.mark.slow
def test_a_model_that_solves_none_is_refused(smollm2):
    """A random tiny Llama on SmolLM2's tokenizer names no capital: the set is refused, saying so."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    from attnscope.models import attention_fn
    from attnscope.models.session import attach
    from attnscope.pipelines.circuits.task_sets import solved_pairs

    attention_fn.register()
    cfg = LlamaConfig(
        vocab_size=smollm2.model.config.vocab_size, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1,
    )  # fmt: skip
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attention_fn.NAME).eval()
    tiny = SimpleNamespace(
        model=model, sites=attach(model, "llama"), tokenizer=smollm2.tokenizer, device="cpu",
        encode_text=smollm2.encode_text, spec=SimpleNamespace(name="tiny-random", task="causal-lm"),
    )  # fmt: skip
    with pytest.raises(CircuitInputError, match="tiny-random solves none of the 20 capitals items"):
        solved_pairs(tiny, "capitals")
