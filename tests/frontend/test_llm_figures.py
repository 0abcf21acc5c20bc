"""Pure builders of the LLM panels (llm_figures), without a browser: kv-grouped head labels, the
grouped model menu, the prediction panel, a generation step's rows, causal thumbnails."""

import numpy as np
import pytest
from test_figures import _decode_png

from attnscope.frontend.llm_figures import (
    ACTUAL_COLOR,
    GROUP_PREFIX,
    MASKED_RGB,
    OTHER_COLOR,
    actual_next,
    causal_thumbnail_src,
    class_figure,
    column_label,
    generation_segments,
    generation_step_figure,
    group_starts,
    head_label,
    head_order,
    is_grouped,
    kv_groups,
    model_options,
    next_token_figure,
    position_options,
    step_marks,
)
from attnscope.frontend.pages.explore_llm import generate_options
from attnscope.frontend.token_labels import calm_tokens
from attnscope.server.schemas import ModelPublic

SMOLLM2_KV = [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_heads_are_labelled_and_grouped_by_the_kv_head_they_share():
    assert head_label(3, 4, SMOLLM2_KV) == "L3 H4 (kv 1)" and column_label(4, SMOLLM2_KV) == "H4 (kv 1)"
    mha = list(range(12))  # one kv head per query head: no grouping, the usual labels
    assert not is_grouped(mha, 12) and head_label(0, 2, mha) == "L0H2" and head_label(0, 2) == "L0H2"
    assert column_label(2, None) == "H2" and head_order(12, mha) == list(range(12))
    interleaved = [0, 1, 0, 1]  # query heads 0 and 2 read kv 0: shown side by side
    assert head_order(4, interleaved) == [0, 2, 1, 3]
    assert kv_groups(4, interleaved) == [(0, [0, 2]), (1, [1, 3])]
    assert group_starts(4, interleaved) == {1} and group_starts(9, SMOLLM2_KV) == {3, 6}
    assert kv_groups(3, None) == [(None, [0, 1, 2])] and group_starts(3, None) == set()


def _model(name, modality, task, family="bert"):
    return ModelPublic(name=name, family=family, modality=modality, source="package", task=task, max_tokens=512)


def test_the_model_menu_is_grouped_by_task_and_leaves_vision_models_to_vision():
    models = [
        _model("smollm2", "text", "causal-lm", "llama"),
        _model("minilm-sst2", "text", "classification"),
        _model("vit-gauss", "vision", "classification", "vit"),
        _model("minilm", "text", "embedding"),
        _model("text-shift", "text", "classification", "andreoli-shift"),
    ]
    options = model_options(models, "text")
    assert [o["label"] for o in options] == [
        "— Text · encoders —",
        "minilm · bert · embedding",
        "— Text · classifiers —",
        "minilm-sst2 · bert · classification",
        "text-shift · andreoli-shift · classification",
        "— Text · causal LMs —",
        "smollm2 · llama · causal-lm",
    ]
    headers = [o for o in options if o["value"].startswith(GROUP_PREFIX)]
    assert len(headers) == 3 and all(o["disabled"] for o in headers)
    assert not any(o.get("disabled") for o in options if not o["value"].startswith(GROUP_PREFIX))
    vision = model_options([m.model_dump() for m in models], "vision")  # dicts work too
    assert [o["value"] for o in vision] == [f"{GROUP_PREFIX}vision/classification", "vit-gauss"]


TOP = [
    {"token_id": 7, "token": "␣Paris", "text": " Paris", "prob": 0.6},
    {"token_id": 3, "token": "␣the", "text": " the", "prob": 0.1},
    {"token_id": 9, "token": "␣London", "text": " London", "prob": 0.05},
]


def test_next_token_bars_best_first_the_actual_token_in_orange_and_its_loss():
    fig = next_token_figure(TOP, 4, "␣is", {"token_id": 3, "token": "␣the"}, float(-np.log(0.1)))
    bar = fig.data[0]
    assert list(bar.x) == [0.6, 0.1, 0.05] and list(fig.layout.yaxis.ticktext) == ["␣Paris", "␣the", "␣London"]
    assert fig.layout.yaxis.autorange == "reversed"  # the most likely on top
    assert list(bar.marker.color) == [OTHER_COLOR, ACTUAL_COLOR, OTHER_COLOR]
    title = fig.layout.title.text
    assert "after “␣is” (position 4)" in title and "actual next: “␣the”" in title
    assert "loss 2.303 nats (p = 0.100)" in title
    last = next_token_figure(TOP, 4, "␣is")  # the last position: nothing follows
    assert "no actual next token" in last.layout.title.text and ACTUAL_COLOR not in list(last.data[0].marker.color)


def test_class_bars_name_the_predicted_class():
    fig = class_figure(["negative", "positive"], [0.2, 0.8], "positive")
    assert fig.layout.title.text == "Predicted class: positive"
    assert list(fig.data[0].x) == [0.2, 0.8] and list(fig.data[0].marker.color) == [OTHER_COLOR, ACTUAL_COLOR]


def test_the_actual_next_token_and_the_positions_to_choose_from():
    tokens, ids = ["The", "␣cat", "␣sat"], [10, 11, 12]
    assert actual_next(ids, tokens, 0) == {"token_id": 11, "token": "␣cat"}
    assert actual_next(ids, tokens, 2) is None and actual_next(None, tokens, 0) is None
    labels = [o["label"] for o in position_options(tokens, prompt_tokens=2)]
    assert labels == ["0 · The", "1 · ␣cat", "2 · ␣sat (generated)"]
    assert [o["value"] for o in position_options(tokens)] == [0, 1, 2]


def test_a_long_runs_position_menu_is_a_window_around_the_position_and_anchors():
    tokens = [f"t{i}" for i in range(4096)]
    values = [o["value"] for o in position_options(tokens, around=2000)]
    assert values == sorted(set(range(1872, 2129)) | set(range(0, 4096, 64)) | {4095})
    assert len(values) < 330
    last = [o["value"] for o in position_options(tokens)]  # no position: around the last prompt token
    assert 4095 in last and 3967 in last and 3966 not in last
    assert len(position_options(tokens[:257])) == 257  # short runs: every position


def test_generation_text_marks_the_prompt_the_step_shown_and_what_comes_after():
    kinds = [k for _, k in generation_segments(["a", "b", "c", "d", "e"], 2, 3)]
    assert kinds == ["prompt", "prompt", "generated", "current", "later"]
    assert [k for _, k in generation_segments(["a", "b", "c"], 2, None)] == ["prompt", "prompt", "generated"]
    assert step_marks(8) == {i: str(i) for i in range(1, 9)}
    marks = step_marks(256)
    assert len(marks) <= 18 and 1 in marks and 256 in marks


def test_a_steps_figure_is_that_querys_rows_over_prompt_and_prefix_heads_grouped():
    tokens = ["The", "␣capital", "␣is", "␣Paris", "."]
    rows = np.zeros((4, 4), np.float32)  # [head, key]: query 3 ("␣Paris") sees keys 0..3
    rows[np.arange(4), [0, 1, 2, 3]] = 1.0
    kv = [0, 1, 0, 1]
    step = {"position": 4, "query": 3, "token_id": 5, "token": ".", "text": ".", "prob": 0.5}
    fig = generation_step_figure(rows, tokens, 3, step, 2, 2, layer=5, kv_head_of=kv)
    assert list(fig.layout.yaxis.ticktext) == ["L5 H0 (kv 0)", "L5 H2 (kv 0)", "L5 H1 (kv 1)", "L5 H3 (kv 1)"]
    z = np.asarray(fig.data[0].z)
    assert np.array_equal(z, rows[[0, 2, 1, 3]])  # rows reordered with their labels
    assert list(fig.layout.xaxis.ticktext) == calm_tokens(tokens[:4])  # ␣ drawn grey (token_labels)
    assert fig.layout.title.text.startswith("Step 2/2: “.” (p = 0.500) · layer 5")
    assert "query 3 “␣Paris”" in fig.layout.title.text and "generated before" in fig.layout.title.text
    xs = [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]
    assert xs == [2.5]  # where the generated prefix starts
    ys = [s.y0 for s in fig.layout.shapes if s.type == "line" and s.y0 == s.y1]
    assert ys == [1.5]  # between the kv groups
    first = generation_step_figure(rows[:, :3], tokens, 3, {**step, "query": 2, "prob": None}, 1, 2, 0)
    assert not [s for s in first.layout.shapes if s.x0 == s.x1]  # no generated key yet
    assert "p =" not in first.layout.title.text and "generated before" not in first.layout.title.text


def test_the_step_view_hides_keys_renormalising_each_heads_row_and_scales_per_row_or_log():
    tokens = ["<s>", "a", "b", "c"]
    rows = np.array([[0.8, 0.1, 0.05, 0.05], [0.5, 0.25, 0.25, 0.0]], np.float32)  # [head, key]
    step = {"position": 4, "query": 3, "token_id": 5, "token": "d", "text": "d", "prob": None}
    fig = generation_step_figure(rows, tokens, 3, step, 1, 1, 0, scaling="row", hidden=[0], hide="first")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[:, 0]).all()  # the hidden key blank
    np.testing.assert_allclose(z[:, 1:], [[1, 0.5, 0.5], [1, 1, 0]])  # renormalised, then each row to its max
    title = fig.layout.title.text
    assert "per-row scaling" in title and "first token hidden (<s>@0)" in title
    assert fig.data[0].colorbar.title.text == "weight / row max"
    log = generation_step_figure(rows, tokens, 3, step, 1, 1, 0, scaling="log")
    np.testing.assert_allclose(np.asarray(log.data[0].z)[0, :2], np.log10([0.8, 0.1]), rtol=1e-6)
    assert "log10 scaling" in log.layout.title.text and "hidden" not in log.layout.title.text
    plain = generation_step_figure(rows, tokens, 3, step, 1, 1, 0)
    assert "scaling" not in plain.layout.title.text and plain.data[0].colorbar.title.text == "weight"


