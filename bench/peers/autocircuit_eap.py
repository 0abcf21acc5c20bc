"""attnscope against auto-circuit (and TransformerLens) on edge attribution patching over every edge of
SmolLM2, the same weights and clean/corrupted pair, one run.

TransformerLens 4.3 computes no EAP on SmolLM2: its bridge refuses edge-level patching of grouped-query
models (``_check_kv_heads_match_query_heads``, ValueError; the driver prints the refusal it gets).
auto-circuit 1.0.1 (``.cache/peer-venvs/auto-circuit``: TransformerLens 2.18's ``HookedTransformer``,
which TransformerLens 4 removed) is given SmolLM2 as a ``HookedTransformer`` built from attnscope's
Hugging Face folder with grouped-query attention ungrouped (``autocircuit_side.py``).

The pair: " The capital of France is" / " ... Italy is" after ``--patch-prefix`` tokens of prose
(``tlens.capital_pair``), metric ``logit(' Paris') - logit(' Rome')`` at the last position. attnscope's
``eap`` scores ``(corrupted_u - clean_u) . dM/dx_v``; auto-circuit's mask gradient at mask 0 is the same
sum with the opposite sign (it differentiates ``-M`` with respect to a mask that moves the input towards
the corrupted one). Edges are matched by name (``a{l}.h{h}`` = ``A{l}.{h}``, ``m{l}`` = ``MLP {l}``,
``E`` = ``Resid Start``, ``logits`` = ``Resid End``); auto-circuit has a k/v edge per query head (ungrouped)
where attnscope has one per key/value head, which is their sum over the heads sharing it.

    .venv/bin/python bench/peers/autocircuit_eap.py [--patch-prefix 10] [--rounds 1] [--threads 1]
        [--out results/bench/peers-auto-circuit.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import venvs  # noqa: E402
from driver import Tee, alternate, report_pair, run_side  # noqa: E402
from tlens import capital_pair  # noqa: E402


def their_name(name: str, n_heads: int, n_kv: int) -> list[str]:
    """auto-circuit's node names for one of attnscope's (a k/v receiver: every query head of its group)."""
    if name == "E":
        return ["Resid Start"]
    if name == "logits":
        return ["Resid End"]
    if m := re.fullmatch(r"m(\d+)", name):
        return [f"MLP {m[1]}"]
    if m := re.fullmatch(r"a(\d+)\.h(\d+)", name):
        return [f"A{m[1]}.{m[2]}"]
    if m := re.fullmatch(r"a(\d+)\.h(\d+)<q>", name):
        return [f"A{m[1]}.{m[2]}.Q"]
    m = re.fullmatch(r"a(\d+)\.g(\d+)<([kv])>", name)
    group = n_heads // n_kv
    return [f"A{m[1]}.{h}.{m[3].upper()}" for h in range(int(m[2]) * group, (int(m[2]) + 1) * group)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--patch-prefix", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    say = Tee()
    ac_py = str(venvs.ensure("auto-circuit"))
    tl_py = str(venvs.ensure("transformer-lens"))

    from transformers import AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    folder = str(_hf_folder(get_spec("smollm2")))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    cap = capital_pair(tokenizer, a.patch_prefix)
    n = len(cap["clean"])
    say(
        f"attnscope vs auto-circuit {venvs.version_of('auto-circuit', 'auto-circuit')} (TransformerLens "
        f"{venvs.version_of('auto-circuit', 'transformer-lens')}, own venv {venvs.VENV_ROOT / 'auto-circuit'}); "
        f"SmolLM2-135M float32 from {folder}; capitals pair, {n} tokens; torch threads {a.threads}; "
        f"{a.rounds} alternating round(s); load average {os.getloadavg()[0]:.1f} at the start"
    )
    with tempfile.TemporaryDirectory(prefix="attnscope-eap-") as tmp:
        tmp = Path(tmp)
        pair_file = tmp / "pair.json"
        pair_file.write_text(json.dumps(cap))
        ids_file = tmp / "ids.json"  # attnscope's side takes the clean ids as its ids and the pair by --pair
        ids_file.write_text(json.dumps(cap["clean"]))
        probe = "; ".join(
            [
                "import json, torch",
                "from transformer_lens.model_bridge import TransformerBridge",
                "from transformer_lens.tools.analysis.attribution_patching import EdgeAttributionConfig, "
                "attribution_patch",
                f"m = TransformerBridge.boot_transformers({folder!r}, device='cpu', dtype=torch.float32).eval()",
                f"p = json.load(open({str(pair_file)!r}))",
                "c, k = torch.tensor([p['clean']]), torch.tensor([p['corrupted']])",
                "f = lambda lg: lg[:, -1, p['answers'][0]].mean() - lg[:, -1, p['answers'][1]].mean()",
                "attribution_patch(m, c, k, f, EdgeAttributionConfig(granularity='edge'))",
                "print(json.dumps({'refused': False}))",
            ]
        )
        r = run_side([tl_py, "-c", probe], a.timeout)
        tl = venvs.version_of("transformer-lens", "transformer-lens")
        say(f"  TransformerLens {tl}, attribution_patch(granularity='edge') on SmolLM2: {r.get('error', r)}")
        oa, ob = tmp / "ours", tmp / "ac"
        flags = ["--threads", str(a.threads)]
        ours, theirs = alternate(
            a.rounds,
            [
                sys.executable,
                str(HERE / "attnscope_side.py"),
                "eap",
                str(ids_file),
                str(oa),
                "--pair",
                str(pair_file),
                *flags,
            ],
            [ac_py, str(HERE / "autocircuit_side.py"), "eap", folder, str(pair_file), str(ob), *flags],
            a.timeout,
        )
        diff = "(no answer to compare)"
        if (oa / "scores.npy").exists() and (ob / "edges.json").exists():
            scores = np.load(oa / "scores.npy")
            names = json.loads((oa / "names.json").read_text())
            edges = json.loads((ob / "edges.json").read_text())
            n_heads = sum(1 for s in names["senders"] if s.startswith("a0.h"))
            n_kv = sum(1 for r in names["receivers"] if re.fullmatch(r"a0\.g\d+<k>", r))
            worst, count, missing, big = 0.0, 0, 0, 0.0
            for i, s in enumerate(names["senders"]):
                for j, r in enumerate(names["receivers"]):
                    if np.isnan(scores[i, j]):
                        continue
                    keys = [f"{u}->{v}" for u in their_name(s, n_heads, n_kv) for v in their_name(r, n_heads, n_kv)]
                    if not all(k in edges for k in keys):
                        missing += 1
                        continue
                    theirs_v = -sum(edges[k] for k in keys)  # auto-circuit's sign: see the docstring
                    worst = max(worst, abs(float(scores[i, j]) - theirs_v))
                    big = max(big, abs(float(scores[i, j])))
                    count += 1
            diff = (
                f"{worst:.2e} over {count:,} edges (largest |score| {big:.3f}; {missing} of attnscope's edges "
                f"without an auto-circuit counterpart; auto-circuit has {len(edges):,} edges)"
            )
        report_pair(
            say,
            f"EAP over every edge, noising, logit difference, {n} tokens",
            ours,
            theirs,
            diff,
            peer="auto-circuit",
            short="auto-circuit",
        )
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
