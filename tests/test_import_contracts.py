"""Imports point one way (``[tool.importlinter]`` in pyproject.toml): analysis <- models <- pipelines <-
server | experiments; the dashboard imports only ``attnscope.server.schemas`` and
``attnscope.analysis.codec`` of the project, and those two stay pure.

import-linter reads a package from one folder, while the checkout maps ``attnscope.*`` onto several
top-level folders (pyproject's ``package-dir``); so the test lays the modules out as a wheel installs
them, in a temporary folder, and runs ``lint-imports`` on that copy with the repository's contracts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS = len(tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"])


def installed_layout(dest: Path, root: Path = ROOT) -> Path:
    """Copy every module's ``.py`` file to where a wheel would put it: ``dest/attnscope/...``."""
    dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for dotted, folder in sorted(dirs.items()):
        target = dest.joinpath(*dotted.split("."))
        shutil.copytree(
            root / folder,
            target,
            dirs_exist_ok=True,
            ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir())],
        )
    return dest


def lint_imports(layout: Path, config: Path = PYPROJECT) -> subprocess.CompletedProcess:
    """``lint-imports`` (import-linter's command) on ``layout``, as a subprocess of this Python."""
    run = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    env = {**os.environ, "PYTHONPATH": str(layout)}
    return subprocess.run(
        [sys.executable, "-c", run, str(config), "--no-cache"],
        cwd=layout,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_import_contracts_hold(tmp_path):
    result = lint_imports(installed_layout(tmp_path / "site"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in result.stdout


def test_the_contracts_catch_imports_against_the_layers(tmp_path):
    layout = installed_layout(tmp_path / "site")
    (layout / "attnscope" / "analysis" / "bad_up.py").write_text("from attnscope.models import loading\n")
    (layout / "attnscope" / "frontend" / "bad_reach.py").write_text(
        "def f():\n    from attnscope.server.service import RunService\n    return RunService\n"
    )
    (layout / "attnscope" / "server" / "schemas" / "bad_heavy.py").write_text("import torch\n")
    (layout / "attnscope" / "pipelines" / "bad_old.py").write_text("import models.registry\n")
    (layout / "attnscope" / "server" / "jobs" / "bad_web.py").write_text("from attnscope.server.routes import jobs\n")
    (layout / "attnscope" / "pipelines" / "interventions" / "bad_probe.py").write_text(
        "def f():\n    from attnscope.models.backends.hf import HFBackend\n    return HFBackend\n"
    )
    (layout / "attnscope" / "server" / "routes" / "bad_zoo.py").write_text("from attnscope.models.zoo import nets\n")
    result = lint_imports(layout)
    assert result.returncode != 0
    out = result.stdout
    assert "attnscope.analysis.bad_up -> attnscope.models" in out
    assert "attnscope.frontend.bad_reach -> attnscope.server.service" in out
    assert "attnscope.server.schemas.bad_heavy -> torch" in out
    assert "attnscope.pipelines.bad_old -> models" in out
    assert "attnscope.server.jobs.bad_web -> attnscope.server.routes" in out
    assert "attnscope.pipelines.interventions.bad_probe -> attnscope.models.backends.hf" in out
    assert "attnscope.server.routes.bad_zoo -> attnscope.models.zoo.nets" in out
    # bad_probe breaks two contracts (site-based engines, and a model is its interface outside models)
    assert f"Contracts: {CONTRACTS - 8} kept, 8 broken." in out