def test_causal_thumbnails_grey_the_keys_a_head_never_sees():
    m = np.tril(np.full((6, 6), 0.1, np.float32))
    m[5, 0] = 1.0
    img = _decode_png(causal_thumbnail_src(m))
    upper = np.triu(np.ones((6, 6), bool), 1)
    assert np.all(img[upper] == MASKED_RGB) and not np.any(np.all(img[~upper] == MASKED_RGB, axis=-1))
    brightness = img.sum(-1).astype(float)
    brightness[upper] = np.inf
    assert np.unravel_index(brightness.argmin(), brightness.shape) == (5, 0)
    big = np.tril(np.ones((200, 200), np.float32))  # downsampled: a block is grey only if all of it is future
    small = _decode_png(causal_thumbnail_src(big))
    assert small.shape[0] == 50 and np.all(small[0, 1:] == MASKED_RGB) and not np.all(small[0, 0] == MASKED_RGB)


@pytest.mark.parametrize(
    "args, body, problem",
    [
        ((8, "greedy", 0.7, 3), {"max_new_tokens": 8, "seed": 3, "greedy": True}, ""),
        ((4, "sample", 0.5, None), {"max_new_tokens": 4, "seed": 0, "temperature": 0.5}, ""),
        ((None, "greedy", 0.7, 0), None, "max new tokens"),
        ((4, "sample", None, 0), None, "temperature"),
    ],
)
def test_generate_options_are_the_apis_body_or_what_to_change(args, body, problem):
    got, message = generate_options(*args)
    assert got == body and (problem in message if problem else message == "")
