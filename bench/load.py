"""Load benchmark of the API (issues 15, 29): 24 clients x 60 s of a mix of every route family, three rounds, on one
server, with hostile payloads beside them.

The server runs in a child process (uvicorn, its own settings), so its resident memory is measured from outside
(``/proc/<pid>/status``, sampled every second). Inputs come from fixed pools: 24 texts (6-16 words), three
clean/corrupted pairs and 8 small PNGs. Run ids are content hashes, so once the pool is in the store it stops
growing: the store is filled before the first round (every pool input on every model, ``prefill``) and whatever
RSS still grows over the rounds is not more runs. Each client loops over a weighted mix of every route family:

- runs: ``POST /runs`` on minilm, minilm-sst2 and SmolLM2, ``POST /runs/image`` (an upload on gauss9-iso),
- reads: ``GET /runs/{id}/attention`` (one layer, JSON and float16), ``/rows/{q}``, ``shift``, ``heads``,
  ``rollout``, ``evolution``,
- ``POST /runs/{id}/faithfulness`` (attn_grad and integrated_gradients, 8 steps),
- SmolLM2's residual-stream routes (``lens``, ``attribution``, ``graph``, ``value-weighted``) and circuit routes
  (one ``/circuits/path-patch`` edge and a 10-edge EAP ``/circuits``),
- interventions (``interventions``: one of three fixed sets; ``head-effects``; ``residual-patching`` on MiniLM-SST2
  with one word swapped and on SmolLM2's pairs), ``GET /compare/heads`` (a run against its altered run),
- measure (``GET /runs/{id}/measure``, ``/models/{m}/lipschitz``), ``GET /runs/{id}/qk`` and
  ``/models/{m}/composition``,
- jobs (``POST /jobs``: a 4-example census; ``GET /jobs/{id}`` until done, then ``/result``),
- the workspace (``GET /runs``, ``PATCH /runs/{id}``) and ``POST /models/{m}/tokenize``.

Beside the clients a hostile thread sends the soak's hostile payloads (``bench/hostile.py``) and a 1 MiB body of
90,000 unknown keys, back to back (each must get a 4xx), and a prober reads ``/health`` every 0.25 s.

Printed per round: requests, errors (5xx and connection failures or timeouts: "dropped"; a 429 busy answer counts
apart as ``busy``: the bounded executor refusing work is the design), the status mix and p50/p95 per route, the
server's RSS after the round and ``/health`` p50/p95/p99/max. Then, over all rounds: ``/health`` against its bounds,
the RSS growth from the end of round 1 to the end of the last, and the least-squares RSS slope over the rounds after
the first. Targets (issue 29): 0 5xx, 0 dropped, ``/health`` p95 <= 100 ms, p99 <= 250 ms, max <= 1 s, RSS growth
<= 10 %. The census job needs the data folder (``ATTNSCOPE_DATA_DIR``; without it ``POST /jobs`` is a 422).

    nice python bench/load.py                      # 24 clients, 60 s, 3 rounds
    nice python bench/load.py --clients 4 --seconds 10 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import io
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
from concurrent.futures import ThreadPoolExecutor

import httpx

API = "/api/v1"
WORDS = "the a film story cast plot moving dull warm funny tedious honest loud brilliant slow quiet".split()
ONE_TOKEN = [w for w in WORDS if w != "tedious"]  # one MiniLM token each ("tedious" is two)
PAIRS = [  # clean/corrupted pairs of equal length (one-token countries and capitals in SmolLM2's vocabulary)
    ("The capital of France is", "The capital of Italy is", " Paris", " Rome"),
    ("The capital of Italy is", "The capital of France is", " Rome", " Paris"),
    ("The capital of Germany is", "The capital of France is", " Berlin", " Paris"),
]
EDGES = [("E", "logits"), ("E", "a3.h4<k>"), ("a0.h1", "logits"), ("m2", "a5.h0<q>"), ("a1.h2", "m4")]
INTERVENTIONS = [  # three fixed sets: the altered runs they store are bounded by the pool
    [{"kind": "ablate", "heads": [[2, 0]], "method": "zero"}],
    [{"kind": "ablate", "heads": [[4, 7], [5, 1]], "method": "uniform"}],
    [{"kind": "knockout", "layers": [1], "edges": [[0, 1], [2, 3]]}],
]
TEXT_MODELS = ["minilm", "minilm-sst2", "smollm2"]
VISION = "gauss9-iso"
POOL = 24
SERVER = textwrap.dedent(
    """
    import sys, uvicorn
    from attnscope.server.config import Settings
    from attnscope.server.main import create_app
    models = ["minilm", "minilm-sst2", "smollm2", "gauss9-iso"]
    settings = Settings(preload=models, max_runs=256, heavy_workers=2, heavy_queue=32)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)
