"""Each family's forward against a slow reference written from the equations (docs/methods/), on tiny inputs."""

import math

import pytest
import torch

from attnscope.models.zoo.attention import MultiHeadAttention
from attnscope.models.zoo.build import build_model, count_params
from attnscope.models.zoo.positional import GaussianBias, Learned2DBias, ShiftBias, grid_offsets, shift_matrix

torch.manual_seed(0)


def _official_gaussian_logits(bias: GaussianBias, rows: int, cols: int) -> torch.Tensor:
    """epfml GaussianSelfAttention: R = (d1, d2, d1^2, d2^2, d1 d2), t_h = -1/2 [-2(a mu1 + b mu2),
    -2(c mu2 + b mu1), a, c, 2b]; logits = R . t_h (differs from ours by a per-row constant)."""
    out = torch.zeros(len(bias.centers), rows * cols, rows * cols)
    P = bias.precision().detach()
    for h in range(len(bias.centers)):
        a, b, c = P[h, 0, 0], P[h, 0, 1], P[h, 1, 1]
        mu1, mu2 = bias.centers[h].detach()
        t = -0.5 * torch.stack([-2 * (a * mu1 + b * mu2), -2 * (c * mu2 + b * mu1), a, c, 2 * b])
        for q in range(rows * cols):
            for k in range(rows * cols):
                d1 = k // cols - q // cols
                d2 = k % cols - q % cols
                out[h, q, k] = (
                    torch.stack([torch.tensor(x, dtype=torch.float32) for x in (d1, d2, d1 * d1, d2 * d2, d1 * d2)]) @ t
                )
    return out


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_heads_match_the_official_quadratic_form(full):
    bias = GaussianBias(heads=3, grid=(4, 5), full=full)
    with torch.no_grad():  # move away from the init so every term matters
        bias.centers.copy_(torch.tensor([[0.5, -1.0], [1.5, 2.0], [-1.0, 0.0]]))
        if full:
            bias.spreads.copy_(
                torch.tensor([[[1.2, 0.3], [0.0, 0.8]], [[0.7, -0.2], [0.1, 1.1]], [[1.0, 0.0], [0.5, 0.6]]])
            )
    ours = torch.softmax(bias(20, 20), -1)
    ref = torch.softmax(_official_gaussian_logits(bias, 4, 5), -1)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)


def test_isotropic_gaussian_peaks_at_its_centre_and_sharpens_with_spread():
    bias = GaussianBias(heads=1, grid=(7, 7))
    with torch.no_grad():
        bias.centers.copy_(torch.tensor([[1.0, -2.0]]))
        bias.spreads.fill_(5.0)  # alpha = s^2 / 2 large: near-hard attention
    p = torch.softmax(bias(49, 49), -1)[0]
    q = 3 * 7 + 3  # centre pixel (3, 3): key (4, 1)
    assert p[q].argmax() == 4 * 7 + 1 and p[q].max() > 0.99


def test_gaussian_with_large_spread_approaches_uniform():
    bias = GaussianBias(heads=2, grid=(6, 6))
    rows = []
    for s in (1.0, 0.1, 0.001):
        with torch.no_grad():
            bias.spreads.fill_(s)  # precision s^2: spread 1/s
        p = torch.softmax(bias(36, 36), -1)
        rows.append(float((p.detach() - 1 / 36).abs().max()))
    assert rows[0] > rows[1] > rows[2] and rows[2] < 1e-5


def test_learned_2d_bias_reads_row_and_column_embeddings():
    bias = Learned2DBias(heads=2, grid=(3, 4), dim=5)
    out = bias(12, 12)
    for h in range(2):
        for q in range(12):
            for k in range(12):
                dr, dc = k // 4 - q // 4, k % 4 - q % 4
                ref = (
                    bias.head_keys_row.weight[h] @ bias.row_emb.weight[dr + 2]
                    + bias.head_keys_col.weight[h] @ bias.col_emb.weight[dc + 3]
                )
                assert torch.isclose(out[h, q, k], ref, atol=1e-5)


