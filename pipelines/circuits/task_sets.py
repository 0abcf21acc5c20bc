"""The shipped pair sets a loaded model solves: ``capitals`` and ``ioi`` (``tasks``) kept to the items the
model gets right, as text pairs a circuit job reads like posted pairs.

- ``capitals``: the 20-country table; an item is kept when the model's top next token is the capital.
- ``ioi``: ``n`` seeded indirect-object pairs; an item is kept when the clean prompt's logit of the
  indirect object exceeds the subject's (logit difference > 0, the rule the pairs task refuses by).

``answer_logit_diffs`` is that logit difference for any answer pairs (what the IOI measurement of
``docs/results/circuits.md`` reads); ``solved_pairs`` builds a set and refuses an empty one;
``task_batch`` picks their largest group of one token length (what ``POST /circuits`` takes as one batch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.tasks import CAPITALS, TEMPLATE, capital_items, ioi_pairs
from attnscope.pipelines.circuits.texts import MAX_BATCH_TOKENS, TextPair, check_causal

TASKS = ("capitals", "ioi")


def _encode(backend, text: str) -> list[int]:
    return list(backend.encode_text(text).token_ids)


def _one_token(backend, text: str) -> bool:
    return len(backend.tokenizer(text, add_special_tokens=False)["input_ids"]) == 1


def last_logits(backend, prompts: list[list[int]], chunk: int = 32) -> torch.Tensor:
    """``[n, vocab]`` float32: the next-token logits after each prompt (token ids), prompts of one length
    batched ``chunk`` at a time."""
    out: list[torch.Tensor | None] = [None] * len(prompts)
    by_len: dict[int, list[int]] = {}
    for i, ids in enumerate(prompts):
        by_len.setdefault(len(ids), []).append(i)
    with torch.no_grad():
        for rows in by_len.values():
            for a in range(0, len(rows), chunk):
                part = rows[a : a + chunk]
                ids = torch.tensor([prompts[i] for i in part], device=backend.device)
                logits = backend.model(input_ids=ids, use_cache=False).logits[:, -1].float().cpu()
                for i, row in zip(part, logits, strict=True):
                    out[i] = row
    return torch.stack(out)  # type: ignore[arg-type]


def answer_logit_diffs(backend, pairs: list[TextPair]) -> np.ndarray:
    """``[n]``: ``logit(answer) - logit(wrong)`` after each pair's clean prompt (one token each)."""
    answers = []
    for p in pairs:
        a, w = _encode_answer(backend, p.answer), _encode_answer(backend, p.wrong)
        answers.append((a, w))
    logits = last_logits(backend, [_encode(backend, p.clean) for p in pairs])
    idx = torch.tensor(answers)
    return (logits.gather(1, idx[:, :1]) - logits.gather(1, idx[:, 1:])).flatten().double().numpy()


def _encode_answer(backend, text: str | None) -> int:
    ids = backend.tokenizer(text or "", add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise CircuitInputError(f"answer {text!r} is {len(ids)} tokens; it must be exactly one")
    return int(ids[0])


@dataclass(frozen=True)
class SolvedSet:
    task: str
    pairs: list[TextPair]  # the kept ones
    candidates: int  # items generated before keeping


def solved_pairs(backend, task: str, n: int = 100, seed: int = 0) -> SolvedSet:
    """The ``task`` pairs ``backend`` solves (see the module docstring); ``n``/``seed``: the IOI draw
    (capitals: the whole table). Refuses a set the model solves none of."""
    check_causal(backend)
    if task == "capitals":
        prompts = [_encode(backend, TEMPLATE.format(country)) for country in CAPITALS]
        top = dict(zip(map(tuple, prompts), last_logits(backend, prompts).argmax(1).tolist(), strict=True))
        kept = capital_items(lambda t: _encode(backend, t), lambda ids: top[tuple(ids)])  # one batched pass
        candidates = len(CAPITALS)
    elif task == "ioi":
        drawn = ioi_pairs(n, seed, one_token=lambda t: _one_token(backend, t))
        diffs = answer_logit_diffs(backend, drawn)
        kept = [p for p, d in zip(drawn, diffs, strict=True) if d > 0]
        candidates = len(drawn)
    else:
        raise CircuitInputError(f"task {task!r} is not one of {', '.join(TASKS)}")
    if not kept:
        raise CircuitInputError(
            f"{backend.spec.name} solves none of the {candidates} {task} items (the clean prompt never prefers the "
            "answer), so the pair set is empty: pick another model or post your own pairs (task pairs)"
        )
    return SolvedSet(task, kept, candidates)


def one_batch(backend, pairs: list[TextPair], limit: int) -> list[TextPair]:
    """At most ``limit`` of ``pairs`` (and ``MAX_BATCH_TOKENS`` tokens in all), all of the most common
    clean token length (ties: the first length met), in their order: a batch ``circuit_of_texts``
    takes."""
    by_len: dict[int, list[TextPair]] = {}
    for p in pairs:
        by_len.setdefault(len(_encode(backend, p.clean)), []).append(p)
    n_tokens, group = max(by_len.items(), key=lambda item: len(item[1]))
    return group[: max(1, min(limit, MAX_BATCH_TOKENS // n_tokens))]


def task_batch(backend, task: str, limit: int, n: int = 100, seed: int = 0) -> list[TextPair]:
    """``one_batch`` of the ``task`` items ``backend`` solves (``solved_pairs``)."""
    return one_batch(backend, solved_pairs(backend, task, n, seed).pairs, limit)
