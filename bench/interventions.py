"""Benchmark: the batched per-head effect grid against its naive cost, measured side by side.

    python bench/interventions.py [--model smollm2 --tokens 64 --chunk 32 --repeats 3]

The input is ``tokens`` random token ids (the repeated-random-token probe's vocabulary, seeded).
The grid is ``attnscope.pipelines.interventions.head_effects`` (one zero ablation per head, run as
batches of ``chunk`` copies of the input, each row with its own head mask). The naive cost is one
ablated forward pass of one row (same runner, same hook) times the number of heads: what a loop of
``L * H`` separate passes would take. Timings alternate between the two so that load on a shared
machine hits both alike; the ratio uses the best of ``repeats`` runs each (medians printed too).
A check runs first: three heads of the grid equal their one-at-a-time effects. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from attnscope.models.loading import load_model
from attnscope.pipelines.interventions import HeadAblation, InterventionSet, MetricSpec, head_effects, intervene
from attnscope.pipelines.interventions.apply import prepare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--single-repeats", type=int, default=10)
    args = ap.parse_args()

    backend = load_model(args.model, device="cpu")
    vocab = len(backend.tokenizer)
    ids = np.random.default_rng(0).integers(100, vocab - 100, size=args.tokens)
    inp = backend.encode_ids(ids)
    n_l, n_h = backend.n_layers, backend.n_heads
    metric = MetricSpec()
    grid = head_effects(backend, inp, "zero", metric, chunk=args.chunk)["effect"]  # warm-up and the check
    for layer, head in ((0, 0), (n_l // 2, n_h // 2), (n_l - 1, n_h - 1)):
        one = intervene(backend, inp, InterventionSet((HeadAblation(((layer, head),)),)), metric, want_maps=False)
        k = next(iter(one["effects"]))
        assert abs(one["effects"][k] - grid[layer, head]) < 1e-5, (layer, head)

    single = InterventionSet((HeadAblation(((n_l // 2, 0),)),))
    prep = prepare(backend, inp, [single], metric)
    grids, singles = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        head_effects(backend, inp, "zero", metric, chunk=args.chunk)
        grids.append(time.perf_counter() - t0)
        one = []
        for _ in range(args.single_repeats):
            t0 = time.perf_counter()
            prep.forward([single])
            one.append(time.perf_counter() - t0)
        singles.append(min(one))
    naive = min(singles) * n_l * n_h
    print(
        f"model {args.model}: {n_l} layers x {n_h} heads = {n_l * n_h} ablations, {args.tokens} tokens, "
        f"chunk {args.chunk}, torch threads {torch.get_num_threads()}"
    )
    print(
        f"one ablated forward (1 row):  best {min(singles) * 1e3:8.1f} ms   "
        f"median {statistics.median(singles) * 1e3:8.1f} ms"
    )
    print(f"naive grid = that x {n_l * n_h}:     {naive:8.2f} s")
    print(f"batched grid:                 best {min(grids):8.2f} s   median {statistics.median(grids):8.2f} s")
    print(f"ratio batched / naive:        {min(grids) / naive:8.3f}")


if __name__ == "__main__":
    main()
