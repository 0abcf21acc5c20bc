"""One example of a text data set by the name a job result gives it, so that any example of a census,
faithfulness or head-effects result can be opened on its own (``GET /datasets/{name}/examples/{key}``,
issue 26 item 11).

Job results name their examples two ways: census, probe and head-effects results by the example's
``id`` (``sst2-dev-12``, ``movies-posR_001``, ``hatexplain-<post id>``: unique within a data set, the
split is part of it), a faithfulness result by its ``index`` in the split. ``find_example`` takes
either: a key of digits only is an index (no example id is all digits: every id starts with the data
set's name), anything else an id.

A split is read once and kept (``_split``, per data folder, a few splits at most): a movie-reviews split
is 1,800 files, read in about a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from attnscope.models import data_registry
from attnscope.pipelines.datasets import SPLITS, Example, check_split, load_dataset

MAX_KEY_CHARS = 200


class UnknownExampleError(LookupError):
    """No example of that id or index in the split."""


@dataclass(frozen=True)
class FoundExample:
    """An example with where it was found: its ``index`` in ``split`` of ``dataset``."""

    dataset: str
    split: str
    index: int
    total: int
    example: Example


@lru_cache(maxsize=4)
def _split(folder: str, dataset: str, split: str, allow_offensive: bool) -> tuple[tuple[Example, ...], dict[str, int]]:
    examples = tuple(load_dataset(dataset, split, allow_offensive=allow_offensive))
    return examples, {ex.id: i for i, ex in enumerate(examples)}


def find_example(dataset: str, key: str, split: str | None = None, *, allow_offensive: bool = False) -> FoundExample:
    """The example ``key`` (an id, or an index in the split when all digits) of ``dataset``'s ``split``
    (None: the default split for an index; every split, the default first, for an id).

    Raises ``ValueError`` for an unknown data set or split, ``OffensiveContentError`` for HateXplain
    without the opt-in, ``DataSetMissingError`` when the data set is not in the data folder and
    ``UnknownExampleError`` when the split has no such example."""
    if dataset not in SPLITS:
        raise ValueError(f"unknown data set {dataset!r}; text examples exist for {', '.join(SPLITS)}")
    check_split(dataset, split)
    folder = str(data_registry.data_dir())
    if key.isdigit():
        split = split or SPLITS[dataset][0]
        examples, _ = _split(folder, dataset, split, allow_offensive)
        index = int(key)
        if index >= len(examples):
            raise UnknownExampleError(
                f"{dataset} {split} has {len(examples)} examples (indices 0..{len(examples) - 1}); got index {index}"
            )
        return FoundExample(dataset, split, index, len(examples), examples[index])
    # an id names its example in any split: without a split, look in each (the default first)
    names = (split,) if split else SPLITS[dataset]
    for name in names:
        examples, by_id = _split(folder, dataset, name, allow_offensive)
        if key in by_id:
            return FoundExample(dataset, name, by_id[key], len(examples), examples[by_id[key]])
    first = _split(folder, dataset, names[0], allow_offensive)[0][0].id
    where = f"{dataset} {split}" if split else f"any split of {dataset} ({', '.join(SPLITS[dataset])})"
    raise UnknownExampleError(
        f"no example with id {key!r} in {where}; give an id as job results name it (e.g. {first!r}) "
        "or an index in the split"
    )
