"""Real data for the zoo: MNIST (the 10,000 test digits, split 8,000 train / 2,000 eval with a
fixed seed) and SST-2 (train / dev), from the data folder (``attnscope.models.data_registry``, docs/guide/data.md).

Everything here is deterministic; ``split_hash`` fingerprints what a checkpoint was trained and
evaluated on, and goes into its manifest.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from attnscope.models import data_registry

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
SPLIT_SEED = 0
MNIST_TRAIN = 8000
MNIST_SIZE = 10_000  # the full test set; the test fixtures hold 100 of its digits
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
PAD, UNK, CLS = "[PAD]", "[UNK]", "[CLS]"
VOCAB_FILE = Path(__file__).resolve().parent / "checkpoints" / "sst2_vocab.txt"


def data_dir() -> Path:
    """The data folder (``attnscope.models.data_registry.data_dir``) once it holds ``mnist-test/`` and ``sst2/``;
    ``DataSetMissingError`` (with the command that fetches them) otherwise."""
    for name in ("mnist-test", "sst2"):
        if not data_registry.DATASETS[name].present():
            raise data_registry.DataSetMissingError(data_registry.missing_message(name))
    return data_registry.data_dir()


def available() -> bool:
    """Whether the full MNIST test set and SST-2 are in the data folder (not the test fixtures' cuts): the
    tests that re-measure checkpoints on them skip, with a reason, otherwise."""
    return all(data_registry.DATASETS[name].complete() for name in ("mnist-test", "sst2"))


def _hash(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Split:
    """Arrays of one split: ``x`` (images ``[n, 28, 28]`` uint8 or token ids ``[n, max_len]``), ``y``."""

    x: np.ndarray
    y: np.ndarray


@lru_cache(maxsize=1)
def mnist_all() -> tuple[np.ndarray, np.ndarray]:
    """All 10,000 MNIST test digits ``[n, 28, 28]`` uint8 and labels ``[n]``."""
    folder = data_dir() / "mnist-test"
    with gzip.open(folder / "t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(folder / "t10k-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return x, y


def mnist_split_indices(n: int = MNIST_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-seed permutation of ``n`` digits (10,000: the test set): first 80% train (8,000), the rest eval."""
    perm = np.random.default_rng(SPLIT_SEED).permutation(n)
    cut = n * MNIST_TRAIN // MNIST_SIZE
    return perm[:cut], perm[cut:]


def mnist(split: str) -> Split:
    """``"train"`` (8,000) or ``"eval"`` (2,000) MNIST digits."""
    x, y = mnist_all()
    tr, ev = mnist_split_indices(len(y))
    idx = {"train": tr, "eval": ev}[split]
    return Split(x[idx], y[idx])


def mnist_split_hash() -> str:
    x, y = mnist_all()
    tr, ev = mnist_split_indices(len(y))
    return _hash(x, y, tr, ev)


def images_to_tensor_input(images: np.ndarray) -> np.ndarray:
    """uint8 ``[n, 28, 28]`` -> normalised float32 ``[n, 1, 28, 28]`` (what every vision model takes)."""
    x = images.astype(np.float32) / 255.0
    return ((x - MNIST_MEAN) / MNIST_STD)[:, None]


# ---------------------------------------------------------------------------- SST-2
def _read_tsv(name: str) -> tuple[list[str], np.ndarray]:
    lines = (data_dir() / "sst2" / name).read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.rsplit("\t", 1) for line in lines if line.strip()]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows], dtype=np.int64)


def words(text: str) -> list[str]:
    """SST-2 is lower-cased and PTB-tokenised: split on whitespace after lower-casing."""
    return text.lower().split()


def build_vocab(min_count: int = 2, max_size: int = 12_000) -> list[str]:
    """Word vocabulary of SST-2 train (specials first, then by frequency, ties alphabetical)."""
    texts, _ = _read_tsv("train.tsv")
    counts = Counter(w for t in texts for w in words(t))
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD, UNK, CLS] + kept[: max_size - 3]


def load_vocab(path: Path = VOCAB_FILE) -> list[str]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; run `make zoo` (or python -m attnscope.pipelines.train --vocab)")
    return path.read_text(encoding="utf-8").splitlines()


def encode_words(tokens: list[str], vocab_index: dict[str, int], max_len: int) -> list[int]:
    """``[CLS]`` + word ids (unknown words -> ``[UNK]``), cut to ``max_len`` positions."""
    unk = vocab_index[UNK]
    return [vocab_index[CLS]] + [vocab_index.get(w, unk) for w in tokens][: max_len - 1]


def sst2(split: str, vocab: list[str], max_len: int = 64) -> Split:
    """``"train"`` or ``"dev"`` as padded id arrays ``[n, max_len]`` (pad id 0) and labels."""
    texts, y = _read_tsv({"train": "train.tsv", "dev": "dev.tsv"}[split])
    index = {w: i for i, w in enumerate(vocab)}
    x = np.zeros((len(texts), max_len), dtype=np.int64)
    for i, t in enumerate(texts):
        ids = encode_words(words(t), index, max_len)
        x[i, : len(ids)] = ids
    return Split(x, y)


def sst2_split_hash(vocab: list[str]) -> str:
    h = hashlib.sha256("\n".join(vocab).encode())
    for name in ("train.tsv", "dev.tsv"):
        h.update((data_dir() / "sst2" / name).read_bytes())
    return h.hexdigest()[:16]
