"""The Circuits page's pasted pairs: one a line, read into the ``pairs`` of ``POST /circuits`` (answers
given the leading space of a token), with messages that say which line to fix; the body a task of
pairs sends instead of the clean and corrupted texts."""

import pytest

from attnscope.frontend.pages.circuits_callbacks import PAIRS_EXAMPLE, PairsError, circuit_body, parse_pairs
from attnscope.server.schemas.circuits import CircuitCreate


def test_pasted_pairs_are_read_one_a_line():
    pairs = parse_pairs(PAIRS_EXAMPLE + "\n\n", "answer_logit_diff")
    assert pairs == [
        {"clean": "The capital of France is", "corrupted": "The capital of Italy is", "answer": " Paris",
         "wrong": " Rome"},
        {"clean": "The capital of Italy is", "corrupted": "The capital of France is", "answer": " Rome",
         "wrong": " Paris"},
    ]  # fmt: skip
    assert parse_pairs("a b a b | a b c d", "loss") == [{"clean": "a b a b", "corrupted": "a b c d"}]


@pytest.mark.parametrize(
    "text, metric, match",
    [
        ("", "loss", "at least one pair"),
        ("a | b\nc", "loss", "line 2 has 1 non-empty fields; with loss write clean | corrupted"),
        ("a | b", "answer_logit_diff", "line 1 has 2 non-empty fields"),
        ("a | b | | d", "answer_prob", "line 1 has 4 non-empty fields"),
        ("\n".join(["a | b"] * 17), "loss", "17 pairs: the page sends at most 16"),
    ],
)
def test_pairs_the_page_cannot_read_say_which_line(text, metric, match):
    with pytest.raises(PairsError, match=match):
        parse_pairs(text, metric)


def test_the_body_of_a_pair_set_is_a_valid_circuit_request():
    body = circuit_body("smollm2", "x", "y", "answer_logit_diff", None, None, "eap", 5, 20, 3, PAIRS_EXAMPLE, "mean")
    assert "clean" not in body and len(body["pairs"]) == 2 and body["ablation"] == "mean"
    assert CircuitCreate.model_validate(body).pairs[1].answer == " Rome"
    single = circuit_body("smollm2", "x", "y", "loss", "a", "b", "eap", 5, 20, 3)
    assert CircuitCreate.model_validate(single).clean == "x" and "answer" not in single


def test_a_task_set_sends_the_task_instead_of_texts():
    """capitals and ioi: the API builds the pairs the model solves; the page sends only the task."""
    body = circuit_body(
        "smollm2", "x", "y", "answer_logit_diff", " a", " b", "eap", 5, 20, 3, PAIRS_EXAMPLE, task="ioi"
    )
    assert body["task"] == "ioi" and not {"clean", "corrupted", "pairs", "answer"} & set(body)
    assert CircuitCreate.model_validate(body).task == "ioi"
    one = circuit_body("smollm2", "x", "y", "loss", None, None, "eap", 5, 20, 3, task="capital-pair")
    assert "task" not in one and one["clean"] == "x"
