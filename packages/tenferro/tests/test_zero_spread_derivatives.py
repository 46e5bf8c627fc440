"""Derivatives of spreads and norms where they are not differentiable are PyTorch's
subgradient 0, never NaN: ``std`` where the variance is 0 (constant slices, length-1
axes, scalars) and vector norms of every order at zero entries and zero vectors. Random
inputs with many repeated values and zeros are checked against the closed forms, in
reverse and forward mode, on the tape and traced; where a slice is degenerate the
derivative must be exactly 0, elsewhere the textbook formula."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tf

values = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4),
    elements=st.sampled_from([0.0, 0.0, 1.5, -2.0, 0.25]),
)


def _axis_of(x: np.ndarray[Any, Any], choice: int) -> int | None:
    return None if choice == 0 else (choice - 1) % x.ndim


def _spread_gradient(x: Any, axis: Any, ddof: int, squared: bool) -> np.ndarray[Any, Any]:
    """d sum(std or var of x over axis) / dx, with 0 where the standard deviation is 0."""
    n = x.size if axis is None else x.shape[axis]
    centered = x - x.mean(axis=axis, keepdims=True)
    if squared:
        return 2 * centered / (n - ddof)
    spread = x.std(axis=axis, ddof=ddof, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        gradient = centered / ((n - ddof) * spread)
    return np.where(spread == 0, 0.0, gradient)


def _norm_gradient(x: Any, order: float, axis: Any) -> np.ndarray[Any, Any]:
    """d sum(vector_norm(x, order, axis)) / dx: sign(x)|x|^(p-1) norm^(1-p), 0 at zero
    entries and zero norms (PyTorch's subgradient)."""
    if order == 0:
        return np.zeros_like(x)
    magnitude = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = np.sum(magnitude**order, axis=axis, keepdims=True) ** (1 / order)
        gradient = np.sign(x) * magnitude ** (order - 1) * norm ** (1 - order)
    return np.where((x == 0) | (norm == 0), 0.0, gradient)


def _check(loss: Any, x: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> None:
    direction = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    traced = np.asarray(tf.grad(loss)(x))
    tape = tf.Tape()
    leaf = tape.track(x)
    eager = np.asarray(tape.grad(loss(leaf), leaf))
    _, forward = tf.jvp(loss, (x,), (direction,))
    for gradient in (traced, eager):
        assert np.all(np.isfinite(gradient))
        np.testing.assert_allclose(gradient, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(float(forward), np.sum(expected * direction), atol=1e-12)


@fuzz_settings(80)
@given(x=values, choice=st.integers(0, 2), ddof=st.integers(0, 1), squared=st.booleans())
def test_std_and_var_derivatives_are_zero_where_the_spread_is_zero(
    x: Any, choice: int, ddof: int, squared: bool
) -> None:
    axis = _axis_of(x, choice)
    n = x.size if axis is None else x.shape[axis]
    if n - ddof <= 0:  # no degrees of freedom: NaN values, as numpy's and PyTorch's
        return
    function = tf.var if squared else tf.std

    def loss(a: Any) -> Any:
        return tf.sum(function(a, axis=axis, ddof=ddof))

    _check(loss, x, _spread_gradient(x, axis, ddof, squared))


@fuzz_settings(80)
@given(
    x=values,
    choice=st.integers(0, 2),
    order=st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0]),
)
def test_vector_norm_derivatives_are_zero_at_zero_entries_and_norms(
    x: Any, choice: int, order: float
) -> None:
    axis = _axis_of(x, choice)

    def loss(a: Any) -> Any:
        return tf.sum(tf.linalg.vector_norm(a, ord=order, axis=axis))

    _check(loss, x, _norm_gradient(x, order, axis))


@pytest.mark.parametrize("function", [tf.std, tf.var])
def test_scalars_and_length_one_axes(function: Any) -> None:
    assert float(tf.grad(function)(3.5)) == 0.0
    gradient = tf.grad(lambda a: tf.sum(function(a, axis=1)))(np.ones((2, 1)))
    np.testing.assert_array_equal(gradient, np.zeros((2, 1)))
    # the second derivative (through the guard) is finite too
    assert np.isfinite(float(tf.grad(tf.grad(function))(3.5)))


def test_against_pytorch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.choice([0.0, 1.0, -2.0], (3, 4))
    x[1] = 0.7
    for order in (-1.0, 0.5, 2.0, 3.0):
        t = torch.tensor(x, requires_grad=True)
        torch.linalg.vector_norm(t, ord=order, dim=1).sum().backward()
        ours = tf.grad(lambda a, p=order: tf.sum(tf.linalg.vector_norm(a, ord=p, axis=1)))(x)
        np.testing.assert_allclose(ours, t.grad.numpy(), atol=1e-12)
    t = torch.tensor(x, requires_grad=True)
    torch.std(t, dim=1, correction=0).sum().backward()
    ours = tf.grad(lambda a: tf.sum(tf.std(a, axis=1)))(x)
    np.testing.assert_allclose(ours, t.grad.numpy(), atol=1e-12)
