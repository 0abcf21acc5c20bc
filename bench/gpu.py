"""The lazy-map ratios on a CUDA GPU, in bfloat16 and in float32, measured side by side in one run.

NOT YET MEASURED: this script has not been run on a GPU (the project's machines have none); the
docs say so until its figures are recorded (docs/results/benchmarks.md).

For each dtype (``--dtypes bfloat16,float32``):

(1) MiniLM 8 x 128: (a) HF SDPA forward, (b) HF eager forward with ``output_attentions=True`` (maps
left on the device), (c) lazy forward recording queries and keys plus every map of every example
computed on the device (``QKMapSource.block_tensor``: no host copy); prints c/b.
(2) SmolLM2 1 x ``--tokens``: (a) plain SDPA forward, (b) forward with Q/K recorded; b/a; one head's
full map and one layer's (on the device), and the host copy of one head's map (what a slice request
pays).
(3) SmolLM2 1 x ``--long``: bytes the recorded queries and keys hold on the device, and the peak
device memory of computing every layer's maps one at a time (``torch.cuda.max_memory_allocated``)
against 2 layers' worth of maps.

Queries and keys stay on the device in the model's dtype; only a requested slice is copied to the
host. Timings synchronise the device (``torch.cuda.synchronize``) around each call.

    .venv/bin/python bench/gpu.py [--device cuda] [--dtypes bfloat16,float32] [--tokens 1024] [--long 4096]
"""

from __future__ import annotations

import argparse
import os
import statistics

import torch
from lazy import long_text  # noqa: E402  (bench/ is on sys.path when a script here runs)
from timing import timeit  # noqa: E402

from attnscope.models.backends.hf import lazy_capture  # noqa: E402
from attnscope.models.lazy_maps import QKMapSource  # noqa: E402

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}


def synced(fn, device):
    def run():
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return run


def side_by_side(fns: dict, repeats: int, device) -> dict:
    rounds = {k: [] for k in fns}
    for _ in range(3):  # interleave so drift hits all alike
        for key, fn in fns.items():
            rounds[key].append(timeit(synced(fn, device), max(1, repeats // 3)))
    return {k: statistics.median(v) for k, v in rounds.items()}


def hf_model(spec, folder, kind: str, attn: str, dtype, device):
    from transformers import AutoModel, AutoModelForCausalLM

    from attnscope.models import attention_fn

    cls = AutoModelForCausalLM if kind == "causal" else AutoModel
    impl = attention_fn.NAME if attn == "lazy" else attn
    model = cls.from_pretrained(folder, attn_implementation=impl, dtype=dtype, local_files_only=True)
    return model.eval().to(device)


def minilm(device, dtype, repeats: int) -> None:
    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    spec = get_spec("minilm")
    folder = _hf_folder(spec)
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    sentence = "the film is a charming, funny and moving story about growing up ."
    enc = tok([" ".join([sentence] * 12)] * 8, return_tensors="pt", truncation=True, max_length=128)
    enc = {k: v.to(device) for k, v in enc.items()}
    sdpa, eager, lazy = (hf_model(spec, folder, "encoder", a, dtype, device) for a in ("sdpa", "eager", "lazy"))

    @torch.inference_mode()
    def a():
        sdpa(**enc)

    @torch.inference_mode()
    def b():
        eager(**enc, output_attentions=True)

    @torch.inference_mode()
    def c():
        with lazy_capture() as rec:
            lazy(**enc)
        records = rec.ordered()
        for i in range(8):
            src = QKMapSource.from_records(records, i)
            for layer in range(src.shape[0]):
                src.block_tensor(layer, range(src.n_heads), slice(None), slice(None))

    t = side_by_side({"a": a, "b": b, "c": c}, repeats, device)
    print(
        f"  (1) MiniLM 8 x 128: SDPA {t['a'] * 1e3:.2f} ms | eager+output_attentions {t['b'] * 1e3:.2f} ms | "
        f"lazy + every map {t['c'] * 1e3:.2f} ms -> c/b = {t['c'] / t['b']:.2f}x (target <= 1.0)"
    )


def smollm2(device, dtype, n_tokens: int, n_long: int, repeats: int) -> None:
    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    spec = get_spec("smollm2")
    folder = _hf_folder(spec)
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ids = torch.tensor([long_text(tok, n_tokens)], device=device)
    sdpa = hf_model(spec, folder, "causal", "sdpa", dtype, device)
    lazy = hf_model(spec, folder, "causal", "lazy", dtype, device)
    records = {}

    @torch.inference_mode()
    def a():
        sdpa(input_ids=ids, use_cache=False)

    @torch.inference_mode()
    def b():
        with lazy_capture() as rec:
            lazy(input_ids=ids, use_cache=False)
        records["r"] = rec.ordered()

    t = side_by_side({"a": a, "b": b}, repeats, device)
    src = QKMapSource.from_records(records["r"])
    mid = src.shape[0] // 2
    all_heads = range(src.n_heads)
    head = timeit(synced(lambda: src.block_tensor(mid, [4], slice(None), slice(None)), device), repeats)
    layer = timeit(synced(lambda: src.block_tensor(mid, all_heads, slice(None), slice(None)), device), repeats)
    host = timeit(synced(lambda: src.block(mid, [4], slice(None), slice(None)), device), repeats)
    print(
        f"  (2) SmolLM2 1 x {n_tokens}: SDPA {t['a'] * 1e3:.1f} ms | Q/K recorded {t['b'] * 1e3:.1f} ms -> "
        f"b/a = {t['b'] / t['a']:.3f}x (target <= 1.10); one head's map {head * 1e3:.2f} ms (<= 50 ms), "
        f"one layer's {layer * 1e3:.1f} ms (<= 500 ms), one head copied to the host {host * 1e3:.2f} ms"
    )
    del records["r"], src
    ids = torch.tensor([long_text(tok, n_long)], device=device)
    with torch.inference_mode(), lazy_capture() as rec:
        lazy(input_ids=ids, use_cache=False)
    src = QKMapSource.from_records(rec.ordered())
    del rec
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    for layer in range(src.shape[0]):  # every map, one layer alive at a time, on the device
        src.block_tensor(layer, all_heads, slice(None), slice(None))
    two_layers = 2 * src.n_heads * n_long * n_long * 4
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        print(
            f"  (3) SmolLM2 1 x {n_long}: Q/K on the device {src.nbytes / 1e9:.3f} GB (target <= 0.5 GB with the "
            f"run's other arrays); every layer's maps in turn peak {peak / 1e9:.3f} GB vs 2 layers "
            f"{two_layers / 1e9:.3f} GB (ratio {peak / two_layers:.2f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtypes", default="bfloat16,float32")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--long", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--skip-smollm2", action="store_true")
    args = ap.parse_args()
    os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(args.long, args.tokens))
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: bench/gpu.py measures the GPU ratios (see its docstring)")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
    print(f"device={name} torch={torch.__version__}")
    for dname in args.dtypes.split(","):
        dtype = DTYPES[dname.strip()]
        print(f"dtype={dname.strip()}")
        minilm(device, dtype, args.repeats)
        if not args.skip_smollm2:
            smollm2(device, dtype, args.tokens, args.long, args.repeats)


if __name__ == "__main__":
    main()
