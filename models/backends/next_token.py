"""A causal LM seen as a classifier of the token after its input (``NextTokenClassifier``): what the
explainers and ERASER call on a decoder, its "classes" the vocabulary."""

from __future__ import annotations

from types import SimpleNamespace

import torch


class ClassifierOutput(SimpleNamespace):
    """``.logits [batch, vocab]`` and ``.attentions`` (layer x ``[batch, head, query, key]``)."""


class NextTokenClassifier(torch.nn.Module):
    """A causal LM called like a sequence classifier: the logits of the token after each input's
    last real position (right padding, ``attention_mask`` 1 for real tokens). No state is kept."""

    def __init__(self, lm: torch.nn.Module):
        super().__init__()
        self.lm = lm
        self.config = SimpleNamespace(num_labels=int(lm.config.vocab_size))

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.lm.get_input_embeddings()

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool = False,
    ) -> ClassifierOutput:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        ref = input_ids if input_ids is not None else inputs_embeds
        if attention_mask is None:
            attention_mask = torch.ones(ref.shape[:2], dtype=torch.long, device=ref.device)
        last = attention_mask.long().sum(dim=1) - 1  # [batch]
        # unembed only the positions read: the logits of every position (and, under a gradient, their
        # backward) are a quarter of a 48-token integrated-gradients request's multiply-adds
        keep, row_pos = torch.unique(last, return_inverse=True)
        out = self.lm(
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            use_cache=False,
            logits_to_keep=keep,
        )
        logits = out.logits[torch.arange(out.logits.shape[0], device=last.device), row_pos]
        return ClassifierOutput(logits=logits, attentions=out.attentions if output_attentions else None)
