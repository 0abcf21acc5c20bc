"""Pure table builder of the Interventions page's data-set panel (data in, ``DataTable`` columns and rows
out): a head-effects job's heads, each with its mean effect over the examples, the 95 % t interval, ``n``,
the two-sided p and its Holm and Benjamini-Hochberg adjustments across every head, and whether the head
stands out (its Holm-adjusted p below the job's alpha, i.e. its effect differs from 0 after correction)."""

from __future__ import annotations

from collections.abc import Sequence


def _num(v, digits: int = 4):
    return None if v is None else round(float(v), digits)


def _p(v):
    return None if v is None else float(f"{v:.3g}")


def effects_table(rows: Sequence[dict], alpha: float = 0.05, top: int | None = None) -> tuple[list[dict], list[dict]]:
    """``(columns, data)``: the heads of ``rows`` (a head-effects result's CSV rows) by mean |effect|, largest
    first (``top``: only that many); "stands out" is "yes (Holm)", "yes (BH)" (only after Benjamini-Hochberg)
    or "no" (also for a head without a test: its effect was the same on every example)."""
    columns = [
        {"name": "head", "id": "head"},
        {"name": "mean Δ", "id": "mean", "type": "numeric"},
        {"name": "95 % low (t)", "id": "low", "type": "numeric"},
        {"name": "95 % high (t)", "id": "high", "type": "numeric"},
        {"name": "n", "id": "n", "type": "numeric"},
        {"name": "p", "id": "p", "type": "numeric"},
        {"name": "Holm p", "id": "p_holm", "type": "numeric"},
        {"name": "BH p", "id": "p_bh", "type": "numeric"},
        {"name": "stands out", "id": "standout"},
    ]
    order = sorted(rows, key=lambda r: -abs(r["mean_effect"]))[:top]
    data = []
    for r in order:
        holm, bh = r.get("p_holm"), r.get("p_bh")
        standout = (
            "yes (Holm)" if holm is not None and holm < alpha else "yes (BH)" if bh is not None and bh < alpha else "no"
        )
        data.append(
            {
                "head": r["head"],
                "mean": _num(r["mean_effect"]),
                "low": _num(r.get("effect_low")),
                "high": _num(r.get("effect_high")),
                "n": r.get("n"),
                "p": _p(r.get("p")),
                "p_holm": _p(holm),
                "p_bh": _p(bh),
                "standout": standout,
            }
        )
    return columns, data


def standouts_line(result: dict) -> str:
    """One sentence: how many of the tested heads stand out after each correction, and which."""
    s = result.get("standouts")
    if not s:
        return f"{result['n']} examples; this result has no corrected tests"
    parts = []
    for name, label in (("holm", "Holm"), ("bh", "Benjamini-Hochberg")):
        heads = s[name]["heads"]
        listed = ", ".join(heads[:8]) + (" …" if len(heads) > 8 else "")
        parts.append(f"{s[name]['count']} after {label}" + (f" ({listed})" if heads else ""))
    return (
        f"{result['model']} on {result['dataset']}, n = {result['n']}, {s['tested']} heads tested: heads whose mean "
        f"effect differs from 0 at {s['alpha']}: " + "; ".join(parts)
    )
