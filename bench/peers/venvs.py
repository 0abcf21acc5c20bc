"""One virtual environment per peer, created on first use under ``.cache/peer-venvs/NAME`` (never the
project's ``.venv``, never during ``make test``).

``ensure(name)`` runs ``python -m venv`` and one ``pip install`` of the peer's pinned requirements
beside ``torch==2.13.0`` (the same pin as the Makefile's ``TORCH_SPEC``: pip resolves the CPU wheel the
same way the project install does, from the configured find-links/index), then (``NO_DEPS``) the peer
packages whose declared requirements cannot be installed as they stand, without their dependencies; then
it writes a stamp with the requirements; a second call with the same requirements returns at once. Only
the standard library is used here: the peers' side scripts import this module from their own environments' Pythons.

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
    # nnterp 1.3.0 imports nnsight.intervention.tracing.globals, which nnsight 0.8 no longer has.
    "nnterp": ["nnterp==1.3.0", "nnsight==0.7.0", "transformers==5.24.0"],
    # ferret-xai 0.4.2 caps transformers, captum and numpy below their current majors.
    # (and pyarrow, through datasets: pyarrow 20 and later import only with numpy 2).
    "ferret": ["ferret-xai==0.4.2", "transformers<5", "captum<0.8", "numpy<2", "pyarrow<20"],
    # inseq 0.7.1 lists eleven nvidia-*-cu11 wheels as Linux requirements (several GB, unused on a
    # CPU): its own requirements are installed here and inseq itself without dependencies (NO_DEPS).
    "inseq": [
        "captum==0.9.0",
        "transformers[sentencepiece,tokenizers]==5.24.0",
        "jaxtyping>=0.2.25",
        "typeguard<=2.13.3",
        "rich>=10.13.0",
        "matplotlib>=3.5.3",
        "tqdm>=4.64.0",
        "treescope>=0.1.0",
        "protobuf>=4.25.8",
    ],
    # auto-circuit 1.0.1 builds on HookedTransformer, which TransformerLens 4 removed, and imports
    # HookedTransformerKeyValueCache from the package's top level, which 3.x no longer exports: 2.18
    # (transformers < 5). Its tracr, kaleido and word2word requirements serve tasks not measured here.
    # TransformerLens 2.18 keeps numpy below 2, so pyarrow (through datasets) below 20, as for ferret.
    "auto-circuit": [
        "transformer-lens==2.18.0",
        "transformers<5",
        "pyarrow<20",
        "einops>=0.6.1",
        "ordered-set>=4.1.0",
        "plotly>=5.18.0",
        "blobfile>=2.0.2",
        "vscode-tqdm>=4.66.2",
    ],
}
# Installed after PEERS[name], with ``--no-deps`` (their declared requirements are listed above instead).
NO_DEPS: dict[str, list[str]] = {"inseq": ["inseq==0.7.1"], "auto-circuit": ["auto-circuit==1.0.1"]}
STAMP = ".attnscope-peer.json"


def python_of(name: str) -> Path:
    return VENV_ROOT / name / "bin" / "python"


def ensure(name: str, quiet: bool = False) -> Path:
    """The Python of peer ``name``'s environment, built (venv + one pinned pip install) if missing."""
    reqs = [*PEERS[name], TORCH_SPEC]
    no_deps = NO_DEPS.get(name, [])
    folder = VENV_ROOT / name
    stamp = folder / STAMP
    try:
        if json.loads(stamp.read_text()) == [*reqs, *no_deps] and python_of(name).exists():
            return python_of(name)
    except (OSError, ValueError):
        pass
    if not python_of(name).exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    if not quiet:
        print(f"[peers] installing {' '.join(reqs)} into {folder}", flush=True)
    pip = [str(python_of(name)), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, *reqs], check=True)
    if no_deps:
        subprocess.run([*pip, "--no-deps", *no_deps, TORCH_SPEC], check=True)
    stamp.write_text(json.dumps([*reqs, *no_deps]) + "\n")
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
