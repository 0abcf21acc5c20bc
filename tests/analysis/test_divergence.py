"""Jensen-Shannon divergence and per-head comparison: closed-form values."""

import numpy as np
import pytest

from attnscope.analysis.divergence import comparable, head_divergences, js_divergence, total_variation
from attnscope.analysis.maps import AttentionMaps


def test_js_of_equal_disjoint_and_a_known_pair():
    p = np.array([0.2, 0.3, 0.5])
    assert js_divergence(p, p) == pytest.approx(0.0, abs=1e-15)
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)  # disjoint supports: 1 bit
    # 0.5 log2(4/3) + 0.5 (0.5 log2(2/3) + 0.5 log2 2) = 0.311278...
    expected = 0.5 * np.log2(4 / 3) + 0.5 * (0.5 * np.log2(2 / 3) + 0.5)
    assert js_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(expected, rel=1e-12)
    assert js_divergence([0.5, 0.5], [1.0, 0.0]) == pytest.approx(expected, rel=1e-12)  # symmetric
    assert js_divergence([1.0, 0.0], [0.0, 1.0], base=np.e) == pytest.approx(np.log(2))  # nats


def test_js_works_along_the_last_axis_and_checks_shapes():
    a = np.eye(3)[None].repeat(2, axis=0)  # [2, 3, 3]: each row a point mass
    b = np.roll(a, 1, axis=-1)
    np.testing.assert_allclose(js_divergence(a, b), np.ones((2, 3)))
    np.testing.assert_allclose(total_variation(a, b), np.ones((2, 3)))
    with pytest.raises(ValueError, match="one shape"):
        js_divergence(np.ones(3) / 3, np.ones(4) / 4)


def _maps(w, model="m"):
    return AttentionMaps(
        weights=np.asarray(w, np.float32), tokens=tuple(f"t{i}" for i in range(w.shape[-1])), model=model
    )


def test_head_divergences_per_head_and_the_shape_sentence():
    n = 4
    uniform = np.full((2, 3, n, n), 1 / n)
    a = uniform.copy()
    a[1, 2] = np.eye(n)  # one head becomes a point mass per row
    d = head_divergences(_maps(a), _maps(uniform))
    assert d.js.shape == (2, 3) and d.js[0].max() == pytest.approx(0.0, abs=1e-6)
    # JS(point mass, uniform over 4) = 0.5 log2(2/(1+1/4)) + 0.5 * 4 * (1/4) * ... closed form:
    m_hit, m_miss = (1 + 1 / n) / 2, (1 / n) / 2
    expected = 0.5 * np.log2(1 / m_hit) + 0.5 * (
        (1 / n) * np.log2((1 / n) / m_hit) + (n - 1) / n * np.log2((1 / n) / m_miss)
    )
    assert d.js[1, 2] == pytest.approx(expected, rel=1e-5)
    assert d.tv[1, 2] == pytest.approx(1 - 1 / n, rel=1e-5)
    assert d.max_abs_diff[1, 2] == pytest.approx(1 - 1 / n, rel=1e-5)
    assert comparable(_maps(a), _maps(np.full((2, 3, 5, 5), 0.2))).startswith("the runs have 4 and 5 tokens")
    with pytest.raises(ValueError, match="different shapes"):
        head_divergences(_maps(a), _maps(np.full((1, 3, n, n), 1 / n)))
