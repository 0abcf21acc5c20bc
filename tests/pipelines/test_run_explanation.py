"""``explain_run``: one run's prediction explained and scored, on the real MiniLM SST-2 classifier and a
tiny causal LM; checked against the parts it is made of (``example_from_text``/``example_from_ids`` +
``explain_example``) and on every refusal."""

import re

import numpy as np
import pytest

from attnscope.analysis.indices import OutOfRangeError
from attnscope.models.loading import ModelCache
from attnscope.pipelines.explainers import char_spans_to_tokens, example_from_ids, example_from_text
from attnscope.pipelines.faithfulness_eval import explain_example
from attnscope.pipelines.run_explanation import (
    TOP_NEXT_TOKENS,
    ExplainRequest,
    RunRequestError,
    TokenCapError,
    explain_run,
)

TEXT = "a gripping , funny and deeply moving film ."


@pytest.fixture(scope="module")
def models():
    return ModelCache(device="cpu")


def test_a_classifier_run_is_its_text_encoded_and_explained(models):
    seen = []
    got = explain_run(
        models, "minilm-sst2", TEXT, None, ExplainRequest(["attention", "random"], k=0.3), admit=seen.append
    )
    clf = models.get("minilm-sst2")
    ex = example_from_text(clf, TEXT)
    ref = explain_example(clf, ex, ["attention", "random"], k=0.3)
    assert seen == [len(ex)]  # the budget is asked once, with the example's length
    assert got.example.tokens == ex.tokens and got.position is None and got.label_ids is None
    assert got.labels == ["negative", "positive"] and got.target == int(np.argmax(ref["probs"]))
    np.testing.assert_allclose(got.probs, ref["probs"], rtol=1e-6)
    assert got.target_label == got.labels[got.target] and got.convention.name == "eraser"
    attention = got.explainers[0]
    assert [e.name for e in got.explainers] == ["attention", "random"]
    np.testing.assert_allclose(attention.scores, ref["scores"]["attention"], rtol=1e-6)
    assert attention.faithfulness.comprehensiveness == pytest.approx(ref["faithfulness"]["attention"].comprehensiveness)
    assert attention.plausibility is None  # no human rationale


def test_human_spans_become_token_marks_and_give_plausibility(models):
    spans = [(2, 10), (13, 18)]  # "gripping", "funny"
    got = explain_run(models, "minilm-sst2", TEXT, None, ExplainRequest(["random"], human_spans=spans))
    clf = models.get("minilm-sst2")
    human = char_spans_to_tokens(clf, TEXT, spans)
    np.testing.assert_array_equal(got.example.human, human)
    assert int(human.sum()) == 2 and got.explainers[0].plausibility is not None
    marks = [0] * len(got.example)
    marks[1] = 1
    given = explain_run(models, "minilm-sst2", TEXT, None, ExplainRequest(["random"], human_rationale=marks))
    assert given.example.human.tolist() == marks


@pytest.mark.parametrize(
    ("req", "error", "message"),
    [
        (ExplainRequest(["nope"]), RunRequestError, "nope"),
        (ExplainRequest(["random"], metrics=["nope"]), RunRequestError, "unknown metric"),
        (ExplainRequest(["random"], position=1), RunRequestError, "position applies to causal LMs"),
        (ExplainRequest(["random"], human_rationale=[1, 0]), RunRequestError, "0/1 for each of the run's 11 tokens"),
        (ExplainRequest(["random"], human_spans=[(5, 2)]), RunRequestError, "not [start, end) character ranges"),
        (
            ExplainRequest(["random"], human_rationale=[0] * 11, human_spans=[(0, 1)]),
            RunRequestError,
            "not both",
        ),
        (ExplainRequest(["random"], target=2), OutOfRangeError, "target=2 is out of range"),
        (ExplainRequest(["random"], convention="nope"), RunRequestError, "nope"),  # raised while explaining
    ],
)
def test_a_request_that_does_not_fit_says_what_to_change(models, req, error, message):
    with pytest.raises(error, match=re.escape(message)):
        explain_run(models, "minilm-sst2", TEXT, None, req)


def test_an_explainer_over_its_interactive_cap_is_refused_before_it_runs(models):
    long = " ".join(["fine"] * 140)
    seen = []
    with pytest.raises(TokenCapError, match="occlusion runs one forward pass per token"):
        explain_run(models, "minilm-sst2", long, None, ExplainRequest(["occlusion"]), admit=seen.append)
    with pytest.raises(TokenCapError, match="flow"):
        explain_run(models, "minilm-sst2", long, None, ExplainRequest(["flow"]))
    assert seen == []  # the budget is not asked for a request refused earlier
    with pytest.raises(RuntimeError, match="over budget"):

        def refuse(n):
            raise RuntimeError(f"over budget: {n} tokens")

        explain_run(models, "minilm-sst2", TEXT, None, ExplainRequest(["random"]), admit=refuse)


def test_a_causal_lm_explains_the_next_token_after_a_position(models, tiny_causal_lms, monkeypatch):
    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    lm = models.get("local:llama")
    ids = list(lm.encode_text("The cat sat on the mat").token_ids)
    got = explain_run(
        models, "local:llama", "", ids, ExplainRequest(["attention"], position=3, metrics=["sufficiency"])
    )
    ex = example_from_ids(lm, ids[:4])
    ref = explain_example(lm, ex, ["attention"], metrics=["sufficiency"])
    assert got.position == 3 and got.example.tokens == ex.tokens
    full = np.asarray(ref["probs"])
    order = np.argsort(-full, kind="stable")[:TOP_NEXT_TOKENS]
    assert got.label_ids == [int(i) for i in order] and got.target == int(order[0])
    np.testing.assert_allclose(got.probs, full[order], rtol=1e-6)
    assert got.labels == list(lm.encode_ids(got.label_ids).tokens) and got.target_label == got.labels[0]
    last = explain_run(models, "local:llama", "", ids, ExplainRequest(["random"]))
    assert last.position == len(ids) - 1 and len(last.example) == len(ids)
    with pytest.raises(OutOfRangeError, match=f"the run has {len(ids)} positions"):
        explain_run(models, "local:llama", "", ids, ExplainRequest(["random"], position=len(ids)))
    with pytest.raises(RunRequestError, match="not to next tokens"):
        explain_run(models, "local:llama", "", ids, ExplainRequest(["random"], human_spans=[(0, 1)]))
