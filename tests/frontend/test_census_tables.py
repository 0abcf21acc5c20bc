"""The Census page's tables: each head's mean with its interval and n, each layer's accuracy with its
Wilson interval, n and a verdict against chance that holds only when the interval excludes it."""

from attnscope.frontend.census_tables import against_chance, census_table, probe_table


def _census_row(head, mean, low, high, n):
    return {"head": head, "layer": 0, "head_index": int(head[-1]), "sink_mean": mean, "sink_std": 0.1,
            "sink_low": low, "sink_high": high, "sink_n": n, "top1_mean": 9.0}  # fmt: skip


def test_census_table_gives_the_chosen_metric_with_its_interval_and_n():
    columns, data = census_table(
        [_census_row("L0H0", 0.51234567, 0.4, 0.6, 12), _census_row("L0H1", 0.2, None, None, 1)], "sink"
    )
    assert [c["id"] for c in columns] == ["head", "mean", "low", "high", "std", "n"]
    assert columns[1]["name"] == "sink mean" and columns[2]["name"] == "95 % low (t)"
    assert data[0] == {"head": "L0H0", "mean": 0.5123, "low": 0.4, "high": 0.6, "std": 0.1, "n": 12}
    assert data[1]["low"] is None and data[1]["n"] == 1  # one example: no interval, and n says why


def test_against_chance_calls_a_difference_only_outside_the_interval():
    assert against_chance(0.56, 0.7, 0.55) == "above chance"
    assert against_chance(0.55, 0.7, 0.55) == "no difference"  # the end touching chance is not excluding it
    assert against_chance(0.3, 0.54, 0.55) == "below chance"
    assert against_chance(None, None, 0.5) == "–"


def test_probe_table_rows_carry_the_wilson_interval_n_and_verdict():
    rows = [
        {"layer": 0, "accuracy": 0.5, "accuracy_std": 0.05, "chance": 0.5, "accuracy_low": 0.3, "accuracy_high": 0.7},
        {"layer": 1, "accuracy": 0.9, "accuracy_std": 0.02, "chance": 0.5, "accuracy_low": 0.73, "accuracy_high": 0.97,
         "n": 24},
    ]  # fmt: skip
    columns, data = probe_table(rows, 24, 0.5)
    assert [c["id"] for c in columns] == ["layer", "accuracy", "low", "high", "std", "chance", "n", "verdict"]
    assert [d["verdict"] for d in data] == ["no difference", "above chance"]
    assert [d["n"] for d in data] == [24, 24]  # an older row without n takes the result's
