"""attnscope against ferret-xai on ERASER faithfulness: AOPC comprehensiveness and sufficiency of four
explainers' fixed scores on the first N SST-2 dev sentences, the same MiniLM SST-2 classifier, one run.

ferret-xai 0.4.2 lives in its own environment, ``.cache/peer-venvs/ferret`` (built on first use by
``venvs.ensure``: it needs transformers < 5, captum < 0.8 and numpy < 2). It is given the classifier
attnscope runs (``minilm-sst2``), written as a Hugging Face folder, and the same items: each sentence's
token ids, its text, the explained class (the model's prediction) and the scores of ``attention``,
``rollout``, ``saliency`` and ``random`` (computed here once, untimed). The sentences come from the data
folder (``load_sst2("dev")``; docs/guide/data.md).

Each side is one fresh process per round (``attnscope_side.py eraser`` / ``ferret_side.py``): load, warm
up on the first item, then every item once under ``common.measure`` (wall, CPU, peak added memory).
Both use ferret's convention (bins 10 %, ..., 100 %, ``int(k n)`` tokens, positive scores only, repeated
rationales skipped; attnscope's ``get_convention("ferret")``). Sides alternate round by round.

The numbers agree where ferret's decode/re-tokenise round trip gives back the ids attnscope perturbs; the
script prints the largest difference separately for explanations whose every perturbed input survives
the round trip and for the rest.

    .venv/bin/python bench/peers/ferret_eraser.py [--n 200] [--rounds 1] [--threads 1]
        [--out results/bench/peers-ferret.txt]
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
import venvs  # noqa: E402
from driver import Tee, alternate, report_pair  # noqa: E402

PEER = "ferret"
EXPLAINERS = ("attention", "rollout", "saliency", "random")


def survives_round_trip(tokenizer, ids, scores, special, conv) -> bool:
    """Whether every perturbed input of this convention decodes and re-tokenises to the same ids
    (ferret perturbs decoded text; attnscope perturbs ids)."""
    from attnscope.analysis.faithfulness import candidate_positions, keep_tokens, remove_tokens, select_rationale

    cand = candidate_positions(len(ids), special)
    for frac in conv.bins:
        r = select_rationale(scores, frac, cand, conv)
        if r is None:
            continue
        for seq in (remove_tokens(ids, r), keep_tokens(ids, r, special)):
            text = tokenizer.decode(seq[1:-1].tolist())
            if tokenizer(text)["input_ids"] != seq.tolist():
                return False
    return True


def build_items(n: int):
    """``(classifier, examples, items)``: MiniLM SST-2, the first ``n`` SST-2 dev sentences encoded, and one
    item per sentence (text, ids, special positions, the predicted class, every explainer's scores)."""
    from attnscope.models.loading import load_model
    from attnscope.pipelines.datasets import load_sst2
    from attnscope.pipelines.explainers import example_from_text, make_explainer, make_predict

    clf = load_model("minilm-sst2", device="cpu")
    predict = make_predict(clf)
    rows = load_sst2("dev")[:n]
    examples = [example_from_text(clf, r.text) for r in rows]
    explainers = {e: make_explainer(e, clf) for e in EXPLAINERS}
    items = [
        {
            "text": r.text,
            "ids": ex.input_ids.tolist(),
            "special": list(ex.special),
            "target": int(predict([ex.input_ids])[0].argmax()),
            "scores": {e: explainers[e].explain(ex).tolist() for e in EXPLAINERS},
        }
        for r, ex in zip(rows, examples)
    ]
    return clf, examples, items


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per side process")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    say = Tee()
    python = str(venvs.ensure(PEER))

    import torch

    from attnscope.analysis.faithfulness import get_convention

    torch.set_num_threads(a.threads)
    clf, examples, items = build_items(a.n)
    conv = get_convention("ferret")
    tok = clf.tokenizer
    survives = np.array(
        [
            [survives_round_trip(tok, ex.input_ids, np.asarray(it["scores"][e]), ex.special, conv) for e in EXPLAINERS]
            for ex, it in zip(examples, items)
        ]
    )
    say(
        f"attnscope vs ferret-xai {venvs.version_of(PEER, 'ferret-xai')} (transformers "
        f"{venvs.version_of(PEER, 'transformers')}, torch {venvs.version_of(PEER, 'torch')}, own venv "
        f"{venvs.VENV_ROOT / PEER}); MiniLM SST-2 (minilm-sst2) written as a Hugging Face folder; {a.n} SST-2 dev "
        f"sentences (mean {np.mean([len(ex) for ex in examples]):.1f} tokens), explainers {', '.join(EXPLAINERS)}; "
        f"torch threads {a.threads} on each side; {a.rounds} alternating round(s); one fresh process per side "
        f"and round; load average {os.getloadavg()[0]:.1f} at the start"
    )
    with tempfile.TemporaryDirectory(prefix="attnscope-ferret-") as tmp:
        tmp = Path(tmp)
        checkpoint = tmp / "minilm-sst2"
        clf.model.save_pretrained(checkpoint)
        clf.tokenizer.save_pretrained(checkpoint)
        data = tmp / "items.json"
        data.write_text(json.dumps(items))
        oa, ob = tmp / "ours", tmp / "ferret"
        flags = ["--threads", str(a.threads)]
        ours, theirs = alternate(
            a.rounds,
            [sys.executable, str(HERE / "attnscope_side.py"), "eraser", str(data), str(oa), *flags],
            [python, str(HERE / "ferret_side.py"), str(checkpoint), str(data), str(ob), *flags],
            a.timeout,
        )
        diff = "(no answer to compare)"
        if (oa / "aopc.npy").exists() and (ob / "aopc.npy").exists():
            x, y = np.load(oa / "aopc.npy"), np.load(ob / "aopc.npy")  # [item, explainer, 2]
            d = np.abs(x - y).max(axis=-1)  # [item, explainer]
            same, changed = d[survives], d[~survives]
            diff = (
                f"{same.max() if same.size else 0:.2e} where every perturbed input survives ferret's round trip "
                f"({same.size} explanations); {changed.max() if changed.size else 0:.2e} where the round trip changes "
                f"the ids ({changed.size} explanations, {(changed > 1e-3).mean() if changed.size else 0:.0%} off by "
                f"more than 1e-3)"
            )
            say(f"  mean AOPC over {len(items)} sentences (attnscope | ferret), comprehensiveness / sufficiency:")
            for j, e in enumerate(EXPLAINERS):
                say(
                    f"    {e:<10} {x[:, j, 0].mean():.4f} | {y[:, j, 0].mean():.4f}   "
                    f"{x[:, j, 1].mean():.4f} | {y[:, j, 1].mean():.4f}"
                )
        report_pair(
            say,
            f"ERASER AOPC comprehensiveness + sufficiency, ferret's convention, {len(items)} sentences x "
            f"{len(EXPLAINERS)} explainers",
            ours,
            theirs,
            diff,
            peer="ferret-xai",
            short="ferret",
        )
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(say.lines) + "\n")


if __name__ == "__main__":
    main()
