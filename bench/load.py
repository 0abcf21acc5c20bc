"""Load benchmark of the API (issues 15, 29): 24 clients x 60 s of a mix of every route family, twice, on one server.

The server runs in a child process (uvicorn, its own settings), so its resident memory is measured
from outside (``/proc/<pid>/status``). Each client loops over a weighted mix:

- ``POST /runs`` (new texts on minilm and minilm-sst2),
- ``GET /runs/{id}/attention`` (one layer, JSON and float16), ``GET /runs/{id}/rows/{q}``,
- structure routes (``shift``, ``heads``, ``rollout``, ``evolution``),
- ``POST /runs/{id}/faithfulness`` with the gradient explainers ``attn_grad`` and
  ``integrated_gradients`` (8 steps),
- on SmolLM2 (a causal LM, short texts of at most 32 tokens so the mix stays realistic for 2 cores):
  ``POST /runs``, the residual-stream routes (``lens``, ``attribution``, ``graph``,
  ``value-weighted``) and the circuit routes (one ``/circuits/path-patch`` edge and a small EAP
  ``/circuits``, 10 edges),

and a separate prober reads ``/health`` every 0.5 s. Printed per round: requests, errors (5xx and
connection failures or timeouts: "dropped"; a 429 busy answer counts apart as ``busy``: the bounded
executor refusing work is the design), the status mix and p50/p95 per route, the server's RSS after
the round, and ``/health`` p50/p95/p99/max. Then the RSS growth between the two rounds. Targets
(issue 29): 0 5xx, 0 dropped, RSS growth <= 10 %, ``/health`` p95 <= 100 ms and max <= 1 s.

    nice python bench/load.py                      # 24 clients, 60 s, 2 rounds
    nice python bench/load.py --clients 4 --seconds 10 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import defaultdict

import httpx

API = "/api/v1"
WORDS = "the a film story cast plot moving dull warm funny tedious honest loud brilliant slow quiet".split()
PAIRS = [  # clean/corrupted pairs of equal length (one-token countries and capitals in SmolLM2's vocabulary)
    ("The capital of France is", "The capital of Italy is", " Paris", " Rome"),
    ("The capital of Italy is", "The capital of France is", " Rome", " Paris"),
    ("The capital of Germany is", "The capital of France is", " Berlin", " Paris"),
]
EDGES = [("E", "logits"), ("E", "a3.h4<k>"), ("a0.h1", "logits"), ("m2", "a5.h0<q>"), ("a1.h2", "m4")]
SERVER = textwrap.dedent(
    """
    import sys, uvicorn
    from attnscope.server.config import Settings
    from attnscope.server.main import create_app
    settings = Settings(preload=["minilm", "minilm-sst2", "smollm2"], max_runs=256, heavy_workers=2, heavy_queue=32)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) + " ."


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.busy = 0
        self.samples: list[str] = []

    def record(self, route: str, seconds: float, status: int | None, detail: str = "") -> None:
        with self.lock:
            self.times[route].append(seconds)
            self.statuses[route]["dropped" if status is None else f"{status // 100}xx"] += 1
            if status is None or status >= 500:
                self.errors[route] += 1
                if len(self.samples) < 8:
                    self.samples.append(f"{route}: {status} {detail[:200]}")
            elif status == 429:
                self.busy += 1


def call(stats: Stats, http: httpx.Client, route: str, method: str, url: str, **kw):
    t = time.perf_counter()
    try:
        r = http.request(method, url, **kw)
    except httpx.HTTPError as exc:
        stats.record(route, time.perf_counter() - t, None, repr(exc))
        return None
    stats.record(route, time.perf_counter() - t, r.status_code, r.text if r.status_code >= 500 else "")
    return r


