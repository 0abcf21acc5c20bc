"""EAP over every edge of SmolLM2's head-level graph for one 31-token induction pair (``<|endoftext|>``
and 15 random tokens, repeated) and exact path patching of one edge, on CPU; then the peak memory of
the circuit route's work (``texts.circuit_of_texts``, what ``POST /circuits`` runs) at the request
limits, each size in a fresh process (peak RSS only grows). Prints seconds, ratios to the issue's
targets (EAP <= 10 s, one exact edge <= 1 s), the graph size, peak RSS and the load average.

    python bench/circuits.py                  # timing, then memory at the route's limits
    python bench/circuits.py --memory 4 128   # one size: 4 pairs of 128 tokens (prints peak RSS)
    python bench/circuits.py --memory 4 128 --eap-only   # up to EAP only
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np
import torch

from attnscope.models.loading import load_model
from attnscope.pipelines.circuits.attribution import eap
from attnscope.pipelines.circuits.extract import ranked_edges
from attnscope.pipelines.circuits.patching import patch_edge, prepare
from attnscope.pipelines.circuits.tasks import IOI_NAMES, induction_pairs

# the worst requests the route allows, by pairs x tokens (MAX_CIRCUIT_PAIRS, MAX_TOKENS, MAX_BATCH_TOKENS)
SIZES = [(1, 128), (4, 128), (16, 32)]


def peak_mib() -> float:
    """This process's peak resident memory (``VmHWM``; ``ru_maxrss`` would carry over the parent's
    resident pages into a child started from it)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timing() -> None:
    backend = load_model("smollm2", device="cpu")
    pairs = induction_pairs(backend.model.config.vocab_size, n=1, half=15, seed=0, bos=0, low=1000)
    t0 = time.perf_counter()
    prep = prepare(backend.model, backend.sites, pairs.clean, pairs.corrupted, pairs.metric)
    t1 = time.perf_counter()
    scores = eap(prep)
    t2 = time.perf_counter()
    s, r = ranked_edges(scores)[0]
    t3 = time.perf_counter()
    exact = patch_edge(prep, s, r)
    t4 = time.perf_counter()
    g = prep.graph
    print(f"load average at the start {os.getloadavg()[0]:.2f}, torch threads {torch.get_num_threads()}")
    print(
        f"tokens {pairs.clean.shape[1]}, senders {g.n_senders}, receivers {g.n_receivers}, edges {int(g.valid().sum())}"
    )
    print(f"prepare (clean + corrupted passes, checked) {t1 - t0:.2f} s")
    print(f"EAP over every edge {t2 - t1:.2f} s  (ratio to the 10 s target {(t2 - t1) / 10:.2f})")
    print(f"EAP + prepare {t2 - t0:.2f} s  (ratio {(t2 - t0) / 10:.2f})")
    print(
        f"exact patch of {g.sender_names()[s]} -> {g.receiver_names()[r]} {t4 - t3:.2f} s "
        f"(ratio to the 1 s target {(t4 - t3) / 1:.2f}); effect {exact:.4f}, EAP {scores[s, r]:.4f}"
    )
    print(
        f"metric clean {prep.m_clean:.3f} corrupted {prep.m_corrupted:.3f}; max |score| {np.nanmax(np.abs(scores)):.4f}"
    )
    print(f"peak RSS {peak_mib():.0f} MiB; load average at the end {os.getloadavg()[0]:.2f}")


def text_pairs(backend, n_pairs: int, n_tokens: int):
    """``n_pairs`` clean/corrupted texts of exactly ``n_tokens`` tokens (even): seeded one-token names
    repeated once (clean), every fourth name of the repeat changed (corrupted), so the clean loss is
    the lower one; a candidate the model fails (its clean loss not below the corrupted one's: the route
    refuses it, e.g. one of the first 16 at 32 tokens) is drawn again."""
    from attnscope.pipelines.circuits.graph import CircuitInputError
    from attnscope.pipelines.circuits.texts import TextPair, prepare_pairs

    rng = np.random.default_rng(0)
    names = [n for n in IOI_NAMES if len(backend.encode_text(" " + n).token_ids) == 1]
    out = []
    while len(out) < n_pairs:
        words = list(rng.choice(names, n_tokens // 2))
        other = [rng.choice([m for m in names if m != w]) if i % 4 == 3 else w for i, w in enumerate(words)]
        clean, corrupted = " " + " ".join(words + words), " " + " ".join(words + other)
        if not len(backend.encode_text(clean).token_ids) == len(backend.encode_text(corrupted).token_ids) == n_tokens:
            continue
        try:
            prepare_pairs(backend, [TextPair(clean, corrupted)], "loss")
        except CircuitInputError:
            continue
        out.append(TextPair(clean, corrupted))
    return out


def memory(n_pairs: int, n_tokens: int, method: str, full: bool = True) -> None:
    """Peak RSS of this process after loading the model, after preparing the pair set (its clean and
    corrupted passes), after EAP over every edge, and (``full``) after the route's heaviest options
    on it: k 500, 11 curve points, mean ablation (two pairs or more), 20 edges re-checked."""
    from attnscope.pipelines.circuits.texts import circuit_of_texts, prepare_pairs

    backend = load_model("smollm2", device="cpu")
    pairs = text_pairs(backend, n_pairs, n_tokens)
    size = f"{n_pairs} pairs x {n_tokens} tokens"
    print(f"{size}: after loading the model {peak_mib():.0f} MiB, load average {os.getloadavg()[0]:.2f}", flush=True)
    t0 = time.perf_counter()
    prep = prepare_pairs(backend, pairs, "loss")
    print(f"{size}: peak RSS after prepare {peak_mib():.0f} MiB ({time.perf_counter() - t0:.0f} s)", flush=True)
    t0 = time.perf_counter()
    eap(prep)
    print(f"{size}: peak RSS after EAP {peak_mib():.0f} MiB ({time.perf_counter() - t0:.0f} s)", flush=True)
    del prep
    if not full:
        return
    t0 = time.perf_counter()
    res = circuit_of_texts(
        backend, None, None, "loss", method=method, steps=16, k=500, n_check=20, curve_points=11,
        pairs=pairs, ablation="mean" if n_pairs > 1 else "corrupted",
    )  # fmt: skip
    print(
        f"{size}, the route's work ({method}, k 500, 11 curve points, 20 edges re-checked, "
        f"{'mean' if n_pairs > 1 else 'corrupted'} ablation): peak RSS {peak_mib():.0f} MiB, "
        f"{time.perf_counter() - t0:.0f} s, faithfulness {res.faithfulness:.3f}, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memory", nargs=2, type=int, metavar=("PAIRS", "TOKENS"), default=None)
    ap.add_argument("--method", default="eap", choices=("eap", "eap-ig"))
    ap.add_argument("--eap-only", action="store_true", help="--memory: stop after EAP")
    args = ap.parse_args()
    if args.memory:
        memory(*args.memory, args.method, full=not args.eap_only)
        return
    timing()
    print("\nthe circuit route's work at its limits (each a fresh process):")
    for pairs, tokens in SIZES:
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, "--memory", str(pairs), str(tokens)], check=True)


if __name__ == "__main__":
    main()
