"""Measure-theoretic analyses on MiniLM at 128 tokens: how long each takes, and what they give.

Times (median of --repeats, after a warm-up): the W1 profile (6 exact assignments, 128 x 128 in
dim 384), W1 between two inputs of different lengths (POT), the max-entropy check (72 x 128 rows),
the DERIVED Lipschitz bound of one layer, the empirical Lipschitz estimate of one layer (random +
gradient ascent, the API's default budget), and 30 steps of a layer's block iterated. Then, per
layer: log10 L, L_hat and log10(L_hat / L). Last, for every trained HA model (``--ha-steps``
iterations of its shared block): the verdict, the fixed-key bound (global, along the orbit, worst
slack against the observed step ratios), L_hat around x0, and the time of the iteration alone
against the bound + estimate measured in the same run.

    .venv/bin/python bench/measure.py [--repeats 3] [--layers 0,1,2,3,4,5] [--device cpu]

On a shared, loaded CPU run it with OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1: these are small
matrices, and multi-threaded BLAS stalls at thread barriers (the bound took 10 ms on one thread and
0.1-2 s on two, on a 2-core machine at load 10).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]

from timing import timeit  # noqa: E402  (bench/ is on sys.path when a script here runs)

from attnscope.analysis.lipschitz import lipschitz_bound  # noqa: E402
from attnscope.analysis.measure import (  # noqa: E402
    fixed_point_iteration,  # noqa: E402
    w1_between_inputs,
    w1_successive,
)
from attnscope.models.capture import (  # noqa: E402
    capture,
    capture_encoded,  # noqa: E402
    capture_image,
)
from attnscope.models.loading import load_model  # noqa: E402
from attnscope.models.zoo import data, samples  # noqa: E402
from attnscope.models.zoo.manifest import read_manifest  # noqa: E402
from attnscope.pipelines.layers import extract_attention_params, max_entropy_deviation  # noqa: E402
from attnscope.pipelines.lipschitz import lipschitz_report  # noqa: E402
from attnscope.pipelines.shared_block import block_step, iterate_shared_block  # noqa: E402

HA_MODELS = ("text-ha", "ha-vit", "ha-learned2d-content", "ha-san-pairwise")

SST2 = [p / "shared" / "data" / "sst2" / "dev.tsv" for p in ROOT.parents]


def sentences() -> list[str]:
    """Real sentences (SST-2 dev when present)."""
    for path in SST2:
        if path.exists():
            return [line.split("\t")[0] for line in path.read_text().splitlines()[1:]]
    return ["the film is a charming, funny and moving story about growing up ."] * 200


def encoded(loaded, text: str, n_tokens: int) -> dict:
    """Exactly ``n_tokens`` positions: truncate the ids (never decode and re-tokenise)."""
    enc = loaded.tokenizer([text], return_tensors="pt", truncation=True, max_length=n_tokens)
    assert enc["input_ids"].shape[1] == n_tokens, "the text is too short for the requested length"
    return dict(enc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layers", default="0,1,2,3,4,5")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ha-steps", type=int, default=40)
    args = ap.parse_args()

    loaded = load_model("minilm", device=args.device)
    lines = sentences()
    cap = capture_encoded(loaded, encoded(loaded, " ".join(lines[:12]), args.tokens))[0]
    other = capture_encoded(loaded, encoded(loaded, " ".join(lines[12:24]), args.tokens - 28))[0]
    hs = cap.hidden_states
    print(
        f"minilm tokens={hs.shape[1]} dim={hs.shape[2]} torch={torch.__version__} threads={torch.get_num_threads()} "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"
    )

    t_profile = timeit(lambda: w1_successive(hs), args.repeats)
    t_between = timeit(lambda: w1_between_inputs(hs, other.hidden_states), args.repeats)
    t_maxent = timeit(lambda: max_entropy_deviation(loaded, cap), args.repeats)
    params = extract_attention_params(loaded, 0)
    t_bound = timeit(lambda: lipschitz_bound(params, float(np.linalg.norm(hs[0], axis=1).max())), args.repeats)
    t_est = timeit(lambda: lipschitz_report(loaded, 0, hs[0]), max(1, args.repeats // 2))
    t_fixed = timeit(lambda: iterate_shared_block(loaded, hs[2], 30, layer=2), max(1, args.repeats // 2))
    print(f"W1 profile (6 layers, assignment)        {t_profile * 1e3:9.1f} ms")
    print(f"W1 between inputs ({hs.shape[1]} vs {other.hidden_states.shape[1]} tokens, POT) {t_between * 1e3:9.1f} ms")
    print(f"max-entropy check (6 x 12 x {hs.shape[1]} rows)    {t_maxent * 1e3:9.1f} ms")
    print(f"Lipschitz bound, one layer               {t_bound * 1e3:9.1f} ms")
    print(f"Lipschitz estimate, one layer (default)  {t_est * 1e3:9.1f} ms")
    print(f"30 iterations of layer 2's block         {t_fixed * 1e3:9.1f} ms")

    print("W1 profile:", " ".join(f"L{l}={v:.3f}" for l, v in enumerate(w1_successive(hs))))
    print("W1 between inputs:", " ".join(f"{v:.3f}" for v in w1_between_inputs(hs, other.hidden_states)))
    print("max-entropy deviation:", " ".join(f"L{l}={v:.1e}" for l, v in enumerate(max_entropy_deviation(loaded, cap))))
    print("layer      R   log10 L  (no-bias)    L_hat  (random / ascent)  log10(L_hat/L)  evals   s")
    for layer in (int(v) for v in args.layers.split(",")):
        r = lipschitz_report(loaded, layer, hs[layer])
        flag = "" if r.log10_ratio <= 0 else "  <-- VIOLATION"
        print(
            f"L{layer:<4} {r.radius:6.2f} {r.bound.log10_bound:9.1f} {r.bound.log10_bound_without_bias:9.1f} "
            f"{r.estimate:9.2f}  ({r.best_random:6.2f} / {r.best_ascent:6.2f}) {r.log10_ratio:14.1f} "
            f"{r.n_evaluations:6d} {r.seconds:5.1f}{flag}"
        )
    it = iterate_shared_block(loaded, hs[2], 30, layer=2)
    print(
        f"layer 2 block iterated 30x (demonstration): W1 step1={it.result.w1_steps[0]:.3f} "
        f"step30={it.result.w1_steps[-1]:.3f} tail rate={it.result.rate:.3f} converged={it.result.converged} "
        f"log10 L_attn+res={it.log10_bound_attention:.1f}"
    )
    ha_table(args.ha_steps, lines[0])


def ha_table(n_steps: int, sentence: str) -> None:
    """The HA shared blocks: verdict and fixed-key bound, and what the bound costs beside the iteration."""
    print(f"HA shared blocks, {n_steps} iterations (bound: DERIVED fixed-key, max-token metric)")
    print(
        "model                  verdict    drift  order  log10 L global  orbit first->last  slack   L_hat "
        "@bound  iterate s  +bound s"
    )
    for name in HA_MODELS:
        if read_manifest(name) is None or (name != "text-ha" and not data.available()):
            print(f"{name:22s} (not trained or no data: skipped)")
            continue
        loaded = load_model(name, device="cpu")
        if name == "text-ha":
            x0 = capture(loaded, sentence).hidden_states[0]
        else:
            x0 = capture_image(loaded, loaded.prepare_image(samples.sample("mnist", 7)[0])).hidden_states[0]
        x0 = x0.astype(np.float64)
        step = block_step(loaded, None, x0)[1]
        start = time.perf_counter()
        fixed_point_iteration(step, x0, n_steps)
        t_plain = time.perf_counter() - start
        start = time.perf_counter()
        it = iterate_shared_block(loaded, x0, n_steps)
        t_full = time.perf_counter() - start
        r, c = it.result, it.block_contraction
        drift = f"{r.drift:6.2f}" if r.drift is not None else "     -"
        order = f"{r.normalised_order:5.2f}" if r.normalised_order is not None else "    -"
        print(
            f"{name:22s} {r.behaviour:9s} {drift} {order} {c.global_bound.log10_bound:15.2f} "
            f"{c.orbit.log10_bound[0]:8.2f} -> {c.orbit.log10_bound[-1]:5.2f} {c.orbit.worst_slack:6.2f} "
            f"{c.estimate.estimate:7.2f} {c.estimate.log10_bound_at_estimate:6.2f} {t_plain:10.2f} "
            f"{t_full - t_plain:9.2f}"
        )


if __name__ == "__main__":
    main()
