"""Pure figure builders, without a browser."""

import base64
import re
import struct
import zlib

import numpy as np
import pytest

from attnscope.frontend.figures import (
    detail_stride,
    downsample,
    head_detail_figure,
    head_view_figure,
    thumbnail_src,
    window_from_relayout,
)


def _decode_png(src: str) -> np.ndarray:
    raw = base64.b64decode(src.split(",", 1)[1])
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", raw[16:24])
    idat_len = struct.unpack(">I", raw[33:37])[0]
    data = zlib.decompress(raw[41 : 41 + idat_len])
    rows = [data[i * (3 * w + 1) + 1 : (i + 1) * (3 * w + 1)] for i in range(h)]
    return np.frombuffer(b"".join(rows), np.uint8).reshape(h, w, 3)


def test_thumbnail_is_a_valid_png_with_darkest_pixel_at_the_max():
    m = np.full((5, 5), 0.2, np.float32)
    m[2, 3] = 1.0
    img = _decode_png(thumbnail_src(m))
    assert img.shape == (5, 5, 3)
    brightness = img.sum(-1)
    assert np.unravel_index(brightness.argmin(), brightness.shape) == (2, 3)


def test_downsample_block_means_and_caps_size():
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(downsample(m, 2), [[2.5, 4.5], [10.5, 12.5]])
    assert downsample(np.ones((130, 70)), 64).shape == (44, 35)  # factors 3 and 2 (ceil)
    assert downsample(m, 64) is m


def test_head_detail_has_token_labels_on_both_axes_and_no_per_cell_text():
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]"]  # duplicate tokens stay separate positions
    w = np.random.default_rng(0).dirichlet(np.ones(5), 5).astype(np.float32)
    fig = head_detail_figure(w, tokens, "L0H2")
    assert list(fig.layout.xaxis.ticktext) == tokens and list(fig.layout.yaxis.ticktext) == tokens
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(np.array(fig.data[0].z), w)
    assert "%{z:.5f}" in fig.data[0].hovertemplate and fig.data[0].customdata is None
    assert (fig.data[0].x0, fig.data[0].dx) == (0, 1) and fig.layout.meta == {
        "stride": 1,
        "rows": [0, 5],
        "cols": [0, 5],
        "value": "weight",
        "labels": {
            "x": [f"{t} ({i})" for i, t in enumerate(tokens)],
            "y": [f"{t} ({i})" for i, t in enumerate(tokens)],
        },
    }
    payload = fig.to_json()
    assert "the → cat" not in payload and len(payload) < 12_000  # mostly the colour scale and the template


def test_head_detail_of_a_long_input_is_a_pooled_overview_of_bounded_size():
    tokens = [f"t{i}" for i in range(512)]
    stride = detail_stride((0, 512), (0, 512))
    assert stride == 2 and detail_stride((0, 4096), (0, 4096)) == 16 and detail_stride((100, 300), (0, 256)) == 1
    w = np.random.default_rng(1).random((256, 256)).astype(np.float32)
    fig = head_detail_figure(w, tokens, "L0H0", stride=stride)
    assert fig.layout.height == 900
    assert (fig.data[0].x0, fig.data[0].dx, fig.data[0].y0) == (0.5, 2, 0.5)  # cell centres in token positions
    ticks = list(fig.layout.xaxis.tickvals)
    assert ticks[:2] == [0, 11] and len(ticks) <= 48 and list(fig.layout.xaxis.ticktext)[1] == "t11"
    assert list(fig.layout.yaxis.range) == [511.5, -0.5]  # query 0 on top
    # the weights travel as one base64 float32 array (4/3 x 4 bytes a cell, plus JSON's escaped '/'),
    # no per-cell text: about 450 kB before the dashboard's gzip
    assert len(fig.to_json()) < 1.75 * 4 * 256 * 256 + 20_000


def test_a_zoom_window_sits_on_its_token_positions():
    tokens = [f"t{i}" for i in range(4096)]
    fig = head_detail_figure(np.zeros((40, 60), np.float32), tokens, "z", rows=(1000, 1040), cols=(980, 1040))
    assert fig.data[0].x0 == 980 and fig.data[0].y0 == 1000
    assert list(fig.layout.xaxis.range) == [979.5, 1039.5] and list(fig.layout.xaxis.ticktext)[0] == "t980"


def test_window_from_relayout():
    assert window_from_relayout(None, 100) is None
    assert window_from_relayout({"dragmode": "pan"}, 100) is None
    assert window_from_relayout({"xaxis.autorange": True, "yaxis.autorange": True}, 100) == {}
    box = {"xaxis.range[0]": 9.7, "xaxis.range[1]": 30.2, "yaxis.range[0]": 55.4, "yaxis.range[1]": 40.6}
    assert window_from_relayout(box, 100) == {"cols": [10, 31], "rows": [41, 56]}
    wide = {"xaxis.range[0]": -20, "xaxis.range[1]": 400}
    assert window_from_relayout(wide, 100, {"rows": [0, 10]}) == {"rows": [0, 10], "cols": [0, 100]}
    assert window_from_relayout({"xaxis.range[0]": 9.7, "xaxis.range[1]": 30.2}, 100, {"cols": [10, 31]}) is None


