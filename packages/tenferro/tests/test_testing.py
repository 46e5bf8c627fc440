"""tf.testing.check_grads passes correct derivatives and catches wrong ones at each order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax

X = np.array([0.4, -1.3, 0.9])
Z = np.array([0.4 + 1.0j, -1.3 - 0.2j])


def _define(name: str, jvp: Any = None, transpose: Any = None, linear: bool = False) -> Any:
    return tf.extension.define(
        name,
        infer=lambda x: x,
        impl=np.sin if not linear else (lambda x: 2 * x),
        jvp=jvp,
        transpose=transpose,
        linear=linear,
    )


# sin with a JVP that is right at first order (to 1e-7) but whose coefficient is
# piecewise constant (cos of x rounded to 1e-6): its derivative, and so sin's second
# derivative, comes out zero instead of -sin.
def _frozen_cos(x: Any) -> Any:
    scale = lax.full_like(x, 1e6)
    return lax.cos(lax.div(lax.round(lax.mul(x, scale), "nearest_even"), scale))


right = _define("check.sin", jvp=lambda xs, ys, ts: [lax.mul(ts[0], lax.cos(xs[0]))])
wrong_first = _define("check.sin_wrong", jvp=lambda xs, ys, ts: [lax.mul(ts[0], lax.sin(xs[0]))])
conjugated = tf.extension.define(
    "check.exp_conjugated",
    infer=lambda x: x,
    impl=np.exp,
    jvp=lambda xs, ys, ts: [lax.mul(ts[0], lax.conj(ys[0]))],
)
wrong_transpose = _define(
    "check.double_wrong_transpose",
    linear=True,
    transpose=lambda cts, xs, active: [lax.mul(cts[0], lax.full_like(cts[0], 3))],
)


def test_correct_functions_pass_to_third_order():
    tf.testing.check_grads(lambda x: right(x), [X], order=3)
    tf.testing.check_grads(lambda x, y: tf.sum(tf.tanh(x) * y), [X, X[::-1].copy()], order=3)
    tf.testing.check_grads(lambda z: tf.exp(z) * tf.conj(z), [Z], order=3)
    tf.testing.check_grads(lambda x, n: x * n, [X, np.arange(3)], order=2)  # int held fixed


def test_a_wrong_jvp_is_caught_by_finite_differences():
    with pytest.raises(AssertionError, match="JVP does not match finite differences"):
        tf.testing.check_grads(lambda x: wrong_first(x), [X], order=1, modes=("fwd",))


def test_a_conjugation_mistake_is_caught():
    with pytest.raises(AssertionError, match="finite differences"):
        tf.testing.check_grads(lambda z: conjugated(z), [Z], order=1, modes=("fwd",))


def test_a_wrong_transpose_is_caught_by_the_adjoint_identity():
    tf.testing.check_grads(lambda x: wrong_transpose(x), [X], order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="adjoint identity"):
        tf.testing.check_grads(lambda x: wrong_transpose(x), [X], order=1, modes=("rev",))


def test_a_wrong_second_derivative_is_caught_only_at_order_two():
    frozen = _define(
        "check.sin_frozen", jvp=lambda xs, ys, ts: [lax.mul(ts[0], _frozen_cos(xs[0]))]
    )
    tf.testing.check_grads(lambda x: frozen(x), [X], order=1)
    with pytest.raises(AssertionError, match=r"of JVP|of VJP"):
        tf.testing.check_grads(lambda x: frozen(x), [X], order=2)


def test_argument_validation():
    with pytest.raises(ValueError, match="order"):
        tf.testing.check_grads(tf.sin, [X], order=0)
    with pytest.raises(ValueError, match="modes"):
        tf.testing.check_grads(tf.sin, [X], modes=("sideways",))


def test_numerical_jvp():
    (tangent,) = tf.testing.numerical_jvp(tf.sin, [X], [np.ones(3)], 1e-6)
    np.testing.assert_allclose(tangent, np.cos(X), atol=1e-8)
