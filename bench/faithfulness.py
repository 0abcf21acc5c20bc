"""ERASER evaluation cost: attnscope (all perturbations of an example, for all explainers, in one
batched call, duplicates sent once) versus a one-perturbation-per-forward loop, and versus
ferret-xai's evaluators when a Python with ferret is given (``--ferret-python``, a separate venv).

Same fixed scores (4 explainers: attention, rollout, saliency, random) on the first N SST-2 dev
sentences, comprehensiveness + sufficiency at k and AOPC over the convention's bins. Prints time
ratios and the largest difference between the numbers under matching conventions.

    .venv/bin/python bench/faithfulness.py [--n 200] [--ferret-python /path/to/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]

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


def survives_round_trip(tokenizer, ids, scores, special, conv) -> bool:
    """Whether every perturbed input of this convention decodes and re-tokenises to the same ids
    (ferret perturbs decoded text; attnscope perturbs ids)."""
    cand = candidate_positions(len(ids), special)
    for frac in conv.bins:
        r = select_rationale(scores, frac, cand, conv)
        if r is None:
            continue
        for seq in (remove_tokens(ids, r), keep_tokens(ids, r, special)):
            text = tokenizer.decode(seq[1:-1].tolist())
            if tokenizer(text)["input_ids"] != seq.tolist():
                return False
    return True


def as_numbers(res) -> list[float]:
    return [res.comprehensiveness, res.sufficiency, res.aopc_comprehensiveness, res.aopc_sufficiency]


def run_ferret(python: str, checkpoint: Path, items: list[dict]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "items.json"
        data.write_text(json.dumps(items))
        cmd = [python, str(ROOT / "bench" / "ferret_side.py"), str(checkpoint), str(data)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--ferret-python", default=None, help="python of a venv with ferret-xai installed")
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
    if not a.ferret_python:
        return 0
    conv = get_convention("ferret")
    t_ours = t_ferret = 0.0
    same, changed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        clf.model.save_pretrained(tmp)
        clf.tokenizer.save_pretrained(tmp)
        for c in range(0, len(examples), 20):
            chunk = list(zip(rows, examples, scores))[c : c + 20]
            start = time.perf_counter()
            ours = [evaluate(predict, ex.input_ids, s, special=ex.special, k=K, convention=conv) for _, ex, s in chunk]
            t_ours += time.perf_counter() - start
            items = [
                {
                    "text": r.text,
                    "ids": ex.input_ids.tolist(),
                    "target": o[EXPLAINERS[0]].target,
                    "scores": {e: s[e].tolist() for e in EXPLAINERS},
                }
                for (r, ex, s), o in zip(chunk, ours)
            ]
            fr = run_ferret(a.ferret_python, Path(tmp), items)
            t_ferret += fr["seconds"]
            for (_, ex, s), o, f in zip(chunk, ours, fr["results"]):
                for e in EXPLAINERS:
                    d = [abs(o[e].aopc_comprehensiveness - f[e][0]), abs(o[e].aopc_sufficiency - f[e][1])]
                    ok = survives_round_trip(clf.tokenizer, ex.input_ids, s[e], ex.special, conv)
                    (same if ok else changed).extend(d)
    same_d, changed_d = np.array(same or [0.0]), np.array(changed or [0.0])
    print(
        f"[ferret] attnscope batched: {t_ours:.2f} s; ferret-xai {fr['version']} evaluators: {t_ferret:.2f} s; "
        f"ferret/attnscope = {t_ferret / t_ours:.1f}x"
    )
    print(
        f"[ferret] AOPC max |diff| where every perturbed input survives decode/re-tokenise: "
        f"{same_d.max():.2e} ({len(same) // 2} explanations); where ferret's round trip changes "
        f"the ids: {changed_d.max():.2e} ({len(changed) // 2} explanations, "
        f"{(changed_d > 1e-3).mean():.0%} of their values differ by > 1e-3)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
