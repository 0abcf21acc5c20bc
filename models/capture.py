"""Run a text (or an image) through a model and capture every layer's and head's attention.

``capture(loaded, text) -> Capture`` (``capture_image(loaded, image)`` for vision models) with
``maps`` (``AttentionMaps``, ``[layer, head, query, key]``), the model's ``output`` (a sentence
embedding, class probabilities, or a causal LM's next-token predictions) and the hidden states
``[layer + 1, token, dim]``. Every function asks the model's backend (``attnscope.models.backends``);
none knows which kind of model it holds. ``capture_prompt`` is what an interactive run shows:
for a causal LM also a greedy continuation, or a generation with the attention of every step.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from attnscope.models.backends.base import Backend, Capture
from attnscope.models.backends.generation import GenerateOptions
from attnscope.models.errors import EmptyInputError, NotAGeneratorError, TooManyTokensError, WrongModalityError

__all__ = [
    "Capture",
    "EmptyInputError",
    "GenerateOptions",
    "NotAGeneratorError",
    "TooManyTokensError",
    "WrongModalityError",
    "capture",
    "capture_batch",
    "capture_encoded",
    "capture_ids",
    "capture_image",
    "capture_prompt",
    "capture_truncated",
    "encode_batch",
]


def encode_batch(loaded: Backend, texts: list[str]) -> dict[str, torch.Tensor]:
    """A Hugging Face text model's padded batch (``input_ids``, ``attention_mask``, ...) of
    ``loaded.encode_text`` of each text (which checks emptiness and the token limit); for
    ``capture_encoded`` and forward hooks."""
    return loaded.model_inputs([loaded.encode_text(t) for t in texts])


def capture_encoded(loaded: Backend, enc: dict[str, torch.Tensor], hidden_states: bool = True) -> list[Capture]:
    """Capture an already tokenised, padded batch of a Hugging Face encoder in one forward pass;
    each result is cut to its own length (padding keys removed and rows renormalised)."""
    return loaded.run_encoded(enc, hidden_states=hidden_states)


def capture_batch(loaded: Backend, texts: list[str], hidden_states: bool = True) -> list[Capture]:
    """Capture a batch of texts (Hugging Face encoders: in one padded forward pass)."""
    loaded.check_modality("text")
    return loaded.run_batch([loaded.encode_text(t) for t in texts], hidden_states=hidden_states)


def capture_ids(loaded: Backend, ids: np.ndarray, hidden_states: bool = False) -> Capture:
    """Capture one sequence of token ids as given (explainers perturb ids, never text)."""
    return loaded.run(loaded.encode_ids(ids), hidden_states=hidden_states)


def capture_truncated(loaded: Backend, text: str, hidden_states: bool = False) -> Capture:
    """Capture one text cut to the model's limit (its head kept): for data-set runs, where long
    inputs (movie reviews) are expected, unlike interactive runs, which refuse them."""
    return loaded.run(loaded.encode_text(text, truncate=True), hidden_states=hidden_states)


def capture_image(loaded: Backend, image: np.ndarray) -> Capture:
    """Capture one image (numpy, prepared for the model by ``loaded.prepare_image``): ``[layer, head,
    query, key]`` over the image grid (``maps.grid`` set)."""
    return loaded.run(loaded.encode_image(image))


def capture(loaded: Backend, text: str, hidden_states: bool = True) -> Capture:
    """Capture one text: ``Capture.maps`` is ``[layer, head, query, key]``."""
    return capture_batch(loaded, [text], hidden_states=hidden_states)[0]


def capture_prompt(loaded: Backend, text: str, generate: GenerateOptions | None = None, chat: bool = False) -> Capture:
    """What an interactive run shows. Every model: the maps and output of ``text``. A causal LM
    (a backend with a ``generator``) adds a short greedy ``continuation``; with ``generate`` its maps
    cover prompt + generated tokens and the output holds the ``generation``; with ``chat`` the text
    is one user message in the model's chat template. Other models refuse both options."""
    generator = loaded.generator
    if (generate is not None or chat) and generator is None:
        raise NotAGeneratorError(
            f"model {loaded.spec.name!r} is a {loaded.spec.task} model: it does not generate text and has no "
            "chat template; 'generate' and 'chat' need a causal LM (task causal-lm in GET /models, e.g. smollm2)"
        )
    if generator is None:
        return capture(loaded, text)
    loaded.check_modality("text")
    inp = generator.encode_chat(text) if chat else loaded.encode_text(text)
    if generate is not None:
        return generator.generate(inp, generate)
    cap = loaded.run(inp)
    cap.output = replace(cap.output, continuation=generator.continuation(inp))
    return cap
