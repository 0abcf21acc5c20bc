"""The fixed-key block bound on real blocks: every trained HA model of the zoo, and random untrained
HA blocks with sharpened weights. The bound must hold on every pair the tests can produce."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnscope.analysis.block_bound import global_bound, orbit_check
from attnscope.models.capture import capture, capture_image
from attnscope.models.loading import load_model
from attnscope.models.session import attach, zoo_family
from attnscope.models.zoo import data, samples
from attnscope.models.zoo.build import build_model
from attnscope.models.zoo.manifest import read_manifest
from attnscope.pipelines.fixed_key_block import (
    BlockHalves,
    NotFixedKeyBlockError,
    estimate_block_lipschitz,
    extract_fixed_key_block,
    head_matrices,
)
from attnscope.pipelines.shared_block import block_step, iterate_shared_block

HA_MODELS = ["text-ha", "ha-vit", "ha-learned2d-content", "ha-san-pairwise"]


@pytest.fixture(scope="module", params=HA_MODELS)
def ha(request):
    name = request.param
    if read_manifest(name) is None:
        pytest.skip("zoo not trained; run make zoo")
    loaded = load_model(name, device="cpu")
    if name == "text-ha":
        hidden = capture(loaded, "a gripping , beautifully acted film that never lets go").hidden_states
    else:
        if not data.available():
            pytest.skip("data folder not found; set ATTNSCOPE_DATA_DIR")
        image, _ = samples.sample("mnist", 7)
        hidden = capture_image(loaded, loaded.prepare_image(image)).hidden_states
    return loaded, hidden.astype(np.float64)


def test_halves_are_the_models_own_block(ha):
    loaded, hidden = ha
    halves = BlockHalves(loaded, hidden[0])
    _, step, depth, _, _ = block_step(loaded, None, hidden[0])
    x = hidden[0]
    for _ in range(depth):
        mid, out = halves(x)
        np.testing.assert_allclose(out, step(x), atol=1e-10)
        x = out
    np.testing.assert_allclose(x, hidden[-1], atol=2e-4)


def test_head_matrices_decompose_the_attention_output(ha):
    """``Attn(u)_i - Attn(u)_mean`` rebuilt from the model's own weights ``p`` and ``W^h = W_O^h W_V^h``."""
    loaded, hidden = ha
    halves = BlockHalves(loaded, hidden[0])
    block = halves.block
    x = torch.as_tensor(hidden[1])[None]
    with torch.no_grad():
        u = block.ln1(x)
        out, probs, _ = block.attn(u, dict(halves.state))
    if probs.shape[-1] != u.shape[1]:  # SAN: window weights -> dense [query, key]
        probs = block.attn.dense(probs)
    w = head_matrices(loaded.sites.blocks[0])  # [H, D, D]
    rebuilt = np.einsum("hqk,kD,hED->qE", probs[0].numpy(), u[0].numpy(), w)
    # the constants (value/output biases) cancel in differences between tokens
    np.testing.assert_allclose(rebuilt - rebuilt[0], out[0].numpy() - out[0, 0].numpy(), atol=1e-9)


def test_bound_holds_along_the_orbit_and_against_perturbations(ha):
    loaded, hidden = ha
    fk = extract_fixed_key_block(loaded, hidden[0])
    it = iterate_shared_block(loaded, hidden[0], 25)
    c = it.block_contraction
    assert c is not None and c.orbit.log10_bound.shape == c.orbit.observed.shape == (24,)
    assert c.orbit.worst_slack <= 0, c.orbit
    assert c.estimate.worst_slack <= 0, c.estimate
    assert c.estimate.estimate > 1  # the block expands some perturbations: a real lower bound, not 0
    g = global_bound(fk)
    assert g.log10_bound == pytest.approx(c.global_bound.log10_bound)
    assert np.all(c.orbit.log10_bound <= g.log10_bound + 1e-12)  # the floors only rise above sqrt(eps)
    assert not c.contraction  # both residuals: L >= 1 by construction
    # later iterates: the tokens' spread grows, so the pairwise bound falls towards 1
    assert c.orbit.log10_bound[-1] < c.orbit.log10_bound[0]
    # a later cloud as the centre of the estimate (keys still from the first pass)
    later = estimate_block_lipschitz(loaded, it.result.final, x0=hidden[0], n_draws=2, ascent_steps=8)
    assert later.worst_slack <= 0


