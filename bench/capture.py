"""Capture overhead on MiniLM, batch 8 x 128 tokens, measured side by side in one run.

(a) Hugging Face SDPA forward, no maps; (b) HF eager forward with output_attentions=True;
(c) attnscope's capture (eager forward + per-example AttentionMaps, validated, plus hidden states).
Prints the ratios c/b and c/a, then the size of one example's full [6, 12, 128, 128] maps as
JSON lists versus the compact encodings.

    .venv/bin/python bench/capture.py [--repeats 7] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
from timing import timeit  # noqa: E402  (bench/ is on sys.path when a script here runs)

from attnscope.models.capture import capture_encoded  # noqa: E402
from attnscope.models.loading import load_hf, load_model  # noqa: E402

SST2 = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "dev.tsv"


def batch_texts(n: int = 8) -> list[str]:
    """Real sentences (SST-2 dev when present), concatenated so each reaches 128 tokens."""
    if SST2.exists():
        lines = [l.split("\t")[0] for l in SST2.read_text().splitlines()[1:]]
    else:
        lines = ["the film is a charming, funny and moving story about growing up ."] * 200
    return [" ".join(lines[i * 12 : (i + 1) * 12]) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    eager = load_model("minilm", device=args.device)
    spec = eager.spec
    sdpa_model = load_hf(spec, eager.device).model
    sdpa_model.config._attn_implementation = "sdpa"
    sdpa_model.set_attn_implementation("sdpa")
    enc = eager.tokenizer(batch_texts(), return_tensors="pt", truncation=True, max_length=128, padding="max_length")
    assert enc["attention_mask"].sum(1).min() == 128, "every example must fill 128 tokens"
    enc_dev = {k: v.to(eager.device) for k, v in enc.items()}

    def sync():
        if eager.device.type == "cuda":
            torch.cuda.synchronize()

    @torch.inference_mode()
    def a():
        sdpa_model(**enc_dev)
        sync()

    @torch.inference_mode()
    def b():
        out = eager.model(**enc_dev, output_attentions=True)
        [t.cpu() for t in out.attentions]
        sync()

    def c():
        capture_encoded(eager, enc)
        sync()

    rounds = {"a": [], "b": [], "c": []}
    for _ in range(3):  # interleave so drift hits all three alike
        for key, fn in (("a", a), ("b", b), ("c", c)):
            rounds[key].append(timeit(fn, max(1, args.repeats // 3)))
    ta, tb, tc = (statistics.median(rounds[k]) for k in "abc")
    print(f"device={eager.device} batch=8 tokens=128 torch={torch.__version__} threads={torch.get_num_threads()}")
    print(f"(a) HF SDPA forward, no maps          {ta * 1e3:8.1f} ms")
    print(f"(b) HF eager, output_attentions=True  {tb * 1e3:8.1f} ms")
    print(f"(c) attnscope capture                 {tc * 1e3:8.1f} ms")
    print(f"ratio c/b = {tc / tb:.2f}x   ratio c/a = {tc / ta:.2f}x")

    maps = capture_encoded(eager, {k: v[:1] for k, v in enc.items()})[0].maps
    as_json = len(json.dumps(maps.weights.tolist()).encode())
    f16 = len(maps.to_compact("float16")["data"])
    u8 = len(maps.to_compact("uint8")["data"])
    print(
        f"one example's maps {list(maps.shape)}: JSON lists {as_json:,} B | float16 {f16:,} B "
        f"({as_json / f16:.1f}x smaller) | uint8+scale {u8:,} B ({as_json / u8:.1f}x smaller)"
    )


if __name__ == "__main__":
    main()
