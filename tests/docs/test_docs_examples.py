"""The Python examples of the docs run as written (each block marked ``<!-- docs-example -->``)."""

from __future__ import annotations

import re

import pytest
from _docs_hooks import ROOT

BLOCK = re.compile(r"<!-- docs-example -->\s*```python\n(.*?)```", re.S)
EXAMPLES = [
    (page.relative_to(ROOT / "docs").as_posix(), i, code)
    for page in sorted((ROOT / "docs").rglob("*.md"))
    for i, code in enumerate(BLOCK.findall(page.read_text()))
]


def test_there_are_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize(("page", "index", "code"), EXAMPLES, ids=[f"{p}#{i}" for p, i, _ in EXAMPLES])
def test_example_runs(page, index, code, capsys):
    exec(compile(code, f"docs/{page} example {index}", "exec"), {})
    out = capsys.readouterr().out
    assert out.strip(), "an example should show its result"
