"""Where attnscope's side of the "every map" comparison (``attnscope_side.py maps``) spends its time and
memory, and so how low its ratio to TransformerLens can go at equal float32 numbers.

Prints, for SmolLM2 at ``--tokens`` (this repository's docs, as ``tlens.py`` feeds both sides):

- time: the lazy run (the transformer body with the stream entering each block recorded, or its queries
  and keys under ``ATTNSCOPE_LAZY_RECORD=qk``, then the prediction)
  and every head's map computed once from the recording, each timed alone (CPU s, ``common.measure``);
  then the whole of it under ``torch.profiler``: the share of the operators that both tools run alike
  (``aten::mm``/``aten::addmm``: the model's linear layers, the same multiply-adds in the same float32
  on either side) against attention (SDPA in the forward, and the maps' own matmuls and softmax);
- memory: the bytes the recording holds (``QKMapSource.nbytes`` before any map: the float32 stream
  ``[layer, token, d_model]``, or queries ``[layer, head, token, dim]`` and keys ``[layer, kv_head, token,
  dim]``), the peak the plain body adds with nothing recorded
  (its own transient), and the peak of the run plus every map, each in a fresh measurement.

A peer that computes every map runs the same linear layers, so attnscope's CPU time over the peer's is at
least (linear-layer time) / (the peer's time) even if attention cost nothing; and its added memory is at
least the recording plus the body's transient. ``docs/results/benchmarks.md`` ("Against the peers") reads
these against ``tlens.py``'s side-by-side figures.

    .venv/bin/python bench/peers/maps_profile.py [--tokens 1024] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from common import measure  # noqa: E402
from driver import Tee  # noqa: E402

LINEAR_OPS = ("aten::mm", "aten::addmm")
ATTENTION_OPS = ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::bmm", "aten::_softmax")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(a.tokens, 4096))
    import torch
    from lazy import long_text
    from torch.profiler import ProfilerActivity, profile

    from attnscope.models.loading import load_model

    torch.set_num_threads(a.threads)
    say = Tee()
    lm = load_model("smollm2", "cpu", capture="lazy")
    ids = long_text(lm.tokenizer, a.tokens)
    inp = lm.encode_ids(ids)
    lm.run(lm.encode_ids(ids[:32]), hidden_states=False)  # warm, as attnscope_side.py does

    def every_map(maps) -> None:
        for layer in range(maps.n_layers):
            for head in range(maps.n_heads):
                maps.head(layer, head)

    def whole():
        cap = lm.run(inp, hidden_states=False)
        every_map(cap.maps)
        return cap

    def body():
        with torch.inference_mode():
            return lm.model.base_model(input_ids=inp.ids_tensor(lm.device), use_cache=False).last_hidden_state

    _, plain = measure(body)
    recorded, run_rep = measure(lambda: lm.run(inp, hidden_states=False))
    maps = recorded.maps
    held = maps.source.nbytes  # before a map: a stream run then also keeps its last rebuilt layer
    kept = "stream entering each block" if maps.source.layers[0].stream is not None else "queries and keys"
    _, maps_rep = measure(lambda: every_map(maps))
    recorded = maps = None  # dropped before the whole is measured
    _, whole_rep = measure(whole)
    with profile(activities=[ProfilerActivity.CPU]) as prof_run:
        cap = lm.run(inp, hidden_states=False)
    with profile(activities=[ProfilerActivity.CPU]) as prof_maps:
        every_map(cap.maps)
    cap = None
    run_events, map_events = prof_run.key_averages(), prof_maps.key_averages()
    events = [*run_events, *map_events]

    def self_s(evs, keys=None) -> float:
        return sum(e.self_cpu_time_total for e in evs if keys is None or e.key in keys)

    total = self_s(events)
    linear = self_s(run_events, LINEAR_OPS)  # the forward's and the prediction's: what a peer runs too
    rebuild = self_s(map_events, LINEAR_OPS)  # a stream run's projections rebuilt for the maps
    attention = self_s(events, ATTENTION_OPS)
    top: dict[str, list] = {}
    for e in events:
        top.setdefault(e.key, [0.0, 0])
        top[e.key][0] += e.self_cpu_time_total
        top[e.key][1] += e.count

    mb = 1e6
    say(
        f"attnscope, SmolLM2, {len(ids)} tokens: the lazy run plus every head's map, torch threads {a.threads}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    say(
        f"  time (CPU s, each alone):  run {run_rep['cpu_s']:.2f}  every map from the recording {maps_rep['cpu_s']:.2f}"
    )
    say(f"  time, run plus every map in one:  {whole_rep['cpu_s']:.2f} s CPU ({whole_rep['wall_s']:.2f} s wall)")
    say(f"  operators (torch.profiler, self CPU, {total / 1e6:.2f} s in all):")
    say(f"    linear layers of the run {' + '.join(LINEAR_OPS):<13} {linear / 1e6:7.2f} s  {linear / total:6.1%}")
    say(f"    q and k rebuilt for the maps (linear)          {rebuild / 1e6:7.2f} s  {rebuild / total:6.1%}")
    say(f"    attention (SDPA, the maps' bmm and softmax)    {attention / 1e6:7.2f} s  {attention / total:6.1%}")
    for key, (t, count) in sorted(top.items(), key=lambda kv: kv[1][0], reverse=True)[:8]:
        say(f"      {key:<48} {t / 1e6:7.2f} s  {t / total:6.1%}  x{count}")
    say(f"  memory: the recording holds {held / mb:.1f} MB (float32 {kept})")
    say(f"          the plain body adds a peak of {plain['peak_added_bytes'] / mb:.1f} MB with nothing recorded")
    say(f"          the run plus every map adds a peak of {whole_rep['peak_added_bytes'] / mb:.1f} MB")
    say(
        f"  floor: attnscope's CPU >= {linear / total:.1%} of its own (the linear layers a peer runs too); "
        f"its added memory >= {(held + plain['peak_added_bytes']) / mb:.1f} MB (recording + body transient)"
    )
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
