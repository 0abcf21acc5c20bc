"""The one lock around model loads and transformers' lazy imports.

transformers resolves its names and model classes lazily, and that first resolution is not
thread-safe: the API preloads MiniLM in a thread while a request may load another checkpoint, and
the second thread then saw "cannot import name 'AutoModel'" (or 'Dinov2Model') from transformers.
Model loads (and the registry's look-ups of transformers' model tables) are serialised under this
re-entrant lock; each load takes about a second, and two at once gain nothing on a few cores.
"""

from __future__ import annotations

import threading

LOAD_LOCK = threading.RLock()
