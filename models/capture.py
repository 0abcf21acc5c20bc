"""Run a text through a model and capture every layer's and head's attention.

``capture(loaded, text) -> Capture`` (``capture_image(loaded, image)`` for vision models) with ``maps``
(``AttentionMaps``, ``[layer, head, query, key]``),
the model's ``output`` (a sentence embedding, or class probabilities for a classifier) and the
hidden states ``[layer + 1, token, dim]``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.loading import LoadedModel


class EmptyInputError(ValueError):
    """The text is empty or only whitespace."""


class TooManyTokensError(ValueError):
    """The text tokenises to more positions than the model accepts."""

    def __init__(self, n_tokens: int, limit: int, model: str):
        self.n_tokens, self.limit, self.model = n_tokens, limit, model
        super().__init__(
            f"the text has {n_tokens} tokens but model {model!r} accepts at most {limit} "
            f"(including special tokens); shorten the text by about {n_tokens - limit} tokens"
        )


@dataclass
class Capture:
    """What one forward pass gives: maps, the model output, hidden states ``[layer+1, token, dim]``."""

    maps: AttentionMaps
    output: dict
    hidden_states: np.ndarray | None = field(default=None, repr=False)
    extras: dict = field(default_factory=dict, repr=False)  # model-specific arrays (see zoo adapters)


def encode_text(loaded: LoadedModel, texts: list[str]) -> dict[str, torch.Tensor]:
    """Tokenise ``texts`` (padded batch) after checking emptiness and the token limit."""
    for text in texts:
        if not isinstance(text, str) or not text.strip():
            raise EmptyInputError("the text is empty; type a sentence to analyse")
    enc = loaded.tokenizer(texts, return_tensors="pt", padding=True, truncation=False, verbose=False)
    lengths = enc["attention_mask"].sum(dim=1)
    longest = int(lengths.max())
    if longest > loaded.max_tokens:
        raise TooManyTokensError(longest, loaded.max_tokens, loaded.spec.name)
    return dict(enc)


def _model_output(loaded: LoadedModel, out, mask: torch.Tensor) -> list[dict]:
    """Per-example output dicts from a HF forward result."""
    if loaded.spec.task == "classification":
        probs = torch.softmax(out.logits.float(), dim=-1).cpu().numpy()
        labels = loaded.labels or [str(i) for i in range(probs.shape[1])]
        return [
            {"kind": "classification", "labels": labels, "probs": p.tolist(), "predicted": labels[int(p.argmax())]}
            for p in probs
        ]
    hidden = out.last_hidden_state.float()
    m = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1)
    pooled = torch.nn.functional.normalize(pooled, dim=-1).cpu().numpy()
    return [{"kind": "embedding", "dim": int(v.shape[0]), "embedding": v.tolist()} for v in pooled]


@torch.inference_mode()
def capture_encoded(loaded: LoadedModel, enc: dict[str, torch.Tensor], hidden_states: bool = True) -> list[Capture]:
    """Capture an already tokenised, padded batch in one forward pass; each result is cut to its
    own length (padding keys removed and rows renormalised)."""
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    out = loaded.model(**enc, output_attentions=True, output_hidden_states=hidden_states)
    # attentions: tuple of L tensors (B, H, N, N) -> (B, L, H, N, N) float32 on CPU
    att = torch.stack(out.attentions, dim=1).float().cpu().numpy()
    hs = None
    if hidden_states:
        hs = torch.stack(out.hidden_states, dim=1).float().cpu().numpy()  # (B, L+1, N, D)
    mask = enc["attention_mask"]
    outputs = _model_output(loaded, out, mask)
    special_ids = set(loaded.tokenizer.all_special_ids)
    lengths = mask.sum(dim=1).tolist()
    ids_all = enc["input_ids"].tolist()
    results = []
    for b, n in enumerate(lengths):
        ids = ids_all[b][:n]
        w = att[b, :, :, :n, :n]
        if n != att.shape[-1]:  # padding removed: renormalise over the kept keys
            w = w / w.sum(axis=-1, keepdims=True)
        maps = AttentionMaps(
            weights=np.ascontiguousarray(w),
            tokens=tuple(loaded.tokenizer.convert_ids_to_tokens(ids)),
            special=tuple(i for i, t in enumerate(ids) if t in special_ids),
            model=loaded.spec.name,
            causal=bool(getattr(loaded.model.config, "is_decoder", False)),
        )
        results.append(Capture(maps, outputs[b], None if hs is None else hs[b, :, :n]))
    return results


class WrongModalityError(ValueError):
    """A text was sent to a vision model, or an image to a text model."""


_ZOO_LOCK = threading.Lock()


def _is_zoo(loaded: LoadedModel) -> bool:
    return loaded.spec.source == "zoo"


def _check_modality(loaded: LoadedModel, modality: str) -> None:
    if loaded.spec.modality != modality:
        other = "an image" if loaded.spec.modality == "vision" else "a text"
        raise WrongModalityError(
            f"model {loaded.spec.name!r} is a {loaded.spec.modality} model and takes {other}, "
            f"not {'a text' if modality == 'text' else 'an image'}; pick a {modality} model from GET /models"
        )


def _zoo_capture(loaded: LoadedModel, encoded) -> Capture:
    """Zoo adapters: the one verb ``run(encoded) -> (AttentionMaps, output)``."""
    adapter = loaded.tokenizer
    with _ZOO_LOCK:  # adapters keep the last run's hidden states on the module: one run at a time
        maps, output = adapter.run(encoded)
        return Capture(maps, output, adapter.hidden(), adapter.extras())


def capture_batch(loaded: LoadedModel, texts: list[str], hidden_states: bool = True) -> list[Capture]:
    """Capture a batch of texts in one forward pass (see ``capture_encoded``)."""
    _check_modality(loaded, "text")
    if _is_zoo(loaded):
        return [_zoo_capture(loaded, loaded.tokenizer.encode_text(t)) for t in texts]
    return capture_encoded(loaded, encode_text(loaded, texts), hidden_states=hidden_states)


def capture_ids(loaded: LoadedModel, ids: np.ndarray, hidden_states: bool = False) -> Capture:
    """Capture one sequence of token ids as given (explainers perturb ids, never text)."""
    _check_modality(loaded, "text")
    ids_t = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=loaded.device)[None]
    if _is_zoo(loaded):
        from attnscope.models.zoo.adapter import Encoded as ZooEncoded

        tokens = tuple(loaded.tokenizer.text_tokenizer.convert_ids_to_tokens(ids_t[0].tolist()))
        return _zoo_capture(loaded, ZooEncoded(ids_t, tokens, (0,)))
    return capture_encoded(
        loaded, {"input_ids": ids_t, "attention_mask": torch.ones_like(ids_t)}, hidden_states=hidden_states
    )[0]


def capture_truncated(loaded: LoadedModel, text: str, hidden_states: bool = False) -> Capture:
    """Capture one text cut to the model's limit (its head kept): for data-set runs, where long
    inputs (movie reviews) are expected, unlike interactive runs, which refuse them."""
    _check_modality(loaded, "text")
    if _is_zoo(loaded):
        return _zoo_capture(loaded, loaded.tokenizer.encode_text(text, truncate=True))
    enc = loaded.tokenizer([text], return_tensors="pt", truncation=True, max_length=loaded.max_tokens)
    return capture_encoded(loaded, dict(enc), hidden_states=hidden_states)[0]


def capture_image(loaded: LoadedModel, image: np.ndarray) -> Capture:
    """Capture one image (numpy, prepared for the model by ``attnscope.models.inputs``): ``[layer, head, query, key]``
    over the image grid (``maps.grid`` set)."""
    _check_modality(loaded, "vision")
    return _zoo_capture(loaded, loaded.tokenizer.encode_image(image))


def capture(loaded: LoadedModel, text: str, hidden_states: bool = True) -> Capture:
    """Capture one text: ``Capture.maps`` is ``[layer, head, query, key]``."""
    return capture_batch(loaded, [text], hidden_states=hidden_states)[0]
