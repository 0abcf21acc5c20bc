"""The README's notebook example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(capsys):
    text = README.read_text()
    block = re.search(r"<!-- readme-example:start -->\s*```python\n(.*?)```", text, re.S)
    assert block, "README lost its example block"
    exec(compile(block.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "(6, 12, 9, 9)"
    assert out[2] == "2 cat"


def test_readme_states_both_commands():
    text = README.read_text()
    assert "make serve" in text and "make test" in text
