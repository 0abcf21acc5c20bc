"""inseq's side of the next-token attribution (run with the Python of ``.cache/peer-venvs/inseq``; nothing
from attnscope is imported).

    PYTHON bench/peers/inseq_side.py ig FOLDER IDS.json OUT_DIR --target ID --baseline ID [--threads 1]

``inseq.load_model(FOLDER, "integrated_gradients")`` (SmolLM2 from attnscope's converted Hugging Face
folder), ``attribute(prompt, prompt + next token, n_steps=32)``: captum's IntegratedGradients on the input
embeddings, attributed function inseq's default ``probability`` (``p(target)``, as attnscope). inseq's
baseline is the tokenizer's ``unk_token_id`` at every position; it is set to ``--baseline`` (the pad token
attnscope uses). The raw attributions (``target_attributions`` before inseq's aggregation: L2 norm and
normalisation by default) are summed over the embedding dimension, as captum and attnscope do.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, measure, save  # noqa: E402


def main() -> None:
    from importlib.metadata import version

    import inseq

    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["ig"])
    ap.add_argument("folder")
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--baseline", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = inseq.load_model(a.folder, "integrated_gradients", model_kwargs={"dtype": torch.float32})
    model.tokenizer.unk_token_id = a.baseline  # inseq's baseline id: the pad token, as attnscope's
    ids = json.loads(Path(a.ids).read_text())
    tok = model.tokenizer
    n = len(ids)

    def run(prompt_ids):
        prompt = tok.decode(prompt_ids)
        out = model.attribute(
            prompt,
            prompt + tok.decode([a.target]),
            n_steps=32,
            internal_batch_size=max(1, 4096 // len(prompt_ids)),
            show_progress=False,
        )
        raw = out.sequence_attributions[0].target_attributions  # [prompt + 1, 1 step, hidden]
        return raw[: len(prompt_ids), 0].sum(-1)

    run(ids[:16])  # warm
    scores, report = measure(lambda: run(ids))
    save(Path(a.out), scores=scores.detach().double().numpy())
    report.update(side="inseq", version=version("inseq"), task=a.task, tokens=n)
    report["threads"] = torch.get_num_threads()
    emit(report)


if __name__ == "__main__":
    main()