def client_loop(base: str, stats: Stats, stop: float, seed: int) -> None:
    rng = random.Random(seed)
    runs: list[str] = []
    classifier_runs: list[str] = []
    causal_runs: list[str] = []
    with httpx.Client(base_url=base + API, timeout=120) as http:
        while time.time() < stop:
            pick = rng.random()
            if pick < 0.10 or not classifier_runs:
                model = "minilm-sst2" if rng.random() < 0.6 or not classifier_runs else "minilm"
                r = call(stats, http, "POST /runs", "POST", "/runs", json={"model": model, "text": text(rng)})
                if r is not None and r.status_code == 201:
                    (classifier_runs if model == "minilm-sst2" else runs).append(r.json()["id"])
                continue
            if (0.58 <= pick < 0.64) or (pick >= 0.58 and not causal_runs):
                r = call(
                    stats, http, "POST /runs smollm2", "POST", "/runs", json={"model": "smollm2", "text": text(rng)}
                )
                if r is not None and r.status_code == 201:
                    causal_runs.append(r.json()["id"])
                continue
            rid = rng.choice(classifier_runs + runs + causal_runs)
            if pick < 0.30:
                fmt = rng.choice(["json", "float16"])
                layer = rng.randrange(6)
                call(
                    stats,
                    http,
                    "GET attention",
                    "GET",
                    f"/runs/{rid}/attention",
                    params={"layer": layer, "format": fmt},
                )
            elif pick < 0.36:
                call(stats, http, "GET rows", "GET", f"/runs/{rid}/rows/{rng.randrange(4)}")
            elif pick < 0.50:
                name = rng.choice(["shift", "heads", "rollout", "evolution"])
                rid = rng.choice(classifier_runs + runs)
                call(stats, http, f"GET {name}", "GET", f"/runs/{rid}/{name}")
            elif pick < 0.58:
                body = {
                    "explainers": ["attn_grad", "integrated_gradients"],
                    "metrics": ["comprehensiveness", "sufficiency"],
                    "options": {"integrated_gradients": {"n_steps": 8}},
                }
                rid = rng.choice(classifier_runs)
                call(stats, http, "POST faithfulness", "POST", f"/runs/{rid}/faithfulness", json=body)
            elif pick < 0.96:  # the residual-stream and circuit routes, on SmolLM2
                rid = rng.choice(causal_runs)
                clean, corrupted, answer, wrong = rng.choice(PAIRS)
                pair = {"model": "smollm2", "clean": clean, "corrupted": corrupted, "answer": answer, "wrong": wrong}
                if pick < 0.72:
                    body = {"positions": "0:4", "k": 5} if rng.random() < 0.5 else {"k": 3}
                    call(stats, http, "POST lens", "POST", f"/runs/{rid}/lens", json=body)
                elif pick < 0.80:
                    call(stats, http, "POST attribution", "POST", f"/runs/{rid}/attribution", json={"top_heads": 3})
                elif pick < 0.86:
                    call(stats, http, "POST graph", "POST", f"/runs/{rid}/graph", json={"threshold": 0.04})
                elif pick < 0.90:
                    call(stats, http, "POST value-weighted", "POST", f"/runs/{rid}/value-weighted")
                else:
                    sender, receiver = rng.choice(EDGES)
                    body = {**pair, "sender": sender, "receiver": receiver}
                    call(stats, http, "POST path-patch", "POST", "/circuits/path-patch", json=body)
            else:
                clean, corrupted, answer, wrong = rng.choice(PAIRS)
                body = {"model": "smollm2", "clean": clean, "corrupted": corrupted, "answer": answer, "wrong": wrong}
                call(stats, http, "POST circuits", "POST", "/circuits", json={**body, "k": 10, "curve_points": 2})


def health_loop(base: str, stop: float, out: list[float], failures: list[str]) -> None:
    with httpx.Client(base_url=base + API, timeout=30) as http:
        while time.time() < stop:
            t = time.perf_counter()
            try:
                http.get("/health").raise_for_status()
            except httpx.HTTPError as exc:
                failures.append(repr(exc))
            out.append(time.perf_counter() - t)
            time.sleep(0.5)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def one_round(base: str, pid: int, clients: int, seconds: float, round_no: int) -> float:
    stats, health, health_failures = Stats(), [], []
    stop = time.time() + seconds
    threads = [
        threading.Thread(target=client_loop, args=(base, stats, stop, 1000 * round_no + i)) for i in range(clients)
    ]
    threads.append(threading.Thread(target=health_loop, args=(base, stop, health, health_failures)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rss = rss_mb(pid)
    total = sum(len(v) for v in stats.times.values())
    errors = sum(stats.errors.values())
    print(
        f"\nround {round_no}: {clients} clients x {seconds:.0f} s: {total} requests, {errors} errors, "
        f"{stats.busy} busy (429)"
    )
    print(f"  {'route':<22}{'requests':>9}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}  status mix")
    for route in sorted(stats.times):
        v = stats.times[route]
        mix = " ".join(f"{k}:{n}" for k, n in sorted(stats.statuses[route].items()))
        print(
            f"  {route:<22}{len(v):>9}{stats.errors[route]:>8}{pct(v, 0.5) * 1e3:>10.0f}{pct(v, 0.95) * 1e3:>10.0f}"
            f"  {mix}"
        )
    print(
        f"  /health: {len(health)} probes, {len(health_failures)} failed, p50 {pct(health, 0.5) * 1e3:.1f} ms, "
        f"p95 {pct(health, 0.95) * 1e3:.1f} ms, p99 {pct(health, 0.99) * 1e3:.1f} ms, "
        f"max {max(health, default=float('nan')) * 1e3:.1f} ms"
    )
    print(f"  server RSS after the round: {rss:.0f} MB")
    for s in stats.samples:
        print("  error:", s)
    return rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.setdefault("ATTNSCOPE_STATE_DIR", tempfile.mkdtemp(prefix="attnscope-load-"))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            try:
                h = httpx.get(base + API + "/health", timeout=5).json()
                if {"minilm", "minilm-sst2", "smollm2"} <= set(h["loaded_models"]):
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or server.poll() is not None:
                print("the server did not start", file=sys.stderr)
                return 1
            time.sleep(1)
        print(f"server pid {server.pid}, {os.cpu_count()} CPUs, RSS at start {rss_mb(server.pid):.0f} MB")
        rss = [one_round(base, server.pid, args.clients, args.seconds, i + 1) for i in range(args.rounds)]
        alive = server.poll() is None
        print(f"\nserver alive after {args.rounds} rounds: {alive}")
        if len(rss) > 1:
            print(f"RSS growth between round 1 and round {len(rss)}: {(rss[-1] / rss[0] - 1) * 100:+.1f} %")
        return 0 if alive else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