def test_grid_offsets_are_key_minus_query():
    d = grid_offsets(2, 3)
    assert d[0, 5].tolist() == [1.0, 2.0] and d[5, 0].tolist() == [-1.0, -2.0]


def test_shift_bias_is_the_lambda_mixture_of_shift_matrices():
    bias = ShiftBias(heads=2, radius=2)
    with torch.no_grad():
        bias.lam.copy_(torch.randn(2, 5))
    n = 7
    ref = torch.zeros(2, n, n)
    for h in range(2):
        for j, delta in enumerate(range(-2, 3)):
            ref[h] += bias.lam[h, j].detach() * shift_matrix(n, delta).T  # S[m, n] -> [query n, key m]
    torch.testing.assert_close(bias(n, n).detach(), ref)


def test_pure_shift_head_equals_its_shift_matrix():
    attn = MultiHeadAttention(dim=8, heads=5, content=False, bias=ShiftBias(heads=5, radius=2, tap_init=50.0))
    x = torch.randn(1, 9, 8)
    _, probs, _ = attn(x, {})
    for h, delta in enumerate(range(-2, 3)):
        S = shift_matrix(9, delta).T  # [query, key]
        interior = [q for q in range(9) if 0 <= q + delta < 9]
        torch.testing.assert_close(probs[0, h, interior], S[interior], atol=1e-6, rtol=0)


def test_content_attention_matches_a_per_head_loop():
    attn = MultiHeadAttention(dim=12, heads=3).eval()
    x = torch.randn(2, 5, 12)
    out, probs, _ = attn(x, {})
    d = 4
    q, k, v = attn.q(x), attn.k(x), attn.v(x)
    heads = []
    for h in range(3):
        sl = slice(h * d, (h + 1) * d)
        a = torch.softmax(q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(d), -1)
        torch.testing.assert_close(probs[:, h], a)
        heads.append(a @ v[..., sl])
    torch.testing.assert_close(out, attn.out(torch.cat(heads, -1)))


VIT = {
    "kind": "vision",
    "attention": "content",
    "patch": 7,
    "dim": 16,
    "depth": 3,
    "heads": 2,
    "mlp": 32,
    "cls": True,
    "abs_pos": True,
}


def test_ea_with_alpha_0_and_beta_0_equals_vanilla():
    torch.manual_seed(1)
    ea = build_model({**VIT, "ea": {"alpha": 0.0, "beta": 0.0}}).eval()
    vanilla = build_model(VIT).eval()
    missing = vanilla.load_state_dict(ea.state_dict(), strict=False)
    assert all(".ea.conv." in k for k in missing.unexpected_keys) and not missing.missing_keys
    x = torch.randn(2, 1, 28, 28)
    (la, ma), (lv, mv) = ea(x), vanilla(x)
    torch.testing.assert_close(ma, mv)
    torch.testing.assert_close(la, lv)


def test_ea_layers_follow_the_update_equations():
    """Reference: A_in = b A_prev + (1-b) S; A = a relu(conv(A_in)) + (1-a) A_in; first layer A = S."""
    torch.manual_seed(2)
    alpha, beta = 0.4, 0.7
    model = build_model({**VIT, "ea": {"alpha": alpha, "beta": beta}}).eval()
    x = torch.randn(1, 1, 28, 28)
    _, maps = model(x)
    h = model.embed(torch.nn.functional.unfold(x, 7, stride=7).transpose(1, 2))
    h = torch.cat([model.cls.expand(1, -1, -1), h], 1) + model.pos
    prev = None
    for i, block in enumerate(model.encoder.blocks):
        a = block.attn
        z = block.ln1(h)
        q = a.q(z).view(1, -1, 2, 8).transpose(1, 2)
        k = a.k(z).view(1, -1, 2, 8).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(8)
        if prev is not None:
            a_in = beta * prev + (1 - beta) * s
            s = alpha * torch.relu(a.ea.conv(a_in)) + (1 - alpha) * a_in
        prev = s
        p = torch.softmax(s, -1)
        torch.testing.assert_close(maps[0, i], p[0], atol=1e-5, rtol=1e-4)
        v = a.v(z).view(1, -1, 2, 8).transpose(1, 2)
        h = h + a.out((p @ v).transpose(1, 2).reshape(1, -1, 16))
        h = h + block.ffn(block.ln2(h))


