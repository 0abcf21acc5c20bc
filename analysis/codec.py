"""Compact encodings of attention arrays for storage and the wire.

Two encodings, both little-endian:

- ``float16``: the array as IEEE half floats (2 bytes per weight, ~3 significant digits).
- ``uint8``: per-row scale (float32, the row maximum) followed by ``round(w / scale * 255)``
  as uint8 (1 byte per weight + 4 bytes per row; absolute error <= scale / 510).

``pack``/``unpack`` frame an encoded array with its metadata into one self-describing blob:
``b"ATNS" | uint32 header length | UTF-8 JSON header | payload``.

``pack_top_k``/``unpack_top_k`` frame a sparse per-row top-k slice the same way: the header holds
``"kind": "topk"``, ``index_dtype`` (``"uint16"`` when every index is below 65,536, else
``"uint32"``) and ``index_bytes``; the payload is the indices ``[..., k]`` (little-endian) followed
by the weights ``[..., k]`` in one of the two encodings above.
"""

from __future__ import annotations

import json
import struct

import numpy as np

ENCODINGS = ("float16", "uint8")
MAGIC = b"ATNS"
MEDIA_TYPE = "application/vnd.attnscope.array"


def encode_array(arr: np.ndarray, encoding: str = "float16") -> tuple[bytes, dict]:
    """Encode a non-negative float array ``[..., key]``; return ``(payload, meta)``."""
    arr = np.asarray(arr, dtype=np.float32)
    meta = {"encoding": encoding, "shape": list(arr.shape)}
    if encoding == "float16":
        return arr.astype("<f2").tobytes(), meta
    if encoding == "uint8":
        rows = arr.reshape(-1, arr.shape[-1]) if arr.ndim else arr.reshape(1, 1)
        scale = rows.max(axis=1).astype("<f4")
        safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
        q = np.clip(np.rint(rows / safe[:, None] * 255.0), 0, 255).astype(np.uint8)
        return scale.tobytes() + q.tobytes(), meta
    raise ValueError(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")


def decode_array(payload: bytes, meta: dict) -> np.ndarray:
    """Inverse of ``encode_array``: float32 array of ``meta["shape"]``."""
    shape = tuple(int(s) for s in meta["shape"])
    encoding = meta["encoding"]
    count = int(np.prod(shape))
    if encoding == "float16":
        if len(payload) != 2 * count:
            raise ValueError(f"float16 payload has {len(payload)} bytes, expected {2 * count}")
        return np.frombuffer(payload, dtype="<f2").astype(np.float32).reshape(shape)
    if encoding == "uint8":
        n_rows = count // shape[-1] if shape else 1
        if len(payload) != 4 * n_rows + count:
            raise ValueError(f"uint8 payload has {len(payload)} bytes, expected {4 * n_rows + count}")
        scale = np.frombuffer(payload[: 4 * n_rows], dtype="<f4")
        q = np.frombuffer(payload[4 * n_rows :], dtype=np.uint8).reshape(n_rows, -1)
        return (q.astype(np.float32) * (scale[:, None] / 255.0)).reshape(shape)
    raise ValueError(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")


def pack(arr: np.ndarray, encoding: str = "float16", **extra) -> bytes:
    """Encode ``arr`` and frame it with a JSON header (``extra`` goes into the header)."""
    payload, meta = encode_array(arr, encoding)
    header = json.dumps({**extra, **meta}, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + payload


def unpack(blob: bytes) -> tuple[np.ndarray, dict]:
    """Inverse of ``pack``: ``(array, header)``."""
    if len(blob) < 8 or blob[:4] != MAGIC:
        raise ValueError("not an attnscope array blob (missing ATNS magic)")
    (n,) = struct.unpack("<I", blob[4:8])
    header = json.loads(blob[8 : 8 + n])
    return decode_array(blob[8 + n :], header), header


def pack_top_k(indices: np.ndarray, weights: np.ndarray, encoding: str = "float16", **extra) -> bytes:
    """Frame a top-k slice: ``indices`` and ``weights`` of one shape ``[..., k]`` (see module docstring)."""
    indices = np.asarray(indices)
    if indices.shape != np.shape(weights):
        raise ValueError(f"indices {indices.shape} and weights {np.shape(weights)} must have one shape")
    if indices.size and (indices.min() < 0 or indices.max() >= 2**32):
        raise ValueError("top-k indices must lie in 0..2**32-1")
    dtype = "<u2" if not indices.size or indices.max() < 2**16 else "<u4"
    index_bytes = indices.astype(dtype).tobytes()
    payload, meta = encode_array(weights, encoding)
    head = {**extra, **meta, "kind": "topk", "index_dtype": "uint16" if dtype == "<u2" else "uint32"}
    head["index_bytes"] = len(index_bytes)
    header = json.dumps(head, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + index_bytes + payload


def unpack_top_k(blob: bytes) -> tuple[np.ndarray, np.ndarray, dict]:
    """Inverse of ``pack_top_k``: ``(indices int64, weights float32, header)``."""
    if len(blob) < 8 or blob[:4] != MAGIC:
        raise ValueError("not an attnscope array blob (missing ATNS magic)")
    (n,) = struct.unpack("<I", blob[4:8])
    header = json.loads(blob[8 : 8 + n])
    if header.get("kind") != "topk":
        raise ValueError("this blob is a dense array, not a top-k slice; read it with unpack")
    m = int(header["index_bytes"])
    dtype = "<u2" if header["index_dtype"] == "uint16" else "<u4"
    shape = tuple(int(s) for s in header["shape"])
    indices = np.frombuffer(blob[8 + n : 8 + n + m], dtype=dtype).astype(np.int64).reshape(shape)
    return indices, decode_array(blob[8 + n + m :], header), header
