"""Caches hold structure, never user data (issue 8, item 13): once the user drops a
traced value, its data is freed even though its program stays cached."""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import numpy as np

import tenferro as tf

MEGABYTE = 1 << 20


def _leaf_key(t: Any) -> Any:
    return t.key.key


def test_evaluated_leaf_data_is_freed_when_dropped():
    t = tf.traced(np.ones(1000))
    dead = weakref.ref(_leaf_key(t))
    t.eval()
    (tf.sin(t) * 2).sum().eval()
    del t
    gc.collect()
    assert dead() is None


def test_checkpoints_and_placeholders_are_not_kept_by_the_program_cache():
    x = tf.traced(np.arange(4.0))
    saved = tf.exp(x).checkpoint()
    p = tf.placeholder((4,), name="p")
    (saved * p).sum().eval({p: np.ones(4)})
    refs = [weakref.ref(_leaf_key(v)) for v in (x, saved, p)]
    del x, saved, p
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_repeated_traced_evaluation_does_not_grow_memory():
    def once() -> None:
        t = tf.traced(np.random.default_rng(0).standard_normal(MEGABYTE // 8))
        (t * 2.0 + 1.0).eval()

    once()  # compile the program outside the measurement
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(30):
            once()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end - start < 2 * MEGABYTE  # 30 MB were evaluated; none of it may stay


def test_transform_caches_do_not_keep_captured_arrays():
    def step() -> None:
        batch = np.random.default_rng(1).standard_normal(MEGABYTE // 8)

        def f(w: Any) -> Any:
            return tf.sum(batch * w)

        w = np.zeros(batch.shape)
        tf.grad(f)(w)
        tf.jvp(f, (w,), (w,))
        tf.vjp(f, w)[1](np.float64(1.0))
        tf.hvp(f, (w,), (w,))

    step()
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(10):
            step()
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end - start < 2 * MEGABYTE


def test_clear_caches_empties_the_traced_caches():
    from tenferro.traced import program
    from tenferro.transforms import plans

    (tf.traced(np.ones(3)) * 2.5).eval()
    tf.grad(lambda w: tf.sum(w * w))(np.ones(3))
    assert len(program.programs) > 0
    assert len(plans._GRAD_PROGRAMS) > 0
    tf.clear_caches()
    assert len(program.programs) == 0
    assert len(plans._GRAD_PROGRAMS) == 0
