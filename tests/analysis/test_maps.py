"""AttentionMaps: closed-form cases and every validation error."""

import numpy as np
import pytest

from attnscope.analysis.maps import AttentionMaps


def uniform(layers=2, heads=3, n=4):
    return np.full((layers, heads, n, n), 1.0 / n, dtype=np.float32)


def toks(n):
    return tuple(f"t{i}" for i in range(n))


def test_valid_maps_expose_shape_and_labels():
    m = AttentionMaps(uniform(), toks(4), special=(0,), model="x")
    assert m.shape == (2, 3, 4, 4)
    assert (m.n_layers, m.n_heads, m.n_tokens) == (2, 3, 4)
    assert m.head_label(1, 2) == "L1H2"
    assert m.weights.dtype == np.float32


def test_float64_input_is_converted_to_float32():
    m = AttentionMaps(uniform().astype(np.float64), toks(4))
    assert m.weights.dtype == np.float32


def test_head_and_layer_slices_are_read_only_views():
    w = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5)).astype(np.float32)
    m = AttentionMaps(w, toks(5))
    np.testing.assert_array_equal(m.head(1, 2), w[1, 2])
    np.testing.assert_array_equal(m.layer(0), w[0])
    with pytest.raises(ValueError):
        m.head(0, 0)[0, 0] = 1.0


def test_negative_indices_count_from_the_end():
    w = np.random.default_rng(1).dirichlet(np.ones(3), size=(2, 2, 3)).astype(np.float32)
    m = AttentionMaps(w, toks(3))
    np.testing.assert_array_equal(m.head(-1, -1), w[1, 1])


def test_select_keeps_original_indices_and_does_not_mutate():
    w = np.random.default_rng(2).dirichlet(np.ones(4), size=(3, 4, 4)).astype(np.float32)
    m = AttentionMaps(w, toks(4))
    s = m.select(layers=[2], heads=[1, 3])
    assert s.shape == (1, 2, 4, 4)
    assert s.layer_ids == (2,) and s.head_ids == (1, 3)
    assert s.head_label(0, 1) == "L2H3"
    np.testing.assert_array_equal(s.head(0, 1), w[2, 3])
    assert m.shape == (3, 4, 4, 4)


def test_grid_covers_non_special_positions():
    n = 1 + 2 * 3
    m = AttentionMaps(uniform(1, 1, n), toks(n), grid=(2, 3), special=(0,))
    np.testing.assert_array_equal(m.grid_positions(), np.arange(1, 7))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weights": np.ones((4, 4), np.float32) / 4}, "4 axes"),
        ({"tokens": toks(3)}, "3 tokens for 4 key"),
        ({"weights": np.full((1, 1, 3, 4), 0.25, np.float32)}, "square"),
        ({"weights": np.full((1, 1, 4, 4), np.nan, np.float32)}, "NaN"),
        ({"weights": np.array([[[[1.5, -0.5, 0, 0]] * 4]], np.float32)}, "non-negative"),
        ({"weights": np.full((1, 1, 4, 4), 0.3, np.float32)}, "sum to 1"),
        ({"special": (7,)}, "outside"),
        ({"grid": (3, 3)}, "grid 3x3"),
        ({"layer_ids": (0, 1, 2)}, "layer_ids"),
        ({"weights": np.zeros((0, 1, 4, 4), np.float32)}, "empty axis"),
    ],
)
def test_every_validation_error_says_what_is_wrong(kwargs, message):
    args = {"weights": uniform(2, 1, 4), "tokens": toks(4)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        AttentionMaps(**args)


def test_out_of_range_slices_name_the_valid_range():
    m = AttentionMaps(uniform(), toks(4))
    with pytest.raises(IndexError, match=r"layer=2 is out of range: this map has 2 layers, use -2\.\.1"):
        m.layer(2)
    with pytest.raises(IndexError, match="head"):
        m.head(0, 3)
    with pytest.raises(ValueError, match="no image grid"):
        m.grid_positions()


@pytest.mark.parametrize("encoding, atol", [("float16", 1e-3), ("uint8", 4e-3)])
def test_compact_round_trip(encoding, atol):
    w = np.random.default_rng(3).dirichlet(np.ones(16) * 0.3, size=(2, 3, 16)).astype(np.float32)
    m = AttentionMaps(w, toks(16), special=(0, 15), model="minilm")
    blob = m.to_compact(encoding)
    back = AttentionMaps.from_compact(blob)
    assert back.tokens == m.tokens and back.special == m.special and back.model == "minilm"
    np.testing.assert_allclose(back.weights, w, atol=atol)
    np.testing.assert_allclose(back.weights.sum(-1), 1.0, atol=1e-5)
    assert len(blob["data"]) <= w.nbytes / (2 if encoding == "float16" else 3)
