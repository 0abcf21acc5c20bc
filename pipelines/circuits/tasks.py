"""Clean/corrupted pair sets with their metric, generated from templates with a seed.

- ``induction_pairs``: ``[bos] + seq + seq`` against ``[bos] + seq + other`` (``seq``, ``other``
  random tokens, seeded); metric ``loss`` of the clean next tokens over the second copy (an induction
  head predicts them from the first copy).
- ``capital_pairs``: "The capital of {country} is" against another country whose prompt has the
  same number of tokens; metric ``answer_logit_diff`` (the clean capital's first token against the
  corrupted one's), keeping only the items the model gets right (``predict`` names the top token).

Pairs whose clean and corrupted prompts differ in length are refused (``check_lengths``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import check_lengths

CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
    "Russia": "Moscow", "Egypt": "Cairo", "Greece": "Athens", "Poland": "Warsaw", "Austria": "Vienna",
    "Portugal": "Lisbon", "Norway": "Oslo", "Sweden": "Stockholm", "Ireland": "Dublin", "Cuba": "Havana",
    "Peru": "Lima", "Kenya": "Nairobi", "China": "Beijing", "England": "London", "Finland": "Helsinki",
}  # fmt: skip
TEMPLATE = "The capital of {} is"
MAX_PAIRS = 1000


@dataclass(frozen=True)
class PairSet:
    """``clean``/``corrupted`` ``[n, pos]`` token ids and the metric that reads them."""

    name: str
    clean: torch.Tensor
    corrupted: torch.Tensor
    metric: CircuitMetric
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.clean.shape[0] == 0:
            raise CircuitInputError(f"the {self.name} pair set is empty: the model gets none of its items right")
        check_lengths(self.clean, self.corrupted)


def induction_pairs(
    vocab: int, n: int = 8, half: int = 15, seed: int = 0, bos: int | None = None, low: int = 0
) -> PairSet:
    """``n`` pairs of ``1 + 2 half`` tokens (``bos`` first when given) drawn from ``low..vocab-1``."""
    if not 1 <= n <= MAX_PAIRS or half < 2:
        raise CircuitInputError(f"n={n} pairs (1..{MAX_PAIRS}) with half={half} (>= 2) tokens")
    g = torch.Generator().manual_seed(seed)
    seq = torch.randint(low, vocab, (n, half), generator=g)
    other = torch.randint(low, vocab, (n, half), generator=g)
    head = [] if bos is None else [torch.full((n, 1), bos)]
    clean = torch.cat([*head, seq, seq], 1)
    corrupted = torch.cat([*head, seq, other], 1)
    first = clean.shape[1] - half  # the second copy's first token: from it on, the next token is inducible
    positions = tuple(range(first, clean.shape[1] - 1))
    return PairSet("induction", clean, corrupted, CircuitMetric("loss", positions=positions))


def capital_pairs(encode: Callable[[str], list[int]], predict: Callable[[list[int]], int]) -> PairSet:
    """The capitals the model names right (``predict(ids)``: its top next token), each paired with the
    next such country of the same prompt length (cyclically)."""
    items = []
    for country, city in CAPITALS.items():
        ids = encode(TEMPLATE.format(country))
        answer = encode(" " + city)[0]
        if predict(ids) == answer:
            items.append((country, ids, answer))
    clean, corrupted, answers, labels = [], [], [], []
    for i, (country, ids, answer) in enumerate(items):
        for other, other_ids, other_answer in items[i + 1 :] + items[:i]:
            if len(other_ids) == len(ids) and other_answer != answer:
                clean.append(ids)
                corrupted.append(other_ids)
                answers.append((answer, other_answer))
                labels.append(f"{country}/{other}")
                break
    if not clean:
        raise CircuitInputError("the capitals pair set is empty: the model names no capital right (or none pair up)")
    by_len: dict[int, list[int]] = {}
    for i, ids in enumerate(clean):
        by_len.setdefault(len(ids), []).append(i)
    keep = max(by_len.values(), key=len)  # one token length, so the set stacks into one batch
    return PairSet(
        "capitals",
        torch.tensor([clean[i] for i in keep]),
        torch.tensor([corrupted[i] for i in keep]),
        CircuitMetric("answer_logit_diff", answers=tuple(answers[i] for i in keep)),
        tuple(labels[i] for i in keep),
    )
