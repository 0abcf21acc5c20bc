"""Hostile payloads for the load and soak benchmarks (issue 29): requests the API must refuse with a 4xx.

``cases(rng)`` are the soak's (JSON nested 10,000 deep, 5,000 keys, a body over the 1 MiB limit, bytes
that are not JSON, a 200,000-character model name, a path out of a model root, unknown run ids, a path
that climbs out of the API, a foreign ``Host``); ``unknown_keys()`` adds the issue's event-loop staller:
a body just under 1 MiB holding 90,000 unknown keys (before the fix it answered 422 after 12.4 s with a
3.4 MB detail while ``/health`` stalled 11.3 s). Bodies are built once: a benchmark's client must not
spend its own time (and its process's GIL) building them while it measures.
"""

from __future__ import annotations

import json
import random

MAX_BODY = 2**20
JSON = {"Content-Type": "application/json"}
UNKNOWN_KEYS = 90_000

_FIXED = [
    ("POST", "/runs", {"content": "[" * 10_000 + "]" * 10_000, "headers": JSON}),
    ("POST", "/runs", {"content": '{"a":' * 10_000 + "1" + "}" * 10_000, "headers": JSON}),
    ("POST", "/runs", {"content": json.dumps({f"k{i}": i for i in range(5_000)}), "headers": JSON}),
    ("POST", "/runs", {"content": b'{"text": "' + b"x" * (MAX_BODY + 10) + b'"}', "headers": JSON}),
    ("POST", "/runs", {"json": {"model": "m" * 200_000, "text": "hi"}}),
    ("POST", "/runs", {"json": {"model": "local:../../etc", "text": "hi"}}),
    ("GET", "/runs/../../etc/passwd", {}),
    ("GET", "/health", {"headers": {"Host": "evil.attacker.example"}}),
]


LABELS = [  # what each of cases() is, in its order
    "nested list",
    "nested object",
    "5,000 keys",
    "over the limit",
    "not JSON",
    "long model name",
    "model path out of root",
    "unknown run",
    "path out of the API",
    "foreign Host",
]


def cases(rng: random.Random) -> list[tuple[str, str, dict]]:
    """The soak's hostile requests, ``(method, path under /api/v1, httpx keywords)``; each must get a 4xx."""
    return [
        *_FIXED[:4],
        ("POST", "/runs", {"content": rng.randbytes(2000), "headers": JSON}),
        *_FIXED[4:6],
        ("GET", f"/runs/{rng.getrandbits(64):016x}/attention", {"params": {"layer": 0}}),
        *_FIXED[6:],
    ]


def _unknown_keys_body() -> bytes:
    """A JSON object of ``UNKNOWN_KEYS`` keys no schema knows, beside a valid model and text, under 1 MiB."""
    keys = ",".join(f'"k{i:05d}":0' for i in range(UNKNOWN_KEYS))
    body = ('{"model":"minilm","text":"a film .",' + keys + "}").encode()
    assert len(body) < MAX_BODY, len(body)
    return body


_UNKNOWN = _unknown_keys_body()


def unknown_keys() -> list[tuple[str, str, dict]]:
    """The 1 MiB body of 90,000 unknown keys, to three routes that validate a JSON body."""
    kw = {"content": _UNKNOWN, "headers": JSON}
    return [("POST", "/runs", kw), ("POST", "/circuits", kw), ("POST", "/models/minilm/tokenize", kw)]
