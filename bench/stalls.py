"""Which route stalls the API's event loop? Each client operation of ``bench/load.py`` alone, ``/health`` probed
every 20 ms while it runs, on two servers side by side that differ in one setting (interleaved: A, B, A, B...).

By default the two servers differ in ``ATTNSCOPE_BLAS_THREADS`` (1, the default, against 0: OpenBLAS's own
thread count, the machine's cores): a multi-threaded LAPACK call holds the GIL while it waits for its threads
to be scheduled, so on a loaded machine a Lipschitz bound stalled ``/health`` for most of a second. Printed
per operation and server: the slowest request and the largest ``/health`` latency over ``--reps`` tries (and
that largest latency per try: a first try that stalls alone is a one-time cost, an import), with the load average.

    nice python bench/stalls.py --ops lipschitz --reps 4
    nice python bench/stalls.py --reps 2                     # every operation of the load mix
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import httpx
from load import SERVER, free_port, prefill  # bench/ is on sys.path
from load_mix import API, TEXT_MODELS, VISION, Client, Stats, pngs, pool


def start(env_extra: dict) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ATTNSCOPE_STATE_DIR": tempfile.mkdtemp(prefix="attnscope-stalls-")}
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], env={**env, **env_extra})
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(proc: subprocess.Popen, base: str) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            if {*TEXT_MODELS, VISION} <= set(httpx.get(base + API + "/health", timeout=5).json()["loaded_models"]):
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"the server at {base} did not start")


def probe(base: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(timeout=60) as http:
        while not stop.is_set():
            t = time.perf_counter()
            http.get(base + API + "/health")
            out.append(time.perf_counter() - t)
            time.sleep(0.02)


def one(client: Client, base: str, op: str) -> tuple[float, float]:
    """(seconds of the request, largest /health latency meanwhile)."""
    out: list[float] = []
    stop = threading.Event()
    prober = threading.Thread(target=probe, args=(base, stop, out))
    prober.start()
    t = time.perf_counter()
    getattr(client, op)()
    seconds = time.perf_counter() - t
    stop.set()
    prober.join()
    return seconds, max(out, default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="", help="comma-separated Client methods (default: every one of the mix)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--setting", default="ATTNSCOPE_BLAS_THREADS", help="the variable the two servers differ in")
    ap.add_argument("--values", default="1,0", help="its two values")
    args = ap.parse_args()
    values = args.values.split(",")
    servers = [start({args.setting: v}) for v in values]
    try:
        clients = []
        texts, images = pool(6), pngs(2)
        for proc, base in servers:
            wait_ready(proc, base)
            c = Client(base, Stats(), 0, prefill(base, texts, images), texts, images)
            c.http = httpx.Client(base_url=base + API, timeout=600)
            clients.append(c)
        ops = args.ops.split(",") if args.ops else [m.__name__ for _, m in clients[0].ops]
        print(f"{args.setting}: {' vs '.join(values)}; {args.reps} tries each, interleaved; {os.cpu_count()} CPUs")
        print(f"{'operation':<20}{'setting':>8}{'request max ms':>16}{'/health max ms':>16}  per try (ms)   load")
        for op in ops:
            tries = {v: [] for v in values}
            for _ in range(args.reps):
                for v, c, (_, base) in zip(values, clients, servers):
                    tries[v].append(one(c, base, op))
            for v in values:
                worst = max(s for s, _ in tries[v]), max(h for _, h in tries[v])
                each = " ".join(f"{h * 1e3:.0f}" for _, h in tries[v])
                print(
                    f"{op:<20}{v:>8}{worst[0] * 1e3:>16.0f}{worst[1] * 1e3:>16.1f}  {each:<14} "
                    f"{os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        return 0
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
