"""Device choice: CUDA when present, else CPU; ``ATTNSCOPE_DEVICE`` or an argument overrides."""

from __future__ import annotations

import torch

from attnscope.models.settings import model_settings


def pick_device(preference: str | None = None) -> torch.device:
    """``"auto"`` (default) -> ``cuda`` if available else ``cpu``; otherwise the named device.

    Raises ``ValueError`` when CUDA is asked for but not available.
    """
    pref = (preference or model_settings().device).strip().lower()
    if pref == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(pref)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {pref!r} was requested but CUDA is not available; use 'cpu' or 'auto'")
    return dev
