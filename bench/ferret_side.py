"""Run ferret-xai's AOPC evaluators on fixed scores (called by bench/faithfulness.py with the
Python of a separate venv that has ferret-xai; nothing from attnscope is imported here).

    python bench/ferret_side.py CHECKPOINT_DIR ITEMS.json   # prints one JSON line
"""

import json
import sys
import time

import numpy as np
import torch


def main() -> int:
    from importlib.metadata import version

    from ferret.evaluators.faithfulness_measures import AOPC_Comprehensiveness_Evaluation, AOPC_Sufficiency_Evaluation
    from ferret.explainers.explanation import Explanation
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    checkpoint, items_path = sys.argv[1], sys.argv[2]
    torch.set_num_threads(2)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    comp = AOPC_Comprehensiveness_Evaluation(model, tokenizer)
    suff = AOPC_Sufficiency_Evaluation(model, tokenizer)
    items = json.loads(open(items_path).read())
    start = time.perf_counter()
    results = []
    for item in items:
        tokens = tokenizer.convert_ids_to_tokens(item["ids"])
        row = {}
        for name, scores in item["scores"].items():
            e = Explanation(item["text"], tokens, np.asarray(scores), name, item["target"])
            row[name] = [
                float(comp.compute_evaluation(e, target=item["target"]).score),
                float(suff.compute_evaluation(e, target=item["target"]).score),
            ]
        results.append(row)
    seconds = time.perf_counter() - start
    print(json.dumps({"version": version("ferret-xai"), "seconds": seconds, "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
