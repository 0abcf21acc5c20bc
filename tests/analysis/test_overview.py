import numpy as np
from _planted import maps_from, random_rows

from attnscope.analysis.distance import attention_distance
from attnscope.analysis.evolution import evolution
from attnscope.analysis.heads import classify_heads
from attnscope.analysis.implied_conv import implied_convolution
from attnscope.analysis.overview import overview
from attnscope.analysis.rollout import rollout_importance
from attnscope.analysis.shift import scan_shifts


def test_single_pass_overview_equals_the_separate_analyses():
    rng = np.random.default_rng(0)
    maps = maps_from(random_rows(rng, (3, 4, 20, 20), sparsity=0.3), special=(0, 19))
    ov = overview(maps, k=4)
    np.testing.assert_allclose(ov.scan.mass, scan_shifts(maps, k=4).mass)
    np.testing.assert_allclose(ov.convolution.r2, implied_convolution(maps, k=4).r2)
    assert ov.types.labels == classify_heads(maps, k=4).labels
    np.testing.assert_allclose(ov.distance.per_head, attention_distance(maps).per_head)
    ev = evolution(maps)
    np.testing.assert_allclose(ov.evolution.entropy, ev.entropy)
    np.testing.assert_allclose(ov.evolution.js_next, ev.js_next)
    np.testing.assert_allclose(ov.rollout.values, rollout_importance(maps).values, atol=1e-6)
