"""Readers for the labelled data sets the faithfulness evaluation uses (files are never copied).

The files are found through ``attnscope.models.data_registry`` (the one data folder; docs/guide/data.md).
Every reader returns ``Example`` records: ``words`` (the data set's own word tokenisation), the gold
``label`` (an index into ``labels``) and, where humans marked one, ``rationale`` (0/1 per word).

- ``sst2``: GLUE SST-2 ``train``/``dev`` (no rationales).
- ``movies``: Zaidan et al. 2007 movie reviews with ``<POS>``/``<NEG>`` spans (the source of ERASER
  "movies"); ``split="rationales"`` (1,800 annotated reviews, default) or ``"fold10"`` (200 without).
- ``hatexplain``: validation/test posts, rationale = majority of the annotators' token marks.
  Offensive text: the reader refuses unless ``allow_offensive=True`` is passed (an explicit opt-in).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from attnscope.models.data_registry import MOVIES, require
from attnscope.models.data_registry import data_dir as data_dir  # the one data folder, re-exported

SST2_LABELS = ("negative", "positive")
HATEXPLAIN_LABELS = ("hatespeech", "normal", "offensive")
DATASETS = ("sst2", "movies", "hatexplain")
# Hard-rationale size per data set, as a fraction of tokens. movies: ERASER's params/movies_soft.json
# k_fraction (0.07, close to Zaidan's 7.5% token coverage); sst2 has no human rationale (0.2, our
# choice for short sentences); hatexplain: mean share of words the annotator majority marks (~0.3).
K_FRACTION = {"sst2": 0.2, "movies": 0.07, "hatexplain": 0.3}
SPLITS = {"sst2": ("dev", "train"), "movies": ("rationales", "fold10"), "hatexplain": ("test", "validation")}


def check_split(dataset: str, split: str | None) -> None:
    """Refuse a split the data set does not have (None: the data set's default)."""
    splits = SPLITS[dataset]
    if split is not None and split not in splits:
        raise ValueError(f"split {split!r} is not a {dataset} split; use one of {', '.join(splits)}")


class OffensiveContentError(PermissionError):
    """HateXplain was requested without the explicit opt-in."""


@dataclass(frozen=True)
class Example:
    """One labelled text: ``words`` [word], gold ``label``, optional ``rationale`` [word] of 0/1."""

    id: str
    words: tuple[str, ...]
    label: int
    labels: tuple[str, ...]
    rationale: tuple[int, ...] | None = None

    @property
    def text(self) -> str:
        return " ".join(self.words)


def load_sst2(split: str = "dev") -> list[Example]:
    """SST-2 ``train`` (67,349 phrases) or ``dev`` (872 sentences); words split on spaces."""
    if split not in ("train", "dev"):
        raise ValueError(f"SST-2 split must be 'train' or 'dev' (test has no labels); got {split!r}")
    path = require("sst2", f"{split}.tsv")
    out = []
    with path.open(encoding="utf-8") as f:
        next(f)  # header
        for i, line in enumerate(f):
            sentence, label = line.rstrip("\n").rsplit("\t", 1)
            out.append(Example(f"sst2-{split}-{i}", tuple(sentence.split()), int(label), SST2_LABELS))
    return out


_TAG = re.compile(r"</?(?:POS|NEG)>")


def parse_movie_review(raw: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Words and the 0/1 rationale per word of one Zaidan review (``<POS> ... </POS>`` spans)."""
    words: list[str] = []
    marks: list[int] = []
    inside = 0
    for piece in re.split(r"(</?(?:POS|NEG)>)", raw):
        if _TAG.fullmatch(piece):
            inside = 0 if piece.startswith("</") else 1
            continue
        for w in piece.split():
            words.append(w)
            marks.append(inside)
    return tuple(words), tuple(marks)


def load_movies(split: str = "rationales") -> list[Example]:
    """Zaidan movie reviews: ``rationales`` (posR/negR, 1,800 files) or ``fold10`` (200, none).

    Positive and negative reviews alternate (pos 0, neg 0, pos 1, ...) so that any prefix is
    balanced. Label 1 = positive, matching SST-2.
    """
    if split not in ("rationales", "fold10"):
        raise ValueError(f"movies split must be 'rationales' or 'fold10'; got {split!r}")
    root = require(MOVIES)
    per_label = {}
    for label, polarity in ((1, "pos"), (0, "neg")):
        pattern = f"{polarity}R_*.txt" if split == "rationales" else f"{polarity}_*.txt"
        files = sorted((root / f"withRats_{polarity}").glob(pattern))
        per_label[label] = []
        for path in files:
            words, marks = parse_movie_review(path.read_text(encoding="latin-1"))
            rationale = marks if split == "rationales" else None
            per_label[label].append(Example(f"movies-{path.stem}", words, label, SST2_LABELS, rationale))
    out = []
    for pos, neg in zip(per_label[1], per_label[0]):
        out += [pos, neg]
    return out


def load_hatexplain(split: str = "test", *, allow_offensive: bool = False) -> list[Example]:
    """HateXplain ``validation`` or ``test``; rationale = tokens marked by a majority of annotators
    who gave one (``None`` for posts without rationales). Needs ``allow_offensive=True``."""
    if not allow_offensive:
        raise OffensiveContentError(
            "HateXplain contains hate speech and slurs; pass the explicit opt-in "
            "(allow_offensive=True, CLI --allow-offensive, API allow_offensive: true) to use it"
        )
    if split not in ("validation", "test"):
        raise ValueError(f"HateXplain split must be 'validation' or 'test'; got {split!r}")
    path = require("hatexplain", f"{split}.jsonl")
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            votes = row["annotators"]["label"]
            label = max(set(votes), key=lambda v: (votes.count(v), -v))
            words = tuple(row["post_tokens"])
            rats = [r for r in row.get("rationales") or [] if len(r) == len(words)]
            rationale = None
            if rats:
                rationale = tuple(int(sum(col) * 2 > len(rats)) for col in zip(*rats))
            out.append(Example(f"hatexplain-{row['id']}", words, label, HATEXPLAIN_LABELS, rationale))
    return out


def load_dataset(name: str, split: str | None = None, *, allow_offensive: bool = False) -> list[Example]:
    """Dispatch by name: ``sst2`` (dev), ``movies`` (rationales), ``hatexplain`` (test, opt-in)."""
    if name == "sst2":
        return load_sst2(split or "dev")
    if name == "movies":
        return load_movies(split or "rationales")
    if name == "hatexplain":
        return load_hatexplain(split or "test", allow_offensive=allow_offensive)
    raise ValueError(f"unknown data set {name!r}; choose one of {', '.join(DATASETS)}")
