"""The per-run recording cache: a second request on a run reuses its recording, the bytes held stay
under the bound (least recently used dropped first), and a recording past the bound is not kept."""

from __future__ import annotations

import pytest
import torch

from attnscope.pipelines.writes.cache import RecordingCache
from attnscope.pipelines.writes.recorded import RecordedWrites


def recording(n_tokens: int) -> RecordedWrites:
    """A recording of 1 block, ``n_tokens`` positions, d_model 4: (2 + 1 + 1) * n * 4 floats."""
    t = torch.zeros
    return RecordedWrites(None, t(2, n_tokens, 4), t(1, n_tokens, 1, 4), t(1, n_tokens, 4), None, ())


def test_a_run_is_recorded_once_and_the_bytes_stay_bounded():
    assert recording(10).nbytes == 4 * 4 * 10 * 4
    cache = RecordingCache(max_bytes=3 * 640)
    calls = []

    def make(n):
        return lambda: calls.append(n) or recording(n)

    first = cache.get("a", make(10))
    assert cache.get("a", make(10)) is first and calls == [10] and (cache.hits, cache.misses) == (1, 1)
    cache.get("b", make(10))
    cache.get("c", make(10))
    cache.get("a", make(10))  # a is now the most recent: b goes first
    cache.get("d", make(10))
    assert len(cache) == 3 and cache.nbytes <= cache.max_bytes
    cache.get("a", make(10))
    assert calls == [10, 10, 10, 10] and cache.hits == 3
    big = cache.get("e", make(40))  # 2,560 bytes: returned, not kept
    assert big.nbytes > cache.max_bytes and cache.nbytes <= cache.max_bytes
    cache.get("e", make(40))
    assert calls[-2:] == [40, 40]
    with pytest.raises(ValueError, match="at least 1"):
        RecordingCache(0)
