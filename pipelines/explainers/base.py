"""What every explainer shares: the encoded example, the batched ``predict`` the metrics call,
and the one verb ``explain(example) -> scores[token]``.

``example_from_text``, ``example_from_ids`` and ``example_from_words`` build an explainer's example
(``Encoded``: ids truncated to the model's limit with the count of what was cut, special positions,
the explained class, a human rationale per token). ``encode_text`` is the backend's only:
``Backend.encode_text(text, truncate) -> ModelInput``, one forward pass's input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from attnscope.analysis.plausibility import word_mask_to_tokens
from attnscope.models.cancel import check_cancelled
from attnscope.models.cls_readout import cls_readout
from attnscope.models.loading import Backend
from attnscope.models.registry import text_classifiers


class NotAClassifierError(ValueError):
    """Faithfulness needs class probabilities; this model gives none."""


@dataclass(frozen=True)
class Encoded:
    """One tokenised example: ``input_ids`` [token], labels, special positions, explained class.

    ``target`` None means "the model's predicted class". ``human`` is the 0/1 human rationale per
    token (None when there is none); ``truncated`` counts tokens cut off at the model's limit.
    """

    input_ids: np.ndarray
    tokens: tuple[str, ...]
    special: tuple[int, ...]
    target: int | None = None
    human: np.ndarray | None = None
    truncated: int = 0
    human_lost: int = 0
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.input_ids)


def require_classifier(loaded: Backend) -> None:
    """Refuse a model whose backend offers no classifier facade (embedding and vision models)."""
    if loaded.spec.modality != "text":
        raise NotAClassifierError(
            f"model {loaded.spec.name!r} classifies images; the explainers and ERASER metrics work on token "
            f"ids of text classifiers ({', '.join(text_classifiers())}) and of causal LMs (the next token, "
            "e.g. smollm2)"
        )
    if loaded.classifier is None:
        raise NotAClassifierError(
            f"model {loaded.spec.name!r} is a {loaded.spec.task} model; faithfulness explains class "
            "probabilities (or a causal LM's next token), so pick a classifier such as 'minilm-sst2' or a "
            "causal LM such as 'smollm2' (see GET /api/v1/models)"
        )


def text_tokenizer(loaded: Backend):
    """The tokenizer the explainers use: the backend's tokenizer facade (a Hugging Face tokenizer,
    or a zoo model's word vocabulary behind the same interface)."""
    return loaded.tokenizer


def classifier_module(loaded: Backend) -> torch.nn.Module:
    """The module the explainers call (``input_ids``/``inputs_embeds``, ``attention_mask``,
    ``output_attentions`` -> ``.logits``, ``.attentions``): the backend's classifier facade (a
    Hugging Face sequence classifier, a zoo text model, or a causal LM's next token)."""
    return loaded.classifier


def _finish(
    loaded: Backend,
    ids: list[int],
    word_ids: list[int | None] | None,
    rationale: Sequence[int] | None,
    max_tokens: int | None,
    target: int | None,
) -> Encoded:
    tok = text_tokenizer(loaded)
    limit = min(max_tokens or loaded.max_tokens, loaded.max_tokens)
    human_full = None
    if rationale is not None and word_ids is not None:
        human_full = word_mask_to_tokens(word_ids, rationale)
    truncated = max(0, len(ids) - limit)
    special_ids = set(tok.all_special_ids)
    if truncated and ids[-1] in special_ids:  # keep the head of the text and the closing special token
        ids = ids[: limit - 1] + ids[-1:]
        human = None if human_full is None else np.r_[human_full[: limit - 1], human_full[-1:]]
    elif truncated:  # no closing token (zoo models: [CLS] + words): keep the head
        ids = ids[:limit]
        human = None if human_full is None else human_full[:limit]
    else:
        human = human_full
    lost = 0 if human_full is None else int(human_full.sum() - human.sum())
    return Encoded(
        input_ids=np.asarray(ids, dtype=np.int64),
        tokens=loaded.encode_ids(ids).tokens,  # readable labels (byte-level BPE: ␣ for spaces)
        special=tuple(i for i, t in enumerate(ids) if t in special_ids),
        target=target,
        human=human,
        truncated=truncated,
        human_lost=lost,
        meta={"human_total": None if human_full is None else int(human_full.sum())},
    )