TARGETS = {"p95": 0.100, "p99": 0.250, "max": 1.0, "growth": 10.0}


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


def pool(n: int, seed: int = 0) -> list[str]:
    """``n`` texts of 6-16 words (a fixed seed: the same texts in every run and in ``bench/soak.py``)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))) + " ." for _ in range(n)]


def swapped(text: str) -> str:
    """``text`` with its first one-token word replaced by another: as many MiniLM tokens (a corrupted input)."""
    words = text.split()
    i = next(i for i, w in enumerate(words) if w in ONE_TOKEN)
    words[i] = ONE_TOKEN[(ONE_TOKEN.index(words[i]) + 1) % len(ONE_TOKEN)]
    return " ".join(words)


def pngs(n: int = 8) -> list[bytes]:
    """``n`` seeded 28 x 28 grey-scale PNGs (a stroke on noise), the upload pool."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        a = (rng.random((28, 28)) * 40).astype(np.uint8)
        a[4:24, 8 + i : 11 + i] = 255
        buf = io.BytesIO()
        Image.fromarray(a, mode="L").save(buf, format="PNG")
        out.append(buf.getvalue())
    return out


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.busy = 0
        self.samples: list[str] = []

    def record(self, route: str, seconds: float, status: int | None, detail: str = "", hostile: bool = False) -> None:
        with self.lock:
            self.times[route].append(seconds)
            self.statuses[route]["dropped" if status is None else f"{status // 100}xx"] += 1
            # a hostile payload must be refused: a 2xx to it is an error too
            if status is None or status >= 500 or (hostile and status < 400):
                self.errors[route] += 1
                if len(self.samples) < 8:
                    self.samples.append(f"{route}: {status} {detail[:200]}")
            elif status == 429:
                self.busy += 1


def call(stats: Stats, http: httpx.Client, route: str, method: str, url: str, hostile: bool = False, **kw):
    t = time.perf_counter()
    try:
        r = http.request(method, url, **kw)
    except httpx.HTTPError as exc:
        stats.record(route, time.perf_counter() - t, None, repr(exc), hostile)
        return None
    bad = r.status_code >= 500 or (hostile and r.status_code < 400)
    stats.record(route, time.perf_counter() - t, r.status_code, f"{method} {url[:80]} {r.text}" if bad else "", hostile)
    return r


def prefill(base: str, texts: list[str], images: list[bytes]) -> dict[str, list[dict]]:
    """Every pool input as a run on every model (4 threads): ``{model: [{id, text, layers, heads, n}, ...]}``.
    SmolLM2 also gets the pairs' clean texts (their runs are the residual-patching targets)."""
    jobs = [(m, t) for m in TEXT_MODELS for t in texts] + [("smollm2", clean) for clean, *_ in PAIRS]

    def one(job):
        model, item = job
        with httpx.Client(base_url=base + API, timeout=300) as http:
            if model == VISION:
                r = http.post(
                    "/runs/image",
                    data={"model": VISION},
                    files={"file": ("pool.png", item, "image/png")},
                    headers={"X-Requested-With": "load"},
                )
            else:
                r = http.post("/runs", json={"model": model, "text": item})
        r.raise_for_status()
        body = r.json()
        layers, heads, n, _ = body["shape"]
        return model, {"id": body["id"], "text": body["text"], "layers": layers, "heads": heads, "n": n}

    runs: dict[str, list[dict]] = defaultdict(list)
    with ThreadPoolExecutor(4) as ex:
        for model, run in ex.map(one, jobs + [(VISION, png) for png in images]):
            runs[model].append(run)
    return dict(runs)


