"""attnscope against nnsight (every attention map of SmolLM2) and nnterp (the logit lens of one position),
the same weights and token ids, one run.

nnsight 0.8.1 and nnterp 1.3.0 (with nnsight 0.7.0, which it needs) live in their own environments
(``.cache/peer-venvs/nnsight``, ``.cache/peer-venvs/nnterp``; ``venvs.ensure``), loading the Hugging Face
folder attnscope writes for SmolLM2. Sides: ``nnsight_side.py`` / ``attnscope_side.py`` (the same
``maps`` and ``lens`` tasks as against TransformerLens: ``tlens.py``), one fresh process per side and
measurement, alternated.

- ``maps`` at ``--tokens``: nnsight traces the eager forward and saves every layer's attention
  probabilities; attnscope's lazy run plus every map computed once. At ``--long`` nnsight is not run when
  its maps alone exceed this machine's memory: their bytes are computed from the shapes.
- ``lens`` at ``--lens-tokens``: nnterp's ``logit_lens`` (each layer's output at the last position, final
  norm, unembedding, softmax) against attnscope's lens of the same position; nnterp takes text, so the ids
  are cut where the decoded text tokenises back to them. attnscope's row 0 (the embeddings) has no nnterp
  counterpart and is left out of the difference.

    .venv/bin/python bench/peers/nnsight_peers.py [--tasks maps,lens] [--tokens 256,1024] [--long 4096]
        [--lens-tokens 256] [--rounds 1] [--threads 1] [--out results/bench/peers-nnsight.txt]
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import venvs  # noqa: E402
from driver import Tee, alternate, gb, report_pair  # noqa: E402
from next_token import round_trip_ids  # noqa: E402
from tlens import max_diff_maps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="maps,lens")
    ap.add_argument("--tokens", default="256,1024")
    ap.add_argument("--long", type=int, default=4096)
    ap.add_argument("--lens-tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    say = Tee()
    tasks = [t for t in a.tasks.split(",") if t]
    nnsight_py = str(venvs.ensure("nnsight")) if "maps" in tasks else None
    nnterp_py = str(venvs.ensure("nnterp")) if "lens" in tasks else None

    from lazy import long_text
    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    folder = str(_hf_folder(get_spec("smollm2")))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    paris = tokenizer(" Paris", add_special_tokens=False)["input_ids"][0]
    versions = []
    if nnsight_py:
        versions.append(f"nnsight {venvs.version_of('nnsight', 'nnsight')}")
    if nnterp_py:
        inner = venvs.version_of("nnterp", "nnsight")
        versions.append(f"nnterp {venvs.version_of('nnterp', 'nnterp')} (nnsight {inner})")
    say(
        f"attnscope vs {', '.join(versions)}, own venvs under {venvs.VENV_ROOT}; SmolLM2-135M float32 from "
        f"{folder}; torch threads {a.threads} on each side; {a.rounds} alternating round(s); one fresh process "
        f"per side and measurement; load average {os.getloadavg()[0]:.1f} at the start"
    )
    flags = ["--threads", str(a.threads)]
    ours = [sys.executable, str(HERE / "attnscope_side.py")]
    with tempfile.TemporaryDirectory(prefix="attnscope-nnsight-") as tmp:
        tmp = Path(tmp)
        if "maps" in tasks:
            say("every attention map [30 layers, 9 heads, n, n] (nnsight: one trace saving every layer's")
            say("self_attn.output[1] of the eager forward; attnscope: lazy run + each head's map computed once)")
            for n in [int(x) for x in a.tokens.split(",") if x]:
                ids = tmp / f"ids-{n}.json"
                ids.write_text(json.dumps(long_text(tokenizer, n)))
                oa, ob = tmp / f"maps-{n}-ours", tmp / f"maps-{n}-nnsight"
                ra, rb = alternate(
                    a.rounds,
                    [*ours, "maps", str(ids), str(oa), *flags],
                    [nnsight_py, str(HERE / "nnsight_side.py"), "maps", folder, str(ids), str(ob), *flags],
                    a.timeout,
                )
                ok = (oa / "maps.npy").exists() and (ob / "maps.npy").exists()
                diff = max_diff_maps(oa / "maps.npy", ob / "maps.npy")[1] if ok else "(no answer to compare)"
                report_pair(say, f"{n} tokens", ra, rb, diff, peer="nnsight", short="nnsight")
                for r in rb:
                    if "pattern_bytes" in r:
                        say(f"    nnsight's saved maps: {gb(r['pattern_bytes'])}")
                        break
                for f in (oa / "maps.npy", ob / "maps.npy"):
                    f.unlink(missing_ok=True)
            if a.long:
                n = a.long
                need = 30 * 9 * n * n * 4
                ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
                say(f"  {n} tokens: nnsight not run; the maps it saves alone would take {gb(need)} float32")
                say(f"    (30 x [1, 9, {n}, {n}] x 4 bytes, computed from their shapes; this machine has {gb(ram)})")
        if "lens" in tasks:
            ids = round_trip_ids(tokenizer, long_text(tokenizer, a.lens_tokens))
            n = len(ids)
            ids_file = tmp / "ids-lens.json"
            ids_file.write_text(json.dumps(ids))
            oa, ob = tmp / "lens-ours", tmp / "lens-nnterp"
            extra = ["--target", str(paris), "--position", str(n - 1), *flags]
            ra, rb = alternate(
                a.rounds,
                [*ours, "lens", str(ids_file), str(oa), *extra],
                [nnterp_py, str(HERE / "nnsight_side.py"), "lens", folder, str(ids_file), str(ob), *extra],
                a.timeout,
            )
            diff = "(no answer to compare)"
            if (oa / "top_probs.npy").exists() and (ob / "top_probs.npy").exists():
                # attnscope's rows: the embeddings, then after each block; nnterp's: after each block
                x_ids, y_ids = np.load(oa / "top_ids.npy")[1:], np.load(ob / "top_ids.npy")
                dp = np.abs(np.load(oa / "top_probs.npy")[1:] - np.load(ob / "top_probs.npy")).max()
                dt = np.abs(np.load(oa / "target_prob.npy")[1:] - np.load(ob / "target_prob.npy")).max()
                diff = (
                    f"top-10 probabilities {dp:.2e}, p(' Paris') {dt:.2e}; same top-10 ids in "
                    f"{np.mean(x_ids == y_ids):.1%} of slots (30 layers)"
                )
            report_pair(
                say,
                f"logit lens of the last position, every layer (top 10 + p(' Paris')), {n} tokens",
                ra,
                rb,
                diff,
                peer="nnterp",
                short="nnterp",
            )
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