def example_from_text(loaded: Backend, text: str, max_tokens: int | None = None, target: int | None = None) -> Encoded:
    """Tokenise a text (truncated to the model's limit, keeping the final special token)."""
    ids = text_tokenizer(loaded)(text, truncation=False, verbose=False)["input_ids"]
    return _finish(loaded, ids, None, None, max_tokens, target)


def example_from_ids(loaded: Backend, ids: Sequence[int], target: int | None = None) -> Encoded:
    """Token ids as they are (a causal LM's run, prompt and generated tokens, cut after the
    position whose next token is explained); truncated to the model's limit like a text."""
    return _finish(loaded, [int(i) for i in ids], None, None, None, target)


def example_from_words(
    loaded: Backend,
    words: Sequence[str],
    rationale: Sequence[int] | None = None,
    max_tokens: int | None = None,
    target: int | None = None,
) -> Encoded:
    """Tokenise pre-split words; word-level human marks become token-level (subwords inherit)."""
    enc = text_tokenizer(loaded)(list(words), is_split_into_words=True, truncation=False, verbose=False)
    return _finish(loaded, enc["input_ids"], enc.word_ids(), rationale, max_tokens, target)


def char_spans_to_tokens(loaded: Backend, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """0/1 per token of ``text`` (as ``example_from_text`` tokenises it): 1 when the token's characters
    overlap a ``[start, end)`` span. Special tokens are never marked."""
    tok = text_tokenizer(loaded)
    enc = tok(text, truncation=False, return_offsets_mapping=True, verbose=False)
    special = set(tok.all_special_ids)
    mask = np.zeros(len(enc["input_ids"]), dtype=np.int8)
    for t, ((a, b), tid) in enumerate(zip(enc["offset_mapping"], enc["input_ids"])):
        if tid not in special and b > a and any(a < e and s < b for s, e in spans):
            mask[t] = 1
    return mask


def make_predict(loaded: Backend, max_batch_tokens: int | None = None, max_batch: int = 64):
    """``predict(list of id arrays) -> probs [batch, class]``: length-sorted, padded batches under a
    token budget (default 8192 tokens on a GPU, 512 on a CPU, where small batches are faster:
    bench/faithfulness.py), no gradients. A [CLS]-pooled classifier's last block runs for [CLS] alone
    (``attnscope.models.cls_readout``: the same logits, about a sixth less work on MiniLM)."""
    require_classifier(loaded)
    if max_batch_tokens is None:
        max_batch_tokens = 8192 if loaded.device.type == "cuda" else 512
    pad = text_tokenizer(loaded).pad_token_id or 0
    model = classifier_module(loaded)
    readout = cls_readout(loaded)  # a [CLS] classifier's last block at [CLS] alone (None: the whole model)

    @torch.inference_mode()
    def predict(batch: list[np.ndarray]) -> np.ndarray:
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))
        out = np.zeros((len(batch), int(model.config.num_labels)), dtype=np.float64)
        start = 0
        while start < len(order):
            check_cancelled()  # one batch per check: a cancelled request stops here (models/cancel.py)
            longest = len(batch[order[start]])
            end = start
            while end < len(order) and end - start < max_batch:
                longest = max(longest, len(batch[order[end]]))
                if (end - start + 1) * longest > max_batch_tokens and end > start:
                    break
                end += 1
            chunk = order[start:end]
            n = max(len(batch[i]) for i in chunk)
            ids = torch.full((len(chunk), n), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), n), dtype=torch.long)
            for row, i in enumerate(chunk):
                seq = torch.as_tensor(np.asarray(batch[i]), dtype=torch.long)
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            ids, mask = ids.to(loaded.device), mask.to(loaded.device)
            logits = readout(ids, mask) if readout is not None else model(input_ids=ids, attention_mask=mask).logits
            out[chunk] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
            start = end
        return out

    return predict


class Explainer:
    """One verb: ``explain(example) -> np.ndarray [token]`` (finite, one score per token)."""

    name = "explainer"
    description = ""

    def __init__(self, loaded: Backend, **options):
        require_classifier(loaded)
        self.loaded = loaded
        self.options = options

    def target_of(self, ex: Encoded) -> int:
        """The class to explain: the example's ``target`` or the model's predicted class."""
        if ex.target is not None:
            return int(ex.target)
        return int(make_predict(self.loaded)([ex.input_ids])[0].argmax())

    def tensors(self, ex: Encoded) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.as_tensor(ex.input_ids, dtype=torch.long, device=self.loaded.device)[None]
        return ids, torch.ones_like(ids)

    def explain(self, ex: Encoded) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError
