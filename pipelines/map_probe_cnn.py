"""The CNN classifier of the attention-map probe: predict an example's label from one layer's maps
``[head, size, size]`` (one input channel per head). The probe itself (folds, features, logistic
regression) is ``attnscope.analysis.map_probe``; this module holds the torch part."""

from __future__ import annotations

import numpy as np
import torch


class MapCNN(torch.nn.Module):
    """The 2-layer CNN probe (docs/methods/heads.md, the attention-map probe): H input channels (one
    per head) of a ``size x size`` map -> conv 3x3 (16) -> ReLU -> max-pool 2 -> conv 3x3 (32) -> ReLU
    -> global mean -> classes."""

    def __init__(self, heads: int, classes: int, width: int = 16):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(heads, width, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(width, 2 * width, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(2 * width, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def cnn_fit_score(epochs: int = 40, lr: float = 3e-3, weight_decay: float = 1e-3, batch: int = 64, seed: int = 0):
    """``fit_score`` for ``attnscope.analysis.map_probe.probe_layers``: trains a fresh ``MapCNN`` on each fold's
    training maps ``[example, head, size, size]`` (inputs standardised per head with training-fold
    statistics), seeded, on the CPU, and returns whether each held-out example was predicted right."""

    def fit_score(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray, y_te: np.ndarray) -> np.ndarray:
        classes, y_tr_i = np.unique(y_tr, return_inverse=True)
        lookup = {c: i for i, c in enumerate(classes)}
        y_te_i = np.array([lookup.get(c, -1) for c in y_te])  # a class unseen in training is never right
        mean = x_tr.mean(axis=(0, 2, 3), keepdims=True)
        sd = x_tr.std(axis=(0, 2, 3), keepdims=True) + 1e-6
        xt = torch.as_tensor((x_tr - mean) / sd, dtype=torch.float32)
        xv = torch.as_tensor((x_te - mean) / sd, dtype=torch.float32)
        yt = torch.as_tensor(y_tr_i, dtype=torch.long)
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        model = MapCNN(x_tr.shape[1], len(classes))
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(xt), generator=gen)
            for i in range(0, len(xt), batch):
                idx = order[i : i + batch]
                loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(xv).argmax(1).numpy()
        return pred == y_te_i

    return fit_score