def test_trained_ha_blocks_drift_while_the_standardised_measure_settles(ha):
    loaded, hidden = ha
    res = iterate_shared_block(loaded, hidden[0], 60).result
    assert res.behaviour == "drifts" and res.drift > 0
    assert res.w1_normalised[-1] < 0.05 * res.w1_normalised[0]
    assert res.normalised_order is not None and res.normalised_order > 0.5


def _loaded(model, name):
    """A zoo model built here, with its ``Sites`` (and the session's taps, as a backend attaches them)."""
    return SimpleNamespace(
        model=model, spec=SimpleNamespace(name=name), sites=attach(model, zoo_family(model.arch), model.arch)
    )


def _sharpen(model: torch.nn.Module, scale: float) -> None:
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 2 and ("attn" in name or "ffn" in name):
                p.mul_(scale)


TINY = {
    "text": lambda: build_model(
        {
            "kind": "text",
            "attention": "content",
            "dim": 16,
            "depth": 3,
            "heads": 2,
            "mlp": 32,
            "max_len": 12,
            "vocab_size": 50,
            "hierarchical": True,
        }
    ),
    "learned2d": lambda: build_model(
        {
            "kind": "vision",
            "attention": "learned2d",
            "content": True,
            "patch": 7,
            "dim": 12,
            "depth": 2,
            "mlp": 24,
            "heads": 3,
            "head_dim": 4,
            "pos_dim": 8,
            "hierarchical": True,
        }
    ),
    "san": lambda: build_model(
        {
            "kind": "vision",
            "attention": "san-pairwise",
            "patch": 7,
            "dim": 12,
            "depth": 2,
            "mlp": 24,
            "heads": 3,
            "kernel": 3,
            "rel_dim": 6,
            "hierarchical": True,
        }
    ),
}


@pytest.mark.parametrize("kind", sorted(TINY))
@pytest.mark.parametrize("scale", [1.0, 4.0])
def test_bound_holds_on_random_sharpened_ha_blocks(kind, scale):
    torch.manual_seed(0)
    model = TINY[kind]().double().eval()
    _sharpen(model, scale)
    loaded = _loaded(model, f"tiny-{kind}")
    rng = np.random.default_rng(0)
    n = 10 if kind == "text" else 16
    x0 = rng.standard_normal((n, 12 if kind != "text" else 16))
    est = estimate_block_lipschitz(loaded, x0, eps=(1e-3, 1e-1, 1.0), n_draws=3, ascent_steps=10)
    assert est.worst_slack <= 0, est
    halves = BlockHalves(loaded, x0)
    xs, mids = [x0], []
    for _ in range(8):
        mid, out = halves(xs[-1])
        mids.append(mid)
        xs.append(out)
    mids.append(halves(xs[-1])[0])
    check = orbit_check(extract_fixed_key_block(loaded, x0), np.stack(xs), np.stack(mids))
    assert check.worst_slack <= 0


def test_blocks_the_bound_does_not_cover_are_refused():
    ea = build_model(
        {
            "kind": "text",
            "attention": "content",
            "dim": 8,
            "depth": 2,
            "heads": 2,
            "mlp": 16,
            "max_len": 8,
            "vocab_size": 20,
            "hierarchical": True,
            "ea": {"alpha": 0.5, "beta": 0.3},
        }
    )
    loaded = _loaded(ea.double(), "tiny-ea-ha")
    with pytest.raises(NotFixedKeyBlockError, match="Evolving Attention"):
        extract_fixed_key_block(loaded, np.zeros((4, 8)) + np.arange(8))
    plain = build_model(
        {
            "kind": "text",
            "attention": "content",
            "dim": 8,
            "depth": 2,
            "heads": 2,
            "mlp": 16,
            "max_len": 8,
            "vocab_size": 20,
        }
    )
    with pytest.raises(NotFixedKeyBlockError, match="no shared"):
        extract_fixed_key_block(_loaded(plain, "tiny"), np.ones((4, 8)))
