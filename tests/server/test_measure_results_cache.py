"""The measure routes' result cache: bounded, least recently used goes first."""

from attnscope.server.routes.measure import _Results


def test_results_cache_evicts_the_least_recently_used():
    cache = _Results(size=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.get("missing") is None
