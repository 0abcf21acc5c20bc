"""What the Hugging Face backends share: reading the attention config, finding the attention
modules, encoding text and ids, and stacking the eager forward's attentions into maps.

Hugging Face models load with eager attention and then, unless ``capture="eager"`` or the model
is refused (``attnscope.models.attention_fn.refusal_reason``), switch to ``attnscope_qk``: the
forward runs SDPA and records queries and keys, and the maps are lazy (``lazy_capture``). With
``capture="eager"`` the forward materialises the probabilities (``output_attentions=True``): the
reference the lazy maps are tested against.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.attention_fn import QKRecorder, attention_context
from attnscope.models.backends.base import AttentionConfig, BackendBase, ModelInput
from attnscope.models.errors import TooManyTokensError
from attnscope.models.lazy_maps import QKMapSource
from attnscope.models.tokens import TokenLabels

ATTENTION_NAMES = ("self_attn", "attn", "attention", "self_attention", "mixer")


def _layer_list(model: torch.nn.Module, n_layers: int) -> list[torch.nn.Module] | None:
    """The ``ModuleList`` of the transformer's blocks (the one with ``n_layers`` entries)."""
    base = getattr(model, "base_model", model)
    for _, module in base.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return list(module)
    return None


def find_attention_modules(model: torch.nn.Module, n_layers: int) -> list[torch.nn.Module]:
    """``[layer]`` each block's attention module (``self_attn`` of Llama-likes, ``attn`` of GPT-2,
    ``attention`` of BERT and DINOv2), or a ``LookupError`` naming what was not found."""
    layers = _layer_list(model, n_layers)
    if layers is None:
        raise LookupError(f"{type(model).__name__}: no list of {n_layers} blocks found")
    found = []
    for block in layers:
        module = next((getattr(block, n) for n in ATTENTION_NAMES if hasattr(block, n)), None)
        if module is None:
            raise LookupError(f"{type(block).__name__} has none of the attention names {ATTENTION_NAMES}")
        found.append(module)
    return found


def attention_config(config, modules: list[torch.nn.Module] | None, causal: bool) -> AttentionConfig:
    """``AttentionConfig`` from a Hugging Face config, refined by what each attention module holds
    (``scaling``, ``sliding_window``, ``attn_logit_softcapping`` are per layer in transformers 5). A
    module without a ``sliding_window`` attribute (Mistral, Mixtral, Phi-3: they pass
    ``config.sliding_window`` at call time and mask every layer with it) slides by the config's window."""
    n_layers = int(config.num_hidden_layers)
    n_heads = int(config.num_attention_heads)
    kv = getattr(config, "num_key_value_heads", None) or n_heads
    head_dim = getattr(config, "head_dim", None) or int(config.hidden_size) // n_heads
    scale, window, softcap, sliding = None, None, None, []
    for i, module in enumerate(modules or []):
        scale = scale if scale is not None else getattr(module, "scaling", None)
        w = getattr(module, "sliding_window", None) if hasattr(module, "sliding_window") else _config_window(config)
        if w:
            window, sliding = int(w), [*sliding, i]
        softcap = softcap or getattr(module, "attn_logit_softcapping", None)
    if scale is None:
        scale = float(head_dim) ** -0.5
    return AttentionConfig(
        n_layers=n_layers,
        n_heads=n_heads,
        kv_heads=int(kv),
        head_dim=int(head_dim),
        scale=float(scale),
        causal=causal,
        sliding_window=window,
        sliding_layers=tuple(sliding),
        softcap=None if softcap is None else float(softcap),
    )


def _config_window(config) -> int | None:
    """The window every layer's mask uses where the attention module does not hold its own: the config's
    ``sliding_window`` unless ``use_sliding_window`` turns it off."""
    if getattr(config, "use_sliding_window", True) is False:
        return None
    return getattr(config, "sliding_window", None)


def stack_attentions(attentions, length: int | None = None) -> np.ndarray:
    """A forward's ``attentions`` (``layer`` x ``[batch, head, query, key]``) -> float32
    ``[batch, layer, head, query, key]``, cut to ``length`` positions and rows renormalised when cut
    (padding keys removed)."""
    att = torch.stack(attentions, dim=1).float().cpu().numpy()
    if length is not None and length != att.shape[-1]:
        att = att[..., :length, :length]
        att = att / att.sum(axis=-1, keepdims=True)
    return att


@contextmanager
def lazy_capture():
    """``with lazy_capture() as recorder:`` run a forward of an ``attnscope_qk`` model; afterwards
    ``recorder.ordered()`` holds each layer's queries, keys and mask inputs (this thread only)."""
    recorder = QKRecorder()
    with attention_context(recorder):
        yield recorder


