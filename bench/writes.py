"""What heads write, on SmolLM2, measured side by side in one run (``docs/results/benchmarks.md``).

For 1 x ``--tokens`` (default 1,024) of real prose (this repository's docs) and then ``--long``
(default 4,096; 0 to skip): (a) the plain lazy run through the backend (what ``POST /runs`` does),
(b) the same run recorded for the readouts (``record_writes``: the residual stream, head outputs
and MLP outputs of every block in one session), then from that recording (c) the logit lens of
one position at every layer (top-10 and a target's rank) and (d) the direct logit attribution of
one target with every head split over its source positions. Issue targets at 1,024 tokens, CPU:
lens grid of one position <= 2 s, DLA with per-source split <= 3 s (each request records once,
so the request cost is b + c or b + d; both are printed). Also: what a recording holds, and (e) the
contribution graph of the last position's prediction at ``--threshold`` (found top-down), its wall and
CPU time and its peak resident memory above the recording (sampled every 10 ms), beside the float32
bytes of the full decomposition ``[layer, head, query, key, d_model]`` (causal half) that a tool
materialising every term would hold; at ``--small`` tokens (default 256) both are printed as a ratio.
Issue targets at 1,024 tokens: graph <= 10 s and <= 1 GB above the run.

    .venv/bin/python bench/writes.py [--tokens 1024] [--long 4096] [--small 256] [--threshold 0.04]
                                     [--repeats 3] [--threads 1] [--graph-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lazy import PeakRSS, long_text  # noqa: E402
from timing import timeit_both  # noqa: E402


def bench_graph(lm, writes, threshold: float, repeats: int) -> None:
    from attnscope.pipelines.writes.graph import contribution_graph
    from attnscope.pipelines.writes.graph_run import full_decomposition_bytes, graph_inputs, term_bytes

    sites, n = lm.sites, writes.n_tokens
    blocks, final = graph_inputs(writes)

    def graph():
        return contribution_graph(blocks, final, n - 1, threshold, max_nodes=10**6)

    wall, cpu = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:  # the first call: later ones reuse the allocator's pages
        g = graph()
    first_w, first_c = time.perf_counter() - wall, time.process_time() - cpu
    peak = mem.peak
    print(f"  (e) graph, first call (its peak measured) {first_w:7.3f} s wall  {first_c:7.3f} s CPU")
    g_w, g_c = timeit_both(graph, repeats) if repeats else (first_w, first_c)
    widest = max(p for kind, _, p in g.nodes if kind == "mid") + 1  # keys of the widest expanded node
    node = term_bytes(sites.n_heads, widest, sites.d_model)
    full = full_decomposition_bytes(sites.n_layers, sites.n_heads, n, sites.d_model)
    attn = sum(1 for e in g.edges if e[2] == "attention")
    print(
        f"  (e) graph, threshold {threshold:g}  {g_w:7.3f} s wall  {g_c:7.3f} s CPU   {len(g.nodes)} nodes, "
        f"{len(g.edges)} edges ({attn} attention)"
    )
    print(
        f"      graph peak RSS above the recording {peak / 2**20:.1f} MiB (one layer's [head, key, d_model] writes "
        f"{node / 2**20:.1f} MiB); full decomposition [layer, head, query, key, d_model] {full / 2**30:.1f} GiB; "
        f"full / max(peak, one node) {full / max(peak, node):,.0f}x"
    )


def bench(lm, n_tokens: int, repeats: int, threshold: float = 0.04) -> None:
    from attnscope.pipelines.writes.readouts import single_token_id
    from attnscope.pipelines.writes.recorded import attribute, lens_grid, record_writes

    ids = long_text(lm.tokenizer, n_tokens)
    inp = lm.encode_ids(ids)
    pos = len(ids) - 1
    paris = single_token_id(lm, " Paris")
    print(f"SmolLM2 1 x {len(ids)} tokens, device={lm.device}, threads={torch.get_num_threads()}")
    run_w, run_c = timeit_both(lambda: lm.run(inp, hidden_states=False), repeats)
    rec_w, rec_c = timeit_both(lambda: record_writes(lm, inp), repeats)
    writes = record_writes(lm, inp)
    held = sum(t.numel() * t.element_size() for t in (writes.resid, writes.head_z, writes.mlp_out))
    target = torch.tensor([paris])
    lens_w, lens_c = timeit_both(lambda: lens_grid(writes, range(pos, pos + 1), 10, target), repeats)
    dla_w, dla_c = timeit_both(lambda: attribute(writes, pos, paris, split=True), repeats)
    att = attribute(writes, pos, paris, split=True)
    print(f"  (a) plain run           {run_w:7.3f} s wall  {run_c:7.3f} s CPU")
    print(f"  (b) recorded run        {rec_w:7.3f} s wall  {rec_c:7.3f} s CPU   b/a {rec_w / run_w:.2f} (wall)")
    print(f"      recording holds     {held / 2**20:7.1f} MiB (residual stream, head outputs, MLP outputs; float32)")
    print(f"  (c) lens, one position  {lens_w:7.3f} s wall  {lens_c:7.3f} s CPU   request b+c {rec_w + lens_w:.3f} s")
    print(f"  (d) DLA + source split  {dla_w:7.3f} s wall  {dla_c:7.3f} s CPU   request b+d {rec_w + dla_w:.3f} s")
    print(f"      conservation: |logit - sum of parts| = {abs(att.residual_error):.2e}")
    bench_graph(lm, writes, threshold, repeats)


def bench_graph_only(lm, n_tokens: int, repeats: int, threshold: float) -> None:
    """The recording (its cost, one call) and then the graph alone (``--graph-only``: long inputs,
    where the other readouts are measured elsewhere)."""
    from attnscope.pipelines.writes.recorded import record_writes

    ids = long_text(lm.tokenizer, n_tokens)
    inp = lm.encode_ids(ids)
    print(f"SmolLM2 1 x {len(ids)} tokens, device={lm.device}, threads={torch.get_num_threads()}")
    wall, cpu = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        writes = record_writes(lm, inp)
    print(
        f"  (b) recorded run, one call {time.perf_counter() - wall:7.3f} s wall  {time.process_time() - cpu:7.3f} s "
        f"CPU, peak RSS above the loaded model {mem.peak / 2**20:.1f} MiB, holding {writes.nbytes / 2**20:.1f} MiB"
    )
    bench_graph(lm, writes, threshold, repeats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--long", type=int, default=4096, help="a second length (0: skip)")
    ap.add_argument("--small", type=int, default=256, help="a length for the graph vs full memory (0: skip)")
    ap.add_argument("--threshold", type=float, default=0.04, help="the graph's edge threshold")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--device", default=None)
    ap.add_argument(
        "--graph-only",
        action="store_true",
        help="at --tokens only: the recording (one call) and the graph (its first call measured for time and "
        "peak memory, then --repeats timed calls; 0: none)",
    )
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(args.long, args.tokens))
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", args.device, capture="lazy")
    if args.graph_only:
        bench_graph_only(lm, args.tokens, args.repeats, args.threshold)
        return
    for n in (args.small, args.tokens, args.long):
        if n:
            bench(lm, n, args.repeats, args.threshold)


if __name__ == "__main__":
    main()
