"""Lazy attention maps on SmolLM2, measured side by side in one run.

(1) 1 x ``--tokens`` (default 1,024): (a) the plain SDPA forward (transformers' ``sdpa``, nothing
recorded) against (b) the forward with queries and keys recorded (``attnscope_qk`` inside a
recorder); prints b/a (issue target <= 1.10). Then from the recorded run: one head's full map
(target <= 50 ms) and one layer's (target <= 0.5 s).
(2) 1 x ``--long`` (default 4,096; ``ATTNSCOPE_MAX_CAUSAL_TOKENS`` is raised for it): one lazy run
through the backend, what it holds (``attnscope.server.store.run_nbytes``: the stream entering each
block, or queries/keys under ``ATTNSCOPE_LAZY_RECORD=qk``, outputs,
token ids; hidden states are not kept but recomputed on request, timed last; target <= 0.5 GB),
and the resident peak of its creation above what it keeps (target <= 0.25 GB),
then the structure census of that run (``classify_heads``: shift, sink, entropy per head; the
induction probe is a separate short sequence) with its peak
memory: numpy allocations (tracemalloc) and the process' resident memory above its level before
the census (sampled every 10 ms), against 2 layers' worth of float32 maps (the target bound).

    .venv/bin/python bench/lazy.py [--tokens 1024] [--long 4096] [--repeats 5] [--threads 1] [--skip-long]
        [--skip-short] [--run-only]

The creation peak depends on glibc's mmap threshold, fixed at model load (``attnscope.models.allocator``);
``ATTNSCOPE_MALLOC_MMAP_THRESHOLD=0`` runs the same bench under glibc's dynamic threshold, for the side-by-side
figure in docs/results/benchmarks.md.

On a machine whose cores are busy with other jobs run with ``--threads 1`` (see bench/llm.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
import tracemalloc
from pathlib import Path

import torch
from timing import timeit_both  # noqa: E402  (bench/ is on sys.path when a script here runs)

from attnscope.models.backends.hf import lazy_capture  # noqa: E402
from attnscope.models.lazy_maps import QKMapSource  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs"


def long_text(tokenizer, n_tokens: int) -> list[int]:
    """Ids of real prose: this repository's documentation pages, concatenated and cut to ``n_tokens``."""
    ids: list[int] = []
    for page in sorted(DOCS.rglob("*.md")):
        ids += tokenizer(page.read_text(), verbose=False)["input_ids"]
        if len(ids) >= n_tokens:
            return ids[:n_tokens]
    raise SystemExit(f"the docs hold fewer than {n_tokens} tokens")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def anon_bytes() -> int:
    """Resident memory that is not file-backed (statm resident - shared): the weights are a memory-mapped
    file whose pages the kernel may drop and page in again under other jobs' pressure, which is not the run's."""
    with open("/proc/self/statm") as f:
        fields = f.read().split()
    return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """Samples the resident set size every 10 ms while the block runs; ``peak`` above the start."""

    def __init__(self, read=rss_bytes):
        self.read = read

    def __enter__(self):
        self.start = self.peak_abs = self.read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            self.peak_abs = max(self.peak_abs, self.read())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_abs = max(self.peak_abs, self.read())
        self.peak = self.peak_abs - self.start


