"""The Interventions page's data-set table: heads by mean |effect| with their interval, n and corrected p;
a head stands out only when its adjusted p is below alpha."""

from attnscope.frontend.intervention_tables import effects_table, standouts_line


def _row(head, mean, p, holm, bh):
    return {"head": head, "mean_effect": mean, "effect_low": mean - 0.1, "effect_high": mean + 0.1, "n": 20,
            "p": p, "p_holm": holm, "p_bh": bh}  # fmt: skip


ROWS = [
    _row("L0H0", 0.01, 0.5, 1.0, 0.9),
    _row("L0H1", -0.30, 0.0004, 0.0016, 0.0016),
    _row("L1H0", 0.12, 0.02, 0.06, 0.04),
    _row("L1H1", 0.0, None, None, None),  # constant effect: no test
]


def test_heads_are_ordered_by_size_and_stand_out_only_after_correction():
    columns, data = effects_table(ROWS)
    assert [c["id"] for c in columns] == ["head", "mean", "low", "high", "n", "p", "p_holm", "p_bh", "standout"]
    assert [d["head"] for d in data] == ["L0H1", "L1H0", "L0H0", "L1H1"]
    assert [d["standout"] for d in data] == ["yes (Holm)", "yes (BH)", "no", "no"]
    assert data[0] == {"head": "L0H1", "mean": -0.3, "low": -0.4, "high": -0.2, "n": 20, "p": 0.0004,
                       "p_holm": 0.0016, "p_bh": 0.0016, "standout": "yes (Holm)"}  # fmt: skip
    assert [d["head"] for d in effects_table(ROWS, top=2)[1]] == ["L0H1", "L1H0"]
    assert effects_table(ROWS, alpha=0.001)[1][0]["standout"] == "no"  # 0.0016 is not below 0.001


def test_standouts_line_counts_each_correction():
    result = {"model": "m", "dataset": "sst2", "n": 20,
              "standouts": {"alpha": 0.05, "tested": 3, "holm": {"count": 1, "heads": ["L0H1"]},
                            "bh": {"count": 2, "heads": ["L0H1", "L1H0"]}}}  # fmt: skip
    line = standouts_line(result)
    assert "n = 20, 3 heads tested" in line and "1 after Holm (L0H1)" in line
    assert "2 after Benjamini-Hochberg (L0H1, L1H0)" in line
