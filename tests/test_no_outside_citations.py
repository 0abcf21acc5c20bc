"""No comment, docstring or doc page cites a file a clone of the repository does not contain.

The project was written next to notes outside the repository (a methods write-up, a design note, an
anchors list, notes on LLMs, a shared folder). Code and docs cite the docs pages (``docs/methods/...``)
or the papers instead; this test fails if a citation of the outside files comes back.
"""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", "build", "node_modules", "__pycache__", ".ruff_cache", ".pytest_cache"}
CODE = {".py", ".sh", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".js", ".css"}
CODE_NAMES = {"Makefile", "Dockerfile"}
# built from pieces so that this file does not match itself
OUTSIDE_NOTES = re.compile(r"\b(?:" + "|".join(["methods", "design", "anchors"]) + r")\.md\b|\bllm" + "-notes")
OUTSIDE_FOLDER = re.compile(re.escape("../" + "shared"))


def _files():
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP]
        for name in names:
            path = Path(folder) / name
            yield path.relative_to(ROOT), path


def _hits(pattern, keep):
    hits = []
    for rel, path in _files():
        if not keep(rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{rel}:{number}: {line.strip()}")
    return hits


def _is_code(rel):
    return rel.suffix in CODE or rel.name in CODE_NAMES


def test_no_code_or_doc_cites_the_outside_notes():
    hits = _hits(OUTSIDE_NOTES, lambda rel: _is_code(rel) or rel.suffix == ".md")
    assert hits == [], "cite the docs page (docs/methods/...) or the paper instead:\n" + "\n".join(hits)


def test_no_code_cites_the_outside_folder():
    # docs/guide/configuration.md may state ATTNSCOPE_DATA_DIR's default; code says "the data folder"
    hits = _hits(OUTSIDE_FOLDER, _is_code)
    assert hits == [], "name the setting (ATTNSCOPE_DATA_DIR) instead:\n" + "\n".join(hits)


def test_the_patterns_catch_what_they_are_for():
    assert OUTSIDE_NOTES.search("see " + "methods" + ".md 3.3") and OUTSIDE_NOTES.search("llm" + "-notes")
    assert not OUTSIDE_NOTES.search("docs/methods/lipschitz.md")
    assert OUTSIDE_FOLDER.search("default ../" + "shared/data")
