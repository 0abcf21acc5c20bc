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


def test_readme_is_short_and_every_link_resolves():
    text = README.read_text()
    assert len(text.splitlines()) < 150, "the README is a front page: put details in docs/"
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) > 10
    missing = [link for link in local if not (README.parent / link).exists()]
    assert missing == []


def test_the_screenshot_is_a_png_shown_by_the_readme_and_the_docs_home():
    png = README.parent / "docs" / "images" / "dashboard.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](docs/images/dashboard.png)" in README.read_text()
    assert "](images/dashboard.png)" in (README.parent / "docs" / "index.md").read_text()
