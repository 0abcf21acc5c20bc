"""ferret-xai's side of the ERASER comparison (run with the Python of ``.cache/peer-venvs/ferret``; nothing
from attnscope is imported): its AOPC comprehensiveness and sufficiency evaluators on fixed scores.

    PYTHON bench/peers/ferret_side.py CHECKPOINT_DIR ITEMS.json OUT_DIR [--threads 1]

``CHECKPOINT_DIR``: the MiniLM SST-2 classifier as a Hugging Face folder (written by the driver from the
model attnscope runs). ``ITEMS.json``: one item per sentence, ``text``, ``ids``, ``target`` and
``scores`` (explainer -> one score per token). After a warm-up on the first item, the whole set is
evaluated once under ``common.measure``: per explanation, ``AOPC_Comprehensiveness_Evaluation`` and
``AOPC_Sufficiency_Evaluation`` (ferret's defaults: thresholds 10 %, 20 %, ..., 100 %, positive scores
only, repeated rationales skipped; ferret decodes each perturbed id sequence to text and tokenises it
again). ``OUT_DIR/aopc.npy`` ``[item, explainer, (comprehensiveness, sufficiency)]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, measure, save  # noqa: E402


def main() -> int:
    from importlib.metadata import version

    from ferret.evaluators.faithfulness_measures import AOPC_Comprehensiveness_Evaluation, AOPC_Sufficiency_Evaluation
    from ferret.explainers.explanation import Explanation
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("items")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = AutoModelForSequenceClassification.from_pretrained(a.checkpoint).eval()
    tokenizer = AutoTokenizer.from_pretrained(a.checkpoint)
    comp = AOPC_Comprehensiveness_Evaluation(model, tokenizer)
    suff = AOPC_Sufficiency_Evaluation(model, tokenizer)
    items = json.loads(Path(a.items).read_text())
    names = list(items[0]["scores"])

    def evaluate(batch):
        rows = []
        for item in batch:
            tokens = tokenizer.convert_ids_to_tokens(item["ids"])
            row = []
            for name in names:
                e = Explanation(item["text"], tokens, np.asarray(item["scores"][name]), name, item["target"])
                row.append(
                    [
                        float(comp.compute_evaluation(e, target=item["target"]).score),
                        float(suff.compute_evaluation(e, target=item["target"]).score),
                    ]
                )
            rows.append(row)
        return np.asarray(rows)

    evaluate(items[:1])  # warm
    aopc, report = measure(lambda: evaluate(items))
    save(Path(a.out), aopc=aopc)
    report.update(side="ferret", version=version("ferret-xai"), task="eraser", items=len(items))
    report["threads"] = torch.get_num_threads()
    report["attn_implementation"] = model.config._attn_implementation
    emit(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
