"""The zoo's text classifiers through the interface the explainers use for Hugging Face models.

- ``WordTokenizer``: the zoo's word vocabulary (lower-cased, whitespace split, ``[CLS]`` first,
  unknown words -> ``[UNK]``) with the calls the explainers make of a tokenizer: ``tok(text)``,
  ``tok(words, is_split_into_words=True).word_ids()``, offsets, special ids, id -> token.
- ``TextClassifier``: ``forward(input_ids | inputs_embeds, attention_mask, output_attentions)`` ->
  ``.logits`` and the per-layer probabilities ``.attentions`` (in the autograd graph), and
  ``get_input_embeddings()``, so captum's methods and attention x gradient run unchanged.

Padding and removed tokens use id 0 (``[PAD]``), which the model masks out of every key and of the
pooling; the vocabulary has no ``[MASK]`` (``mask_token_id`` is None).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import torch

from attnscope.models.zoo import data

_WORD = re.compile(r"\S+")


class _Encoding(dict):
    """``{"input_ids": [...], ...}`` with ``word_ids()`` like a Hugging Face ``BatchEncoding``."""

    def __init__(self, ids: list[int], word_ids: list[int | None], offsets: list[tuple[int, int]] | None):
        super().__init__(input_ids=ids)
        if offsets is not None:
            self["offset_mapping"] = offsets
        self._word_ids = word_ids

    def word_ids(self) -> list[int | None]:
        return list(self._word_ids)


class WordTokenizer:
    """The zoo vocabulary behind a tokenizer's interface (one id per word; no truncation here)."""

    def __init__(self, vocab: Sequence[str]):
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.pad_token_id = self.index[data.PAD]
        self.cls_token_id = self.index[data.CLS]
        self.unk_token_id = self.index[data.UNK]
        self.mask_token_id = None
        self.all_special_ids = [self.pad_token_id, self.cls_token_id]

    def __call__(
        self,
        text: str | Sequence[str],
        is_split_into_words: bool = False,
        return_offsets_mapping: bool = False,
        **_ignored,
    ) -> _Encoding:
        if is_split_into_words:
            words, spans = [w.lower() for w in text], None
        else:
            found = list(_WORD.finditer(text))
            words, spans = [m.group().lower() for m in found], [m.span() for m in found]
        ids = [self.cls_token_id] + [self.index.get(w, self.unk_token_id) for w in words]
        offsets = None
        if return_offsets_mapping:
            offsets = [(0, 0)] + list(spans or [(0, 0)] * len(words))
        return _Encoding(ids, [None] + list(range(len(words))), offsets)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.vocab[int(i)] for i in ids]


@dataclass
class ClassifierOutput:
    logits: torch.Tensor
    attentions: tuple[torch.Tensor, ...] | None = None


class TextClassifier(torch.nn.Module):
    """A zoo ``TextTransformer`` called like a Hugging Face sequence classifier."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net
        self.config = SimpleNamespace(num_labels=int(net.head.out_features))

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.net.embed

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool = False,
    ) -> ClassifierOutput:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        if inputs_embeds is None:
            inputs_embeds = self.net.embed(input_ids)
        if attention_mask is None:
            mask = (
                input_ids != self.net.embed.padding_idx
                if input_ids is not None
                else torch.ones(inputs_embeds.shape[:2], dtype=torch.bool, device=inputs_embeds.device)
            )
        else:
            mask = attention_mask.bool()
        trace: dict = {}
        logits, _ = self.net.forward_embeddings(inputs_embeds, mask, return_maps=output_attentions, trace=trace)
        return ClassifierOutput(logits, trace.get("probs") if output_attentions else None)
