"""Measure one trained arm of one seed: what the seed tables need, on a fixed evaluation set.

- **Evaluation set**: text arms, 300 SST-2 dev sentences (the seeded sample ``pick_examples("sst2", 300,
  seed=0)``: the same sentences as the documented ``attnscope probe --n 300``); vision arms, 300 digits of the
  held-out MNIST split (a seeded sample, ``numpy.random.default_rng(0)``). Every arm and seed sees the same set.
- **Sharpness**: per layer, the mean normalised entropy of the maps (``attnscope.analysis.evolution``:
  ``layer_norm_entropy``, the mean over heads and rows of ``H / log(keys)``), averaged over the set.
- **Map probe** (``attnscope.analysis.map_probe``, docs/methods/heads.md): per layer, 5-fold cross-validated
  accuracy of the label from the maps alone, with the standardised logistic regression and with the 2-layer
  CNN (``attnscope.pipelines.map_probe_cnn``), folds and CNN seeded with 0, maps brought to 32 x 32: text maps
  cropped (the first 32 positions, as documented for ``attnscope probe``), vision maps (50 positions with CLS,
  49 without) average-pooled (``mode="pool"``), so the probe sees the whole map.
- **Gaussian heads** (``gauss9-iso``): content-free, so one digit's maps are every digit's maps; a 2D shift scan
  (radius 6, a 13 x 13 window) gives each head's mass per offset, and ``attnscope.analysis.conv_likeness``
  compares each layer with the 3 x 3 convolution; the centres come from the trained parameters.

``measure_arm`` returns a JSON-able dict; ``attnscope.experiments.report`` caches it per (arm, seed).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from attnscope.analysis.conv_likeness import conv_likeness
from attnscope.analysis.evolution import evolution
from attnscope.analysis.map_probe import probe_layers
from attnscope.analysis.shift import scan_shifts
from attnscope.models.capture import capture_truncated
from attnscope.models.interface import Backend
from attnscope.models.loading import load_zoo_checkpoint
from attnscope.models.zoo import data
from attnscope.models.zoo.configs import ZOO
from attnscope.pipelines.dataset_runs import pick_examples
from attnscope.pipelines.map_probe_cnn import cnn_fit_score

log = logging.getLogger(__name__)

N_EVAL = 300
EVAL_SEED = 0
FOLDS = 5
SIZE = 32
GAUSS_RADIUS = 6
PROBES = ("logistic", "cnn")


def load_arm(name: str, root: Path) -> Backend:
    """Zoo model ``name`` from the checkpoint under ``root`` (refusing a mismatched architecture)."""
    return load_zoo_checkpoint(name, root)


def eval_set(modality: str, n: int = N_EVAL) -> tuple[list, np.ndarray]:
    """The fixed evaluation inputs (texts or ``[28, 28]`` uint8 digits) and their labels."""
    if modality == "text":
        examples = pick_examples("sst2", n, seed=EVAL_SEED)
        return [ex.text for ex in examples], np.array([ex.label for ex in examples])
    split = data.mnist("eval")
    idx = np.sort(np.random.default_rng(EVAL_SEED).choice(len(split.y), size=min(n, len(split.y)), replace=False))
    return [split.x[i] for i in idx], split.y[idx]


def capture_maps(backend: Backend, inputs: list) -> list:
    """``AttentionMaps`` of every input (texts cut to the model's limit)."""
    if backend.spec.modality == "text":
        return [capture_truncated(backend, t).maps for t in inputs]
    return [backend.run(backend.encode_image(x), hidden_states=False).maps for x in inputs]


def layer_entropy(items: list) -> list[float]:
    """``[layer]`` mean normalised entropy over the examples (one thread)."""
    per = np.stack([evolution(m, workers=1).layer_norm_entropy for m in items])
    return per.mean(axis=0).astype(float).round(6).tolist()


def probe(items: list, labels: np.ndarray, mode: str, classifier: str) -> dict:
    fit = cnn_fit_score(seed=0) if classifier == "cnn" else None
    res = probe_layers(items, labels, size=SIZE, mode=mode, folds=FOLDS, seed=0, fit_score=fit, classifier=classifier)
    return {
        "accuracy": res.accuracy.astype(float).round(6).tolist(),
        "fold_sd": res.accuracy_std.astype(float).round(6).tolist(),
        "chance": round(res.chance, 6),
        "folds": res.folds,
        "size": res.size,
        "mode": res.mode,
    }


def gaussian_likeness(backend: Backend, digit: np.ndarray) -> list[dict]:
    """Per layer: ``ConvLikeness.as_dict()`` of the layer's Gaussian heads (see module docstring)."""
    maps = backend.run(backend.encode_image(digit), hidden_states=False).maps
    scan = scan_shifts(maps, radius=GAUSS_RADIUS, workers=1)
    out = []
    for li, attn in enumerate(backend.attention_modules()):
        centres = attn.bias.centers.detach().double().numpy()
        c = conv_likeness(scan.mass[li], scan.offsets, centres=centres)
        out.append({**c.as_dict(), "centre": centres.round(4).tolist()})
    return out


def measure_arm(name: str, root: Path, n: int = N_EVAL, probes=PROBES) -> dict:
    """Entropy and the ``probes`` (EA/HA arms) or convolution-likeness (Gaussian arms) of one trained arm."""
    backend = load_arm(name, root)
    modality = ZOO[name]["modality"]
    inputs, labels = eval_set(modality, n)
    if ZOO[name]["arch"].get("attention") in ("gaussian", "gaussian-full"):
        return {"name": name, "gaussian": gaussian_likeness(backend, inputs[0])}
    items = capture_maps(backend, inputs)
    mode = "crop" if modality == "text" else "pool"
    return {
        "name": name,
        "n": len(items),
        "norm_entropy": layer_entropy(items),
        "probe": {c: probe(items, labels, mode, c) for c in probes},
    }
