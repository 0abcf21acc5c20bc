"""The client mix of ``bench/load.py`` (issue 29): fixed input pools, and one client's weighted loop over every
route family of the API, plus the hostile-payload loop. See ``bench/load.py`` for what is measured."""

from __future__ import annotations

import io
import random
import threading
import time
from collections import defaultdict

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
                if self.job is not None and self.rng.random() < 0.5:  # a pending job is polled often (cheap)
                    self.jobs()
                else:
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
    """Hostile payloads back to back, one at a time: a third are the 1 MiB body of 90,000 unknown keys, the rest
    the soak's, each reported apart (``hostile: <what>``)."""
    from hostile import LABELS, cases, unknown_keys  # bench/ is on sys.path

    rng = random.Random(seed)
    with httpx.Client(base_url=base + API, timeout=120) as http:
        while time.time() < stop:
            if rng.random() < 1 / 3:
                route, (method, path, kw) = "hostile: 90k unknown keys", rng.choice(unknown_keys())
            else:
                i = rng.randrange(len(LABELS))
                route, (method, path, kw) = f"hostile: {LABELS[i]}", cases(rng)[i]
            call(stats, http, route, method, path, hostile=True, **kw)
