"""A census job through a running stack's API, for the container check of the ``ray`` profile.

``run`` submits a small MiniLM census (``POST /api/v1/jobs``), polls it to the end and writes its result
(and the ``worker`` that ran it) to a JSON file; ``compare`` checks that two such files hold the same
table, to float precision, and that each was run by the executor it should have been:

    python deploy/census_check.py run --api-url http://127.0.0.1:18000 --token T --out inproc.json --expect in-process
    python deploy/census_check.py run --api-url http://127.0.0.1:18000 --token T --out ray.json --expect ray
    python deploy/census_check.py compare inproc.json ray.json

deploy/docker-test.sh runs the first against the default stack (jobs in the API process) and the
second against the ``ray`` profile (a Ray head and a worker container), then compares them: the
Ray executor merges its shards exactly as the in-process one does.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from e2e_check import CheckFailed, check, http

PARAMS = {"model": "minilm", "dataset": "sst2", "n": 60, "seed": 0}  # 3 shards of 25: the Ray run spreads them
# Equal up to float rounding: the API process runs torch with the container's threads, each Ray actor with one
# (ATTNSCOPE_RAY_THREADS=1), and a sum over a different number of threads rounds differently (measured:
# 2e-6 relative on the largest differences), and the table's rows are rounded to 6 decimals, so a last digit
# may flip; the shards, their order and the merge are the same.
REL_TOL, ABS_TOL = 1e-5, 2e-6


def run(api: str, token: str | None, out: str, expect: str, timeout_s: float) -> None:
    t0 = time.monotonic()
    status, _, raw = http("POST", f"{api}/api/v1/jobs", token=token, body={"kind": "census", "params": PARAMS})
    check(status in (200, 201, 202), f"POST /jobs answered {status}: {raw[:300]!r}")
    job = json.loads(raw)
    while job["status"] in ("queued", "running"):
        check(time.monotonic() - t0 < timeout_s, f"census job {job['id']} still {job['status']} after {timeout_s} s")
        time.sleep(1.0)
        status, _, raw = http("GET", f"{api}/api/v1/jobs/{job['id']}", token=token)
        check(status == 200, f"GET /jobs/{job['id']} answered {status}: {raw[:300]!r}")
        job = json.loads(raw)
    check(job["status"] == "done", f"census job {job['id']} ended {job['status']}: {job.get('error')}")
    worker = job.get("worker") or ""
    check(worker.startswith(expect), f"census job ran on {worker!r}, expected {expect}@...")
    status, _, raw = http("GET", f"{api}/api/v1/jobs/{job['id']}/result", token=token)
    check(status == 200, f"GET /jobs/{job['id']}/result answered {status}: {raw[:300]!r}")
    result = json.loads(raw)
    check(len(result["rows"]) == 6 * 12, f"the census has {len(result['rows'])} rows, expected 72 heads")
    with open(out, "w") as f:
        json.dump({"worker": worker, "shards": job.get("shards_total"), "result": result}, f)
    secs = time.monotonic() - t0
    print(f"ok  census of {PARAMS['n']} sentences on {worker} in {job.get('shards_total')} shards ({secs:.1f} s)")


def _diff(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _diff(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL) else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def compare(first: str, second: str) -> None:
    with open(first) as f:
        a = json.load(f)
    with open(second) as f:
        b = json.load(f)
    diffs = _diff(a["result"], b["result"])
    check(not diffs, f"{a['worker']} and {b['worker']} disagree: " + "; ".join(diffs[:5]))
    print(
        f"ok  census on {b['worker']} ({b['shards']} shards) equals the census on {a['worker']} "
        f"(72 heads x 22 statistics, relative tolerance {REL_TOL})"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--api-url", required=True)
    r.add_argument("--token", default=None)
    r.add_argument("--out", required=True)
    r.add_argument("--expect", required=True, choices=["in-process", "ray"])
    r.add_argument("--timeout", type=float, default=600.0)
    c = sub.add_parser("compare")
    c.add_argument("first")
    c.add_argument("second")
    args = p.parse_args()
    try:
        if args.cmd == "run":
            run(args.api_url.rstrip("/"), args.token, args.out, args.expect, args.timeout)
        else:
            compare(args.first, args.second)
    except CheckFailed as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
