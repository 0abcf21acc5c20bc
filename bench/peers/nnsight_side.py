"""nnsight's and nnterp's side (``maps``: the Python of ``.cache/peer-venvs/nnsight``; ``lens``: of
``.cache/peer-venvs/nnterp``, whose nnterp 1.3.0 needs nnsight 0.7; nothing from attnscope is imported).
SmolLM2 from attnscope's converted Hugging Face folder, float32, offline.

    PYTHON bench/peers/nnsight_side.py TASK FOLDER IDS.json OUT_DIR [--threads 1] [--target ID]

- ``maps``: ``LanguageModel(FOLDER, attn_implementation="eager")`` (fused attention never forms the
  weights), one ``trace`` of the ids saving every layer's attention probabilities
  (``model.model.layers[l].self_attn.output[1]``, ``[1, head, query, key]``); then, untimed, written to
  ``OUT_DIR/maps.npy``.
- ``lens``: nnterp's ``StandardizedTransformer(FOLDER)`` and ``nnterp.interventions.logit_lens`` of the
  prompt (the decoded ids; the driver checks they tokenise back): each layer's output at the last position
  through the final norm and the unembedding, softmax; top 10 per layer and ``p(--target)``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, maps_file, measure, save  # noqa: E402


def main() -> None:
    from importlib.metadata import version

    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["maps", "lens"])
    ap.add_argument("folder")
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", type=int, default=None)
    ap.add_argument("--position", type=int, default=-1)
    ap.add_argument("--no-check", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    ids = json.loads(Path(a.ids).read_text())
    out = Path(a.out)
    n = len(ids)

    if a.task == "maps":
        from nnsight import LanguageModel

        model = LanguageModel(a.folder, dtype=torch.float32, attn_implementation="eager", dispatch=True)
        layers = model.model.layers

        def patterns(x):
            batch = {"input_ids": torch.tensor([x]), "attention_mask": torch.ones(1, len(x), dtype=torch.long)}
            saved = []  # filled inside the trace (nnsight runs the block's code itself)
            with model.trace(batch):
                for layer in layers:
                    saved.append(layer.self_attn.output[1].save())
            return saved

        patterns(ids[:32])  # warm
        saved, report = measure(lambda: patterns(ids))
        shape = (len(saved), *saved[0].shape[1:])
        report["shape"] = list(shape)
        report["pattern_bytes"] = sum(t.numel() * t.element_size() for t in saved)
        if not a.no_check:
            stack = maps_file(out, shape)
            for layer, t in enumerate(saved):
                stack[layer] = t[0].float().numpy()
            stack.flush()
        report.update(side="nnsight", version=version("nnsight"))
    else:
        from nnterp import StandardizedTransformer
        from nnterp.interventions import logit_lens

        model = StandardizedTransformer(a.folder, device_map=None, dtype=torch.float32)  # CPU, no accelerate
        tok = model.tokenizer
        logit_lens(model, tok.decode(ids[:32]))  # warm
        prompt = tok.decode(ids)

        def lens():
            probs = logit_lens(model, prompt)[0].float()  # [layer, vocab]
            return probs, probs.topk(10, dim=-1)

        (probs, top), report = measure(lens)
        target_prob = probs[:, a.target] if a.target is not None else top.values[:, 0]
        save(out, top_ids=top.indices.numpy(), top_probs=top.values.numpy(), target_prob=target_prob.numpy())
        report.update(side="nnterp", version=version("nnterp"))
    report.update(task=a.task, tokens=n, threads=torch.get_num_threads())
    emit(report)


if __name__ == "__main__":
    main()
