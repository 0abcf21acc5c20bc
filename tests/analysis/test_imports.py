"""analysis/ is numpy/scipy only: no torch, no web stack, no model code (CONTRIBUTING.md, layering rule)."""

import ast
import sys
from pathlib import Path

import attnscope.analysis.maps

ALLOWED_THIRD_PARTY = {"numpy", "scipy", "sklearn", "tqdm", "ot"}  # ot: POT, optimal transport


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_analysis_imports_only_numpy_scipy_and_the_standard_library():
    root = Path(attnscope.analysis.maps.__file__).parent
    files = sorted(root.glob("*.py"))
    assert len(files) > 5
    bad = {}
    for path in files:
        for name in _imports(path):
            if name in sys.stdlib_module_names or name in ALLOWED_THIRD_PARTY | {"attnscope", "__future__"}:
                continue
            bad.setdefault(path.name, set()).add(name)
    assert not bad, f"forbidden imports in analysis/: {bad}"
