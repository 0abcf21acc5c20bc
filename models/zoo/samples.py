"""Dataset samples the dashboard can pick: MNIST's held-out split (2,000 digits, never trained on)
and a few real photos bundled with scikit-image (for the pretrained DINOv2)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from attnscope.models import data_registry
from attnscope.models.zoo import data

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "cat")


class UnknownSampleError(LookupError):
    """No such dataset, or the index is outside it."""


@lru_cache(maxsize=1)
def _photos() -> list[tuple[np.ndarray, str]]:
    from skimage import data as skdata

    out = []
    for name in PHOTOS:
        if hasattr(skdata, name):
            out.append((np.asarray(getattr(skdata, name)()), name))
    return out


def datasets() -> dict[str, int]:
    """Dataset name -> number of samples (MNIST: its eval split, 0 while it is not in the data folder)."""
    mnist = len(data.mnist("eval").y) if data_registry.DATASETS["mnist-test"].present() else 0
    return {"mnist": mnist, "photos": len(_photos())}


def sample(dataset: str, index: int) -> tuple[np.ndarray, str]:
    """Image (uint8) and its label: MNIST eval split ``[28, 28]``, photos ``[h, w]`` or ``[h, w, 3]``.
    MNIST not in the data folder: ``DataSetMissingError`` with the command that fetches it."""
    if dataset not in ("mnist", "photos"):
        raise UnknownSampleError(f"unknown dataset {dataset!r}; known datasets: mnist, photos")
    items = data.mnist("eval") if dataset == "mnist" else None
    size = len(items.y) if items is not None else len(_photos())
    if not 0 <= index < size:
        raise UnknownSampleError(f"index {index} is outside dataset {dataset!r} (0..{size - 1})")
    if items is not None:
        return items.x[index], str(int(items.y[index]))
    return _photos()[index]


def labels(dataset: str) -> list[str]:
    if dataset == "mnist":
        return [str(int(v)) for v in data.mnist("eval").y]
    if dataset == "photos":
        return [name for _, name in _photos()]
    raise UnknownSampleError(f"unknown dataset {dataset!r}; known datasets: mnist, photos")
