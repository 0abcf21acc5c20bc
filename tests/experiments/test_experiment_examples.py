"""Per-example values of the circuit and residual-stream (DLA) experiments in long format: one row per pair
and quantity, or per prompt and head, the values those of the records (so a summary's interval can be
recomputed from the CSV)."""

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


def test_dla_prompt_rows_are_one_per_prompt_and_head():
    from attnscope.experiments.dla_ablation import prompt_rows

    per = [{"prompt": "p0", "dla": [[1.0, 2.0], [3.0, 4.0]], "effect": [[-1.0, 0.0], [0.5, 0.25]]}]
    out = prompt_rows(per + [{**per[0], "prompt": "p1"}])
    assert len(out) == 2 * 4 and out[3] == {"prompt": "p0", "head": "L1H1", "dla": 4.0, "effect": 0.25}
    assert [r["head"] for r in out[:4]] == ["L0H0", "L0H1", "L1H0", "L1H1"] and out[4]["prompt"] == "p1"


def test_dla_summary_counts_prompts_countries_templates_and_top_head_agreement():
    from attnscope.experiments.dla_ablation import summarise

    def prompt(text, answer, rho, top_same):
        dla = [[3.0, 0.0], [1.0, 0.5]]  # largest DLA: L0H0
        eff = [[-2.0, 0.0], [0.1, 0.2]] if top_same else [[0.0, 0.1], [-2.0, 0.3]]
        return {"prompt": text, "answer": answer, "logit_diff": 1.0 if top_same else -1.0, "rho": rho,
                "rho_abs": rho / 2, "dla": dla, "effect": eff}  # fmt: skip

    doc = {"prompts": [
        prompt("The capital of France is", " Paris", 0.2, True),
        prompt("France's capital is", " Paris", 0.4, False),
        prompt("The capital of Spain is", " Madrid", 0.1, True),
    ]}  # fmt: skip
    text = summarise(doc)
    assert text.startswith("3 prompts, 2 countries, 2 with the answer above the contrast")
    assert "'The capital of {} is' +0.150" in text and '"{}\'s capital is" +0.400' in text
    assert "lowers the difference most on 2 of 3 prompts; its ablation rank: median 1" in text


def test_dla_beside_a_grid_ranks_heads_and_refuses_another_model():
    import pytest

    from attnscope.experiments.dla_beside_grid import beside

    dla = {"heads": {"mean": [[0.5, 0.0], [0.1, -0.2]]}}
    grid = {"mean_effect": [[-0.3, 0.0], [-0.1, 0.2]]}
    text = beside(dla, grid, top=2)
    assert "| L0H0 | +0.5000 | -0.3000 | 1 of 4 |" in text and "| L1H0 | +0.1000 | -0.1000 | 2 of 4 |" in text
    assert "signed +1.000" in text
    with pytest.raises(ValueError, match="not the same model"):
        beside(dla, {"mean_effect": [[0.0]]})
