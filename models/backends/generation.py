"""Next-token predictions and generation of a causal LM, with the attention of every step.

``decode(model, ids, options)`` feeds the prompt once, then one token at a time through a key/value
cache, with ``output_attentions=True`` at every step: the attention row the model computed when it
chose a token is the one the maps hold (nothing is recomputed afterwards). Sampling draws from a
per-request ``torch.Generator`` seeded with ``options.seed``, so the same request gives the same
tokens whatever else the server runs at the same time.

``next_token_summary`` turns logits ``[token, vocab]`` into what a run reports per position: the
top-k next tokens with probabilities and the loss (nats) of the token that actually follows.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

MAX_NEW_TOKENS = 256  # the cap of one generation request
MAX_TEMPERATURE = 10.0
TOP_K = 10  # next tokens reported per position
CONTINUATION_TOKENS = 8  # greedy tokens shown as a run's predicted continuation


@dataclass(frozen=True)
class GenerateOptions:
    """One generation request: ``max_new_tokens`` (1..256), greedy (``temperature`` None) or
    sampling at ``temperature`` (0 < t <= 10) with ``seed``. ``ValueError`` says what to change."""

    max_new_tokens: int
    temperature: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        n = self.max_new_tokens
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_NEW_TOKENS:
            raise ValueError(f"max_new_tokens must be an integer from 1 to {MAX_NEW_TOKENS}; got {n!r}")
        t = self.temperature
        if t is not None and (not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t <= MAX_TEMPERATURE):
            raise ValueError(
                f"temperature must be a number in (0, {MAX_TEMPERATURE:g}] (omit it for greedy decoding); got {t!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer; got {self.seed!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature is None

    def as_dict(self) -> dict:
        return {**asdict(self), "greedy": self.greedy}


@dataclass
class Decoded:
    """The result of ``decode``: all ids (prompt + generated), the chosen tokens, per-step data.

    ``weights``: ``[layer, head, query, key]`` over prompt + generated tokens when attentions were
    recorded (rows of the prompt from the first forward, one row per fed token after it; zeros
    above the diagonal). ``logits``: ``[position, vocab]`` float32 of every fed position (for the
    summary; dropped once summarised). ``hidden``: ``[layer + 1, position, dim]`` or None.
    """

    ids: list[int]
    n_prompt: int
    generated: list[int] = field(default_factory=list)
    stopped: str = "max_new_tokens"
    weights: np.ndarray | None = None
    logits: list[torch.Tensor] = field(default_factory=list, repr=False)
    hidden: np.ndarray | None = None


def _choose(logits: torch.Tensor, options: GenerateOptions, generator: torch.Generator | None) -> int:
    if options.greedy:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / options.temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.inference_mode()
def decode(
    model: torch.nn.Module,
    ids: torch.Tensor,
    options: GenerateOptions,
    eos_ids: set[int],
    record: bool = True,
    hidden_states: bool = False,
) -> Decoded:
    """Generate up to ``options.max_new_tokens`` after ``ids`` ``[1, prompt]``; stop after an EOS id.

    Every generated token is fed back once, so its own attention row (and the distribution after
    it) is part of the result: the maps are square over prompt + generated tokens.
    """
    from transformers import DynamicCache

    device = ids.device
    n = int(ids.shape[1])
    # a full (non-sliding) cache: every step's row covers every earlier key (the sliding-window
    # mask still zeroes keys outside the window), so rows line up with positions
    cache = DynamicCache()
    generator = None if options.greedy else torch.Generator(device=device).manual_seed(options.seed)
    out = model(
        input_ids=ids,
        cache=cache,
        use_cache=True,
        output_attentions=record,
        output_hidden_states=hidden_states,
    )
    result = Decoded(ids=ids[0].tolist(), n_prompt=n)
    rows, hidden = [], []
    if record:
        rows.append(torch.stack(out.attentions, 1)[0].float().cpu())  # [L, H, n, n]
    if hidden_states:
        hidden.append(torch.stack(out.hidden_states, 1)[0].float().cpu())  # [L+1, n, D]
    result.logits.append(out.logits[0].float().cpu())
    logits = out.logits[0, -1]
    for _ in range(options.max_new_tokens):
        token = _choose(logits, options, generator)
        result.generated.append(token)
        result.ids.append(token)
        step = torch.tensor([[token]], dtype=torch.long, device=device)
        out = model(
            input_ids=step,
            cache=cache,
            use_cache=True,
            output_attentions=record,
            output_hidden_states=hidden_states,
        )
        if record:
            rows.append(torch.stack(out.attentions, 1)[0].float().cpu())  # [L, H, 1, keys]
        if hidden_states:
            hidden.append(torch.stack(out.hidden_states, 1)[0].float().cpu())
        result.logits.append(out.logits[0].float().cpu())
        logits = out.logits[0, -1]
        if token in eos_ids:
            result.stopped = "eos"
            break
    if record:
        size = len(result.ids)
        w = torch.zeros(rows[0].shape[0], rows[0].shape[1], size, size)
        w[:, :, :n, :n] = rows[0]
        for i, r in enumerate(rows[1:]):
            keys = r.shape[-1]  # = n + i + 1; a shorter row (a windowed cache) holds the last keys
            w[:, :, n + i, n + i + 1 - keys : n + i + 1] = r[:, :, 0]
        result.weights = w.numpy()
    if hidden_states:
        result.hidden = torch.cat(hidden, dim=1).numpy()
    return result


def next_token_summary(
    logits: torch.Tensor, ids: list[int], k: int = TOP_K, next_id: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From logits ``[position, vocab]`` and the ids at those positions: ``top_ids [position, k]``,
    ``top_probs [position, k]`` and ``loss [position]``, the loss (nats) of the token at the next
    position (NaN at the last position, where no next token exists, unless ``next_id`` names it:
    a chunk of a longer sequence)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    top = torch.topk(logp, k=min(k, logp.shape[-1]), dim=-1)
    loss = torch.full((logp.shape[0],), float("nan"))
    nxt = list(ids[1 : logp.shape[0]]) + ([] if next_id is None else [next_id])
    if nxt:
        loss[: len(nxt)] = -logp[: len(nxt)].gather(1, torch.tensor(nxt, dtype=torch.long)[:, None])[:, 0]
    return top.indices.numpy(), top.values.exp().numpy(), loss.numpy()


HEAD_CHUNK = 16  # positions unembedded at once: 16 x 49,152 SmolLM2 logits are 3.1 MB of float32


def summary_by_chunks(unembed, ids: list[int], normed: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``next_token_summary`` of ``normed [position, d_model]`` (the body's last, normed stream) through
    ``unembed`` (``attnscope.models.sites.Unembed``) ``HEAD_CHUNK`` positions at a time: the same figures
    as the head over every position, without its ``[position, vocab]`` float32 logits (0.58 GB at 2,926
    SmolLM2 tokens) held at once."""
    parts = []
    for start in range(0, len(ids), HEAD_CHUNK):
        stop = min(len(ids), start + HEAD_CHUNK)
        logits = unembed.logits(normed[start:stop]).float().cpu()
        parts.append(next_token_summary(logits, ids[start:stop], next_id=ids[stop] if stop < len(ids) else None))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
