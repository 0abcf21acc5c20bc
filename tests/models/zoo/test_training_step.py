"""One optimisation step of every zoo architecture on a tiny batch: training still works."""

import pytest
import torch
from torch.nn import functional as F

from attnscope.models.zoo.build import build_model
from attnscope.models.zoo.configs import ZOO


@pytest.mark.parametrize("name", list(ZOO))
def test_one_optimisation_step_lowers_the_loss_on_a_tiny_batch(name):
    torch.manual_seed(0)
    arch = dict(ZOO[name]["arch"])
    if ZOO[name]["modality"] == "text":
        arch["vocab_size"] = 50
        x = torch.randint(3, 50, (4, 7))
        x[0, 5:] = 0  # padding
        y = torch.tensor([0, 1, 0, 1])
    else:
        x = torch.randn(4, 1, 28, 28)
        y = torch.tensor([0, 1, 2, 3])
    model = build_model(arch).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(2):
        logits, maps = model(x, return_maps=False)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)
        opt.step()
        losses.append(loss.item())
    assert maps is None
    model.eval()
    with torch.no_grad():
        after = float(F.cross_entropy(model(x)[0], y))
    assert after < losses[0]
