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


def test_the_readme_reports_smollm2s_heads_as_the_results_page_does():
    """Sink, previous-token and induction heads of SmolLM2 with their scores, the same as the table of
    docs/results/llm.md (which names the command that measures them)."""
    text = " ".join(README.read_text().split())  # line breaks do not matter
    results = (README.parent / "docs" / "results" / "llm.md").read_text()
    cell = r"(L\d+H\d+) \| ([\d.]+)"  # a head and its score
    row = re.search(rf"^\| {cell} \| {cell} \| .* \| {cell} ", results, re.M)
    sink, sink_score, prev, prev_score, induction, induction_score = row.groups()
    n_sinks = re.search(r"(\d+) are sink heads", results).group(1)
    assert f"{n_sinks} are sink heads" in text and f"{sink} {sink_score}" in text.replace("(", "")
    assert f"{prev} the strongest previous-token head ({prev_score})" in text
    assert f"{induction} the strongest induction head ({induction_score}" in text
    assert "attnscope heads --model smollm2" in text and "docs/results/llm.md#smollm2s-heads" in text