class Client:
    """One client's loop: a weighted pick among the route families on the pool's runs."""

    def __init__(self, base: str, stats: Stats, seed: int, runs: dict, texts: list[str], images: list[bytes]):
        self.base, self.stats, self.rng = base, stats, random.Random(seed)
        self.runs, self.texts, self.images = runs, texts, images
        self.altered: list[tuple[str, str]] = []  # (run id, its altered run id) from interventions
        self.job: str | None = None
        self.ops = [  # (weight, method)
            (6, self.post_run),
            (3, self.post_causal_run),
            (2, self.post_image),
            (12, self.attention),
            (4, self.rows),
            (8, self.structure),
            (4, self.faithfulness),
            (4, self.lens),
            (3, self.attribution),
            (3, self.graph),
            (2, self.value_weighted),
            (3, self.path_patch),
            (2, self.circuit),
            (4, self.interventions),
            (2, self.head_effects),
            (3, self.residual_patching),
            (3, self.compare),
            (2, self.measure),
            (1, self.lipschitz),
            (3, self.qk),
            (1, self.composition),
            (3, self.jobs),
            (5, self.workspace),
            (3, self.tokenize),
        ]

    def call(self, route, method, url, **kw):
        return call(self.stats, self.http, route, method, url, **kw)

    def run_of(self, *models: str) -> dict:
        return self.rng.choice([r for m in models for r in self.runs[m]])

    def loop(self, stop: float) -> None:
        weights = [w for w, _ in self.ops]
        with httpx.Client(base_url=self.base + API, timeout=300) as self.http:
            while time.time() < stop:
                self.rng.choices(self.ops, weights)[0][1]()

    # ---- runs
    def post_run(self):
        body = {"model": self.rng.choice(["minilm", "minilm-sst2"]), "text": self.rng.choice(self.texts)}
        self.call("POST /runs", "POST", "/runs", json=body)

    def post_causal_run(self):
        self.call("POST /runs smollm2", "POST", "/runs", json={"model": "smollm2", "text": self.rng.choice(self.texts)})

    def post_image(self):
        files = {"file": ("pool.png", self.rng.choice(self.images), "image/png")}
        headers = {"X-Requested-With": "load"}
        self.call("POST /runs/image", "POST", "/runs/image", data={"model": VISION}, files=files, headers=headers)

    # ---- reads
    def attention(self):
        run = self.run_of(*TEXT_MODELS, VISION)
        params = {"layer": self.rng.randrange(run["layers"]), "format": self.rng.choice(["json", "float16"])}
        self.call("GET attention", "GET", f"/runs/{run['id']}/attention", params=params)

    def rows(self):
        run = self.run_of(*TEXT_MODELS, VISION)
        self.call("GET rows", "GET", f"/runs/{run['id']}/rows/{self.rng.randrange(min(4, run['n']))}")

    def structure(self):
        name = self.rng.choice(["shift", "heads", "rollout", "evolution"])
        run = self.run_of("minilm", "minilm-sst2", *([VISION] if name in ("shift", "heads") else []))
        self.call(f"GET {name}", "GET", f"/runs/{run['id']}/{name}")

    def faithfulness(self):
        body = {
            "explainers": ["attn_grad", "integrated_gradients"],
            "metrics": ["comprehensiveness", "sufficiency"],
            "options": {"integrated_gradients": {"n_steps": 8}},
        }
        self.call("POST faithfulness", "POST", f"/runs/{self.run_of('minilm-sst2')['id']}/faithfulness", json=body)

    # ---- residual stream and circuits (SmolLM2)
    def lens(self):
        body = {"positions": "0:4", "k": 5} if self.rng.random() < 0.5 else {"k": 3}
        self.call("POST lens", "POST", f"/runs/{self.run_of('smollm2')['id']}/lens", json=body)

    def attribution(self):
        rid = self.run_of("smollm2")["id"]
        self.call("POST attribution", "POST", f"/runs/{rid}/attribution", json={"top_heads": 3})

    def graph(self):
        rid = self.run_of("smollm2")["id"]
        self.call("POST graph", "POST", f"/runs/{rid}/graph", json={"threshold": 0.04})

    def value_weighted(self):
        self.call("POST value-weighted", "POST", f"/runs/{self.run_of('smollm2')['id']}/value-weighted")

    def pair(self) -> dict:
        clean, corrupted, answer, wrong = self.rng.choice(PAIRS)
        return {"model": "smollm2", "clean": clean, "corrupted": corrupted, "answer": answer, "wrong": wrong}

    def path_patch(self):
        sender, receiver = self.rng.choice(EDGES)
        body = {**self.pair(), "sender": sender, "receiver": receiver}
        self.call("POST path-patch", "POST", "/circuits/path-patch", json=body)

    def circuit(self):
        self.call("POST circuits", "POST", "/circuits", json={**self.pair(), "k": 10, "curve_points": 2})

    # ---- interventions and comparison
    def interventions(self):
        run = self.run_of("minilm-sst2")
        body = {"interventions": self.rng.choice(INTERVENTIONS)}
        r = self.call("POST interventions", "POST", f"/runs/{run['id']}/interventions", json=body)
        if r is not None and r.status_code == 200 and len(self.altered) < 16:
            self.altered.append((run["id"], r.json()["altered_run_id"]))

    def head_effects(self):
        rid = self.run_of("minilm-sst2")["id"]
        self.call("POST head-effects", "POST", f"/runs/{rid}/head-effects", json={"method": "zero", "chunk": 24})

    def residual_patching(self):
        if self.rng.random() < 0.6:
            run = self.run_of("minilm-sst2")
            body = {"corrupted": swapped(run["text"])}
        else:
            clean, corrupted, answer, wrong = self.rng.choice(PAIRS)
            run = next(r for r in self.runs["smollm2"] if r["text"] == clean)
            body = {"corrupted": corrupted, "metric": "answer_logit_diff", "answers": [answer, wrong]}
        self.call("POST residual-patching", "POST", f"/runs/{run['id']}/residual-patching", json=body)

    def compare(self):
        if not self.altered:
            return self.interventions()
        a, b = self.rng.choice(self.altered)
        self.call("GET compare/heads", "GET", "/compare/heads", params={"a": a, "b": b})

    # ---- measure and QK
    def measure(self):
        self.call("GET measure", "GET", f"/runs/{self.run_of('minilm', 'minilm-sst2')['id']}/measure")

    def lipschitz(self):
        run = self.run_of("minilm-sst2")
        params = {"layer": self.rng.randrange(run["layers"]), "run_id": run["id"], "steps": 5, "draws": 1}
        self.call("GET lipschitz", "GET", "/models/minilm-sst2/lipschitz", params=params)

    def qk(self):
        run = self.run_of("minilm-sst2", "smollm2")
        query = self.rng.randrange(min(6, run["n"]))
        params = {
            "layer": self.rng.randrange(run["layers"]),
            "head": self.rng.randrange(run["heads"]),
            "query": query,
            "key": self.rng.randrange(query + 1),
        }
        self.call("GET qk", "GET", f"/runs/{run['id']}/qk", params=params)

    def composition(self):
        model, mode = self.rng.choice(["minilm", "smollm2"]), self.rng.choice("qkv")
        self.call("GET composition", "GET", f"/models/{model}/composition", params={"mode": mode})

    # ---- jobs, workspace, tokenize
    def jobs(self):
        if self.job is None:
            body = {"kind": "census", "params": {"model": "minilm-sst2", "n": 4, "seed": self.rng.randrange(3)}}
            r = self.call("POST /jobs", "POST", "/jobs", json=body)
            if r is not None and r.status_code == 202:
                self.job = r.json()["id"]
            return
        r = self.call("GET /jobs/{id}", "GET", f"/jobs/{self.job}")
        state = None if r is None or r.status_code != 200 else r.json()["status"]
        if state == "done":
            self.call("GET /jobs/{id}/result", "GET", f"/jobs/{self.job}/result")
        if state not in ("queued", "running"):
            self.job = None

    def workspace(self):
        if self.rng.random() < 0.6:
            self.call("GET /runs", "GET", "/runs", params={"limit": 20})
        else:
            run = self.run_of(*TEXT_MODELS)
            body = {"pinned": self.rng.random() < 0.5} if self.rng.random() < 0.5 else {"name": f"load {run['n']}"}
            self.call("PATCH /runs/{id}", "PATCH", f"/runs/{run['id']}", json=body)

    def tokenize(self):
        model = self.rng.choice(TEXT_MODELS)
        self.call("POST tokenize", "POST", f"/models/{model}/tokenize", json={"text": self.rng.choice(self.texts)})


