"""Outputs without a derivative: ADRuleError exactly when a derivative flows through them.

A two-output family whose second output has no derivative (``lax.no_derivative`` in
its JVP rule): derivatives through the first output work in every mode; any
derivative requested through the second raises ``ADRuleError`` naming the family, in
forward and reverse mode, traced and eager, and never yields a zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax
from tidu import ADRuleError


def _jvp(xs: Any, ys: Any, ts: Any) -> list[Any]:
    (x,), (dx,) = xs, ts
    return [
        lax.mul(dx, lax.full_like(x, 3.0)),
        lax.no_derivative("test.split", 1, dx, ys[1].meta, "piecewise constant"),
    ]


split = tf.extension.define(
    "test.split",
    infer=lambda m: [m, m],
    impl=lambda x: (3.0 * x, np.floor(x)),
    jvp=_jvp,
)

X = np.array([0.5, -1.25, 2.0])


def _through_first(x: Any) -> Any:
    a, _ = split(x)
    return tf.sum(a * a)


def _through_second(x: Any) -> Any:
    a, b = split(x)
    return tf.sum(a * b)


def _unused_second(x: Any) -> Any:
    a, b = split(x)
    del b
    return tf.sum(tf.sin(a))


@pytest.mark.parametrize("f", [_through_first, _unused_second])
def test_derivatives_not_through_the_output_work_in_every_mode(f):
    tf.testing.check_grads(f, [X], order=2, modes=("fwd", "rev"))
    t = tf.EagerTensor(X, requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(np.asarray(t.grad), np.asarray(tf.grad(f)(X)), rtol=1e-12)


def _traced_grad(x: Any) -> Any:
    return tf.grad(_through_second)(x)


def _traced_jvp(x: Any) -> Any:
    return tf.jvp(_through_second, (x,), (np.ones_like(x),))


def _traced_vjp(x: Any) -> Any:
    _, pullback = tf.vjp(lambda v: split(v)[1], x)
    return pullback(np.ones_like(x))


def _traced_hvp(x: Any) -> Any:
    return tf.hvp(_through_second, (x,), (np.ones_like(x),))


def _eager_backward(x: Any) -> Any:
    t = tf.EagerTensor(x, requires_grad=True)
    _through_second(t).backward()
    return t.grad


def _eager_jvp(x: Any) -> Any:
    tape = tf.Tape()
    t = tape.track(x)
    return tape.push_forward(split(t)[1], t, np.ones_like(x))


@pytest.mark.parametrize(
    "request_derivative",
    [_traced_grad, _traced_jvp, _traced_vjp, _traced_hvp, _eager_backward, _eager_jvp],
)
def test_a_derivative_through_the_output_raises(request_derivative):
    with pytest.raises(ADRuleError, match=r"test\.split.*output 1 has no derivative"):
        request_derivative(X)


def test_eager_leaf_grad_is_untouched_when_backward_raises():
    t = tf.EagerTensor(X, requires_grad=True)
    _through_first(t).backward()
    before = np.asarray(t.grad).copy()
    with pytest.raises(ADRuleError):
        _through_second(t).backward()
    np.testing.assert_array_equal(np.asarray(t.grad), before)


def test_eager_forward_mode_through_the_other_output_works():
    """Forward mode pushes tangents through every output of a node: the output without
    a derivative must not stop a JVP that only needs the other one."""
    tape = tf.Tape()
    t = tape.track(X)
    a, b = split(t)
    tangent = tape.push_forward(tf.sin(a), t, np.ones_like(X))
    np.testing.assert_allclose(np.asarray(tangent), np.cos(3.0 * X) * 3.0, rtol=1e-12)
    _, forward_tangent = tape.jvp(lambda v: tf.sum(split(v)[0] ** 2), [X], [np.ones_like(X)])
    np.testing.assert_allclose(np.asarray(forward_tangent), np.sum(18.0 * X), rtol=1e-12)
    with pytest.raises(ADRuleError, match="output 1 has no derivative"):
        tape.push_forward(tf.sin(a) * b, t, np.ones_like(X))
