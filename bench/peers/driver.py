"""What every peer driver shares (project venv side): print-and-keep lines, one side's process, sides
alternated round by round, the report of one pair (medians, max difference, ratios)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


class Tee:
    """Print and keep every line for the results file."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)


def gb(n: float) -> str:
    return f"{n / 1e9:.3f} GB"


def run_side(cmd: list[str], timeout: int) -> dict:
    """One side's process; its last stdout line (JSON), or ``{"error": ...}`` with the tail of stderr."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if p.returncode != 0:
        tail = [line for line in p.stderr.strip().splitlines() if line.strip()][-3:]
        return {"error": f"exit {p.returncode}: " + " | ".join(tail)}
    return json.loads(p.stdout.strip().splitlines()[-1])


def alternate(rounds: int, ours: list[str], theirs: list[str], timeout: int) -> tuple[list[dict], list[dict]]:
    a, b = [], []
    for r in range(rounds):
        if r % 2 == 0:
            a.append(run_side(ours, timeout))
            b.append(run_side(theirs, timeout))
        else:
            b.append(run_side(theirs, timeout))
            a.append(run_side(ours, timeout))
    return a, b


def median(reports: list[dict], key: str) -> float:
    return float(np.median([r[key] for r in reports]))


def report_pair(
    say: Tee,
    what: str,
    ours: list[dict],
    theirs: list[dict],
    diff: str,
    peer: str = "TransformerLens",
    short: str = "TL",
) -> None:
    """Medians of each side's wall, CPU and peak added memory, the answers' difference and the ratios
    (attnscope / peer); a side that failed is printed with its error."""
    for side, reps in (("attnscope", ours), (peer, theirs)):
        bad = [r["error"] for r in reps if "error" in r]
        if bad:
            say(f"    {side}: FAILED: {bad[0]}")
    ours = [r for r in ours if "error" not in r]
    theirs = [r for r in theirs if "error" not in r]
    if not ours or not theirs:
        return
    w_a, w_b = median(ours, "wall_s"), median(theirs, "wall_s")
    c_a, c_b = median(ours, "cpu_s"), median(theirs, "cpu_s")
    m_a, m_b = median(ours, "peak_added_bytes"), median(theirs, "peak_added_bytes")
    say(f"  {what}")
    say(f"    max |difference| {diff}")
    say(f"    {'attnscope':<16} wall {w_a:8.2f} s   cpu {c_a:8.2f} s   peak added {gb(m_a)}")
    say(f"    {peer:<16} wall {w_b:8.2f} s   cpu {c_b:8.2f} s   peak added {gb(m_b)}")
    ratios = f"wall {w_a / w_b:.3f}x   cpu {c_a / c_b:.3f}x   peak added memory {m_a / m_b:.3f}x"
    say(f"    ratio attnscope/{short}: {ratios}")
    say(f"    load average after this pair (1/5/15 min): {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
