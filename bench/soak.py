"""Soak benchmark of the API (issue 29 item 6): N mixed requests (default 10,000) against one live server,
hostile payloads among them, then the server's resident-memory slope after warm-up.

The server runs in a child process (uvicorn, the settings of ``bench/load.py``), its RSS read from
``/proc/<pid>/status`` after every 1 % of the requests. ``--clients`` threads share the N requests:

- ``POST /runs`` on minilm and minilm-sst2 from a fixed pool of 64 texts (run ids are content hashes,
  so after warm-up the store holds a steady set and a growing RSS is a leak, not more runs),
- ``GET /runs/{id}/attention`` (JSON and float16), ``/rows/{q}``, ``shift``, ``heads``, ``rollout``,
  ``GET /runs`` (the workspace list), ``POST /tokenize``, ``/health``, a little ``faithfulness``,
- hostile payloads (about 15 %): JSON nested 10,000 deep, 5,000 keys, a body over the limit, bytes that
  are not JSON, a 200,000-character model name, unknown run ids, out-of-range layers, a path that
  climbs out of a model root, a foreign ``Host``: each must be a 4xx.

Printed: requests per status, errors (5xx, connection failures, a 2xx to a hostile payload), p50/p95
per family, and the RSS slope over the requests after warm-up (the first ``--warmup`` fraction) as a
percentage of the RSS at its end (a least-squares line through the samples; target <= 5 %).

    nice python bench/soak.py                     # 10,000 requests, 4 clients
    nice python bench/soak.py --n 2000 --clients 4
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

import httpx
from hostile import cases as hostile_cases  # bench/ is on sys.path
from load import SERVER, free_port, pct, rss_mb
from load_mix import pool

API = "/api/v1"


def hostile(rng: random.Random) -> tuple[str, str, str, dict]:
    """(family, method, path, httpx keywords) of one payload that must be refused with a 4xx."""
    method, path, kw = rng.choice(hostile_cases(rng))
    return "hostile", method, path, kw


def friendly(rng: random.Random, texts: list[str], runs: list[str], classifier_runs: list[str]):
    pick = rng.random()
    if pick < 0.15 or not classifier_runs:
        model = "minilm-sst2" if rng.random() < 0.6 or not classifier_runs else "minilm"
        return "POST /runs", "POST", "/runs", {"json": {"model": model, "text": rng.choice(texts)}}
    rid = rng.choice(classifier_runs + runs)
    if pick < 0.40:
        fmt = rng.choice(["json", "float16"])
        return "GET attention", "GET", f"/runs/{rid}/attention", {"params": {"layer": rng.randrange(6), "format": fmt}}
    if pick < 0.50:
        return "GET rows", "GET", f"/runs/{rid}/rows/{rng.randrange(4)}", {}
    if pick < 0.75:
        name = rng.choice(["shift", "heads", "rollout"])
        return f"GET {name}", "GET", f"/runs/{rid}/{name}", {}
    if pick < 0.85:
        return "GET /runs", "GET", "/runs", {"params": {"limit": 20}}
    if pick < 0.93:
        return "POST /tokenize", "POST", "/models/minilm/tokenize", {"json": {"text": rng.choice(texts)}}
    if pick < 0.995:
        return "GET /health", "GET", "/health", {}
    body = {"explainers": ["attn_grad"], "metrics": ["comprehensiveness"]}
    return "POST faithfulness", "POST", f"/runs/{rng.choice(classifier_runs)}/faithfulness", {"json": body}


class Soak:
    def __init__(self, n: int, pid: int):
        self.n, self.pid = n, pid
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.status: Counter = Counter()
        self.errors: list[str] = []
        self.n_errors = 0
        self.times: dict[str, list[float]] = defaultdict(list)
        self.rss: list[tuple[int, float]] = []  # (requests done, MB)
        self.done = 0

    def record(self, family: str, seconds: float, status: int | None, detail: str) -> None:
        with self.lock:
            self.done += 1
            self.times[family].append(seconds)
            self.status[status or "connection failed"] += 1
            bad = status is None or status >= 500 or (family == "hostile" and status < 400)
            if bad:
                self.n_errors += 1
                if len(self.errors) < 8:
                    self.errors.append(f"{family}: {status} {detail[:200]}")
            if self.done % max(1, self.n // 100) == 0:
                self.rss.append((self.done, rss_mb(self.pid)))


def client(base: str, soak: Soak, seed: int, texts: list[str]) -> None:
    rng = random.Random(seed)
    runs: list[str] = []
    classifier_runs: list[str] = []
    with httpx.Client(base_url=base + API, timeout=300) as http:
        while next(soak.counter) < soak.n:
            if rng.random() < 0.15 and classifier_runs:
                family, method, path, kw = hostile(rng)
            else:
                family, method, path, kw = friendly(rng, texts, runs, classifier_runs)
            t = time.perf_counter()
            try:
                r = http.request(method, path, **kw)
            except httpx.HTTPError as exc:
                soak.record(family, time.perf_counter() - t, None, repr(exc))
                continue
            soak.record(family, time.perf_counter() - t, r.status_code, f"{method} {path[:60]} {r.text[:150]}")
            if family == "POST /runs" and r.status_code == 201:
                body = r.json()
                target = classifier_runs if body["model"] == "minilm-sst2" else runs
                if body["id"] not in target:
                    target.append(body["id"])


def slope_percent(samples: list[tuple[int, float]], warmup: float, n: int) -> tuple[float, float, float]:
    """(RSS at warm-up end MB, last RSS MB, least-squares growth over the post-warm-up span in %)."""
    after = [(x, y) for x, y in samples if x >= warmup * n]
    if len(after) < 3:
        return float("nan"), float("nan"), float("nan")
    xs, ys = [x for x, _ in after], [y for _, y in after]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in after) / sum((x - mx) ** 2 for x in xs)
    return ys[0], ys[-1], slope * (xs[-1] - xs[0]) / ys[0] * 100


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="requests in all")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--warmup", type=float, default=0.2, help="fraction of the requests before the slope")
    args = ap.parse_args()
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.setdefault("ATTNSCOPE_STATE_DIR", tempfile.mkdtemp(prefix="attnscope-soak-"))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                if {"minilm", "minilm-sst2"} <= set(
                    httpx.get(base + API + "/health", timeout=5).json()["loaded_models"]
                ):
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or server.poll() is not None:
                print("the server did not start", file=sys.stderr)
                return 1
            time.sleep(1)
        start_rss = rss_mb(server.pid)
        soak, texts, t0 = Soak(args.n, server.pid), pool(64), time.time()
        threads = [threading.Thread(target=client, args=(base, soak, i, texts)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
        alive = server.poll() is None
        print(f"{soak.done} requests, {args.clients} clients, {wall:.0f} s; server RSS at start {start_rss:.0f} MB")
        print("status mix:", dict(sorted(soak.status.items(), key=str)))
        print(f"errors (5xx, connection failures, a hostile payload accepted): {soak.n_errors}")
        print(f"  {'family':<20}{'requests':>9}{'p50 ms':>10}{'p95 ms':>10}")
        for family in sorted(soak.times):
            v = soak.times[family]
            print(f"  {family:<20}{len(v):>9}{pct(v, 0.5) * 1e3:>10.0f}{pct(v, 0.95) * 1e3:>10.0f}")
        warm, last, growth = slope_percent(soak.rss, args.warmup, args.n)
        print(
            f"RSS after warm-up ({args.warmup:.0%} of the requests) {warm:.0f} MB, at the end {last:.0f} MB; "
            f"least-squares growth over the rest {growth:+.2f} %   (target <= 5 %)"
        )
        print(f"server alive: {alive}")
        for e in soak.errors:
            print("  error:", e)
        return 0 if alive and soak.n_errors == 0 else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
