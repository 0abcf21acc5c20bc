"""What every side of a peer comparison measures, the same way on both sides (standard library and
numpy only: the peers' environments import this module too).

A side is one fresh process per measurement: it loads its model, warms it up on a short input, then
``measure(fn)`` runs the quantity once and reports

- ``wall_s`` and ``cpu_s`` (``time.perf_counter`` / ``time.process_time``: all the process' threads);
- ``peak_added_bytes``: the peak resident set size during ``fn`` above the resident size just before
  it. The kernel's high-water mark is reset first (``/proc/self/clear_refs`` ``5``) and read after
  (``VmHWM``), so a short spike between samples is not missed; where the reset is refused, a 5 ms
  sampler thread stands in (``peak_method`` says which);
- ``rss_before_bytes`` and ``maxrss_bytes`` (``getrusage``'s lifetime peak, loading included).

``emit`` prints the report as the last stdout line (JSON); the driver reads it.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from pathlib import Path

import numpy as np


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _hwm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class _Sampler:
    def __init__(self):
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


def measure(fn):
    """``(result, report)``: ``fn()`` run once, timed, its added peak memory measured (module docstring)."""
    import gc

    gc.collect()
    before = rss_bytes()
    reset = _reset_hwm()
    sampler = _Sampler()
    with sampler:
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    peak = max(_hwm_bytes(), sampler.peak) if reset else sampler.peak
    report = {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_added_bytes": max(0, peak - before),
        "rss_before_bytes": before,
        "maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_method": "VmHWM after clear_refs" if reset else "5 ms sampler",
    }
    return result, report


def emit(report: dict) -> None:
    print(json.dumps(report), flush=True)


def save(out: Path, **arrays) -> None:
    """The arrays a side's answer is checked by, as ``.npy`` files in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        np.save(out / f"{name}.npy", np.asarray(value))


def maps_file(out: Path, shape: tuple[int, ...]) -> np.memmap:
    """A float32 ``[layer, head, query, key]`` ``.npy`` file opened for writing (the full stack of maps is
    written layer by layer after the measurement, never held in memory twice)."""
    out.mkdir(parents=True, exist_ok=True)
    return np.lib.format.open_memmap(out / "maps.npy", mode="w+", dtype=np.float32, shape=shape)
