"""Benchmark: the batched per-head effect grid against its naive cost, measured side by side.

    python bench/interventions.py [--model smollm2 --tokens 64 --chunk 32 --repeats 3]

The input is ``tokens`` random token ids (the repeated-random-token probe's vocabulary, seeded).
The grid is ``attnscope.pipelines.interventions.head_effects`` (one zero ablation per head): the
heads of layer ``l`` as one batch run through blocks ``l..L-1`` only, from the clean residual
stream entering block ``l``. The naive cost is what a loop of ``L * H`` separate passes takes: one
full ablated forward pass of one row (same runner, same hook) per head.

Both are timed piece by piece and interleaved, so that load on a shared machine hits both alike:
in each round, for every layer, the grid's batch of that layer, then one naive pass ablating a head
of that layer (times ``H``); the order flips every round. A round's ratio is the sum of its batches
over the sum of its naive passes; printed are the best and median over ``repeats`` rounds, and the
whole ``head_effects`` call timed once after the first round (its overhead beyond the batches: the
clean pass, edits, metrics). A check runs first: three heads of the grid equal their one-at-a-time effects.
Printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from attnscope.models.loading import load_model
from attnscope.pipelines.interventions import HeadAblation, InterventionSet, MetricSpec, head_effects, intervene
from attnscope.pipelines.interventions.apply import grid_sets, prepare


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    backend = load_model(args.model, device="cpu")
    vocab = len(backend.tokenizer)
    ids = np.random.default_rng(0).integers(100, vocab - 100, size=args.tokens)
    inp = backend.encode_ids(ids)
    n_l, n_h = backend.n_layers, backend.n_heads
    metric = MetricSpec()
    grid = head_effects(backend, inp, "zero", metric, chunk=args.chunk)["effect"]  # warm-up and the check
    worst = 0.0
    for layer, head in ((0, 0), (n_l // 2, n_h // 2), (n_l - 1, n_h - 1)):
        one = intervene(backend, inp, InterventionSet((HeadAblation(((layer, head),)),)), metric, want_maps=False)
        value = next(iter(one["effects"].values()))
        worst = max(worst, abs(value - grid[layer, head]))
        assert abs(value - grid[layer, head]) < 1e-4, (layer, head, value, grid[layer, head])

    sets = grid_sets(n_l, n_h, "zero")
    batched_prep = prepare(backend, inp, sets[:1], metric, record=True)
    naive_prep = prepare(backend, inp, sets[:1], metric)
    rows = min(n_h, args.chunk)

    def batch(layer: int) -> float:
        return sum(
            _timed(lambda h=h: batched_prep.forward(sets[layer * n_h + h : layer * n_h + h + rows], start=layer))
            for h in range(0, n_h, rows)
        )

    def naive(layer: int) -> float:
        return n_h * _timed(lambda: naive_prep.forward([sets[layer * n_h]]))

    ratios, batched, naives, wholes = [], [], [], []
    for r in range(args.repeats):
        b_sum = n_sum = 0.0
        for layer in range(n_l):
            if (r + layer) % 2:
                n_sum += naive(layer)
                b_sum += batch(layer)
            else:
                b_sum += batch(layer)
                n_sum += naive(layer)
        if r == 0:  # once: the whole call's overhead beyond its batches
            wholes.append(_timed(lambda: head_effects(backend, inp, "zero", metric, chunk=args.chunk)))
        batched.append(b_sum)
        naives.append(n_sum)
        ratios.append(b_sum / n_sum)
    print(
        f"model {args.model}: {n_l} layers x {n_h} heads = {n_l * n_h} ablations, {args.tokens} tokens, "
        f"{rows} rows per batch, torch threads {torch.get_num_threads()}, {args.repeats} rounds"
    )
    print(f"grid vs one-at-a-time, 3 heads: max |difference| {worst:.2e}")
    for name, values in (
        (f"naive grid ({n_l * n_h} one-row passes)", naives),
        ("batched grid (sum of batches)", batched),
        ("whole head_effects call", wholes),
    ):
        print(f"{name:34s} best {min(values):8.2f} s   median {statistics.median(values):8.2f} s")
    print(f"{'ratio batched / naive per round':34s} best {min(ratios):6.3f}   median {statistics.median(ratios):6.3f}")


if __name__ == "__main__":
    main()
