"""Measure a JSON text without parsing it: its object keys and how deep it nests (``JsonKeyLimit``).

Parsing is what a hostile body costs: ``json.loads`` of a 1 MiB body of 90,000 keys holds the GIL for
~0.1-0.2 s (C code that never lets another thread run), so even off the event loop it stalls ``/health``;
a regular expression over the same body held the loop ~0.07 s. Here every pass is a numpy vector
operation over the bytes (numpy lets other threads run during its loops): a few milliseconds per MiB.

How: with escaped backslashes (``\\\\``) and then escaped quotes (``\\"``) removed, the remaining ``"``
are the strings' delimiters, so a byte is outside every string when an even number of ``"`` precede it
(the closing ``"`` included). Outside strings, a valid JSON text has one ``:`` per object key and its
brackets are its nesting. Exact for a valid JSON text; for bytes that are not JSON the numbers are those
of the same rule (such a body is refused with a 422 either way).
"""

from __future__ import annotations

import numpy as np

QUOTE, COLON = ord('"'), ord(":")
OPEN, CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)


def _bytes_outside_strings(body: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes [n] uint8, outside [n] bool)`` of the body with its escapes removed."""
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    a = np.frombuffer(body, np.uint8)
    return a, (np.cumsum(a == QUOTE, dtype=np.int64) & 1) == 0


def json_keys(body: bytes) -> int:
    """Object keys of a JSON text, at every depth: the ``:`` outside its strings."""
    a, outside = _bytes_outside_strings(body)
    return int(np.count_nonzero((a == COLON) & outside))


def json_depth(body: bytes) -> int:
    """How deep a JSON text nests: the most brackets open at once, outside its strings (``1`` -> 0,
    ``[]`` -> 1, ``{"a": [1, {"b": []}]}`` -> 4)."""
    a, outside = _bytes_outside_strings(body)
    step = np.isin(a, OPEN).astype(np.int64) - np.isin(a, CLOSE)
    step[~outside] = 0
    return int(max(0, np.cumsum(step).max(initial=0)))
