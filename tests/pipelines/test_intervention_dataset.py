"""Per-head effect grids over a data set: each example's rank correlation of |effect| with its heads'
attention-based importance, their spread over the examples, and shards that merge to the same result."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from attnscope.analysis.census import RunningStats
from attnscope.analysis.interventions import head_confidence
from attnscope.pipelines.dataset_runs import pick_examples
from attnscope.pipelines.interventions import head_effects
from attnscope.pipelines.interventions.dataset import (
    IMPORTANCE,
    encode_example,
    grid_shard,
    head_tests,
    merge_grids,
    rank_summary,
    standouts,
)


def test_planted_heads_stand_out_after_correction_and_noise_does_not():
    # 40 examples x 6 x 12 heads of N(0, 1) effects, except L2H5 (mean 1.5) and L4H0 (mean -1.0): Holm
    # names exactly those two; a head constant at 0 has no test and leaves the family
    rng = np.random.default_rng(0)
    grids = rng.normal(0.0, 1.0, (40, 6, 12))
    grids[:, 2, 5] += 1.5
    grids[:, 4, 0] -= 1.0
    grids[:, 5, 11] = 0.0
    stats = RunningStats()
    for g in grids:
        stats.add(g)
    tests = head_tests(stats.result_mean(), stats.std, stats.count)
    out = standouts(tests)
    assert out["tested"] == 71 and out["alpha"] == 0.05
    assert out["holm"] == {"count": 2, "heads": ["L2H5", "L4H0"]}
    assert {"L2H5", "L4H0"} <= set(out["bh"]["heads"]) and out["bh"]["count"] <= 4
    assert np.isnan(tests["p"][5, 11]) and np.isnan(tests["p_holm"][5, 11])
    # the interval is Student's over the 40 examples: mean +/- t_{0.975, 39} sd / sqrt(40)
    x = grids[:, 2, 5]
    half = 2.0226909 * x.std(ddof=1) / np.sqrt(40)
    assert tests["effect_low"][2, 5] == pytest.approx(x.mean() - half, rel=1e-6)


@pytest.fixture(scope="module")
def sst2():
    from attnscope.models.loading import load_model

    return load_model("minilm-sst2", device="cpu")


def test_rank_summary_over_examples_and_of_the_means():
    examples = [{"rank_rho": 0.2}, {"rank_rho": None}, {"rank_rho": 0.6}, {"rank_rho": 1.0}]
    mean = np.array([[0.1, -0.4], [0.3, 0.2]])
    importance = np.array([[0.0, 3.0], [2.0, 1.0]])  # the order of |mean|
    got = rank_summary(examples, mean, importance)
    per = got["per_example"]
    assert per["n"] == 3 and per["min"] == 0.2 and per["max"] == 1.0 and per["median"] == pytest.approx(0.6)
    assert per["mean"] == pytest.approx(0.6) and per["std"] == pytest.approx(np.sqrt(0.32 / 3))
    assert got["of_means"]["rho"] == pytest.approx(1.0) and got["of_means"]["n"] == 4
    none = rank_summary([{"rank_rho": None}], mean, np.ones((2, 2)))
    assert none["per_example"] == {"n": 0, "mean": None, "std": None, "median": None, "min": None, "max": None}
    assert none["of_means"]["rho"] is None


def test_each_example_carries_its_rank_correlation_and_shards_merge_alike(sst2):
    examples = pick_examples("sst2", 3, None, 0)
    whole = merge_grids([grid_shard(sst2, examples, max_tokens=8, chunk=12)], "minilm-sst2", "zero", "sst2")
    parts = [grid_shard(sst2, examples[:1], max_tokens=8), grid_shard(sst2, examples[1:], max_tokens=8)]
    merged = merge_grids(parts, "minilm-sst2", "zero", "sst2")

    inp = encode_example(sst2, examples[0].text, 8)  # example 0 by hand: its grid, its maps, scipy
    effect = head_effects(sst2, inp)["effect"]
    importance = head_confidence(sst2.run(inp, hidden_states=False).maps)
    ref = spearmanr(np.abs(effect).ravel(), importance.ravel())
    assert whole["examples"][0]["rank_rho"] == pytest.approx(ref.statistic, abs=1e-6)
    assert whole["examples"][0]["rank_p"] == pytest.approx(ref.pvalue, rel=1e-4)

    rhos = [e["rank_rho"] for e in whole["examples"]]
    assert all(-1 <= r <= 1 for r in rhos) and len(set(np.round(rhos, 6))) == 3
    per = whole["rank_agreement"]["per_example"]
    assert per["n"] == 3 and per["mean"] == pytest.approx(np.mean(rhos)) and per["std"] == pytest.approx(np.std(rhos))
    of_means = spearmanr(np.abs(whole["mean_effect"]).ravel(), np.ravel(whole["mean_importance"])).statistic
    assert whole["rank_agreement"]["of_means"]["rho"] == pytest.approx(of_means)
    assert [r["mean_importance"] for r in whole["rows"]] == pytest.approx(np.ravel(whole["mean_importance"]))

    for key in ("mean_effect", "mean_importance"):
        np.testing.assert_allclose(merged[key], whole[key], atol=1e-6)
    assert merged["rank_agreement"]["per_example"] == pytest.approx(whole["rank_agreement"]["per_example"], abs=1e-6)

    parts[0]["stats"].pop(IMPORTANCE)  # a shard of a job started before importance was kept
    old = merge_grids(parts, "minilm-sst2", "zero", "sst2")
    assert old["mean_importance"] is None and old["rank_agreement"] is None and "mean_importance" not in old["rows"][0]
