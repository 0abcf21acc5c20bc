"""The seeded-experiment pipeline end to end on a tiny setting: real training (a few steps), real checkpoints,
the real measurement and tables, into a temporary folder; resumable; seed 0 with the full budget is the
committed zoo checkpoint."""

import csv
import json

import pytest

from attnscope.analysis.stats import paired_gap
from attnscope.experiments import report, seeds
from attnscope.models.zoo.manifest import ROOT as ZOO_ROOT

ARMS = ["vit", "ha-vit"]
SEEDS = [1, 2]
SCALE = 0.004  # 2-3 optimisation steps per arm


@pytest.fixture
def tmp_experiments(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(seeds, "CHECKPOINTS", tmp_path / "build")
    return tmp_path


def read_csv(path):
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # 4 trainings of 2-3 steps, each evaluated on the 2,000 held-out digits, and 4 measurements
def test_train_measure_report_on_a_tiny_setting(tmp_experiments):
    records = seeds.train_all(ARMS, SEEDS, epochs_scale=SCALE)
    assert [(r["name"], r["seed"]) for r in records] == [(a, s) for s in SEEDS for a in ARMS]
    assert all(r["train"]["epochs_scale"] == SCALE and r["steps"] <= 3 for r in records)
    for name in ARMS:
        assert (tmp_experiments / "build" / "seed1" / name / "model.safetensors").is_file()

    claims = report.write_all(SEEDS, ARMS, n_eval=40, probes=("logistic",))  # the CNN probe: tests/pipelines
    assert claims["seeds"] == SEEDS and "t with n - 1" in claims["interval"]
    out = tmp_experiments / "results"
    assert {p.name for p in out.iterdir()} >= {"arms.csv", "gaps.csv", "claims.json", "tables.md", "measures"}

    # the HA accuracy gap is the paired t-interval of the two records per seed
    acc = {(r["name"], r["seed"]): r["eval_accuracy"] for r in records}
    gap = next(g for g in read_csv(out / "gaps.csv") if g["arm"] == "ha-vit" and g["metric"] == "accuracy")
    want = paired_gap([acc["ha-vit", s] for s in SEEDS], [acc["vit", s] for s in SEEDS])
    assert int(gap["n_seeds"]) == 2 and int(gap["df"]) == 1
    assert float(gap["ci95_low"]) == pytest.approx(want.low, abs=1e-6)
    assert float(gap["ci95_high"]) == pytest.approx(want.high, abs=1e-6)
    assert gap["verdict"] in ("reproduces", "reversed", "not resolved")

    # per arm: accuracy, entropy per layer (3 layers) and both probes, over 2 seeds
    rows = {(r["arm"], r["metric"]): r for r in read_csv(out / "arms.csv")}
    for metric in ("accuracy", "norm_entropy_L2", "probe_logistic_L0", "probe_logistic_L2"):
        assert rows["vit", metric]["n_seeds"] == "2", metric
    assert ("vit", "probe_cnn_L0") not in rows
    assert 0 < float(rows["vit", "norm_entropy_L0"]["mean"]) <= 1

    assert "| `vit` | 2 | 84,250 |" in (out / "tables.md").read_text()

    # resumable: a second run trains and measures nothing again
    stamp = {p: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    stamp |= {p: p.stat().st_mtime_ns for p in (out / "measures").iterdir()}
    seeds.train_all(ARMS, SEEDS, epochs_scale=SCALE)
    report.measure_all(SEEDS, ARMS, n_eval=40, probes=("logistic",))
    assert {p: p.stat().st_mtime_ns for p in stamp} == stamp


def test_seed_zero_with_the_full_budget_is_the_committed_checkpoint(tmp_experiments):
    """Seed 0 at the zoo's budget trains nothing: the record is the committed manifest's, and the Gaussian arm
    is measured on the committed weights (one seed: no sd)."""
    assert seeds.committed_matches("vit", 0)
    assert not seeds.committed_matches("vit", 0, epochs_scale=0.5) and not seeds.committed_matches("vit", 1)
    record, _ = seeds.train_all(["vit", "gauss9-iso"], [0])
    manifest = json.loads((ZOO_ROOT / "vit" / "manifest.json").read_text())
    assert record["checkpoint"] == "committed" and record["eval_accuracy"] == manifest["eval_accuracy"]
    assert seeds.arm_root("vit", 0) == ZOO_ROOT and seeds.trained("vit", 0)
    assert seeds.arm_root("vit", 1) == tmp_experiments / "build" / "seed1"

    claims = report.write_all([0], ["gauss9-iso"])
    heads = read_csv(tmp_experiments / "results" / "gaussian.csv")
    assert len(heads) == 2 * 9  # 2 layers x 9 heads
    [layer0, layer1] = claims["gaussian_layers"]
    assert layer0["n_seeds"] == 1 and layer0["distinct_offsets_sd"] is None and layer0["heads"] == 9
    assert 1 <= layer0["distinct_offsets"] <= 9 and 0 < layer0["best_mass_min"] <= layer0["best_mass_max"] <= 1
    # every head's centre distance is |mu| of its trained centre
    for h in heads:
        r, c = float(h["centre_row"]), float(h["centre_col"])
        assert float(h["centre_distance"]) == pytest.approx((r * r + c * c) ** 0.5, abs=1e-3)
