"""The eager truncated_svd lane (its two nodes bound directly) and the row-wise SVD JVP
give what the general path and finite differences give: real and complex, wide, tall
and square, degenerate spectra, and second order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.linalg import singular_values


def _matrix(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> Any:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _loss(m: Any, a: Any, rank: int) -> Any:
    u, s, vh = m.linalg.truncated_svd(a, max_rank=rank)
    weights = np.linspace(1.0, 2.0, vh.shape[-1])
    return m.sum(s) + m.sum(m.abs(vh) ** 2 * weights) + m.sum(m.abs(u[..., :1, :]) ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (7, 7), (2, 5, 9)])
def test_eager_lane_equals_general_path(dtype: Any, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    data = _matrix(shape, dtype, rng)
    fast = tf.EagerTensor(data, requires_grad=True)
    _loss(tf, fast, 3).backward()
    # The general path: the same function through svd() and a bound SvdTruncate.
    slow = tf.EagerTensor(data, requires_grad=True)
    u, s, vh = tf.linalg.svd(slow, full_matrices=False)
    u, s, vh = singular_values.SvdTruncate.bind(u, s, vh, rank=3)
    weights = np.linspace(1.0, 2.0, vh.shape[-1])
    (tf.sum(s) + tf.sum(tf.abs(vh) ** 2 * weights) + tf.sum(tf.abs(u[..., :1, :]) ** 2)).backward()
    assert fast.grad is not None
    assert slow.grad is not None
    np.testing.assert_allclose(np.asarray(fast.grad), np.asarray(slow.grad), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 7), (7, 4), (5, 5)])
def test_svd_gradient_matches_finite_differences(dtype: Any, shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(2)
    data = _matrix(shape, dtype, rng)

    def value(a: np.ndarray[Any, Any]) -> float:
        _, s, vh = np.linalg.svd(a, full_matrices=False)  # |Vh|^2: gauge-invariant
        weights = np.linspace(1.0, 2.0, vh.shape[-1])
        return float(np.sum(s[:3]) + np.sum(np.abs(vh[:3]) ** 2 * weights))

    x = tf.EagerTensor(data, requires_grad=True)
    _, s, vh = tf.linalg.truncated_svd(x, max_rank=3)
    weights = np.linspace(1.0, 2.0, vh.shape[-1])
    (tf.sum(s) + tf.sum(tf.abs(vh) ** 2 * weights)).backward()
    assert x.grad is not None
    grad = np.asarray(x.grad)
    direction = _matrix(shape, dtype, np.random.default_rng(3))
    h = 1e-6
    fd = (value(data + h * direction) - value(data - h * direction)) / (2 * h)
    np.testing.assert_allclose(np.real(np.vdot(grad, direction)), fd, rtol=1e-6, atol=1e-7)


def test_degenerate_spectrum_whole_level_loss_is_exact() -> None:
    rng = np.random.default_rng(4)
    q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    q2, _ = np.linalg.qr(rng.standard_normal((9, 9)))
    spectrum = np.array([3.0, 2.0, 2.0, 2.0, 1.0, 0.5])
    a = (q1 * spectrum) @ q2[:6]
    x = tf.EagerTensor(a, requires_grad=True)
    _, s, _ = tf.linalg.truncated_svd(x, max_rank=4)
    tf.sum(s).backward()
    assert x.grad is not None
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(np.asarray(x.grad), u[:, :4] @ vh[:4], atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4)])
def test_second_order_matches_finite_differences_of_the_gradient(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(5)
    data = rng.standard_normal(shape)

    def loss(a: Any) -> Any:
        _, s, vh = tf.linalg.svd(a, full_matrices=False)
        return tf.sum(s**3) + tf.sum(vh[:2] ** 4)

    direction = rng.standard_normal(shape)
    got = tf.hvp(loss, (tf.asarray(data),), (tf.asarray(direction),))
    hvp = np.asarray(got[-1] if isinstance(got, tuple) else got)
    grad = tf.grad(loss)
    h = 1e-5
    fd = (
        np.asarray(grad(tf.asarray(data + h * direction)))
        - np.asarray(grad(tf.asarray(data - h * direction)))
    ) / (2 * h)
    np.testing.assert_allclose(hvp, fd, rtol=1e-5, atol=1e-6)
