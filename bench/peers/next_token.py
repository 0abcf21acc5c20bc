"""attnscope against Captum's LLM attribution and inseq: SmolLM2's next token attributed to the prompt's
tokens (integrated gradients, feature ablation), the same weights, prompt, target and baseline, one run.

Captum 0.9.0 (``LLMAttribution`` / ``LLMGradientAttribution``) and inseq 0.7.1 each live in their own
environment (``.cache/peer-venvs/captum``, ``.cache/peer-venvs/inseq``; ``venvs.ensure``), loading the
Hugging Face folder attnscope writes for SmolLM2. The prompt is ``--tokens`` ids of this repository's docs
(cut where the decoded text gives back the same ids: both peers take text); the target is the model's
predicted next token; the baseline token is the pad token (SmolLM2 has no mask token), which is what
attnscope's explainers use.

Quantities (one fresh process per side, sides alternated; ``common.measure``):
- ``ablation``: each token replaced by the baseline alone, ``p(target) - p(target | replaced)``: attnscope's
  ``occlusion`` against Captum ``LLMAttribution(FeatureAblation, attr_target="prob")``.
- ``ig``: integrated gradients on the input embeddings, 32 steps, baseline embeddings of the pad token:
  attnscope's ``integrated_gradients`` (of ``p(target)``) against inseq's ``integrated_gradients``
  (``p(target)``, its baseline id set to the pad token) and Captum ``LLMGradientAttribution(
  LayerIntegratedGradients)``, which attributes ``log p(target)``: printed as it is (a different
  quantity: the difference and the rank correlation say how far) and with its forward returning
  ``p(target)`` (``--prob``), the same quantity.

    .venv/bin/python bench/peers/next_token.py [--tasks ablation,ig] [--tokens 48] [--rounds 1]
        [--threads 1] [--out results/bench/peers-next-token.txt]
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
from driver import Tee, alternate, report_pair, run_side  # noqa: E402


def round_trip_ids(tokenizer, ids: list[int]) -> list[int]:
    """The longest prefix of ``ids`` whose decoded text tokenises back to the same ids."""
    for n in range(len(ids), 0, -1):
        if tokenizer(tokenizer.decode(ids[:n]), add_special_tokens=False)["input_ids"] == ids[:n]:
            return ids[:n]
    raise SystemExit("no prefix of the prompt survives decode/re-tokenise")


def compare(x: np.ndarray, y: np.ndarray) -> str:
    from scipy.stats import spearmanr

    rho = spearmanr(x, y).statistic
    return f"{np.abs(x - y).max():.2e} over {x.size} tokens (largest |score| {np.abs(x).max():.3e}; Spearman {rho:.4f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="ablation,ig")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    say = Tee()
    tasks = [t for t in a.tasks.split(",") if t]
    captum_py = str(venvs.ensure("captum"))
    inseq_py = str(venvs.ensure("inseq")) if "ig" in tasks else None

    import torch
    from lazy import long_text
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from attnscope.models.loading import _hf_folder
    from attnscope.models.registry import get_spec

    folder = str(_hf_folder(get_spec("smollm2")))
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ids = round_trip_ids(tokenizer, long_text(tokenizer, a.tokens))
    with torch.no_grad():
        lm = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        target = int(lm(torch.tensor([ids])).logits[0, -1].argmax())
        del lm
    baseline = int(tokenizer.pad_token_id)

    def about(peer: str) -> str:
        return f"{peer} {venvs.version_of(peer, peer)} (transformers {venvs.version_of(peer, 'transformers')})"

    versions = about("captum") + (", " + about("inseq") if inseq_py else "")
    say(
        f"attnscope vs {versions}, each in its own venv under {venvs.VENV_ROOT}; SmolLM2-135M float32 from "
        f"{folder}; prompt {len(ids)} tokens of the docs, target its predicted next token "
        f"{tokenizer.decode([target])!r} ({target}), baseline token {tokenizer.decode([baseline])!r} ({baseline}); "
        f"torch threads {a.threads}; {a.rounds} alternating round(s); load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="attnscope-next-") as tmp:
        tmp = Path(tmp)
        ids_file = tmp / "ids.json"
        ids_file.write_text(json.dumps(ids))
        flags = ["--threads", str(a.threads)]
        peer = ["--target", str(target), "--baseline", str(baseline), *flags]
        ours = [sys.executable, str(HERE / "attnscope_side.py")]

        def side(python: str, script: str, task: str, out: Path, extra: list[str] = ()) -> list[str]:
            return [python, str(HERE / script), task, folder, str(ids_file), str(out), *peer, *extra]

        def pair(task: str, name: str, theirs: list[str], oa: Path, ob: Path, peer_name: str, what: str) -> None:
            ra, rb = alternate(a.rounds, [*ours, task, str(ids_file), str(oa), *flags], theirs, a.timeout)
            diff = "(no answer to compare)"
            if (oa / "scores.npy").exists() and (ob / "scores.npy").exists():
                diff = compare(np.load(oa / "scores.npy"), np.load(ob / "scores.npy"))
            report_pair(say, what, ra, rb, diff, peer=peer_name, short=name)

        if "ablation" in tasks:
            ob = tmp / "captum-ablation"
            pair(
                "ablation",
                "captum",
                side(captum_py, "captum_side.py", "ablation", ob),
                tmp / "ours-ablation",
                ob,
                "Captum",
                f"feature ablation of p(next token), {len(ids)} tokens (occlusion / LLMAttribution(FeatureAblation))",
            )
        if "ig" in tasks:  # attnscope and the three peer runs, the order rotated each round
            runs = [
                ("attnscope", [*ours, "ig", str(ids_file), str(tmp / "ours-ig"), *flags], tmp / "ours-ig"),
                ("inseq", side(inseq_py, "inseq_side.py", "ig", tmp / "inseq"), tmp / "inseq"),
                ("captum-p", side(captum_py, "captum_side.py", "ig", tmp / "captum-p", ["--prob"]), tmp / "captum-p"),
                ("captum-logp", side(captum_py, "captum_side.py", "ig", tmp / "captum-logp"), tmp / "captum-logp"),
            ]
            reports: dict[str, list[dict]] = {name: [] for name, _, _ in runs}
            for r in range(a.rounds):
                for name, cmd, _ in runs[r % len(runs) :] + runs[: r % len(runs)]:
                    reports[name].append(run_side(cmd, a.timeout))
            mine = np.load(tmp / "ours-ig" / "scores.npy") if (tmp / "ours-ig" / "scores.npy").exists() else None
            for name, peer_name, what in (
                ("inseq", "inseq", "inseq integrated_gradients of p"),
                ("captum-p", "Captum", "Captum LLMGradientAttribution, its forward returning p"),
                ("captum-logp", "Captum", "Captum LLMGradientAttribution as it is: log p (a different quantity)"),
            ):
                got = tmp / name / "scores.npy"
                diff = compare(mine, np.load(got)) if mine is not None and got.exists() else "(no answer to compare)"
                report_pair(
                    say,
                    f"integrated gradients of the next token, 32 steps, {len(ids)} tokens: {what}",
                    reports["attnscope"],
                    reports[name],
                    diff,
                    peer=peer_name,
                    short=name,
                )
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
