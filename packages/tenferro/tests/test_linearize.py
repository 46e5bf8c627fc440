"""``tf.linearize`` evaluates the primal once; its ``jvp_fn`` runs only the linear map.

The primal work is observed through an extension family that counts its evaluations:
``jvp_fn`` never evaluates it again, however often it is called, and its results equal
``tf.jvp``'s and finite differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro import lax

EVALUATIONS: list[int] = []


def _impl(x: Any) -> Any:
    EVALUATIONS.append(1)
    return np.exp(x)


def _jvp(xs: Any, ys: Any, ts: Any) -> list[Any]:
    return [lax.mul(ts[0], ys[0])]


counted_exp = tf.extension.define("test.linearize.exp", infer=lambda m: m, impl=_impl, jvp=_jvp)


def f(x: Any, y: Any) -> Any:
    e = counted_exp(x * y)
    return tf.sin(e) * y, tf.sum(e * x)


def test_jvp_fn_runs_no_primal_work():
    x, y = np.array([0.3, -0.2, 0.1]), np.array([1.5, 0.5, -1.0])
    EVALUATIONS.clear()
    out, jvp_fn = tf.linearize(f, x, y)
    assert len(EVALUATIONS) == 1  # the primal, once
    rng = np.random.default_rng(0)
    for _ in range(3):
        tx, ty = rng.standard_normal(3), rng.standard_normal(3)
        ours = jvp_fn(tx, ty)
        expected = tf.jvp(f, (x, y), (tx, ty))[1]
        for a, b in zip(ours, expected, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    EVALUATIONS.clear()
    jvp_fn(np.ones(3), np.ones(3))
    assert EVALUATIONS == []
    for a, b in zip(out, f(tf.Tensor(x), tf.Tensor(y)), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


@given(
    st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=2),
    st.lists(st.floats(-1, 1), min_size=2, max_size=2),
)
def test_linearize_equals_finite_differences(point, direction):
    x = np.array(point)
    t = np.array(direction)

    def g(v: Any) -> Any:
        return tf.tanh(v) * tf.sum(tf.exp(v)) + v**3

    _, jvp_fn = tf.linearize(g, x)
    step = 1e-6
    fd = (np.asarray(g(tf.Tensor(x + step * t))) - np.asarray(g(tf.Tensor(x - step * t)))) / (
        2 * step
    )
    np.testing.assert_allclose(np.asarray(jvp_fn(t)), fd, rtol=1e-6, atol=1e-8)


def test_jvp_fn_uses_the_values_read_at_linearize_time_and_checks_tangents():
    scale = [np.array([2.0, 3.0])]

    def g(v: Any) -> Any:
        return v * scale[0]

    _, jvp_fn = tf.linearize(g, np.ones(2))
    scale[0] = np.array([10.0, 10.0])
    np.testing.assert_allclose(np.asarray(jvp_fn(np.ones(2))), [2.0, 3.0])
    with pytest.raises(tf.ShapeError, match="linearize"):
        jvp_fn(np.ones(3))
    with pytest.raises(tf.ShapeError, match="linearize"):
        jvp_fn(np.ones(2), np.ones(2))


def test_linearize_of_a_complex_function():
    z = np.array([0.5 + 1.0j, -0.3 + 0.2j])

    def g(v: Any) -> Any:
        return tf.exp(v) * tf.conj(v)

    _, jvp_fn = tf.linearize(g, z)
    t = np.array([0.1 - 0.2j, 1.0 + 0.5j])
    np.testing.assert_allclose(
        np.asarray(jvp_fn(t)), np.asarray(tf.jvp(g, (z,), (t,))[1]), rtol=1e-12
    )
