"""Clean/corrupted pair sets with their metric, generated from templates with a seed.

- ``induction_pairs``: ``[bos] + seq + seq`` against ``[bos] + seq + other`` (``seq``, ``other``
  random tokens, seeded); metric ``loss`` of the clean next tokens over the second copy (an induction
  head predicts them from the first copy).
- ``capital_items``: "The capital of {country} is" against another country whose prompt has the
  same number of tokens, as text pairs; metric ``answer_logit_diff`` (the clean capital's token against
  the corrupted one's), keeping only the items the model gets right (``predict`` names the top token)
  and whose capital is one token. ``capital_pairs`` stacks the largest group of one token length.
- ``ioi_pairs``: indirect-object identification (Wang et al. 2022) from templates with a seed: "When
  Mary and John went to the store, John gave a drink to" -> " Mary" against " John"; the corrupted
  prompt names a third person instead of the repeated subject ("..., Kate gave a drink to": no name
  is repeated, so nothing tells the indirect object from the subject); names one token each
  (``one_token``), so clean and corrupted prompts have the same length.

Pairs whose clean and corrupted prompts differ in length are refused (``check_lengths``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.patching import check_lengths
from attnscope.pipelines.circuits.texts import TextPair

CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
    "Russia": "Moscow", "Egypt": "Cairo", "Greece": "Athens", "Poland": "Warsaw", "Austria": "Vienna",
    "Portugal": "Lisbon", "Norway": "Oslo", "Sweden": "Stockholm", "Ireland": "Dublin", "Cuba": "Havana",
    "Peru": "Lima", "Kenya": "Nairobi", "China": "Beijing", "England": "London", "Finland": "Helsinki",
}  # fmt: skip
TEMPLATE = "The capital of {} is"
MAX_PAIRS = 1000

IOI_NAMES = (
    "Mary", "John", "Tom", "James", "Anna", "Sarah", "David", "Paul", "Mark", "Lisa", "Emma", "Kate", "Alice",
    "Bob", "Peter", "Jack", "Laura", "Susan", "Michael", "Daniel", "Robert", "Linda", "Karen", "Jane", "Sam",
    "Max", "Ben", "Tim", "Amy", "Rose",
)  # fmt: skip
IOI_TEMPLATES = (
    "When {A} and {B} went to the {place}, {S} gave a {thing} to",
    "After {A} and {B} went to the {place}, {S} gave a {thing} to",
    "When {A} and {B} got a {thing} at the {place}, {S} decided to give it to",
    "While {A} and {B} were working at the {place}, {S} gave a {thing} to",
    "Then, {A} and {B} had a long day at the {place}. {S} gave a {thing} to",
    "Friends {A} and {B} found a {thing} at the {place}. {S} gave it to",
)
IOI_PLACES = ("store", "park", "school", "office", "station", "restaurant", "hospital", "garden", "beach", "party")
IOI_THINGS = ("drink", "book", "ring", "bag", "letter", "gift", "ball", "key", "flower", "phone")


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
    vocab: int,
    n: int = 8,
    half: int = 15,
    seed: int = 0,
    bos: int | None = None,
    low: int = 0,
    corrupt: str = "second",
) -> PairSet:
    """``n`` pairs of ``1 + 2 half`` tokens (``bos`` first when given) drawn from ``low..vocab-1``.
    ``corrupt``: which copy the corrupted input replaces with ``other`` tokens: ``second`` (``seq +
    other``: the first copy, and everything heads write at its positions, is the same in both inputs,
    so no edge into the keys of the first copy can differ) or ``first`` (``other + seq``: the second
    copy's tokens are the same, what the first copy's keys carry differs)."""
    if not 1 <= n <= MAX_PAIRS or half < 2:
        raise CircuitInputError(f"n={n} pairs (1..{MAX_PAIRS}) with half={half} (>= 2) tokens")
    if corrupt not in ("first", "second"):
        raise CircuitInputError(f"corrupt={corrupt!r}: replace the first or the second copy")
    g = torch.Generator().manual_seed(seed)
    seq = torch.randint(low, vocab, (n, half), generator=g)
    other = torch.randint(low, vocab, (n, half), generator=g)
    head = [] if bos is None else [torch.full((n, 1), bos)]
    clean = torch.cat([*head, seq, seq], 1)
    corrupted = torch.cat([*head, seq, other] if corrupt == "second" else [*head, other, seq], 1)
    first = clean.shape[1] - half  # the second copy's first token: from it on, the next token is inducible
    positions = tuple(range(first, clean.shape[1] - 1))
    return PairSet("induction", clean, corrupted, CircuitMetric("loss", positions=positions))


def capital_items(encode: Callable[[str], list[int]], predict: Callable[[list[int]], int]) -> list[TextPair]:
    """The capitals the model names right (``predict(ids)``: its top next token; a capital of several
    tokens is left out), each paired with the next such country of the same prompt length
    (cyclically); labels ``"France/Italy"``. Empty when the model names none right."""
    items = []
    for country, city in CAPITALS.items():
        ids, answer = encode(TEMPLATE.format(country)), encode(" " + city)
        if len(answer) == 1 and predict(ids) == answer[0]:
            items.append((country, city, len(ids)))
    out = []
    for i, (country, city, n) in enumerate(items):
        for other, other_city, m in items[i + 1 :] + items[:i]:
            if m == n and other_city != city:
                clean, corrupted = TEMPLATE.format(country), TEMPLATE.format(other)
                out.append(TextPair(clean, corrupted, " " + city, " " + other_city, f"{country}/{other}"))
                break
    return out


def capital_pairs(encode: Callable[[str], list[int]], predict: Callable[[list[int]], int]) -> PairSet:
    """``capital_items`` as one batch: the largest group of one prompt length."""
    items = capital_items(encode, predict)
    clean = [encode(p.clean) for p in items]
    corrupted = [encode(p.corrupted) for p in items]
    answers = [(encode(p.answer)[0], encode(p.wrong)[0]) for p in items]
    labels = [p.label for p in items]
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


def ioi_pairs(n: int = 100, seed: int = 0, one_token: Callable[[str], bool] | None = None) -> list[TextPair]:
    """``n`` indirect-object pairs drawn with ``seed``: a template, a place, a thing and three distinct
    names (``one_token(" Name")`` true for each, when given), the two first names in either order
    (ABBA and BABA). Clean: the subject is named again; corrupted: a third name instead. Answer the
    indirect object, wrong the subject; labels ``"ioi 7: Mary/John/Kate"``."""
    if not 1 <= n <= MAX_PAIRS:
        raise CircuitInputError(f"n={n} indirect-object pairs is out of range: use 1..{MAX_PAIRS}")
    names = [x for x in IOI_NAMES if one_token is None or one_token(" " + x)]
    if len(names) < 3:
        raise CircuitInputError("the indirect-object task needs three one-token names; this tokenizer has fewer")
    g = torch.Generator().manual_seed(seed)

    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=g))]

    out = []
    for i in range(n):
        template, place, thing = pick(IOI_TEMPLATES), pick(IOI_PLACES), pick(IOI_THINGS)
        io, s, c = (names[j] for j in torch.randperm(len(names), generator=g)[:3].tolist())
        a, b = (io, s) if int(torch.randint(2, (1,), generator=g)) == 0 else (s, io)
        clean = template.format(A=a, B=b, S=s, place=place, thing=thing)
        corrupted = template.format(A=a, B=b, S=c, place=place, thing=thing)
        out.append(TextPair(clean, corrupted, " " + io, " " + s, f"ioi {i}: {io}/{s}/{c}"))
    return out
