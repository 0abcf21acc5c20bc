"""Issue 29 part 2 (lazy reads): every GET that computes on a run (attention windows, pooled
overviews, top-k, rows, images) runs on the heavy executor, so a crowd of them beyond its workers
and queue gets 429 with ``Retry-After`` instead of all computing at once, and the API's resident
memory stays bounded by what the admitted requests hold."""

from __future__ import annotations

import concurrent.futures
import threading

import httpx
import psutil

from attnscope.server.config import Settings

API = "/api/v1"
WORKERS, QUEUE, CLIENTS = 1, 2, 32


class PeakRSS:
    """This process' (the in-process API's) resident set size, sampled until ``stop``."""

    def __init__(self):
        self.proc = psutil.Process()
        self.start = self.peak = self.proc.memory_info().rss
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._done.wait(0.005):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def stop(self) -> int:
        self._done.set()
        self._thread.join()
        return self.peak - self.start


def test_a_crowd_of_lazy_reads_gets_429_and_memory_stays_bounded(start_api):
    settings = Settings(preload=["minilm"], heavy_workers=WORKERS, heavy_queue=QUEUE)
    with start_api(settings) as url, httpx.Client(base_url=url + API, timeout=120) as c:
        text = " ".join(f"word{i} is here." for i in range(90))
        run = c.post("/runs", json={"model": "minilm", "text": text})
        assert run.status_code == 201, run.text
        rid, n = run.json()["id"], len(run.json()["tokens"])
        assert n >= 400  # long enough that one whole-layer answer is tens of MB of JSON
        reads = [
            ("/attention", {"layer": 0}),  # a whole layer, every head, full resolution
            ("/attention", {"layer": 1, "stride": 2, "pool": "mean"}),  # an overview
            ("/attention", {"layer": 2, "format": "topk", "k": 64}),
            (f"/rows/{n - 1}", {}),
        ]
        # warm once per kind (first-call allocations are not the crowd's)
        for path, params in reads:
            assert c.get(f"/runs/{rid}{path}", params=params).status_code == 200
        gate = threading.Barrier(CLIENTS)

        def one(i: int) -> httpx.Response:
            path, params = reads[i % len(reads)]
            with httpx.Client(base_url=url + API, timeout=120) as own:
                gate.wait()
                return own.get(f"/runs/{rid}{path}", params=params)

        rss = PeakRSS()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(one, range(CLIENTS)))
        grew = rss.stop()
        codes = [r.status_code for r in answers]
        assert not [s for s in codes if s >= 500], codes
        assert set(codes) <= {200, 429}, codes
        busy = [r for r in answers if r.status_code == 429]
        assert busy, f"{CLIENTS} reads at once on {WORKERS} worker + {QUEUE} queued: none was refused ({codes})"
        assert all(int(r.headers["Retry-After"]) >= 1 and r.json()["code"] == "busy" for r in busy)
        assert codes.count(200) >= WORKERS + QUEUE
        # The ceiling: one whole-layer JSON answer is the largest read here (heads x n x n float32,
        # ~40x that as Python floats plus their JSON text); at most workers + queue of them are admitted
        # at once. 32 admitted at once (the bug: each read computing in the threadpool) would hold ~10x.
        one_layer = 12 * n * n * 4
        ceiling = (WORKERS + QUEUE) * 40 * one_layer
        assert grew <= ceiling, f"RSS grew {grew / 2**20:.0f} MiB > ceiling {ceiling / 2**20:.0f} MiB"
        assert c.get("/health").json()["heavy_in_flight"] == 0
