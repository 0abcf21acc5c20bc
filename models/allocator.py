"""glibc malloc's mmap threshold, fixed at model load so big temporary tensors go back to the OS.

A forward pass allocates large short-lived buffers (a causal LM's next-token head over every position is
``[positions, vocabulary]`` float32 logits: 0.58 GB at 2,926 SmolLM2 tokens). glibc serves a block from
``mmap`` only above its mmap threshold, and that threshold is *dynamic*: each time a mapped block is
freed glibc raises the threshold to its size (up to 32 MiB on 64-bit), so later blocks of that size come
from the heap, and a freed heap block stays resident until the top of the heap is free. The run's
resident peak then stays as the process' size long after the run's creation. A fixed threshold turns
the dynamic raising off: every block of ``threshold`` bytes or more is mapped and unmapped on free.

``ATTNSCOPE_MALLOC_MMAP_THRESHOLD`` (bytes, default 1 MiB; ``0`` leaves glibc's default) is applied by
``apply_mmap_threshold`` once per process at model load. On a libc that is not glibc (macOS, musl,
Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
import threading

# the bounds live with the setting (models/settings.py); settings imports nothing of this module
from attnscope.models.settings import DEFAULT_MMAP_THRESHOLD, MAX_MMAP_THRESHOLD  # noqa: F401

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's malloc.h

_lock = threading.Lock()
_applied: int | None = None


def _glibc():
    """glibc's handle, or ``None`` where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it; musl raises AttributeError)
        return libc
    except (OSError, AttributeError):
        return None


def apply_mmap_threshold(threshold: int | None = None) -> int | None:
    """Fix glibc's mmap threshold at ``threshold`` bytes (default: ``ATTNSCOPE_MALLOC_MMAP_THRESHOLD``).

    Returns the threshold in force after the call, or ``None`` when nothing was set (0, not glibc, or
    glibc refused). Idempotent: the same value is set once per process.
    """
    global _applied
    if threshold is None:
        from attnscope.models.settings import model_settings

        threshold = model_settings().malloc_mmap_threshold
    if threshold == 0:
        return _applied
    with _lock:
        if _applied == threshold:
            return _applied
        libc = _glibc()
        if libc is None:
            return None
        if libc.mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(threshold)) != 1:
            log.warning("glibc refused mallopt(M_MMAP_THRESHOLD, %d)", threshold)
            return None
        _applied = threshold
        log.info("glibc malloc mmap threshold fixed at %d bytes", threshold)
        return _applied
