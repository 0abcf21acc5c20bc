"""Compact encodings: exact sizes, error bounds, framing."""

import numpy as np
import pytest

from attnscope.analysis.codec import decode_array, encode_array, pack, unpack


def test_float16_is_two_bytes_per_weight():
    a = np.random.default_rng(0).random((3, 5, 7), dtype=np.float32)
    payload, meta = encode_array(a, "float16")
    assert len(payload) == 2 * a.size
    np.testing.assert_allclose(decode_array(payload, meta), a, rtol=1e-3)


def test_uint8_error_is_bounded_by_row_max_over_510():
    a = np.random.default_rng(1).random((4, 9), dtype=np.float32)
    payload, meta = encode_array(a, "uint8")
    assert len(payload) == a.size + 4 * 4
    err = np.abs(decode_array(payload, meta) - a)
    assert np.all(err <= a.max(axis=1, keepdims=True) / 510 + 1e-7)


def test_uint8_all_zero_row_stays_zero():
    a = np.zeros((2, 3), np.float32)
    a[1] = [0.2, 0.3, 0.5]
    payload, meta = encode_array(a, "uint8")
    out = decode_array(payload, meta)
    np.testing.assert_array_equal(out[0], 0)


def test_pack_round_trip_keeps_header():
    a = np.eye(3, dtype=np.float32)
    arr, header = unpack(pack(a, "float16", layer=2, tokens=["a", "b", "c"]))
    np.testing.assert_array_equal(arr, a)
    assert header["layer"] == 2 and header["tokens"] == ["a", "b", "c"] and header["shape"] == [3, 3]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown encoding"):
        encode_array(np.ones(3), "bf16")
    with pytest.raises(ValueError, match="magic"):
        unpack(b"nope" * 4)
    payload, meta = encode_array(np.ones((2, 2)), "float16")
    with pytest.raises(ValueError, match="expected 8"):
        decode_array(payload[:-1], meta)
