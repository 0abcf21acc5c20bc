"""One virtual environment per peer, created on first use under ``.cache/peer-venvs/NAME`` (never the
project's ``.venv``, never during ``make test``).

``ensure(name)`` runs ``python -m venv`` and one ``pip install`` of the peer's pinned requirements
beside ``torch==2.13.0`` (the same pin as the Makefile's ``TORCH_SPEC``: pip resolves the CPU wheel the
same way the project install does, from the configured find-links/index), then writes a stamp with the
requirements; a second call with the same requirements returns at once. Only the standard library is
used here: the peers' side scripts import this module from their own environments' Pythons.

    python bench/peers/venvs.py [NAME ...]    # build them (``make bench-peers`` does this first)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
VENV_ROOT = Path(os.environ.get("ATTNSCOPE_PEER_VENVS", ROOT / ".cache" / "peer-venvs"))

# The peers and their pins (issue #27 names the PyPI versions).
PEERS: dict[str, list[str]] = {
    "transformer-lens": ["transformer-lens==4.3.0"],
    "captum": ["captum==0.9.0", "transformers==5.24.0", "accelerate", "sentencepiece"],
    "nnsight": ["nnsight==0.8.1", "transformers==5.24.0"],
}
STAMP = ".attnscope-peer.json"


def python_of(name: str) -> Path:
    return VENV_ROOT / name / "bin" / "python"


def ensure(name: str, quiet: bool = False) -> Path:
    """The Python of peer ``name``'s environment, built (venv + one pinned pip install) if missing."""
    reqs = [*PEERS[name], TORCH_SPEC]
    folder = VENV_ROOT / name
    stamp = folder / STAMP
    try:
        if json.loads(stamp.read_text()) == reqs and python_of(name).exists():
            return python_of(name)
    except (OSError, ValueError):
        pass
    if not python_of(name).exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    if not quiet:
        print(f"[peers] installing {' '.join(reqs)} into {folder}", flush=True)
    pip = [str(python_of(name)), "-m", "pip", "install", "--disable-pip-version-check", "-q", *reqs]
    subprocess.run(pip, check=True)
    stamp.write_text(json.dumps(reqs) + "\n")
    return python_of(name)


def version_of(name: str, dist: str) -> str:
    out = subprocess.run(
        [str(python_of(name)), "-c", f"from importlib.metadata import version; print(version({dist!r}))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


if __name__ == "__main__":
    for peer in sys.argv[1:] or list(PEERS):
        print(peer, ensure(peer))
