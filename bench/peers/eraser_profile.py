"""Where attnscope's ERASER evaluation spends its time (the attnscope side of ``ferret_eraser.py``, run
in this process on the first N SST-2 dev sentences), and how many tokens each side feeds the model.

Prints

- the time split of the evaluation (``evaluate_many`` over groups of ``EVAL_CHUNK`` sentences, as
  ``attnscope_side.py eraser`` runs it): the classifier's forward passes (timed by a pre/post hook pair
  on this process' own model), the rest of ``predict`` (padding, copies), and the rest (planning the
  perturbations, scoring);
- the top operators of the forward passes (``torch.profiler``, self CPU time);
- the tokens: attnscope's distinct perturbed inputs and the padded slots its batches hold, against the
  padded slots ferret's evaluators run for the same rationales (per explanation and metric: the full
  input once, then every kept bin's input in one batch padded to its longest; ids as attnscope builds
  them, so lengths where ferret's decode/re-tokenise round trip changes them are approximate). Both sides
  pay about the same per token, so the ratio of slots bounds the time ratio at equal numbers.

    .venv/bin/python bench/peers/eraser_profile.py [--n 40] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from driver import Tee  # noqa: E402
from ferret_eraser import build_items  # noqa: E402


def ferret_slots(plans: dict, inputs, n_tokens: int) -> tuple[int, int]:
    """``(forward calls, padded token slots)`` ferret's two evaluators spend on one sentence's plans."""
    calls = slots = 0
    for entries in plans.values():
        comp = [len(inputs.seqs[c]) for b, c, _, _ in entries if b >= 0 and c is not None]
        suff = [len(inputs.seqs[s]) for b, _, s, _ in entries if b >= 0 and s is not None]
        calls, slots = calls + 2, slots + 2 * n_tokens  # each evaluator's full-input forward
        if comp:
            calls, slots = calls + 2, slots + len(comp) * max(comp) + len(suff) * max(suff)
    return calls, slots


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from attnscope.analysis.faithfulness import Scored, _Inputs, _plan, evaluate_many, get_convention
    from attnscope.pipelines.explainers import make_predict
    from attnscope.pipelines.faithfulness_shards import EVAL_CHUNK

    torch.set_num_threads(a.threads)
    say = Tee()
    clf, _, items = build_items(a.n)
    conv = get_convention("ferret")
    scored = [Scored(np.asarray(it["ids"]), it["scores"], tuple(it["special"]), it["target"]) for it in items]
    inner = make_predict(clf)
    acc = {"predict": 0.0, "forward": 0.0, "calls": 0, "slots": 0, "real": 0, "t0": 0.0}

    def pre(_mod, _args, kwargs):
        acc["calls"] += 1
        acc["slots"] += kwargs["input_ids"].numel()
        acc["real"] += int(kwargs["attention_mask"].sum())
        acc["t0"] = time.process_time()

    def post(_mod, _args, _out):
        acc["forward"] += time.process_time() - acc["t0"]

    def predict(batch):
        t = time.process_time()
        out = inner(batch)
        acc["predict"] += time.process_time() - t
        return out

    def run(batch, fn=predict):
        for first in range(0, len(batch), EVAL_CHUNK):
            evaluate_many(fn, batch[first : first + EVAL_CHUNK], k=0.2, convention=conv)

    run(scored[:1])  # warm
    # hooks on this process' own model, removed below (nothing else shares it)
    handles = [
        clf.classifier.register_forward_pre_hook(pre, with_kwargs=True),
        clf.classifier.register_forward_hook(post),
    ]
    for key in acc:
        acc[key] = 0
    wall, cpu = time.perf_counter(), time.process_time()
    run(scored)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for h in handles:
        h.remove()
    say(
        f"attnscope's ERASER evaluation (ferret's convention, 4 explainers) of {len(items)} SST-2 dev sentences, "
        f"MiniLM SST-2, torch threads {a.threads}; load average {os.getloadavg()[0]:.1f}"
    )
    say(f"  total {cpu:.2f} s CPU ({wall:.2f} s wall)")
    fwd = acc["forward"]
    say(f"  classifier forward passes  {fwd:7.2f} s CPU  {fwd / cpu:6.1%}  ({acc['calls']} calls)")
    rest = acc["predict"] - acc["forward"]
    say(f"  rest of predict (batching) {rest:7.2f} s CPU  {rest / cpu:6.1%}")
    other = cpu - acc["predict"]
    say(f"  planning + scoring         {other:7.2f} s CPU  {other / cpu:6.1%}")

    sub = scored[: max(1, len(scored) // 4)]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run(sub, inner)
    say(f"  top operators over the first {len(sub)} sentences (torch.profiler, self CPU time):")
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    for e in events[:8]:
        say(f"    {e.key:<40} {e.self_cpu_time_total / 1e6:7.2f} s  {e.self_cpu_time_total / total:6.1%}  x{e.count}")

    ours_inputs = ours_tokens = f_calls = f_slots = 0
    for first in range(0, len(scored), EVAL_CHUNK):
        inputs = _Inputs()
        for ex in scored[first : first + EVAL_CHUNK]:
            _, plans = _plan(ex, 0.2, conv, None, inputs)
            c, s = ferret_slots(plans, inputs, len(ex.ids))
            f_calls, f_slots = f_calls + c, f_slots + s
        ours_inputs += len(inputs.seqs)
        ours_tokens += sum(len(s) for s in inputs.seqs)
    say(
        f"  tokens: attnscope {ours_inputs} distinct inputs, {ours_tokens} tokens, {acc['slots']} padded slots in "
        f"{acc['calls']} forward calls ({acc['slots'] / acc['real'] - 1:.1%} padding)"
    )
    say(f"          ferret (same rationales) {f_calls} forward calls, {f_slots} padded slots")
    say(f"          ferret / attnscope slots: {f_slots / acc['slots']:.2f}x")
    say(f"  per padded slot: attnscope {acc['forward'] / acc['slots'] * 1e6:.0f} us CPU in the forward passes")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