def hostile_loop(base: str, stats: Stats, stop: float, seed: int) -> None:
    """Hostile payloads back to back, one at a time: a third are the 1 MiB body of 90,000 unknown keys."""
    from hostile import cases, unknown_keys  # bench/ is on sys.path

    rng = random.Random(seed)
    with httpx.Client(base_url=base + API, timeout=120) as http:
        while time.time() < stop:
            if rng.random() < 1 / 3:
                route, (method, path, kw) = "hostile 90k keys", rng.choice(unknown_keys())
            else:
                route, (method, path, kw) = "hostile", rng.choice(cases(rng))
            call(stats, http, route, method, path, hostile=True, **kw)


def health_loop(base: str, stop: float, out: list[float], failures: list[str], period: float = 0.25) -> None:
    with httpx.Client(base_url=base + API, timeout=30) as http:
        while time.time() < stop:
            t = time.perf_counter()
            try:
                http.get("/health").raise_for_status()
            except httpx.HTTPError as exc:
                failures.append(repr(exc))
            out.append(time.perf_counter() - t)
            time.sleep(period)


def rss_loop(pid: int, stop: float, t0: float, out: list[tuple[float, float]]) -> None:
    """(seconds since t0, RSS MB) every second until stop."""
    while time.time() < stop:
        out.append((time.time() - t0, rss_mb(pid)))
        time.sleep(1)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def ls_slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def one_round(base: str, pid: int, args, round_no: int, setup: dict, t0: float) -> dict:
    stats, health, health_failures = Stats(), [], []
    stop = time.time() + args.seconds
    clients = [
        Client(base, stats, 1000 * round_no + i, setup["runs"], setup["texts"], setup["images"])
        for i in range(args.clients)
    ]
    threads = [threading.Thread(target=c.loop, args=(stop,)) for c in clients]
    threads.append(threading.Thread(target=health_loop, args=(base, stop, health, health_failures)))
    threads.append(threading.Thread(target=rss_loop, args=(pid, stop, t0, setup["rss"])))
    if not args.no_hostile:
        threads.append(threading.Thread(target=hostile_loop, args=(base, stats, stop, round_no)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rss = rss_mb(pid)
    total = sum(len(v) for r, v in stats.times.items() if not r.startswith("hostile"))
    errors = sum(stats.errors.values())
    print(
        f"\nround {round_no}: {args.clients} clients x {args.seconds:.0f} s: {total} requests "
        f"(+ {total_hostile(stats)} hostile), {errors} errors, {stats.busy} busy (429)"
    )
    print(f"  {'route':<24}{'requests':>9}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}  status mix")
    for route in sorted(stats.times):
        v = stats.times[route]
        mix = " ".join(f"{k}:{n}" for k, n in sorted(stats.statuses[route].items()))
        print(
            f"  {route:<24}{len(v):>9}{stats.errors[route]:>8}{pct(v, 0.5) * 1e3:>10.0f}{pct(v, 0.95) * 1e3:>10.0f}"
            f"  {mix}"
        )
    print("  /health:", health_line(health, health_failures))
    print(f"  server RSS after the round: {rss:.0f} MB")
    for s in stats.samples:
        print("  error:", s)
    return {"rss": rss, "health": health, "failures": health_failures, "errors": errors, "end": time.time() - t0}


def total_hostile(stats: Stats) -> int:
    return sum(len(v) for r, v in stats.times.items() if r.startswith("hostile"))


def health_line(health: list[float], failures: list[str]) -> str:
    return (
        f"{len(health)} probes, {len(failures)} failed, p50 {pct(health, 0.5) * 1e3:.1f} ms, "
        f"p95 {pct(health, 0.95) * 1e3:.1f} ms, p99 {pct(health, 0.99) * 1e3:.1f} ms, "
        f"max {max(health, default=float('nan')) * 1e3:.1f} ms"
    )


def verdict(rounds: list[dict], samples: list[tuple[float, float]]) -> bool:
    """Print the targets over all rounds; True when every one is met."""
    health = [h for r in rounds for h in r["health"]]
    failures = [f for r in rounds for f in r["failures"]]
    errors = sum(r["errors"] for r in rounds)
    ok = {
        "errors": errors == 0 and not failures,
        "p95": pct(health, 0.95) <= TARGETS["p95"],
        "p99": pct(health, 0.99) <= TARGETS["p99"],
        "max": max(health, default=float("inf")) <= TARGETS["max"],
    }
    print(f"\nall rounds: {errors} errors (5xx, dropped, a hostile payload accepted): target 0")
    print(
        f"/health over all rounds: {health_line(health, failures)}   "
        f"(bounds: p95 <= {TARGETS['p95'] * 1e3:.0f} ms, p99 <= {TARGETS['p99'] * 1e3:.0f} ms, "
        f"max <= {TARGETS['max'] * 1e3:.0f} ms)"
    )
    if len(rounds) > 1:
        growth = (rounds[-1]["rss"] / rounds[0]["rss"] - 1) * 100
        ok["growth"] = growth <= TARGETS["growth"]
        ends = ", ".join(f"{r['rss']:.0f}" for r in rounds)
        print(
            f"RSS at the end of each round: {ends} MB; growth from round 1 to round {len(rounds)}: {growth:+.1f} %"
            f"   (target <= {TARGETS['growth']:.0f} %)"
        )
        after = [(t, mb) for t, mb in samples if t >= rounds[0]["end"]]
        if len(after) >= 3:
            slope = ls_slope(after)  # MB per second
            span = after[-1][0] - after[0][0]
            print(
                f"least-squares RSS slope over rounds 2-{len(rounds)} ({len(after)} samples, {span:.0f} s): "
                f"{slope * 60:+.1f} MB per minute = {slope * span / after[0][1] * 100:+.1f} % over the span"
            )
    print("targets met:", ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in ok.items()))
    return all(ok.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-hostile", action="store_true", help="leave the hostile-payload thread out")
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
                if {*TEXT_MODELS, VISION} <= set(h["loaded_models"]):
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or server.poll() is not None:
                print("the server did not start", file=sys.stderr)
                return 1
            time.sleep(1)
        print(f"server pid {server.pid}, {os.cpu_count()} CPUs, RSS at start {rss_mb(server.pid):.0f} MB")
        texts, images = pool(POOL), pngs()
        t = time.time()
        runs = prefill(base, texts, images)
        n = sum(len(v) for v in runs.values())
        print(f"prefill: {n} runs ({POOL} texts x {len(TEXT_MODELS)} models, {len(PAIRS)} pairs, {len(images)} images)")
        print(f"  in {time.time() - t:.0f} s; server RSS after it {rss_mb(server.pid):.0f} MB")
        setup = {"runs": runs, "texts": texts, "images": images, "rss": []}
        t0 = time.time()
        rounds = [one_round(base, server.pid, args, i + 1, setup, t0) for i in range(args.rounds)]
        alive = server.poll() is None
        print(f"\nserver alive after {args.rounds} rounds: {alive}")
        met = verdict(rounds, setup["rss"])
        return 0 if alive and met else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
