"""The dashboard's callback route fuzzed like the API: ~300 random, malformed, oversized and deeply
nested bodies on ``POST /_dash-update-component`` of a live dashboard (werkzeug, in front of the live
API): never a 5xx, every answer a 4xx problem or a callback's 200, and the dashboard still serves. The
same bodies without a session on the secured dashboard (``attnscope dashboard`` under gunicorn, in front
of a token-protected API): every one refused, 401/403 (413 for a body over its limit), never a 5xx."""

from __future__ import annotations

import json
import random
import socket
from collections import Counter
from urllib.parse import urlsplit

import httpx

from tests.frontend.test_dashboard_security import callback_body

CALLBACK = "/_dash-update-component"
SEED = 29


def _random_json(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False, 0, -1, 2**63, 1e308, -0.0, 3.5])
    if kind == 2:
        return rng.choice(["", "x" * rng.randrange(1, 5000), "\u0000\ud7ff\ufffd", "../../etc/passwd", "<script>"])
    if kind == 3:
        return rng.randrange(-(10**6), 10**6)
    if kind == 4:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(30)))
    if kind in (5, 6):
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(6))]
    return {str(_random_json(rng, 4))[:20]: _random_json(rng, depth + 1) for _ in range(rng.randrange(6))}


def _nested(depth: int, opener: str, closer: str) -> bytes:
    return (opener * depth + "1" * (opener == "[") + '{"a":1}' * (opener != "[") + closer * depth).encode()


def _cases(rng: random.Random, base: dict, outputs: list[str]) -> list[tuple[str, bytes, str]]:
    """(what, body, content type) x ~300."""
    cases = []
    for depth in (200, 1_000, 5_000, 100_000, 1_000_000):
        cases.append((f"list nested {depth}", _nested(depth, "[", "]"), "application/json"))
        cases.append((f"object nested {depth}", _nested(depth, '{"a":', "}"), "application/json"))
        deep_input = json.dumps(base)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        cases.append((f"callback with a value nested {depth}", deep_input.encode(), "application/json"))
    cases.append(("over the limit", b'{"a": "' + b"x" * (17 * 2**20) + b'"}', "application/json"))
    cases.append(("many keys", json.dumps({f"k{i}": i for i in range(200_000)}).encode(), "application/json"))
    for _ in range(60):
        cases.append(("random bytes", rng.randbytes(rng.randrange(1, 4000)), "application/json"))
    for _ in range(60):
        cases.append(("random JSON", json.dumps(_random_json(rng)).encode(), "application/json"))
    for _ in range(20):
        ctype = rng.choice(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""])
        cases.append((f"content type {ctype!r}", json.dumps(base).encode(), ctype))
    for _ in range(100):  # the banner's real callback with one field replaced by random JSON
        body = dict(base)
        body[rng.choice(["output", "outputs", "inputs", "state", "changedPropIds", "extra"])] = _random_json(rng)
        cases.append(("callback, a field replaced", json.dumps(body).encode(), "application/json"))
    for _ in range(40):  # the banner's callback with random input values (a real dispatch)
        body = json.loads(json.dumps(base))
        for item in body["inputs"]:
            item["value"] = _random_json(rng)
        cases.append(("callback, random input values", json.dumps(body).encode(), "application/json"))
    for _ in range(20):  # any callback of the dashboard named, with inputs of the wrong shape
        body = {**base, "output": rng.choice(outputs), "inputs": _random_json(rng), "outputs": "x"}
        cases.append(("another callback, wrong shape", json.dumps(body).encode(), "application/json"))
    return cases


def test_the_callback_route_never_answers_5xx(dashboard_url):
    rng = random.Random(SEED)
    base = callback_body(dashboard_url)
    outputs = [d["output"] for d in httpx.get(f"{dashboard_url}/_dash-dependencies", timeout=30).json()]
    cases = _cases(rng, base, outputs)
    assert len(cases) >= 300
    statuses: Counter[int] = Counter()
    failures = []
    with httpx.Client(base_url=dashboard_url, timeout=120) as client:
        for what, content, ctype in cases:
            headers = {"Content-Type": ctype} if ctype else {}
            r = client.post(CALLBACK, content=content, headers=headers)
            statuses[r.status_code] += 1
            if r.status_code >= 500 or not (r.status_code == 200 or 400 <= r.status_code < 500):
                failures.append((what, r.status_code, r.text[:200]))
            elif r.status_code != 200 and r.status_code != 204:
                assert r.json().get("code"), (what, r.text[:200])  # a problem the page can show
        assert client.get("/").status_code == 200  # still serving
        assert client.post(CALLBACK, json=base).status_code == 200
    print("dashboard fuzz status mix:", dict(sorted(statuses.items())))
    assert not failures, failures[:10]
    assert statuses[200] > 0 and sum(n for s, n in statuses.items() if 400 <= s < 500) > 200


SECURED_LIMIT = 65536  # the secured dashboard's ATTNSCOPE_DASH_MAX_CALLBACK_BYTES (tests/conftest.py)


def _status_of_headers_alone(url: str, length: int, ctype: str) -> int:
    """The status of a callback announcing ``length`` bytes and sending none (the server answers, then closes)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as s:
        s.sendall(
            (
                f"POST {CALLBACK} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {length}\r\nConnection: close\r\n\r\n"
            ).encode()
        )
        head = s.recv(65536)
    return int(head.split(b" ", 2)[1])


def test_the_secured_callback_route_refuses_every_body_without_a_session(dashboard_url, secured_dashboard):
    """No session, no bearer token: whatever the body, the callback never runs. The bodies are the open
    dashboard's (the same app: a real callback's shape, which the secured one only shows after a log-in)."""
    url, token = secured_dashboard
    rng = random.Random(SEED)
    base = callback_body(dashboard_url)
    outputs = [d["output"] for d in httpx.get(f"{dashboard_url}/_dash-dependencies", timeout=30).json()]
    statuses: Counter[int] = Counter()
    failures = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for what, content, ctype in _cases(rng, base, outputs):
            if len(content) > SECURED_LIMIT:  # refused from its Content-Length, before a byte of it is read
                status = _status_of_headers_alone(url, len(content), ctype)
                refused = status == 413
            else:
                headers = {"Content-Type": ctype} if ctype else {}
                status = client.post(CALLBACK, content=content, headers=headers).status_code
                refused = status in (401, 403)
            statuses[status] += 1
            if not refused:
                failures.append((what, status))
        assert client.get("/login").status_code == 200  # still serving
        authorized = client.post(CALLBACK, json=base, headers={"Authorization": f"Bearer {token}"})
        assert authorized.status_code == 200, authorized.text[:300]  # the same callback with a credential runs
    print("secured dashboard fuzz status mix (no session):", dict(sorted(statuses.items())))
    assert not failures, failures[:10]
