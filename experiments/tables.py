"""The seed tables as Markdown (``results/experiments/tables.md``), from ``claims.json``: docs/claims.md shows
these rows verbatim (``tests/docs/test_claims_tables.py`` checks it)."""

from __future__ import annotations

import re

from attnscope.experiments import seeds

TWINS = {"text": ("text-vanilla", "text-ea", "text-ha"), "vision": ("vit", "ea-vit", "ha-vit")}


def _cell(row: dict | None, digits: int = 3, scale: float = 1.0, n: int | None = None) -> str:
    """``mean ± sd``; ``(n = k)`` added when the cell has fewer seeds than the arm (``n``)."""
    if row is None:
        return "–"
    mean = row["mean"] * scale
    text = f"{mean:.{digits}f}" if row["sd"] in (None, "") else f"{mean:.{digits}f} ± {row['sd'] * scale:.{digits}f}"
    return text if n is None or int(row["n_seeds"]) == n else f"{text} (n = {row['n_seeds']})"


def arm_table(claims: dict, arms) -> list[str]:
    rows = {(r["arm"], r["metric"]): r for r in claims["arms"]}
    layers = sorted({int(m.rsplit("L", 1)[1]) for a, m in rows if a in arms and m.startswith("norm_entropy_L")})
    head = ["arm", "seeds", "params", "accuracy (%)"]
    head += [f"entropy L{li}" for li in layers]
    head += [f"CNN probe L{li}" for li in layers] + [f"logistic probe L{li}" for li in layers]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in arms:
        acc = rows.get((a, "accuracy"))
        if acc is None:
            continue
        cells = [f"`{a}`", str(acc["n_seeds"]), f"{int(rows[a, 'params']['mean']):,}", _cell(acc, 2, 100.0)]
        n = int(acc["n_seeds"])
        cells += [_cell(rows.get((a, f"norm_entropy_L{li}")), n=n) for li in layers]
        cells += [_cell(rows.get((a, f"probe_cnn_L{li}")), n=n) for li in layers]
        cells += [_cell(rows.get((a, f"probe_logistic_L{li}")), n=n) for li in layers]
        out.append("| " + " | ".join(cells) + " |")
    return out


def gap_table(claims: dict) -> list[str]:
    out = [
        "| claim | arm − baseline | metric | arm | baseline | gap [95 % CI] | seeds | verdict |",
        "|---|---|---|---:|---:|---|---:|---|",
    ]
    for g in claims["gaps"]:
        scale, digits = (100.0, 2) if g["metric"] == "accuracy" else (1.0, 3)
        metric = g["metric"].replace("_L", " L").replace("probe_", "probe ").replace("norm_entropy", "entropy")
        low, high = g["ci95_low"] * scale, g["ci95_high"] * scale
        gap = f"{g['gap'] * scale:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
        out.append(
            f"| {g['statement']} | `{g['arm']}` − `{g['baseline']}` | {metric} | {g['arm_mean'] * scale:.{digits}f} "
            f"| {g['baseline_mean'] * scale:.{digits}f} | {gap} | {g['n_seeds']} | {g['verdict']} |"
        )
    return out


def _sd(row: dict, key: str, digits: int = 1) -> str:
    sd = row.get(f"{key}_sd")
    if sd in (None, ""):  # one seed: a count stays a whole number
        return f"{row[key]:.{digits}f}" if digits > 1 else f"{row[key]:g}"
    return f"{row[key]:.{digits}f} ± {sd:.{digits}f}"


def gaussian_table(claims: dict) -> list[str]:
    out = [
        "| layer | seeds | best-offset mass, mean (min–max) | centre distance, mean (min–max) | distinct best offsets "
        "| best offset in 3×3 | 3×3 offsets covered | 3×3 mass | centres in 3×3 |",
        "|---|---:|---|---|---|---|---|---|---|",
    ]
    for r in claims["gaussian_layers"]:
        out.append(
            f"| `{r['arm']}` L{r['layer']} | {r['n_seeds']} "
            f"| {r['best_mass_mean']:.3f} ({r['best_mass_min']:.3f}–{r['best_mass_max']:.3f}) "
            f"| {r['centre_distance_mean']:.2f} ({r['centre_distance_min']:.2f}–{r['centre_distance_max']:.2f}) "
            f"| {_sd(r, 'distinct_offsets')} of {r['heads']} | {_sd(r, 'in_neighbourhood')} of {r['heads']} "
            f"| {_sd(r, 'covered')} of 9 | {_sd(r, 'neighbourhood_mass', 3)} | {_sd(r, 'centres_in_neighbourhood')} |"
        )
    out.append("| a 3×3 convolution (Cordonnier's construction) | | 1 | ≤ 1.41 | 9 of 9 | 9 of 9 | 9 of 9 | 1 | 9 |")
    return out


def markdown(claims: dict) -> str:
    parts = [
        "<!-- written by `make experiments` (attnscope.experiments.tables); docs/claims.md shows these rows -->",
        "",
        "### Text twins (SST-2 dev)",
        "",
        *arm_table(claims, TWINS["text"]),
        "",
        "### Vision twins (MNIST held-out)",
        "",
        *arm_table(claims, TWINS["vision"]),
        "",
        "### Gaps",
        "",
        *gap_table(claims),
        "",
        "### Gaussian heads",
        "",
        *gaussian_table(claims),
        "",
    ]
    return "\n".join(parts)


DOCS = seeds.REPO / "docs" / "claims.md"
START, END = "<!-- seed-tables:start -->", "<!-- seed-tables:end -->"


def docs_block(claims: dict) -> str:
    """The tables as docs/claims.md shows them (between its seed-tables markers, one heading level down)."""
    body = markdown(claims).split("\n", 2)[2]  # without the "written by" comment line and its blank line
    return re.sub(r"(?m)^### ", "#### ", body)


def write_markdown(claims: dict) -> str:
    """``results/experiments/tables.md``, and the same tables in docs/claims.md (so the page never drifts from
    the results)."""
    text = markdown(claims)
    (seeds.RESULTS / "tables.md").write_text(text)
    # only the repository's own results go into its docs (a test writing tables elsewhere must not touch them)
    if seeds.RESULTS.resolve() == (seeds.REPO / "results" / "experiments").resolve() and DOCS.is_file():
        page = DOCS.read_text()
        if START in page and END in page:
            head, rest = page.split(START, 1)
            _, tail = rest.split(END, 1)
            DOCS.write_text(f"{head}{START}\n{docs_block(claims).strip()}\n{END}{tail}")
    return text
