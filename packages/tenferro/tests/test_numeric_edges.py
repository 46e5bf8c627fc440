"""Regression tests for silent wrong numbers at the edges of the domain (issue 8, items 2,
4 and 5): values match numpy, derivatives match jax (or the mathematical limit where jax
gives NaN), in traced transforms and on the eager tape, and classes of inputs are drawn
by hypothesis rather than listed."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

A = np.asarray


def _eager_grad(f: Any, *args: Any) -> list[np.ndarray[Any, Any]]:
    tape = tf.Tape()
    leaves = [tape.track(np.asarray(a)) for a in args]
    gradients = tape.grad(f(*leaves), leaves, allow_unused=True)
    return [
        np.zeros_like(a) if g is None else np.asarray(g)
        for g, a in zip(gradients, args, strict=True)
    ]


def _traced_grad(f: Any, *args: Any) -> list[np.ndarray[Any, Any]]:
    result = tf.grad(f, argnums=tuple(range(len(args))))(*(np.asarray(a) for a in args))
    return [np.asarray(g) for g in result]


GRADS = {"traced": _traced_grad, "eager": _eager_grad}


def _hessian(f: Any, x: np.ndarray[Any, Any], mode: str) -> np.ndarray[Any, Any]:
    rows = []
    for e in np.eye(x.size, dtype=x.dtype):
        direction = e.reshape(x.shape)
        if mode == "traced":
            rows.append(np.asarray(tf.hvp(f, (x,), (direction,))).reshape(-1))
        else:
            rows.append(np.asarray(tf.Tape().hvp(f, [x], [direction])).reshape(-1))
    return np.stack(rows)


# ---------------------------------------------------------------------- item 2: prod


@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_prod_hvp_at_a_zero_is_the_exact_one(mode):
    x = A([0.0, 2.0, 3.0])
    e0 = A([1.0, 0.0, 0.0])
    if mode == "traced":
        result = tf.hvp(tf.prod, (x,), (e0,))
    else:
        result = tf.Tape().hvp(tf.prod, [x], [e0])
    np.testing.assert_array_equal(np.asarray(result), [0.0, 3.0, 2.0])


def _prod_hessian(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    n = x.size
    h = np.zeros((n, n), dtype=x.dtype)
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


@fuzz_settings(25)
@given(
    values=st.lists(st.sampled_from([0.0, 0.0, -1.5, 0.5, 2.0, 3.0]), min_size=1, max_size=6),
    mode=st.sampled_from(["traced", "eager"]),
    dtype=st.sampled_from([np.float64, np.complex128]),
)
def test_prod_gradient_and_hessian_with_any_number_of_zeros(values, mode, dtype):
    x = np.asarray(values, dtype=dtype)
    expected_grad = np.array([np.prod(np.delete(x, i)) for i in range(x.size)])

    def loss(v: Any) -> Any:
        return tf.real(tf.prod(v))

    (gradient,) = GRADS[mode](loss, x)
    # Re(prod) has gradient conj(d prod / dx) under the conjugate convention.
    np.testing.assert_allclose(gradient, np.conj(expected_grad), atol=1e-12)
    if dtype == np.float64:
        hessian = _hessian(tf.prod, x, mode)
        np.testing.assert_allclose(hessian, _prod_hessian(x), atol=1e-12)
        np.testing.assert_array_equal(hessian, hessian.T)


def test_prod_over_several_axes_is_checked_to_second_order_at_zeros():
    x = np.arange(24.0).reshape(2, 3, 4) / 7 - 1.0
    x[0, 1, 2] = x[1, 1, 0] = 0.0
    tf.testing.check_grads(lambda v: tf.prod(v, axis=(0, 2)), [x], order=2)
    tf.testing.check_grads(lambda v: tf.prod(v), [x[:, :, :2]], order=2)


# ---------------------------------------------------------------------- item 4: pow


def _derivative(f: Any, order: int) -> Any:
    for _ in range(order):
        f = tf.grad(f)
    return f


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_integer_powers_differentiate_like_polynomials_at_zero(exponent, order):
    expected = (
        math.factorial(exponent) / math.factorial(exponent - order) * 0.0 ** (exponent - order)
        if order <= exponent
        else 0.0
    )
    result = float(np.asarray(_derivative(lambda x: x**exponent, order)(A(0.0))))
    assert result == expected


@pytest.mark.parametrize("exponent", [0, 1, 2])
def test_integer_power_derivatives_on_the_tape_at_zero(exponent):
    tape = tf.Tape()
    x = tape.track(A([0.0, 1.5]))
    (first,) = tape.grad(tf.sum(x**exponent), [x], create_graph=True)
    (second,) = tape.grad(tf.sum(first), [x])
    np.testing.assert_array_equal(
        np.asarray(first), exponent * A([0.0, 1.5]) ** (exponent - 1.0) if exponent else [0.0, 0.0]
    )
    expected_second = exponent * (exponent - 1) * A([0.0, 1.5]) ** max(exponent - 2, 0)
    np.testing.assert_array_equal(np.asarray(second), expected_second)


def test_third_derivative_of_a_masked_square_is_zero_not_nan():
    a = np.zeros((3, 3))
    ones = np.ones((3, 3))

    def f(m: Any) -> Any:
        return tf.sum(tf.triu(m) ** 2)

    def hvp(m: Any) -> Any:
        return tf.hvp(f, (m,), (ones,))

    _, third = tf.jvp(hvp, (a,), (ones,))
    np.testing.assert_array_equal(np.asarray(third), np.zeros((3, 3)))
    np.testing.assert_array_equal(np.asarray(tf.hvp(f, (a,), (ones,))), 2 * np.triu(ones))


# ---------------------------------------------------------------------- item 5


@pytest.mark.parametrize("mode", ["traced", "eager"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_finite_with_finite_gradients_everywhere(mode, dtype):
    x = np.array([-1e4, -800.0, -709.5, -40.0, -1.0, 0.0, 1.0, 40.0, 800.0], dtype=dtype)
    value = np.asarray(tf.sigmoid(x))
    with np.errstate(over="ignore"):
        expected = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(dtype)
    np.testing.assert_allclose(value, expected, rtol=5e-7 if dtype == np.float32 else 1e-15)
    (gradient,) = GRADS[mode](lambda v: tf.sum(tf.sigmoid(v)), x)
    e = np.exp(-np.abs(x.astype(np.float64)))
    np.testing.assert_allclose(gradient, (e / (1 + e) ** 2).astype(dtype), rtol=1e-5, atol=0)
    hessian = _hessian(lambda v: tf.sum(tf.sigmoid(v)), x.astype(np.float64), mode)
    assert np.all(np.isfinite(hessian))


@pytest.mark.parametrize(
    ("a", "b", "grad"),
    [
        (np.inf, np.inf, (0.5, 0.5)),
        (-np.inf, -np.inf, (0.5, 0.5)),
        (np.inf, -np.inf, (1.0, 0.0)),
        (-np.inf, np.inf, (0.0, 1.0)),
        (np.inf, 3.0, (1.0, 0.0)),
        (-np.inf, 3.0, (0.0, 1.0)),
        (2.0, 800.0, (0.0, 1.0)),
        (1.0, 1.0, (0.5, 0.5)),
    ],
)
@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_logaddexp_at_infinities(a, b, grad, mode):
    assert np.asarray(tf.logaddexp(A(a), A(b))) == np.logaddexp(a, b)
    np.testing.assert_array_equal(GRADS[mode](tf.logaddexp, A(a), A(b)), grad)


@fuzz_settings(30)
@given(
    a=st.floats(-50, 50),
    gap=st.sampled_from([0.0, 1e-3, 0.7, -2.0, 30.0]),
)
def test_logaddexp_second_order_is_exact_also_at_ties(a, gap):
    x = np.array([a, a + gap])
    tf.testing.check_grads(lambda v: tf.logaddexp(v[0], v[1]), [x], order=2)
    w = 1 / (1 + np.exp(-gap))  # softmax weight of the second entry
    hessian = _hessian(lambda v: tf.logaddexp(v[0], v[1]), x, "traced")
    s = w * (1 - w)
    np.testing.assert_allclose(hessian, [[s, -s], [-s, s]], atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sinh_cosh_accuracy_near_zero_and_range_up_to_overflow(dtype):
    big = 710.0 if dtype == np.float64 else 89.0
    x = np.array([1e-8, -1e-4, 3e-3, 0.5, -5.0, 19.99, 20.01, -30.0, big, -big], dtype=dtype)
    ulp = np.finfo(dtype).eps
    np.testing.assert_allclose(np.asarray(tf.sinh(x)), np.sinh(x), rtol=4 * ulp, atol=0)
    np.testing.assert_allclose(np.asarray(tf.cosh(x)), np.cosh(x), rtol=4 * ulp, atol=0)
    assert np.all(np.isfinite(np.asarray(tf.sinh(x))))
    assert np.asarray(tf.sinh(A(0.0))) == 0.0
    over = np.array([720.0, -720.0, np.inf, -np.inf])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.asarray(tf.sinh(over)), np.sinh(over))
        np.testing.assert_array_equal(np.asarray(tf.cosh(over)), np.cosh(over))


@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_sinh_cosh_derivatives_across_the_split(mode):
    x = np.array([-30.0, -20.0, -19.0, -1e-3, 0.0, 2.0, 20.0, 21.0, 700.0])
    (d_sinh,) = GRADS[mode](lambda v: tf.sum(tf.sinh(v)), x)
    (d_cosh,) = GRADS[mode](lambda v: tf.sum(tf.cosh(v)), x)
    np.testing.assert_allclose(d_sinh, np.cosh(x), rtol=1e-14)
    np.testing.assert_allclose(d_cosh, np.sinh(x), rtol=1e-14, atol=1e-300)
    tf.testing.check_grads(tf.sinh, [x[:-1]], order=2)
    tf.testing.check_grads(tf.cosh, [x[:-1] + 0.1], order=2)
    z = np.array([1e-5 + 2j, -0.5 - 0.3j])
    np.testing.assert_allclose(np.asarray(tf.sinh(z)), np.sinh(z), rtol=1e-15)
    tf.testing.check_grads(tf.sinh, [z], order=2)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (3e200, 4e200),
        (3e-200, 4e-200),
        (1e308, 1e308),
        (5e-324, 0.0),
        (0.0, 0.0),
        (-3.0, 4.0),
        (np.inf, np.nan),
        (np.nan, 1.0),
        (-np.inf, 2.0),
    ],
)
def test_hypot_neither_overflows_nor_underflows(a, b):
    result = np.asarray(tf.hypot(A(a), A(b)))
    np.testing.assert_array_equal(result, np.hypot(a, b))


@fuzz_settings(30)
@given(
    a=st.floats(-1e300, 1e300, allow_subnormal=True),
    b=st.floats(-1e300, 1e300, allow_subnormal=True),
)
def test_hypot_matches_numpy_over_the_whole_range(a, b):
    np.testing.assert_allclose(np.asarray(tf.hypot(A(a), A(b))), np.hypot(a, b), rtol=4e-16)


@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_hypot_derivatives(mode):
    np.testing.assert_array_equal(GRADS[mode](tf.hypot, A(0.0), A(0.0)), [0.0, 0.0])
    np.testing.assert_allclose(GRADS[mode](tf.hypot, A(3e200), A(-4e200)), [0.6, -0.8])
    tf.testing.check_grads(tf.hypot, [A([3.0, -1.0, 2.0]), A([4.0, 1.0, 2.0])], order=2)


@fuzz_settings(30)
@given(exponent=st.integers(-300, 300))
def test_log10_and_log2_are_exact_at_exact_powers(exponent):
    assert float(np.asarray(tf.log10(A(10.0**exponent)))) == np.log10(10.0**exponent)
    assert float(np.asarray(tf.log2(A(2.0**exponent)))) == exponent
    assert float(np.asarray(tf.log2(np.float32(2.0 ** (exponent % 120))))) == exponent % 120


def test_log10_log2_values_and_derivatives():
    x = np.array([0.3, 1.0, 7.5, 1000.0])
    np.testing.assert_array_equal(np.asarray(tf.log10(x)), np.log10(x))
    np.testing.assert_array_equal(np.asarray(tf.log2(x)), np.log2(x))
    assert np.asarray(tf.log10(A(1000.0))) == 3.0
    assert np.asarray(tf.log2(A(2.0**29))) == 29.0
    for mode in GRADS:
        np.testing.assert_allclose(
            GRADS[mode](lambda v: tf.sum(tf.log10(v)), x)[0], 1 / (x * np.log(10)), rtol=1e-15
        )
    tf.testing.check_grads(tf.log2, [x], order=2)
    tf.testing.check_grads(tf.log10, [np.array([0.5 + 1j, 2 - 0.3j])], order=2)


def test_floor_divide_by_zero_follows_numpy():
    a = np.array([1.0, -1.0, 0.0, 2.5, -7.0, np.inf])
    b = np.array([0.0, 0.0, 0.0, -0.0, 2.0, 0.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(tf.floor_divide(a, b)), np.floor_divide(a, b))
    np.testing.assert_array_equal(
        np.asarray(tf.floor_divide(A([7, -7]), A([2, 2]))), np.floor_divide([7, -7], [2, 2])
    )


@pytest.mark.parametrize("ddof", [0, 1, 2, 3, 5])
def test_var_with_too_many_degrees_of_freedom_removed_is_nan(ddof):
    for x in (np.ones(3), np.array([1.0, 2.0, 4.0])):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.var(x, ddof=ddof)
            expected_std = np.std(x, ddof=ddof)
        result = np.asarray(tf.var(x, ddof=ddof))
        np.testing.assert_array_equal(result, expected)
        np.testing.assert_array_equal(np.asarray(tf.std(x, ddof=ddof)), expected_std)


@pytest.mark.parametrize("mode", ["traced", "eager"])
@pytest.mark.parametrize(
    ("x", "lower", "upper", "grad"),
    [
        (0.0, 2.0, 1.0, (0.0, 0.0, 1.0)),  # lower > upper: the result is upper
        (3.0, 2.0, 1.0, (0.0, 0.0, 1.0)),
        (1.5, 2.0, 1.0, (0.0, 0.0, 1.0)),
        (0.5, 0.0, 1.0, (1.0, 0.0, 0.0)),
        (-1.0, 0.0, 1.0, (0.0, 1.0, 0.0)),
        (2.0, 0.0, 1.0, (0.0, 0.0, 1.0)),
    ],
)
def test_clip_derivative_goes_to_the_bound_that_is_the_result(x, lower, upper, grad, mode):
    assert np.asarray(tf.clip(A(x), A(lower), A(upper))) == np.clip(x, lower, upper)
    np.testing.assert_array_equal(GRADS[mode](tf.clip, A(x), A(lower), A(upper)), grad)


@fuzz_settings(30)
@given(
    st.lists(st.floats(-3, 3), min_size=3, max_size=3).filter(
        lambda v: min(abs(v[0] - v[1]), abs(v[0] - v[2]), abs(v[1] - v[2])) > 1e-2
    )
)
def test_clip_matches_jax_clip_composition_off_ties(values):
    # jnp.clip(x, lo, hi) = minimum(maximum(x, lo), hi): exactly one operand is the result.
    x, lower, upper = (A(v) for v in values)
    result = min(max(values[0], values[1]), values[2])
    expected = [1.0 if v == result else 0.0 for v in values]
    np.testing.assert_array_equal(GRADS["traced"](tf.clip, x, lower, upper), expected)
