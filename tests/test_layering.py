"""Imports point one way: analysis <- models <- pipelines <- server <- frontend (over HTTP only); the seeded
experiments sit beside the server, on top of pipelines."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"analysis", "models", "pipelines", "server", "frontend", "experiments"}

# package -> (project packages it may import, third-party packages it must never import)
RULES = {
    "analysis": (
        set(),
        {"torch", "transformers", "captum", "fastapi", "starlette", "dash", "plotly", "httpx", "flask"},
    ),
    "models": ({"analysis"}, {"fastapi", "starlette", "dash", "plotly", "httpx", "flask"}),
    "pipelines": ({"analysis", "models"}, {"fastapi", "starlette", "dash", "plotly", "httpx", "flask"}),
    "server": ({"analysis", "models", "pipelines"}, {"dash", "plotly", "flask"}),
    # the seeded experiments train and measure models offline: no web stack, never the server
    "experiments": (
        {"analysis", "models", "pipelines"},
        {"fastapi", "starlette", "dash", "plotly", "httpx", "flask"},
    ),
    # the dashboard reaches the server over HTTP only: it may read server/schemas.py (pure pydantic)
    # and analysis/codec.py (pure numpy wire format), nothing that loads a model
    "frontend": ({"frontend"}, {"torch", "transformers", "captum", "fastapi", "uvicorn"}),
}
FRONTEND_ALLOWED_MODULES = {"attnscope.server.schemas", "attnscope.analysis.codec"}


def imports_of(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, node.lineno))
    return found


def violations(package: str) -> list[str]:
    allowed, banned = RULES[package]
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for module, line in imports_of(path):
            parts = module.split(".")
            where = f"{path.relative_to(ROOT)}:{line} imports {module}"
            if parts[0] in PROJECT:  # the old top-level names are gone: everything is attnscope.*
                bad.append(f"{where} (use attnscope.{module})")
                continue
            top = parts[1] if parts[0] == "attnscope" and len(parts) > 1 else parts[0]
            if top in banned:
                bad.append(where)
            elif top in PROJECT and top != package and top not in allowed:
                if package == "frontend" and any(
                    module == m or module.startswith(m + ".") for m in FRONTEND_ALLOWED_MODULES
                ):
                    continue
                bad.append(where)
    return bad


@pytest.mark.parametrize("package", sorted(RULES))
def test_imports_point_one_way(package):
    assert violations(package) == []


def test_the_checker_catches_a_forbidden_import(tmp_path, monkeypatch):
    pkg = tmp_path / "analysis"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "import torch\nfrom attnscope.server.main import create_app\nfrom attnscope.models import x\n"
        "from models import y\n"
    )
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert len(violations("analysis")) == 4
    fe = tmp_path / "frontend"
    fe.mkdir()
    (fe / "ok.py").write_text(
        "from attnscope.server.schemas import RunPublic\nfrom attnscope.server.main import create_app\n"
    )
    assert [v.split(" imports ")[1] for v in violations("frontend")] == ["attnscope.server.main"]


def test_every_installed_package_has_a_layering_rule():
    """A new top-level package (pyproject's package-dir) must be named here, or its imports go unchecked."""
    import tomllib

    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    layered = {folder for name, folder in dirs.items() if name != "attnscope"}  # attnscope/: the CLI on top
    assert layered == set(RULES) == PROJECT, f"give {sorted(layered - set(RULES))} a rule in RULES and PROJECT"
    assert {"pipelines", "experiments"} <= set(RULES)  # the packages the models/ split made
