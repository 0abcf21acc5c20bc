"""attnscope: attention interpretability and visualisation.

From a notebook::

    import attnscope
    model = attnscope.load("minilm")
    maps = attnscope.attention(model, "The cat sat on the mat.")
    maps.shape            # (6, 12, 9, 9): [layer, head, query, key]
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["load", "attention", "capture"]


def load(name: str = "minilm", device: str | None = None):
    """Load a model by registry name (``minilm``, ``local:<folder>``); CUDA when present."""
    from attnscope.models.loading import load_model

    return load_model(name, device)


def capture(model, text: str):
    """Run ``text`` and return the full ``Capture`` (maps, model output, hidden states)."""
    from attnscope.models.capture import capture as _capture

    return _capture(model, text)


def attention(model, text: str):
    """Run ``text`` and return its ``AttentionMaps`` ``[layer, head, query, key]``."""
    return capture(model, text).maps
