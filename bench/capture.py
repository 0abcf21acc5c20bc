"""Capture overhead on MiniLM, batch 8 x 128 tokens, measured side by side in one run.

(a) Hugging Face SDPA forward, no maps; (b) HF eager forward with output_attentions=True (the maps
copied to the host); (c) attnscope's lazy capture (SDPA forward recording queries and keys, per-example
lazy AttentionMaps and outputs) and then every map of every example computed on the host (all 8 x 6
layers); (c0) the lazy capture alone; (d) attnscope's eager capture (capture="eager", the reference).
No side keeps hidden states (the HF forwards do not return them either). Prints the ratios c/b (issue
target <= 1.0), c0/a and d/b in wall time and in process CPU time (steadier on a loaded machine), then
the size of one example's full [6, 12, 128, 128] maps as JSON lists versus the compact encodings.

    .venv/bin/python bench/capture.py [--repeats 9] [--rounds 3] [--device cpu] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
from timing import timeit_both  # noqa: E402  (bench/ is on sys.path when a script here runs)

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
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default; 1 on a loaded machine)")
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    lazy = load_model("minilm", device=args.device, capture="lazy")
    eager = load_model("minilm", device=args.device, capture="eager")
    assert lazy.capture == "lazy", lazy.capture_refusal
    spec = eager.spec
    sdpa_model = load_hf(spec, eager.device, capture="eager").model
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
        for cap in capture_encoded(lazy, enc, hidden_states=False):
            for layer in cap.maps.iter_layers():  # every map, on the host
                assert layer.shape == (12, 128, 128)
        sync()

    def c0():
        capture_encoded(lazy, enc, hidden_states=False)
        sync()

    def d():
        capture_encoded(eager, enc, hidden_states=False)
        sync()

    fns = {"a": a, "b": b, "c": c, "c0": c0, "d": d}
    rounds = {k: [] for k in fns}
    for _ in range(args.rounds):  # interleave so drift hits all alike
        for key, fn in fns.items():
            rounds[key].append(timeit_both(fn, max(1, args.repeats // args.rounds)))
    t = {k: statistics.median(w for w, _ in v) for k, v in rounds.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rounds.items()}
    print(f"device={eager.device} batch=8 tokens=128 torch={torch.__version__} threads={torch.get_num_threads()}")
    names = {
        "a": "HF SDPA forward, no maps",
        "b": "HF eager, output_attentions=True",
        "c": "attnscope lazy capture + every map computed",
        "c0": "attnscope lazy capture (queries/keys recorded)",
        "d": "attnscope eager capture (reference)",
    }
    for k, name in names.items():
        print(f"({k}) {name:48s} wall {t[k] * 1e3:8.1f} ms   cpu {cpu[k] * 1e3:8.1f} ms")
    for label, x in (("wall", t), ("cpu", cpu)):
        print(
            f"{label}: ratio c/b = {x['c'] / x['b']:.2f}x (target <= 1.0)   c0/a = {x['c0'] / x['a']:.2f}x   "
            f"d/b = {x['d'] / x['b']:.2f}x"
        )

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
