"""The one model interface: a ``Backend`` encodes an input and runs it to an ``AttentionMaps``.

Every kind of model (Hugging Face encoder, Hugging Face causal LM, zoo, DINOv2) implements the
same small protocol, so code that runs models never asks which kind it holds::

    inp = backend.encode_text("The capital of France is")   # or encode_image / encode_ids
    cap = backend.run(inp)                                   # Capture: maps, output, hidden states
    cap.maps.weights                                         # [layer, head, query, key]

Explainers use two facades: ``backend.tokenizer`` (the calls they make of a tokenizer:
``tok(text)``, ``tok(words, is_split_into_words=True)``, ``convert_ids_to_tokens``, special and pad
ids) and ``backend.classifier`` (``forward(input_ids | inputs_embeds, attention_mask,
output_attentions) -> .logits, .attentions`` and ``get_input_embeddings()``); ``None`` where the
model has none (an embedding model, a vision model).

Runs share one loaded model between requests, so nothing here keeps per-run state on a backend or
its modules: a run's hidden states and extras come back in its ``Capture``. Work that must see
inside a forward pass per request (recording queries and keys, ablating a head) reads
``backend.attention`` (``AttentionConfig``) and ``backend.attention_modules()``; its hooks or
registered attention functions are installed once and read a ``contextvars.ContextVar`` holding
the current request's spec, so other requests see nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.backends.generation import GenerateOptions
from attnscope.models.errors import EmptyInputError, TooManyTokensError, WrongModalityError
from attnscope.models.outputs import BatchOutput, ModelOutput
from attnscope.models.registry import require_modality
from attnscope.models.sites import Sites, SitesUnavailableError
from attnscope.models.spec import ModelSpec

if TYPE_CHECKING:
    from attnscope.models.zoo.arch import Arch


@dataclass(frozen=True)
class AttentionConfig:
    """What a model's attention is, as the maps need it.

    ``n_heads`` query heads share ``kv_heads`` key/value heads (grouped-query attention; equal for
    plain multi-head attention): query head ``h`` reads key/value head ``kv_head_of[h]``.
    ``scale`` multiplies ``q k^T`` (``1/sqrt(head_dim)`` unless the model says otherwise),
    ``sliding_window`` limits each query to that many most recent keys on the layers in
    ``sliding_layers`` (None: no window), ``softcap`` is Gemma-style logit soft-capping
    ``c tanh(s / c)`` before the softmax (None: none). ``causal``: queries see no later keys.
    """

    n_layers: int
    n_heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    scale: float | None = None
    causal: bool = False
    sliding_window: int | None = None
    sliding_layers: tuple[int, ...] = ()
    softcap: float | None = None

    def __post_init__(self) -> None:
        kv = self.n_heads if self.kv_heads is None else int(self.kv_heads)
        if kv < 1 or self.n_heads % kv:
            raise ValueError(f"{self.n_heads} query heads cannot share {kv} key/value heads evenly")
        object.__setattr__(self, "kv_heads", kv)

    @property
    def kv_head_of(self) -> tuple[int, ...]:
        """``[head]`` the key/value head each query head reads (``h // (n_heads / kv_heads)``)."""
        group = self.n_heads // self.kv_heads
        return tuple(h // group for h in range(self.n_heads))


@dataclass(frozen=True)
class ModelInput:
    """One example ready for ``Backend.run``.

    Text: ``token_ids`` ``[token]`` (special tokens included) and one readable label per position
    in ``tokens``. Vision: ``pixels``, the model-ready tensor with a batch axis of one, and
    ``grid``. ``special``: positions of CLS/SEP/BOS-like tokens.
    """

    tokens: tuple[str, ...]
    special: tuple[int, ...] = ()
    token_ids: tuple[int, ...] | None = None
    pixels: torch.Tensor | None = field(default=None, repr=False)
    grid: tuple[int, int] | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    def ids_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """``[1, token]`` long tensor of the ids (text inputs)."""
        if self.token_ids is None:
            raise WrongModalityError("this input is an image; it has no token ids")
        return torch.tensor([list(self.token_ids)], dtype=torch.long, device=device)


@dataclass
class Capture:
    """What one forward pass gives: maps, the model output, hidden states ``[layer+1, token, dim]``.

    ``output``: ``Classification | Embedding | NextToken`` (``attnscope.models.outputs``).
    ``token_ids``: the raw ids behind ``maps.tokens`` (text models; None for images).
    ``extras``: model-specific arrays (conv-as-attention keeps its first layer's two outputs).
    ``attention``: the model's ``AttentionConfig`` (key/value heads, causal, ...).
    ``recompute_hidden``: for a run that does not keep its hidden states (a lazy causal-LM run:
    at 4,096 SmolLM2 tokens they would outweigh the queries and keys), a function that recomputes
    them from the token ids; ``hidden()`` gives the kept or the recomputed ones, ``hidden_states``
    only what the capture holds (what a store counts).
    """

    maps: AttentionMaps
    output: ModelOutput
    hidden_states: np.ndarray | None = field(default=None, repr=False)
    extras: dict = field(default_factory=dict, repr=False)
    token_ids: tuple[int, ...] | None = None
    attention: AttentionConfig | None = None
    recompute_hidden: Callable[[], np.ndarray] | None = field(default=None, repr=False, compare=False)

    def hidden(self) -> np.ndarray | None:
        """float32 ``[layer + 1, token, dim]``: the kept hidden states, else recomputed (one
        forward pass, not kept), else None (captured without hidden states)."""
        if self.hidden_states is not None:
            return self.hidden_states
        return None if self.recompute_hidden is None else self.recompute_hidden()


@runtime_checkable
class TextTokenizer(Protocol):
    """The tokenizer calls the explainers make (a Hugging Face tokenizer has them all)."""

    pad_token_id: int | None
    mask_token_id: int | None
    all_special_ids: list[int]

    def __call__(self, text: Any, **kwargs) -> Any: ...

    def convert_ids_to_tokens(self, ids: Any) -> Any: ...


class Generator(Protocol):
    """A causal LM's text generation (``Backend.generator``; None for other models): a chat prompt,
    a greedy continuation, a generation with every step's attention, a token's label and text."""

    def encode_chat(self, text: str) -> ModelInput: ...

    def continuation(self, inp: ModelInput) -> str: ...

    def generate(self, inp: ModelInput, options: GenerateOptions, hidden_states: bool = True) -> Capture: ...

    def labels_of(self, ids) -> tuple[str, ...]: ...

    def text_of(self, token_id: int) -> str: ...


@runtime_checkable
class Backend(Protocol):
    """One loaded model behind the one interface (see the module docstring)."""

    spec: ModelSpec
    model: torch.nn.Module
    device: torch.device
    max_tokens: int
    labels: list[str] | None
    attention: AttentionConfig
    tokenizer: TextTokenizer | None
    classifier: torch.nn.Module | None
    generator: Generator | None  # a causal LM's text generation; None for other models

    @property
    def n_layers(self) -> int: ...

    @property
    def n_heads(self) -> int: ...

    def encode_text(self, text: str, truncate: bool = False) -> ModelInput: ...

    def encode_ids(self, ids: Any) -> ModelInput: ...

    def prepare_image(self, image: np.ndarray) -> np.ndarray: ...

    def encode_image(self, image: np.ndarray) -> ModelInput: ...

    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture: ...

    def run_maps(self, inp: ModelInput) -> AttentionMaps: ...

    def run_batch(self, inputs: list[ModelInput], hidden_states: bool = True) -> list[Capture]: ...

    def attention_modules(self) -> list[torch.nn.Module]: ...

    def structure(self) -> dict | None: ...

    @property
    def sites(self) -> Sites: ...

    @property
    def attention_edit_refusal(self) -> str | None: ...

    def forward_batch(
        self,
        inputs: list[ModelInput],
        want_maps: bool = False,
        keep: list[int] | None = None,
        model: torch.nn.Module | None = None,
        rows: int = 1,
    ) -> BatchOutput: ...


class BackendBase:
    """What every backend shares: the checks of modality, emptiness and length, and defaults."""

    spec: ModelSpec
    model: torch.nn.Module
    device: torch.device
    max_tokens: int
    labels: list[str] | None = None
    attention: AttentionConfig
    tokenizer: TextTokenizer | None = None
    classifier: torch.nn.Module | None = None
    generator: Generator | None = None
    _sites: Sites | None = None
    _sites_refusal: str | None = None

    @property
    def n_layers(self) -> int:
        return self.attention.n_layers

    @property
    def sites(self) -> Sites:
        """The model's anatomy (``attnscope.models.sites``), or ``SitesUnavailableError`` (422) naming
        what its family lacks: the model still serves maps."""
        if self._sites is None:
            raise SitesUnavailableError(
                f"model {self.spec.name!r}: {self._sites_refusal or 'its family has no Sites entry'}"
            )
        return self._sites

    @property
    def attention_edit_refusal(self) -> str | None:
        """Why this model's attention cannot be edited per request (head ablation, edge knockout,
        patching), or None when it can: Hugging Face models under ``attnscope_qk`` and the zoo's
        multi-head attention apply the session's attention hooks."""
        return f"model {self.spec.name!r} applies no per-request attention edits"

    def _init_sites(self, family: str, config: Arch | None = None) -> None:
        """Build ``sites`` from the family table and install the session's taps (once, at load,
        before the model is shared); a family without an entry keeps the reason for ``sites``."""
        from attnscope.models.session import install_taps
        from attnscope.models.site_table import build_sites

        try:
            self._sites = build_sites(self.model, family, config)
        except SitesUnavailableError as exc:
            self._sites, self._sites_refusal = None, str(exc)
            return
        install_taps(self.model, self._sites)

    @property
    def n_heads(self) -> int:
        return self.attention.n_heads

    @property
    def modality(self) -> str:
        return self.spec.modality

    # ------------------------------------------------------------------ checks
    def check_modality(self, modality: str) -> None:
        other = "an image" if self.spec.modality == "vision" else "a text"
        given = "a text" if modality == "text" else "an image"
        require_modality(self.spec, modality, f"takes {other}, not {given}; pick a {modality} model from GET /models")

    @staticmethod
    def check_text(text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise EmptyInputError("the text is empty; type a sentence to analyse")

    def check_length(self, n_tokens: int) -> None:
        if n_tokens > self.max_tokens:
            raise TooManyTokensError(n_tokens, self.max_tokens, self.spec.name)

    # ------------------------------------------------------------------ defaults
    def prepare_image(self, image: np.ndarray) -> np.ndarray:
        self.check_modality("vision")
        raise NotImplementedError  # pragma: no cover - vision backends override

    def encode_image(self, image: np.ndarray) -> ModelInput:
        self.check_modality("vision")
        raise NotImplementedError  # pragma: no cover - vision backends override

    def encode_text(self, text: str, truncate: bool = False) -> ModelInput:
        self.check_modality("text")
        raise NotImplementedError  # pragma: no cover - text backends override

    def encode_ids(self, ids) -> ModelInput:
        self.check_modality("text")
        raise NotImplementedError  # pragma: no cover - text backends override

    def run_batch(self, inputs: list[ModelInput], hidden_states: bool = True) -> list[Capture]:
        return [self.run(inp, hidden_states) for inp in inputs]

    def run(self, inp: ModelInput, hidden_states: bool = True) -> Capture:  # pragma: no cover - interface
        raise NotImplementedError

    def run_maps(self, inp: ModelInput) -> AttentionMaps:
        """The maps ``[layer, head, query, key]`` of one forward pass over ``inp``, for callers that read
        the run through a session (``attnscope.models.session``) and need no model output: by default
        ``run``'s maps; a backend whose output costs work of its own (a causal LM's prediction at every
        position) skips it."""
        return self.run(inp, hidden_states=False).maps

    def attention_modules(self) -> list[torch.nn.Module]:  # pragma: no cover - interface
        raise NotImplementedError

    def structure(self) -> dict | None:
        """Learned per-head geometry (Gaussian heads), or None for other attention kinds."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec.name!r}, device={self.device})"
