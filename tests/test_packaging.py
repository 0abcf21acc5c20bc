"""One import namespace: the repository's top-level folders install as ``attnscope.*`` and nothing else
lands at the top of site-packages (a ``models`` or ``server`` package of another project would collide).

Checked on the editable install the tests run in, and on a built wheel installed in a clean venv that
then starts ``attnscope serve`` (its dependencies come from this venv's site-packages on PYTHONPATH,
which Python does not scan for ``.pth`` files, so the editable install cannot leak in).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MAPPED = PYPROJECT["tool"]["setuptools"]["package-dir"]


def _package_folders() -> set[str]:
    """Every folder holding an ``__init__.py`` under the mapped roots, as its ``attnscope.*`` name."""
    names = set()
    for dotted, folder in MAPPED.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            names.add(".".join([dotted, *rel]))
    return names


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert _package_folders() == listed, "add new package folders to [tool.setuptools] packages"


def test_the_old_top_level_names_are_not_importable(tmp_path):
    code = "import importlib.util as u; print([n for n in ('models','analysis','server','frontend') if u.find_spec(n)])"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_built_wheel_exposes_only_attnscope_and_serves(tmp_path):
    wheels, src = tmp_path / "wheels", tmp_path / "src"
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources it builds
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", "tests")
    shutil.copytree(ROOT, src, ignore=ignore)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--wheel-dir",
            str(wheels),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("attnscope-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/")[0] for name in zf.namelist()}
        names = zf.namelist()
    assert {t for t in tops if not t.endswith(".dist-info")} == {"attnscope"}
    assert "attnscope/models/registry.py" in names and "attnscope/frontend/assets/style.css" in names
    assert any(n.startswith("attnscope/models/zoo/checkpoints/") for n in names)

    env_dir = tmp_path / "clean"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    target = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with zipfile.ZipFile(wheel) as zf:  # a wheel install is an unzip plus the entry-point script
        zf.extractall(target)
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"], "ATTNSCOPE_PRELOAD": ""}
    where = subprocess.run(
        [str(py), "-c", "import attnscope.models.registry as r, attnscope.frontend.app; print(r.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(target), where.stdout

    api, dash = _free_port(), _free_port()
    proc = subprocess.Popen(
        [str(py), "-m", "attnscope.cli", "serve", "--port", str(api), "--dash-port", str(dash)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline, ok = time.time() + 90, set()
        while time.time() < deadline and len(ok) < 2:
            for name, url in (("api", f"http://127.0.0.1:{api}/api/v1/health"), ("dash", f"http://127.0.0.1:{dash}/")):
                try:
                    if httpx.get(url, timeout=2).status_code == 200:
                        ok.add(name)
                except httpx.HTTPError:
                    pass
            time.sleep(0.5)
        assert ok == {"api", "dash"}
        models = httpx.get(f"http://127.0.0.1:{api}/api/v1/models", timeout=10).json()
        assert any(m["name"] == "minilm" for m in (models["models"] if isinstance(models, dict) else models))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