class HFBackend(BackendBase):
    """A Hugging Face text model with its tokenizer (shared by the encoder and causal-LM backends).

    ``capture``: ``"lazy"`` (the model runs ``attnscope_qk``; maps are computed from stored queries
    and keys on request) or ``"eager"`` (the forward materialises every map). ``capture_refusal``:
    why lazy capture was refused for this model, or None.
    """

    capture: str = "eager"
    capture_refusal: str | None = None

    def __init__(
        self,
        spec,
        model: torch.nn.Module,
        tokenizer,
        device: torch.device,
        max_tokens: int,
        causal: bool,
        capture: str = "eager",
        capture_refusal: str | None = None,
    ):
        self.spec, self.model, self.tokenizer, self.device = spec, model, tokenizer, device
        self.capture, self.capture_refusal = capture, capture_refusal
        self.max_tokens = int(max_tokens)
        n_layers = int(model.config.num_hidden_layers)
        try:
            self._attention_modules = find_attention_modules(model, n_layers)
        except LookupError:
            self._attention_modules = []
        self.attention = attention_config(model.config, self._attention_modules, causal)
        self.token_labels = TokenLabels(tokenizer)
        self._init_sites(str(getattr(model.config, "model_type", type(model).__name__)))

    @property
    def attention_edit_refusal(self) -> str | None:
        """None under ``attnscope_qk`` (lazy capture); eager capture applies no attention hooks."""
        if self.capture == "lazy":
            return None
        return (
            f"model {self.spec.name!r} runs eager attention capture"
            + (f" ({self.capture_refusal})" if self.capture_refusal else "")
            + "; interventions act inside the attnscope_qk attention function: load it with capture='lazy'"
        )

    def lazy_maps(self, records, index: int, length: int, inp: ModelInput) -> AttentionMaps:
        """Lazy maps of example ``index`` (its first ``length`` positions) of a recorded forward."""
        source = QKMapSource.from_records(records, index, length)
        return AttentionMaps.lazy(
            source, inp.tokens, special=inp.special, model=self.spec.name, causal=self.attention.causal
        )

    def attention_modules(self) -> list[torch.nn.Module]:
        if not self._attention_modules:
            raise LookupError(f"model {self.spec.name!r}: its attention modules were not found")
        return list(self._attention_modules)

    @property
    def special_ids(self) -> set[int]:
        return set(self.tokenizer.all_special_ids)

    def labels_of(self, ids) -> tuple[str, ...]:
        """Readable token labels (``attnscope.models.tokens``)."""
        return self.token_labels.labels(ids)

    # ------------------------------------------------------------------ encode
    def make_input(self, ids) -> ModelInput:
        ids = tuple(int(i) for i in ids)
        special = self.special_ids
        return ModelInput(
            tokens=self.labels_of(ids),
            special=tuple(i for i, t in enumerate(ids) if t in special),
            token_ids=ids,
        )

    def encode_text(self, text: str, truncate: bool = False) -> ModelInput:
        """Tokenise (special tokens as the tokenizer adds them); longer than ``max_tokens`` is an
        error unless ``truncate`` (the head of the text is kept)."""
        self.check_modality("text")
        self.check_text(text)
        if truncate:
            ids = self.tokenizer(text, truncation=True, max_length=self.max_tokens, verbose=False)["input_ids"]
        else:
            ids = self.tokenizer(text, truncation=False, verbose=False)["input_ids"]
            self.check_length(len(ids))
        return self.make_input(ids)

    def encode_ids(self, ids) -> ModelInput:
        """Token ids as given (explainers perturb ids, never text)."""
        self.check_modality("text")
        ids = np.asarray(ids).reshape(-1)
        if ids.size > self.max_tokens:
            raise TooManyTokensError(int(ids.size), self.max_tokens, self.spec.name, what="the input")
        return self.make_input(ids.tolist())

    def model_inputs(self, batch: list[ModelInput]) -> dict[str, torch.Tensor]:
        """A right-padded batch as the model's keyword arguments (``input_ids``, ``attention_mask``,
        and ``token_type_ids`` of zeros where the tokenizer has them)."""
        n = max(len(b) for b in batch)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(batch), n), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), n), dtype=torch.long)
        for row, b in enumerate(batch):
            ids[row, : len(b)] = torch.tensor(b.token_ids, dtype=torch.long)
            mask[row, : len(b)] = 1
        enc = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in getattr(self.tokenizer, "model_input_names", ()):
            enc["token_type_ids"] = torch.zeros_like(ids)
        return {k: v.to(self.device) for k, v in enc.items()}
