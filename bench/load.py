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
90,000 unknown keys, back to back (each must get a 4xx), and a prober reads ``/health`` every 0.25 s, each time
beside a bare ASGI server in another process (the control: what the shared machine's load alone costs a loopback
request).

Printed per round: requests, errors (5xx and connection failures or timeouts: "dropped"; a 429 busy answer counts
apart as ``busy``: the bounded executor refusing work is the design), the status mix and p50/p95 per route, the
server's RSS after the round and ``/health`` (and the control's) p50/p95/p99/max. Then, over all rounds: ``/health``
against its bounds, the RSS growth from the end of round 1 to the end of the last, and the least-squares RSS slope
over the rounds after the first. Targets (issue 29): 0 5xx, 0 dropped, ``/health`` p95 <= 100 ms, p99 <= 250 ms,
max <= 1 s, RSS growth <= 10 %. The census job needs the data folder (``ATTNSCOPE_DATA_DIR``; without it
``POST /jobs`` is a 422).

    nice python bench/load.py                      # 24 clients, 60 s, 3 rounds
    nice python bench/load.py --clients 4 --seconds 10 --rounds 1   # a quick look
"""

from __future__ import annotations

import argparse
import os
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
from load_mix import (  # bench/ on sys.path
    API,
    PAIRS,
    POOL,
    TEXT_MODELS,
    VISION,
    Client,
    Stats,
    hostile_loop,
    pngs,
    pool,
)

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
CONTROL = textwrap.dedent(  # a bare ASGI server: what the machine's load alone does to a loopback request
    """
    import sys, uvicorn
    async def app(scope, receive, send):
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"ok"})
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
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


def prefill(base: str, texts: list[str], images: list[bytes]) -> dict[str, list[dict]]:
    """Every pool input as a run on every model (4 threads): ``{model: [{id, text, layers, heads, n}, ...]}``.
    SmolLM2 also gets the pairs' clean texts (their runs are the residual-patching targets), and each SmolLM2 run
    its recorded forward (~4 MiB each, kept in a bounded cache): what remains to fill during the rounds is small
    (altered runs of the three intervention sets, results caches)."""
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

    def record(run):  # SmolLM2's recorded forward (the lens, attribution, graph, value-weighted maps read it)
        with httpx.Client(base_url=base + API, timeout=300) as http:
            http.post(f"/runs/{run['id']}/lens", json={"k": 1}).raise_for_status()

    runs: dict[str, list[dict]] = defaultdict(list)
    with ThreadPoolExecutor(4) as ex:
        for model, run in ex.map(one, jobs + [(VISION, png) for png in images]):
            runs[model].append(run)
        list(ex.map(record, runs["smollm2"]))
    return dict(runs)


def health_loop(base: str, control: str, stop: float, out: dict[str, list[float]], failures: list[str]) -> None:
    """``/health`` of the API, then the control server's answer, every 0.25 s: the control's latency is what the
    machine's load alone costs a loopback request (same niceness), told apart from the API's own stalls."""
    with httpx.Client(timeout=30) as http:
        while time.time() < stop:
            for name, url in (("api", base + API + "/health"), ("control", control)):
                t = time.perf_counter()
                try:
                    http.get(url).raise_for_status()
                except httpx.HTTPError as exc:
                    failures.append(f"{name}: {exc!r}")
                out[name].append(time.perf_counter() - t)
            time.sleep(0.25)


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
    stats, probes, health_failures = Stats(), {"api": [], "control": []}, []
    health = probes["api"]
    stop = time.time() + args.seconds
    clients = [
        Client(base, stats, 1000 * round_no + i, setup["runs"], setup["texts"], setup["images"])
        for i in range(args.clients)
    ]
    threads = [threading.Thread(target=c.loop, args=(stop,)) for c in clients]
    threads.append(threading.Thread(target=health_loop, args=(base, setup["control"], stop, probes, health_failures)))
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
    print(f"  {'route':<34}{'requests':>9}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}  status mix")
    for route in sorted(stats.times):
        v = stats.times[route]
        mix = " ".join(f"{k}:{n}" for k, n in sorted(stats.statuses[route].items()))
        print(
            f"  {route:<34}{len(v):>9}{stats.errors[route]:>8}{pct(v, 0.5) * 1e3:>10.0f}{pct(v, 0.95) * 1e3:>10.0f}"
            f"  {mix}"
        )
    print("  /health:", health_line(health, health_failures))
    print("  control:", health_line(probes["control"], []))
    print(f"  server RSS after the round: {rss:.0f} MB")
    for s in stats.samples:
        print("  error:", s)
    return {
        "rss": rss,
        "health": health,
        "control": probes["control"],
        "failures": health_failures,
        "errors": errors,
        "end": time.time() - t0,
    }


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
    print(f"control over all rounds: {health_line([c for r in rounds for c in r['control']], [])}")
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
    control_port = free_port()
    control = subprocess.Popen([sys.executable, "-c", CONTROL, str(control_port)], env=env)
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
        setup = {
            "runs": runs,
            "texts": texts,
            "images": images,
            "rss": [],
            "control": f"http://127.0.0.1:{control_port}/",
        }
        t0 = time.time()
        rounds = [one_round(base, server.pid, args, i + 1, setup, t0) for i in range(args.rounds)]
        alive = server.poll() is None
        print(f"\nserver alive after {args.rounds} rounds: {alive}")
        met = verdict(rounds, setup["rss"])
        return 0 if alive and met else 1
    finally:
        for proc in (server, control):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
