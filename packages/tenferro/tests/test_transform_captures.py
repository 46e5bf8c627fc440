"""Transforms compute with the values a function reads at call time (issue 8, item 3).

``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``linearize`` and ``hvp`` trace the
function at every call, as ``jax.grad`` does, so data it reads from its closure or
from globals is never frozen; their derivative programs are cached by structure
(captured arrays are program inputs), so a changed batch reuses the program.
Only ``jit`` freezes captured values (documented, like ``jax.jit``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tf
from tenferro.transforms import plans

BATCH = np.array([1.0, 2.0, 3.0])
W = np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 0.5, -2.0])


def loss(w: Any) -> Any:
    """Reads the global ``BATCH`` at call time."""
    return tf.sum(BATCH * tf.sin(w) * w)


def loss_np(w: np.ndarray, batch: np.ndarray) -> float:
    return float(np.sum(batch * np.sin(w) * w))


def gradient_np(w: np.ndarray, batch: np.ndarray) -> np.ndarray:
    return batch * (np.cos(w) * w + np.sin(w))


def hessian_diagonal_np(w: np.ndarray, batch: np.ndarray) -> np.ndarray:
    return batch * (2 * np.cos(w) - np.sin(w) * w)


def close(actual: Any, expected: Any, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def set_batch(value: np.ndarray) -> None:
    global BATCH
    BATCH = value


def test_every_transform_reads_a_changed_global():
    original = BATCH
    try:
        g = tf.grad(loss)
        vg = tf.value_and_grad(loss)
        for batch in (np.array([1.0, 2.0, 3.0]), np.array([-4.0, 0.5, 10.0])):
            set_batch(batch)
            close(g(W), gradient_np(W, batch))
            value, gradient = vg(W)
            close(value, loss_np(W, batch))
            close(gradient, gradient_np(W, batch))
            out, pullback = tf.vjp(loss, W)
            close(out, loss_np(W, batch))
            close(pullback(np.float64(2.0))[0], 2 * gradient_np(W, batch))
            out, tangent = tf.jvp(loss, (W,), (V,))
            close(out, loss_np(W, batch))
            close(tangent, gradient_np(W, batch) @ V)
            out, push = tf.linearize(loss, W)
            close(out, loss_np(W, batch))
            close(push(V), gradient_np(W, batch) @ V)
            close(tf.hvp(loss, (W,), (V,)), hessian_diagonal_np(W, batch) * V)
            close(tf.grad(tf.grad(lambda s: loss(s * W)))(1.0), _second(W, batch))
    finally:
        set_batch(original)


def _second(w: np.ndarray, batch: np.ndarray) -> float:
    """d²/ds² loss(s·w) at s = 1."""
    return float(np.sum(hessian_diagonal_np(w, batch) * w * w))


def test_closures_rebound_and_mutated_in_place_are_read_at_call_time():
    data = np.array([1.0, 2.0, 3.0])
    holder = {"scale": np.array([1.0, 1.0, 1.0])}

    def f(w: Any) -> Any:
        return tf.sum(data * holder["scale"] * w * w)

    g = tf.grad(f)
    close(g(W), 2 * data * W)
    data[:] = [5.0, 6.0, 7.0]  # mutated in place
    close(g(W), 2 * data * W)
    holder["scale"] = np.array([0.0, 1.0, -1.0])  # rebound
    close(g(W), 2 * data * holder["scale"] * W)


def test_pullbacks_and_linear_maps_keep_the_values_of_their_own_call():
    original = BATCH
    try:
        set_batch(np.array([1.0, 1.0, 1.0]))
        _, pullback = tf.vjp(loss, W)
        _, push = tf.linearize(loss, W)
        set_batch(np.array([3.0, 3.0, 3.0]))
        # As in JAX: the functions returned describe the derivative at the call that made them.
        close(pullback(np.float64(1.0))[0], gradient_np(W, np.ones(3)))
        close(push(V), gradient_np(W, np.ones(3)) @ V)
    finally:
        set_batch(original)


def test_a_changed_batch_reuses_the_derivative_program():
    caches = [
        plans._GRAD_PROGRAMS,
        plans._JVP_PROGRAMS,
        plans._VJP_PROGRAMS,
        plans._FORWARD_PROGRAMS,
    ]
    data = np.array([1.0, 2.0, 3.0])

    def f(w: Any) -> Any:
        return tf.sum(data * w * w)

    def run_all() -> None:
        tf.grad(f)(W)
        tf.jvp(f, (W,), (V,))
        tf.vjp(f, W)[1](np.float64(1.0))
        tf.hvp(f, (W,), (V,))
        tf.linearize(f, W)[1](V)

    run_all()
    before = [cache.stats().misses for cache in caches]
    for scale in (2.0, -3.0):
        data = data * scale
        run_all()
    assert [cache.stats().misses for cache in caches] == before


def test_jit_freezes_captured_values_as_documented():
    data = np.array([1.0, 2.0, 3.0])
    frozen = tf.jit(tf.grad(lambda w: tf.sum(data * w * w)))
    close(frozen(W), 2 * data * W)
    old = data.copy()
    data = np.array([9.0, 9.0, 9.0])  # the point: jit does not see it
    close(frozen(W), 2 * old * W)


# ---------------------------------------------------------------------- the class


def _central_difference(fun: Any, w: np.ndarray, direction: np.ndarray) -> float:
    h = 1e-6
    return (fun(w + h * direction) - fun(w - h * direction)) / (2 * h)


arrays = hnp.arrays(np.float64, 3, elements=st.floats(-2.0, 2.0))


@fuzz_settings(25)
@given(w=arrays, v=arrays, batches=st.lists(arrays, min_size=2, max_size=3))
def test_transforms_follow_closure_data_changed_between_calls(
    w: np.ndarray, v: np.ndarray, batches: list[np.ndarray]
) -> None:
    """For random closure data changed between calls, every transform agrees with a
    fresh numpy finite-difference computation on the current data."""
    current = {"batch": batches[0]}

    def f(x: Any) -> Any:
        return tf.sum(current["batch"] * tf.sin(x) * x)

    g, vg = tf.grad(f), tf.value_and_grad(f)
    for batch in batches:
        current["batch"] = batch.copy()

        def f_np(x: np.ndarray, batch: np.ndarray = batch) -> float:
            return loss_np(x, batch)

        def g_np(x: np.ndarray, batch: np.ndarray = batch) -> np.ndarray:
            return gradient_np(x, batch)

        eye = np.eye(3)
        fd_gradient = np.array([_central_difference(f_np, w, e) for e in eye])
        fd_directional = _central_difference(f_np, w, v)
        fd_hvp = (g_np(w + 1e-6 * v) - g_np(w - 1e-6 * v)) / 2e-6
        scale = 1 + np.abs(batch).sum() * (1 + np.abs(w).sum())
        tol = 1e-6 * scale * (1 + np.abs(v).sum())

        np.testing.assert_allclose(np.asarray(g(w)), fd_gradient, atol=tol)
        value, gradient = vg(w)
        np.testing.assert_allclose(float(np.asarray(value)), f_np(w), atol=1e-12 * scale)
        np.testing.assert_allclose(np.asarray(gradient), fd_gradient, atol=tol)
        _, tangent = tf.jvp(f, (w,), (v,))
        np.testing.assert_allclose(float(np.asarray(tangent)), fd_directional, atol=tol)
        (cotangent,) = tf.vjp(f, w)[1](np.float64(1.0))
        np.testing.assert_allclose(np.asarray(cotangent), fd_gradient, atol=tol)
        np.testing.assert_allclose(
            float(np.asarray(tf.linearize(f, w)[1](v))), fd_directional, atol=tol
        )
        np.testing.assert_allclose(np.asarray(tf.hvp(f, (w,), (v,))), fd_hvp, atol=tol)


def test_checkpoints_and_traced_leaves_inside_a_transform_follow_the_data():
    data = np.array([1.0, 2.0, 3.0])

    def f(w: Any) -> Any:
        stored = tf.exp(tf.traced(data)).checkpoint()  # evaluable now: stored data
        h = (w * stored).checkpoint()  # depends on the argument: an alias
        return tf.sum(h * h)

    g = tf.grad(f)
    close(g(np.ones(3)), 2 * np.exp(data) ** 2)
    data = np.array([0.5, 0.0, -1.0])
    close(g(np.ones(3)), 2 * np.exp(data) ** 2)


def test_evaluating_a_value_of_the_traced_arguments_raises_a_binding_error():
    def f(w: Any) -> Any:
        (w * 2).eval()
        return tf.sum(w)

    with pytest.raises(tf.BindingError, match="arguments of a function being traced"):
        tf.grad(f)(np.ones(2))


def test_a_transform_called_inside_a_trace_on_concrete_values_sees_captured_traced_values():
    """The inner ``grad`` captures ``x``, a value of the outer trace: its result depends
    on ``x`` and must be differentiated through (it was once evaluated as a constant,
    with the inner argument confused with the outer one)."""

    def outer(x: Any) -> Any:
        inner = tf.grad(lambda y: tf.sum(x * y * y))(np.ones(3))  # = 2x
        return tf.sum(inner * x)  # = 2 sum(x^2)

    close(tf.grad(outer)(W), 4 * W)
    close(tf.jit(outer)(W), 2 * np.sum(W**2))
    close(tf.jvp(outer, (W,), (V,))[1], 4 * W @ V)
