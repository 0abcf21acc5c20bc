"""Captum's LLM attribution side (run with the Python of ``.cache/peer-venvs/captum``; nothing from attnscope
is imported): the next token of SmolLM2 attributed to the prompt's tokens.

    PYTHON bench/peers/captum_side.py TASK FOLDER IDS.json OUT_DIR --target ID --baseline ID [--threads 1]

The model is ``AutoModelForCausalLM`` from attnscope's converted Hugging Face folder (float32). The prompt
is given as text (``TextTokenInput`` tokenises it; the driver checks that the text gives back the ids),
the target as the token id attnscope explains.

- ``ablation``: ``LLMAttribution(FeatureAblation(model), tokenizer, attr_target="prob")``, each token
  replaced by ``--baseline`` alone: ``p(target) - p(target | token replaced)``, one perturbation per
  forward (``LLMAttribution`` refuses ``perturbations_per_eval`` > 1).
- ``ig``: ``LLMGradientAttribution(LayerIntegratedGradients(model, embed_tokens), tokenizer)``, 32 steps,
  baseline every token replaced by ``--baseline``. Captum fixes this class's attributed quantity to the
  **log**-probability of the target (``GradientForwardFunc``); ``--prob`` runs the same wrapper with
  the probability instead, which is what attnscope attributes.
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

    from captum.attr import (
        FeatureAblation,
        LayerIntegratedGradients,
        LLMAttribution,
        LLMGradientAttribution,
        TextTokenInput,
    )
    from captum.attr._core import llm_attr
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["ig", "ablation"])
    ap.add_argument("folder")
    ap.add_argument("ids")
    ap.add_argument("out")
    ap.add_argument("--target", type=int, required=True)
    ap.add_argument("--baseline", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prob", action="store_true", help="ig: attribute p(target) instead of log p(target)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = AutoModelForCausalLM.from_pretrained(a.folder, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(a.folder)
    ids = json.loads(Path(a.ids).read_text())
    text = tokenizer.decode(ids)
    target = torch.tensor([a.target])
    n = len(ids)

    if a.task == "ablation":
        attr = LLMAttribution(FeatureAblation(model), tokenizer, attr_target="prob")

        def run(prompt):
            inp = TextTokenInput(prompt, tokenizer, baselines=a.baseline)
            return attr.attribute(inp, target=target).seq_attr  # one perturbation per forward: its only mode
    else:
        if a.prob:  # the same forward as captum's GradientForwardFunc, returning the probability
            forward = llm_attr.GradientForwardFunc.forward

            def prob_forward(self, *args, **kwargs):
                return forward(self, *args, **kwargs).exp()

            llm_attr.GradientForwardFunc.forward = prob_forward
        attr = LLMGradientAttribution(LayerIntegratedGradients(model, model.get_input_embeddings()), tokenizer)

        def run(prompt):
            # the interpretable input is 1 per token; its baseline (0) maps every token to ``--baseline``
            inp = TextTokenInput(prompt, tokenizer, baselines=a.baseline)
            m = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
            return attr.attribute(inp, target=target, n_steps=32, internal_batch_size=max(1, 4096 // m)).seq_attr

    run(tokenizer.decode(ids[:16]))  # warm
    scores, report = measure(lambda: run(text))
    save(Path(a.out), scores=scores.detach().double().numpy())
    report.update(side="captum", version=version("captum"), task=a.task, tokens=n, prob=a.prob)
    report["threads"] = torch.get_num_threads()
    emit(report)


if __name__ == "__main__":
    main()