def test_ha_parameter_count_does_not_depend_on_depth():
    counts = {d: count_params(build_model({**VIT, "depth": d, "hierarchical": True})) for d in (1, 2, 6)}
    assert len(set(counts.values())) == 1
    assert count_params(build_model({**VIT, "depth": 6})) > counts[6]


def test_ha_keys_come_from_the_first_pass_and_queries_values_are_recomputed():
    torch.manual_seed(3)
    model = build_model({**VIT, "hierarchical": True}).eval()
    x = torch.randn(1, 1, 28, 28)
    _, maps = model(x)
    block = model.encoder.blocks[0]
    a = block.attn
    h = model.embed(torch.nn.functional.unfold(x, 7, stride=7).transpose(1, 2))
    h = torch.cat([model.cls.expand(1, -1, -1), h], 1) + model.pos
    keys = a.k(block.ln1(h)).view(1, -1, 2, 8).transpose(1, 2)  # K = LN(x^0) W_K, once
    for i in range(3):
        z = block.ln1(h)
        q = a.q(z).view(1, -1, 2, 8).transpose(1, 2)
        p = torch.softmax(q @ keys.transpose(-1, -2) / math.sqrt(8), -1)
        torch.testing.assert_close(maps[0, i], p[0], atol=1e-5, rtol=1e-4)
        v = a.v(z).view(1, -1, 2, 8).transpose(1, 2)
        h = h + a.out((p @ v).transpose(1, 2).reshape(1, -1, 16))
        h = h + block.ffn(block.ln2(h))


TEXT = {
    "kind": "text",
    "attention": "content",
    "dim": 16,
    "depth": 2,
    "heads": 2,
    "mlp": 32,
    "max_len": 12,
    "vocab_size": 30,
}


@pytest.mark.parametrize(
    "extra", [{}, {"ea": {"alpha": 0.5, "beta": 0.3}}, {"hierarchical": True}, {"attention": "shift", "radius": 2}]
)
def test_text_padding_changes_nothing_for_the_real_tokens(extra):
    torch.manual_seed(4)
    model = build_model({**TEXT, **extra}).eval()
    ids = torch.tensor([[2, 5, 7, 9, 11]])
    padded = torch.tensor([[2, 5, 7, 9, 11, 0, 0, 0]])
    (l1, m1), (l2, m2) = model(ids), model(padded)
    torch.testing.assert_close(l1, l2, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(m1, m2[..., :5, :5], atol=1e-5, rtol=1e-4)
    assert float(m2[..., :5, 5:].detach().abs().max()) < 1e-6


def test_shift_text_model_has_no_positional_encoding():
    model = build_model({**TEXT, "attention": "shift", "radius": 2})
    assert model.pos is None
    assert not any("pos" in n for n, _ in model.named_parameters())


def test_attention_built_from_a_conv_reproduces_it_as_sharpness_grows():
    """Cordonnier's Theorem 1, constructively: 9 quadratic-encoding heads, one per kernel tap."""
    from attnscope.models.zoo.conv_attention import QuadraticConvAttention

    torch.manual_seed(5)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 6, 5)
    ref = conv(x)
    errors = []
    for alpha in (0.3, 1.0, 3.0, 10.0, 30.0):
        y, p = QuadraticConvAttention(conv, (6, 5), alpha)(x)
        errors.append(float((y - ref).detach().abs().max()))
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-5 and errors[0] > 0.1
    # at high sharpness each head is the shift matrix of its tap: query (2, 2) of the padded 8x7 grid
    q = 2 * 7 + 2
    for h, (di, dj) in enumerate([(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)]):
        assert int(p[h, q].argmax()) == (2 + di) * 7 + (2 + dj) and float(p[h, q].max()) > 0.999


