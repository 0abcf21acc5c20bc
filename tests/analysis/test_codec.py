"""Compact encodings: exact sizes, error bounds, framing."""

import json

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


def test_top_k_blobs_round_trip_with_narrow_indices():
    from attnscope.analysis.codec import pack_top_k, unpack_top_k

    idx = np.array([[[3, 0], [65535, 7]]], dtype=np.int64)
    w = np.array([[[0.5, 0.25], [0.75, 0.125]]], dtype=np.float32)
    blob = pack_top_k(idx, w, "float16", layer=2)
    got_idx, got_w, header = unpack_top_k(blob)
    np.testing.assert_array_equal(got_idx, idx)
    np.testing.assert_array_equal(got_w, w)  # these weights are exact in float16
    assert header["kind"] == "topk" and header["index_dtype"] == "uint16" and header["layer"] == 2
    assert len(blob) - 8 - len(json.dumps(header, separators=(",", ":"))) == idx.size * (2 + 2)
    wide = pack_top_k(idx + 1, w)
    assert unpack_top_k(wide)[2]["index_dtype"] == "uint32"
    with pytest.raises(ValueError, match="dense array"):
        unpack_top_k(pack(w))
    with pytest.raises(ValueError, match="one shape"):
        pack_top_k(idx[..., :1], w)
