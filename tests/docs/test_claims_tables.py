"""docs/claims.md shows the seed tables exactly as `make experiments` wrote them (results/experiments/tables.md),
and every figure in them traces back to the committed CSV/JSON."""

from __future__ import annotations

import json

from _docs_hooks import ROOT

RESULTS = ROOT / "results" / "experiments"


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("|---")]


def test_claims_page_shows_every_row_of_the_written_tables():
    rows = _table_rows((RESULTS / "tables.md").read_text())
    assert len(rows) >= 10  # four tables with headers and rows
    page = (ROOT / "docs" / "claims.md").read_text()
    missing = [r for r in rows if r not in page]
    assert not missing, f"docs/claims.md differs from results/experiments/tables.md (rerun make experiments): {missing}"


def test_tables_are_those_of_the_committed_results():
    from attnscope.experiments.tables import markdown

    claims = json.loads((RESULTS / "claims.json").read_text())
    assert markdown(claims) == (RESULTS / "tables.md").read_text()
    for row in claims["arms"]:
        record = RESULTS / "runs" / f"{row['arm']}-seed{row['seeds'].split()[0]}.json"
        assert record.is_file(), record


def test_claims_page_block_is_written_from_the_committed_claims():
    from attnscope.experiments.tables import END, START, docs_block

    claims = json.loads((RESULTS / "claims.json").read_text())
    page = (ROOT / "docs" / "claims.md").read_text()
    block = page.split(START, 1)[1].split(END, 1)[0]
    assert block.strip() == docs_block(claims).strip(), "rerun: python -m attnscope.experiments measure --no-measure"
