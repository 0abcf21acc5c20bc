"""Load the docs hook modules (``docs/_hooks/*.py``, not a package) for the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "docs" / "_hooks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"attnscope_docs_test_{name}", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
