"""Pure figure builders, without a browser."""

import base64
import struct
import zlib

import numpy as np

from attnscope.frontend.figures import downsample, head_detail_figure, head_view_figure, thumbnail_src


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


def test_head_detail_has_token_labels_on_both_axes_and_exact_hover():
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]"]  # duplicate tokens stay separate positions
    w = np.random.default_rng(0).dirichlet(np.ones(5), 5).astype(np.float32)
    fig = head_detail_figure(w, tokens, "L0H2")
    assert list(fig.layout.xaxis.ticktext) == tokens and list(fig.layout.yaxis.ticktext) == tokens
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(np.array(fig.data[0].z), w)
    assert "%{z:.5f}" in fig.data[0].hovertemplate
    assert fig.data[0].customdata[1][2] == "the → cat"


def test_head_detail_of_a_long_input_keeps_a_bounded_height_and_sparse_ticks():
    tokens = [f"t{i}" for i in range(257)]  # DINOv2: CLS + 16 x 16 patches
    w = np.full((257, 257), 1 / 257, dtype=np.float32)
    fig = head_detail_figure(w, tokens, "L0H0")
    assert fig.layout.height == 900
    ticks = list(fig.layout.xaxis.tickvals)
    assert ticks[0] == 0 and ticks[1] == 6 and len(ticks) <= 48 and list(fig.layout.xaxis.ticktext)[1] == "t6"
    assert fig.data[0].customdata[200][100] == "t200 → t100"  # every cell still named on hover


def test_head_view_draws_one_segment_per_strong_weight():
    tokens = ["a", "b", "c"]
    w = np.zeros((2, 3, 3), np.float32)
    w[0] = np.eye(3)
    w[1] = np.full((3, 3), 1 / 3)
    fig = head_view_figure(w, tokens, heads=[0], layer=4)
    line_traces = [t for t in fig.data if t.mode == "lines" and t.showlegend is False]
    segments = sum(np.isnan(np.array(t.x, dtype=float)).sum() for t in line_traces)
    assert segments == 3  # the three diagonal weights of head 0, nothing from head 1
    assert fig.layout.title.text == "Head view · layer 4"
    both = head_view_figure(w, tokens, heads=[0, 1], layer=4)
    assert len([t for t in both.data if t.showlegend]) == 2


def test_head_view_of_a_long_input_is_denser():
    w = np.full((1, 512, 512), 1 / 512, dtype=np.float32)
    w[0, :, 0] = 0.5
    tokens = [f"t{i}" for i in range(512)]
    fig = head_view_figure(w, tokens, heads=[0], layer=0)
    assert fig.layout.height == 9 * 512 + 120 + 24  # 22 px per token below 100 tokens
    assert head_view_figure(w[:, :10, :10], tokens[:10], heads=[0], layer=0).layout.height == 360 + 24
