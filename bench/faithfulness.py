"""ERASER evaluation cost: attnscope (all perturbations of an example, for all explainers, in one
batched call, duplicates sent once) versus a one-perturbation-per-forward loop. ferret-xai's evaluators
are compared in ``bench/peers/ferret_eraser.py`` (their own venv).

Same fixed scores (4 explainers: attention, rollout, saliency, random) on the first N SST-2 dev
sentences, comprehensiveness + sufficiency at k and AOPC over the convention's bins. Prints time
ratios and the largest difference between the numbers under matching conventions.

    .venv/bin/python bench/faithfulness.py [--n 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnscope.analysis.faithfulness import (  # noqa: E402
    candidate_positions,
    evaluate,
    get_convention,
    keep_tokens,
    remove_tokens,
    select_rationale,
)
from attnscope.models.loading import load_model  # noqa: E402
from attnscope.pipelines.datasets import load_sst2  # noqa: E402
from attnscope.pipelines.explainers import example_from_text, make_explainer, make_predict  # noqa: E402

EXPLAINERS = ("attention", "rollout", "saliency", "random")
K = 0.2


def naive(predict, ids, scores, special, k, conv):
    """One forward per perturbation, explainer by explainer (what a straightforward loop does)."""
    p_full = predict([ids])[0]
    t = int(p_full.argmax())
    cand = candidate_positions(len(ids), special)
    out = {}
    for name, s in scores.items():
        vals = {}
        for key, frac in [("k", k), *[(f"b{i}", b) for i, b in enumerate(conv.bins)]]:
            r = select_rationale(s, frac, cand, conv)
            vals[key] = (
                p_full[t] - predict([remove_tokens(ids, r)])[0, t],
                p_full[t] - predict([keep_tokens(ids, r, special)])[0, t],
            )
        bins = [vals[f"b{i}"] for i in range(len(conv.bins))]
        out[name] = [
            vals["k"][0],
            vals["k"][1],
            float(np.mean([b[0] for b in bins])),
            float(np.mean([b[1] for b in bins])),
        ]
    return out


def as_numbers(res) -> list[float]:
    return [res.comprehensiveness, res.sufficiency, res.aopc_comprehensiveness, res.aopc_sufficiency]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    clf = load_model("minilm-sst2", device="cpu")
    predict = make_predict(clf)
    rows = load_sst2("dev")[: a.n]
    examples = [example_from_text(clf, r.text) for r in rows]
    explainers = {e: make_explainer(e, clf) for e in EXPLAINERS}
    scores = [{e: explainers[e].explain(ex) for e in EXPLAINERS} for ex in examples]  # fixed, not timed
    print(f"{a.n} SST-2 dev sentences, explainers {', '.join(EXPLAINERS)}, k={K}")

    # attnscope and the loop alternate per example (and which goes first), so that both see the
    # same load on a shared machine; ferret runs on chunks of 20 right after attnscope's chunk.
    conv = get_convention("eraser")
    t_ours = t_loop = 0.0
    diff = 0.0
    for i, (ex, s) in enumerate(zip(examples, scores)):
        order = ("ours", "loop") if i % 2 == 0 else ("loop", "ours")
        for who in order:
            start = time.perf_counter()
            if who == "ours":
                o = evaluate(predict, ex.input_ids, s, special=ex.special, k=K, convention=conv)
                t_ours += time.perf_counter() - start
            else:
                l = naive(predict, ex.input_ids, s, ex.special, K, conv)
                t_loop += time.perf_counter() - start
        diff = max(diff, max(abs(x - y) for e in EXPLAINERS for x, y in zip(as_numbers(o[e]), l[e])))
    print(
        f"[eraser] attnscope batched: {t_ours:.2f} s; one-perturbation-per-forward loop: {t_loop:.2f} s; "
        f"loop/attnscope = {t_loop / t_ours:.1f}x; max |diff| = {diff:.2e}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
