"""Benchmark: one QK attribution (``attnscope.pipelines.qk.explain.explain_pair``) on SmolLM2 beside a
plain run of the same input, in one process (``docs/methods/qk-attribution.md``).

    ATTNSCOPE_MAX_CAUSAL_TOKENS=2048 python bench/qk.py [--layer 18 --head 0 --tokens 64 1024 --repeats 3]

(SmolLM2 runs are capped at 512 tokens unless ``ATTNSCOPE_MAX_CAUSAL_TOKENS`` says more.)

Inputs are seeded random token ids. For each length, the attribution of (last position, the key in
the middle) and a plain ``backend.run`` are timed alternately (so load on a shared machine hits both
alike); best and median of ``repeats`` each, their ratio, the conservation error and the process's max
RSS after. Then K-composition scores of every head pair, once. Figures are printed, never asserted.

    python bench/qk.py --probe-memory [--tokens 1024 4096]

measures instead the peak resident memory (``VmHWM`` after resetting it through ``/proc/self/clear_refs``,
less the resident memory before) of the recorded pass through the layer with the old probe (the layer's
whole ``[head, query, key]`` logits, ``FullLogitsProbe``) and with ``RowProbe`` (one row from the queries
and keys), and of one whole ``explain_pair``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np
import torch

from attnscope.models.loading import load_model
from attnscope.pipelines.qk.explain import explain_pair, sites_composition
from attnscope.pipelines.qk.site_parts import RowProbe, record


def _timed(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


class FullLogitsProbe(RowProbe):
    """The probe as it was: no ``read_qk``, so the layer computes and hands over its whole logits."""

    read_qk = None

    def layer_edits(self, layer: int) -> tuple[bool, bool]:
        return layer == self.layer, False


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _peak_mib(fn, *args, **kwargs) -> float:
    """Peak resident memory above the current one while ``fn(*args, **kwargs)`` runs, MiB (Linux)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current resident size
    before = _status_kib("VmRSS")
    fn(*args, **kwargs)
    return (_status_kib("VmHWM") - before) / 1024


def probe_memory(backend, args, rng, vocab: int) -> None:
    for n in args.tokens:
        inp = backend.encode_ids([int(t) for t in rng.integers(1000, vocab - 1000, size=n)])
        i, j = len(inp) - 1, len(inp) // 2
        backend.run(inp, hidden_states=False)  # warm: weights and allocator touched once
        figures = {}
        probes = [("full logits (before)", FullLogitsProbe), ("RowProbe (after)", RowProbe)]
        for name, probe in probes[::-1] if args.after_first else probes:  # the order's bias, checked
            p = probe(args.layer, args.head, i)
            figures[name] = _peak_mib(record, backend, inp, args.layer, probe=p)
        figures["explain_pair (after)"] = _peak_mib(explain_pair, backend, inp, args.layer, args.head, i, j)
        text = ", ".join(f"{k} +{v:.0f} MiB" for k, v in figures.items())
        print(f"{len(inp):5d} tokens, peak above resident: {text}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--layer", type=int, default=18)
    ap.add_argument("--head", type=int, default=0)
    ap.add_argument("--tokens", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--probe-memory", action="store_true", help="peak memory of the row probe, before/after")
    ap.add_argument("--after-first", action="store_true", help="with --probe-memory: measure the new probe first")
    args = ap.parse_args()
    backend = load_model(args.model, device=args.device)
    print(f"model {args.model} on {args.device}, torch threads {torch.get_num_threads()}, L{args.layer}H{args.head}")
    rng = np.random.default_rng(0)
    vocab = int(backend.model.config.vocab_size)
    if args.probe_memory:
        probe_memory(backend, args, rng, vocab)
        return
    for n in args.tokens:
        inp = backend.encode_ids([int(t) for t in rng.integers(1000, vocab - 1000, size=n)])
        i, j = len(inp) - 1, len(inp) // 2
        qk_times, run_times, err = [], [], 0.0
        for _ in range(args.repeats):
            t, ex = _timed(explain_pair, backend, inp, args.layer, args.head, i, j)
            qk_times.append(t)
            err = max(err, ex.attribution.conservation_error, abs(float(ex.attribution.matrix.sum()) - ex.model_score))
            run_times.append(_timed(backend.run, inp, hidden_states=False)[0])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{len(inp):5d} tokens: QK attribution best {min(qk_times):.3f} s"
            f" (median {statistics.median(qk_times):.3f}),"
            f" plain run best {min(run_times):.3f} s, ratio {min(qk_times) / min(run_times):.2f};"
            f" parts {len(ex.attribution.key_labels)}, |terms - model logit| max {err:.2e}; max RSS {rss:.0f} MiB"
        )
    t, comp = _timed(sites_composition, backend, modes=("k",))
    mean, std = comp.baseline["k"]
    print(f"K-composition of every head pair: {t:.2f} s; baseline {mean:.4f} +- {std:.4f}")


if __name__ == "__main__":
    main()
