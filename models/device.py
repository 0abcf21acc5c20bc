"""Device choice: CUDA when present, else CPU; ``ATTNSCOPE_DEVICE`` or an argument overrides."""

from __future__ import annotations

import os

import torch


def pick_device(preference: str | None = None) -> torch.device:
    """``"auto"`` (default) -> ``cuda`` if available else ``cpu``; otherwise the named device.

    Raises ``ValueError`` when CUDA is asked for but not available.
    """
    pref = (preference or os.environ.get("ATTNSCOPE_DEVICE") or "auto").strip().lower()
    if pref == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(pref)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {pref!r} was requested but CUDA is not available; use 'cpu' or 'auto'")
    return dev
