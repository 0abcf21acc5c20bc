"""Compact encodings of attention arrays for storage and the wire.

Two encodings, both little-endian:

- ``float16``: the array as IEEE half floats (2 bytes per weight, ~3 significant digits).
- ``uint8``: per-row scale (float32, the row maximum) followed by ``round(w / scale * 255)``
  as uint8 (1 byte per weight + 4 bytes per row; absolute error <= scale / 510).

``pack``/``unpack`` frame an encoded array with its metadata into one self-describing blob:
``b"ATNS" | uint32 header length | UTF-8 JSON header | payload``.
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
