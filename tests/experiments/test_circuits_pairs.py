"""The induction-circuit experiment's per-pair values in long format: one row per pair and quantity, the
values those of the pair's record (so the summary's intervals can be recomputed from the CSV)."""

from attnscope.experiments.circuits_induction import pair_rows


def test_pair_rows_are_one_per_pair_and_quantity():
    rows = [
        {"seed": s, "m_clean": 5.0 + s, "m_corrupted": 0.5, "spearman_eap": 0.9, "spearman_eap_ig": 0.95,
         "curve": [[0, 0.0], [10, 0.25 * s]]}
        for s in range(3)
    ]  # fmt: skip
    out = pair_rows(rows)
    assert len(out) == 3 * (4 + 2)
    assert out[0] == {"seed": 0, "quantity": "m_clean", "value": 5.0}
    by = {(r["seed"], r["quantity"]): r["value"] for r in out}
    assert by[(2, "faithfulness@10")] == 0.5 and by[(1, "m_clean")] == 6.0
    assert sum(v for (_, q), v in by.items() if q == "m_clean") / 3 == 6.0  # the mean the summary intervals
