"""inseq's side of the next-token attribution (run with the Python of ``.cache/peer-venvs/inseq``; nothing
from attnscope is imported).

    PYTHON bench/peers/inseq_side.py ig FOLDER IDS.json OUT_DIR --target ID --baseline ID [--threads 1]
    PYTHON bench/peers/inseq_side.py maps FOLDER IDS.json OUT_DIR [--threads 1] [--no-check]

``maps``: ``inseq.load_model(FOLDER, "attention")`` (eager attention: fused attention never forms the
weights), ``attribute(first token, whole text)``: inseq's attention attribution of a decoder-only model is a
final-step method, so one forward pass returns, for every generated step ``s``, the attention row of the
position that predicts it (query ``s``) in every layer and head, ``[text, step, layer, head]``: every row
of every map but the last one. Untimed, written to ``OUT_DIR/maps.npy`` as ``[layer, head, query, key]``
with the last row left 0 (the driver compares the others); ``tokens`` in the report is the length inseq
tokenised the text to.

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
from common import emit, maps_file, measure, save  # noqa: E402


def main() -> None:
    from importlib.metadata import version

    import inseq

    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["ig", "maps"])
    ap.add_argument("folder")
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--target", type=int, default=None)
    ap.add_argument("--baseline", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-check", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.task == "maps":
        maps(a)
        return
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


def maps(a) -> None:
    from importlib.metadata import version

    import inseq

    model = inseq.load_model(
        a.folder, "attention", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"}
    )
    tok = model.tokenizer
    ids = json.loads(Path(a.ids).read_text())

    def every_row(x):
        return model.attribute(tok.decode(x[:1]), tok.decode(x), show_progress=False, skip_special_tokens=False)

    every_row(ids[:16])  # warm
    out, report = measure(lambda: every_row(ids))
    rows = out.sequence_attributions[0].target_attributions  # [text, step, layer, head], NaN above the diagonal
    n = int(rows.shape[0])
    if not a.no_check:
        stack = maps_file(Path(a.out), (int(rows.shape[2]), int(rows.shape[3]), n, n))
        for layer in range(rows.shape[2]):
            block = torch.zeros(rows.shape[3], n, n)
            block[:, : rows.shape[1]] = rows[:, :, layer].permute(2, 1, 0).nan_to_num(0.0)
            stack[layer] = block.numpy()
        stack.flush()
    report.update(side="inseq", version=version("inseq"), task="maps", tokens=n, rows=int(rows.shape[1]))
    report["threads"] = torch.get_num_threads()
    emit(report)


if __name__ == "__main__":
    main()