def short_run(lm, n_tokens: int, repeats: int) -> None:
    from transformers import AutoModelForCausalLM

    from attnscope.models.loading import _hf_folder

    ids = torch.tensor([long_text(lm.tokenizer, n_tokens)], device=lm.device)
    sdpa = AutoModelForCausalLM.from_pretrained(
        _hf_folder(lm.spec), attn_implementation="sdpa", dtype=torch.float32, local_files_only=True
    )
    sdpa.eval().to(lm.device)

    @torch.inference_mode()
    def a():
        sdpa(input_ids=ids, use_cache=False)

    records = {}

    @torch.inference_mode()
    def b():
        with lazy_capture() as rec:
            lm.model(input_ids=ids, use_cache=False)
        records["r"] = rec.ordered()

    rounds = {"a": [], "b": []}
    per = max(1, repeats // 3)
    for _ in range(3):  # interleave so drift hits both alike
        rounds["a"].append(timeit_both(a, per))
        rounds["b"].append(timeit_both(b, per))
    wall = {k: statistics.median(w for w, _ in v) for k, v in rounds.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rounds.items()}
    print(f"(1) SmolLM2 1 x {n_tokens} tokens, device={lm.device}, threads={torch.get_num_threads()}")
    print(f"    (a) plain SDPA forward              wall {wall['a']:7.2f} s   cpu {cpu['a']:7.2f} s")
    print(f"    (b) forward with Q/K recorded       wall {wall['b']:7.2f} s   cpu {cpu['b']:7.2f} s")
    print(f"    ratio b/a: wall {wall['b'] / wall['a']:.3f}x   cpu {cpu['b'] / cpu['a']:.3f}x   (target <= 1.10)")
    src = QKMapSource.from_records(records["r"])
    mid = src.shape[0] // 2
    head_w, head_c = timeit_both(lambda: src.block(mid, [4], slice(None), slice(None)), repeats)
    layer_w, layer_c = timeit_both(lambda: src.block(mid, range(src.n_heads), slice(None), slice(None)), repeats)
    print(
        f"    one head's full map [{n_tokens}, {n_tokens}]   wall {head_w * 1e3:7.1f} ms  cpu {head_c * 1e3:7.1f} ms"
        "   (target <= 50 ms)"
    )
    print(
        f"    one layer's maps [{src.n_heads}, {n_tokens}, {n_tokens}]  wall {layer_w:7.3f} s   cpu {layer_c:7.3f} s"
        "    (target <= 0.5 s)"
    )


def long_run(lm, n_tokens: int, run_only: bool = False) -> None:
    from attnscope.analysis.heads import classify_heads
    from attnscope.server.store import Run, object_nbytes, run_nbytes

    ids = long_text(lm.tokenizer, n_tokens)
    inp = lm.encode_ids(ids)
    lm.run(lm.encode_ids(ids[:32]))  # warm: the first forward pages in the weights (0.54 GB, not the run's)
    t = time.perf_counter()
    with PeakRSS(anon_bytes) as creation:
        cap = lm.run(inp)
    forward = time.perf_counter() - t
    maps = cap.maps
    n_layers, n_heads, n, _ = maps.shape
    run = Run(id="bench", model=lm.spec.name, text="", capture=cap)
    total = run_nbytes(run)
    hidden = 0 if cap.hidden_states is None else cap.hidden_states.nbytes
    first = maps.source.layers[0]
    streamed = first.stream is not None
    kept, dtype = ("stream", first.stream.stream.dtype) if streamed else ("queries/keys", first.query.dtype)
    print(f"(2) SmolLM2 1 x {n} tokens: lazy run (forward, {kept} recorded, predictions) {forward:.1f} s")
    print(
        f"    run holds {total / 1e9:.3f} GB: {kept} {maps.nbytes / 1e9:.3f} GB "
        f"({dtype}), hidden states kept {hidden / 1e9:.3f} GB, "
        f"outputs {object_nbytes(cap.output) / 1e9:.3f} GB   (target <= 0.5 GB)"
    )
    above = creation.peak - total
    print(
        f"    run creation: anonymous resident peak above start {creation.peak / 1e9:.3f} GB, above what the run keeps "
        f"{above / 1e9:.3f} GB   (target <= 0.25 GB; ratio {above / 0.25e9:.2f})"
    )
    if run_only:
        return
    two_layers = 2 * n_heads * n * n * 4
    full = n_layers * n_heads * n * n * 4
    tracemalloc.start()
    t = time.perf_counter()
    with PeakRSS() as rss:
        types = classify_heads(maps, workers=1)
    census = time.perf_counter() - t
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    sinks = int(sum(1 for row in types.labels for lab in row if "sink" in lab))
    print(f"    structure census (classify_heads, {n_layers} x {n_heads} heads) {census:.1f} s, {sinks} sink heads")
    print(
        f"    census peak: numpy (tracemalloc) {traced / 1e9:.3f} GB, resident above start {rss.peak / 1e9:.3f} GB; "
        f"2 layers of maps {two_layers / 1e9:.3f} GB (the target bound), the whole stack {full / 1e9:.2f} GB"
    )
    print(f"    ratios: peak RSS / 2 layers {rss.peak / two_layers:.2f}   run bytes / 0.5 GB {total / 0.5e9:.2f}")
    t, c = time.perf_counter(), time.process_time()
    recomputed = cap.hidden()
    print(
        f"    hidden states recomputed on request (Capture.hidden, {tuple(recomputed.shape)} "
        f"{recomputed.nbytes / 1e9:.3f} GB, not kept): wall {time.perf_counter() - t:.1f} s   "
        f"cpu {time.process_time() - c:.1f} s"
    )
    del recomputed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--long", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default=None)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--skip-short", action="store_true")
    ap.add_argument("--run-only", action="store_true", help="(2): the run's creation only, no census")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(args.long, args.tokens))
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", args.device, capture="lazy")
    assert lm.capture == "lazy", lm.capture_refusal
    if not args.skip_short:
        short_run(lm, args.tokens, args.repeats)
    if not args.skip_long:
        long_run(lm, args.long, args.run_only)


if __name__ == "__main__":
    main()
