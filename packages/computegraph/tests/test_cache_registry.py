"""The cache registry: every BoundedCache and DictCache registers itself, is reported by
cache_stats() (summed by name) and emptied by clear_caches(); dead caches leave it."""

from __future__ import annotations

import gc

from computegraph import (
    BoundedCache,
    DictCache,
    cache_stats,
    clear_caches,
    default_program_cache,
    registered_caches,
)


def test_caches_register_themselves_and_are_cleared_together():
    first: BoundedCache[str, int] = BoundedCache(4, "registry test")
    second: BoundedCache[str, int] = BoundedCache(4, "registry test")
    plain: DictCache[str, int] = DictCache(4, "registry dict")
    first.put("a", 1)
    second.put("b", 2)
    second.put("c", 3)
    plain.put("d", 4)
    assert first in registered_caches()
    assert default_program_cache in registered_caches()
    stats = cache_stats()
    assert stats["registry test"].size == 3  # summed over caches of one name
    assert stats["registry test"].maxsize == 8
    assert stats["registry dict"].size == 1
    clear_caches()
    assert len(first) == len(second) == len(plain) == 0


def test_a_collected_cache_leaves_the_registry():
    cache: BoundedCache[str, int] = BoundedCache(2, "short-lived")
    del cache
    gc.collect()
    assert "short-lived" not in cache_stats()


def test_dict_cache_empties_itself_when_full():
    cache: DictCache[int, int] = DictCache(3, "bounded dict")
    for i in range(10):
        cache.put(i, i)
        assert len(cache) <= 3
    assert cache.stats().evictions == 9  # emptied three times (3 entries each)
