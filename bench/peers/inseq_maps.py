"""attnscope vs inseq's attention attribution: every attention map of SmolLM2, side by side in one run.

inseq 0.7.1 runs in its own virtual environment (``.cache/peer-venvs/inseq``; ``venvs.ensure``), loading
attnscope's converted Hugging Face folder with eager attention. Its ``attention`` method on a decoder-only
model gives, for each generated token, the attention row of the position that predicts it, in every layer
and head, from one forward pass; attributing the whole text from its first token gives every row of every
map but the last (``inseq_side.py maps``). attnscope's side is ``attnscope_side.py maps``: the lazy run
plus every head's map computed once. The two are compared on the rows both have. inseq takes text, so the
ids are cut where decode/re-tokenise gives them back (as ``next_token.py`` does).

    .venv/bin/python bench/peers/inseq_maps.py [--tokens 256,1024] [--rounds 1] [--threads 1]
        [--out results/bench/peers-inseq-maps.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import venvs  # noqa: E402
from driver import Tee, alternate, gb, report_pair  # noqa: E402
from next_token import round_trip_ids  # noqa: E402
from tlens import max_diff_maps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", default="256,1024")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    say = Tee()
    inseq_py = str(venvs.ensure("inseq"))

    from lazy import long_text
    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    folder = str(_hf_folder(get_spec("smollm2")))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    say(
        f"attnscope vs inseq {venvs.version_of('inseq', 'inseq')} (transformers "
        f"{venvs.version_of('inseq', 'transformers')}, own venv {venvs.VENV_ROOT / 'inseq'}); SmolLM2-135M float32 "
        f"from {folder}; torch threads {a.threads} on each side; {a.rounds} alternating round(s); one fresh "
        f"process per side and measurement; load average {os.getloadavg()[0]:.1f} at the start"
    )
    say("every attention map [30 layers, 9 heads, n, n] (inseq: attention attribution of the text from its first")
    say("token, every row but the last; attnscope: lazy run + each head's map computed once)")
    flags = ["--threads", str(a.threads)]
    with tempfile.TemporaryDirectory(prefix="attnscope-inseq-maps-") as tmp:
        tmp = Path(tmp)
        for n in [int(x) for x in a.tokens.split(",") if x]:
            ids = round_trip_ids(tokenizer, long_text(tokenizer, n))
            path = tmp / f"ids-{n}.json"
            path.write_text(json.dumps(ids))
            oa, ob = tmp / f"maps-{n}-ours", tmp / f"maps-{n}-inseq"
            ra, rb = alternate(
                a.rounds,
                [sys.executable, str(HERE / "attnscope_side.py"), "maps", str(path), str(oa), *flags],
                [inseq_py, str(HERE / "inseq_side.py"), "maps", folder, str(path), str(ob), *flags],
                a.timeout,
            )
            ok = (oa / "maps.npy").exists() and (ob / "maps.npy").exists()
            diff = "(no answer to compare)"
            if ok:  # inseq has no last row
                diff = max_diff_maps(oa / "maps.npy", ob / "maps.npy", slice(None, -1), ": every row but the last")[1]
            report_pair(say, f"{len(ids)} tokens", ra, rb, diff, peer="inseq", short="inseq")
            held = 30 * 9 * len(ids) * (len(ids) - 1) * 4
            say(f"    inseq's returned rows alone: {gb(held)} float32 ([text, step, 30, 9])")
            for f in (oa / "maps.npy", ob / "maps.npy"):
                f.unlink(missing_ok=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
