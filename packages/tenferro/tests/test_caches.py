"""Every cache of the stack is named, bounded, reported by tf.cache_stats() and emptied
by tf.clear_caches(); caches hold structure, so results do not change after clearing."""

from __future__ import annotations

from typing import Any

import numpy as np

import computegraph
import tenferro as tf


def _exercise() -> list[Any]:
    """Touch every cached path: eager tape, transforms, traced programs, composites."""
    results = []
    x = tf.EagerTensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
    tf.sum(tf.sin(x) * 2.0 + x**2).backward()
    results.append(x.grad)
    loss = lambda v: tf.sum(tf.exp(v) * v)  # noqa: E731
    results.append(tf.grad(loss)(np.ones(3)))
    results.append(tf.hvp(loss, (np.ones(3),), (np.arange(3.0),)))
    results.append(tf.jit(lambda v: v @ v.T)(np.eye(2)))
    results.append((tf.traced(np.arange(3.0)) * 2.5).eval())
    tape = tf.Tape()
    y = tape.track(np.arange(4.0))
    s = tf.composite(lambda v: tf.sum(tf.tanh(v) * v))(y)
    results.append(tape.grad(s, y))
    return [np.asarray(r) for r in results]


def test_every_cache_is_named_bounded_and_registered():
    _exercise()
    caches = computegraph.registered_caches()
    names = {c.name for c in caches}
    for expected in (
        "primitive instances",
        "tape plans",
        "derivatives",
        "traced programs",
        "promotions",
        "scalar operands",
    ):
        assert expected in names
    for cache in caches:
        stats = cache.stats()
        assert stats.maxsize > 0, cache.name
        assert stats.size <= stats.maxsize, cache.name
    assert tf.cache_stats().keys() == names


def test_clear_caches_empties_every_cache_and_changes_no_result():
    before = _exercise()
    assert any(s.size for s in tf.cache_stats().values())
    tf.clear_caches()
    assert {name: s.size for name, s in tf.cache_stats().items() if s.size} == {}
    after = _exercise()
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_dict_cache_stays_within_its_bound():
    cache: computegraph.DictCache[int, int] = computegraph.DictCache(8, "test bound")
    for i in range(100):
        cache.put(i, i)
        assert len(cache) <= 8
    assert cache.stats().evictions > 0
    assert cache in computegraph.registered_caches()