def _top(w: np.ndarray, k: int):
    idx = np.argsort(-w, axis=-1, kind="stable")[..., :k]
    return idx, np.take_along_axis(w, idx, -1)


def _lines(fig) -> list[tuple[int, int]]:
    """The head view's (query, key) lines, read from its path shapes ("M0,qL1,k" each)."""
    found = []
    for shape in fig.layout.shapes:
        found += [(int(q), int(k)) for q, k in re.findall(r"M0,(\d+)L1,(\d+)", shape.path)]
    return found


def test_head_view_draws_one_segment_per_strong_weight():
    tokens = ["a", "b", "c"]
    w = np.zeros((2, 3, 3), np.float32)
    w[0] = np.eye(3)
    w[1] = np.full((3, 3), 1 / 3)
    fig = head_view_figure(*_top(w, 2), tokens, heads=[0], layer=4)
    assert sorted(_lines(fig)) == [(0, 0), (1, 1), (2, 2)]  # the diagonal weights of head 0, nothing from head 1
    assert {s.line.width for s in fig.layout.shapes} == {6.0}  # weight 1: the strongest bin's width
    assert fig.layout.title.text == "Head view · layer 4"
    both = head_view_figure(*_top(w, 2), tokens, heads=[0, 1], layer=4)
    assert len([t for t in both.data if t.showlegend]) == 2


def test_head_view_of_a_long_input_is_denser():
    w = np.full((1, 512, 512), 1 / 512, dtype=np.float32)
    w[0, :, 0] = 0.5
    tokens = [f"t{i}" for i in range(512)]
    fig = head_view_figure(*_top(w, 8), tokens, heads=[0], layer=0)
    assert fig.layout.height == 9 * 512 + 120 + 24  # 22 px per token below 100 tokens
    assert head_view_figure(*_top(w[:, :10, :10], 3), tokens[:10], heads=[0], layer=0).layout.height == 360 + 24


def test_head_view_of_4096_tokens_draws_top_k_lines_and_sparse_labels():
    n, k = 4096, 4
    idx = np.zeros((2, n, k), np.int64)
    idx[:, :, 0] = np.maximum(np.arange(n) - 1, 0)  # previous token, strongest
    wts = np.zeros((2, n, k), np.float32)
    wts[:, :, 0] = 0.8
    wts[:, :, 1] = 0.05  # under min_weight: no line
    fig = head_view_figure(idx, wts, [f"t{i}" for i in range(n)], heads=[1], layer=3)
    lines = _lines(fig)
    assert len(lines) == n and len(fig.layout.shapes) == 1  # one SVG path for all 4,096 lines of the bin
    assert lines[5] == (5, 4)  # query 5 -> key 4
    labels = [t for t in fig.data if t.mode == "text"]
    assert len(labels[0].text) == 256 and fig.layout.height == 4608 + 120 + 24  # every 16th token, 18 px apart


def test_head_detail_scaling_colours_the_weights_globally_per_row_or_in_log():
    w = np.array([[0.5, 0.5, 0.0], [0.9, 0.09, 0.01], [0.2, 0.3, 0.5]], np.float32)
    tokens = ["a", "b", "c"]
    glob = head_detail_figure(w, tokens, "g").data[0]
    assert (glob.zmin, glob.colorbar.title.text) == (0.0, "weight") and glob.zmax == pytest.approx(0.9)
    np.testing.assert_allclose(np.asarray(glob.z), w)
    row = head_detail_figure(w, tokens, "r", scaling="row").data[0]
    assert (row.zmin, row.zmax, row.colorbar.title.text) == (0.0, 1.0, "weight / row max")
    np.testing.assert_allclose(np.asarray(row.z)[1], [1.0, 0.1, 0.01 / 0.9], rtol=1e-6)
    log = head_detail_figure(w, tokens, "l", scaling="log", stride=2)
    assert (log.data[0].zmin, log.data[0].zmax, log.data[0].colorbar.title.text) == (-4.0, 0.0, "max log10 weight")
    np.testing.assert_allclose(np.asarray(log.data[0].z)[0], [np.log10(0.5), np.log10(0.5), -4.0], rtol=1e-6)
    assert log.layout.meta["value"] == "log10 weight"  # the client-side hover names the scaled value


def test_block_labels_name_one_token_or_a_pooled_block_per_row():
    from attnscope.frontend.figures import block_labels

    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    assert block_labels(tokens, 1, 4) == ["the (1)", "cat (2)", "sat (3)"]
    assert block_labels(tokens, 0, 5, stride=2) == ["[CLS] … the (0-1)", "cat … sat (2-3)", "[SEP] (4)"]
    w = np.zeros((3, 3), np.float32)
    fig = head_detail_figure(w, [f"t{i}" for i in range(6)], "L0H0", stride=2)
    assert fig.layout.meta["labels"]["x"] == ["t0 … t1 (0-1)", "t2 … t3 (2-3)", "t4 … t5 (4-5)"]  # one per z column