@pytest.mark.parametrize("name", ["ha-vit", "ha-learned2d-content", "ha-san-pairwise", "text-ha"])
def test_every_ha_model_in_the_zoo_keeps_its_parameter_count_at_any_depth(name):
    from attnscope.models.zoo.configs import ZOO

    arch = dict(ZOO[name]["arch"])
    if arch["kind"] == "text":
        arch["vocab_size"] = 40  # a vision architecture refuses keys it does not use
    counts = {count_params(build_model({**arch, "depth": d})) for d in (1, 2, 5)}
    assert len(counts) == 1


def test_text_ea_with_alpha_0_and_beta_0_equals_the_vanilla_text_encoder():
    torch.manual_seed(6)
    ea = build_model({**TEXT, "ea": {"alpha": 0.0, "beta": 0.0}}).eval()
    vanilla = build_model(TEXT).eval()
    vanilla.load_state_dict(ea.state_dict(), strict=False)
    ids = torch.tensor([[2, 5, 7, 9, 0, 0]])
    (le, me), (lv, mv) = ea(ids), vanilla(ids)
    torch.testing.assert_close(me[..., :4, :], mv[..., :4, :])  # real query rows (padded rows are dropped)
    torch.testing.assert_close(le, lv)


@pytest.mark.parametrize("mode", ["pairwise", "patchwise"])
def test_san_window_attention_matches_a_loop_over_each_window(mode):
    """SAN (Zhao et al. 2020): weights from phi(x_i) and psi(x_j) over the 3x3 window R(i) (outside the
    image masked), softmax over j, y_i = sum_j w[h(c), i, j] beta(x_j)_c."""
    from attnscope.models.zoo.san import LocalAttention

    torch.manual_seed(7)
    rows, cols, dim, heads = 3, 4, 4, 2
    attn = LocalAttention(dim, heads, (rows, cols), 3, mode, rel_dim=3).eval()
    x = torch.randn(1, rows * cols, dim)
    out, w, _ = attn(x, {})
    phi, psi, beta = attn.phi(x[0]), attn.psi(x[0]), attn.beta(x[0])
    slots = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)]
    ys = []
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        keys = [(r + dr) * cols + (c + dc) if 0 <= r + dr < rows and 0 <= c + dc < cols else None for dr, dc in slots]
        if mode == "pairwise":
            logits = torch.stack(
                [
                    attn.gamma(torch.cat([phi[i] - psi[k], torch.tensor([float(dr), float(dc)])]))
                    if k is not None
                    else torch.full((heads,), -1e9)
                    for k, (dr, dc) in zip(keys, slots)
                ],
                1,
            )
        else:
            window = torch.cat([phi[i]] + [psi[k] if k is not None else torch.zeros(3) for k in keys])
            logits = attn.gamma(window).view(heads, 9)
            logits = torch.where(torch.tensor([k is None for k in keys]), torch.tensor(-1e9), logits)
        weights = torch.softmax(logits, -1)  # (H, 9)
        torch.testing.assert_close(w[0, :, i], weights, atol=1e-6, rtol=1e-5)
        y = torch.zeros(dim)
        for j, k in enumerate(keys):
            if k is not None:
                y += weights.repeat_interleave(dim // heads, 0)[:, j] * beta[k]
        ys.append(y)
    torch.testing.assert_close(out[0], attn.out(torch.stack(ys)), atol=1e-5, rtol=1e-4)
    dense = attn.dense(w)[0]  # [head, query, key]: rows sum to 1, zero outside the window
    torch.testing.assert_close(dense.sum(-1), torch.ones(heads, rows * cols))
    inside = {0, 1, cols, cols + 1}  # query (0, 0): its window inside the image
    assert set(torch.nonzero(dense[0, 0].detach()).flatten().tolist()) == inside
