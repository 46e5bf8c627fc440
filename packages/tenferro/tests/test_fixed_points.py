"""``tf.fixed_point`` and ``tf.custom_root``: solutions and implicit derivatives equal
closed forms and finite differences in every mode and at second order; memory does
not grow with the number of iterations; failures and bad input raise clear errors."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iterative_support import assert_every_mode, random_like, weighted, weights
from tenferro_support import INEXACT, dtype_id

import tenferro as tf


def _single(dt: Any) -> bool:
    return np.finfo(np.dtype(dt)).bits <= 32


def _contraction(n: int, dt: Any, rng: np.random.Generator, rate: float) -> Any:
    w = random_like(np.zeros((n, n), dt), rng)
    return (w * (rate / max(np.linalg.norm(w, 2), 1e-12))).astype(dt)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    n=st.integers(1, 8),
    dt=st.sampled_from(INEXACT),
    solver=st.sampled_from(["iterate", "anderson"]),
    seed=st.integers(0, 2**16),
)
def test_linear_fixed_points_equal_the_closed_form(n, dt, solver, seed):
    """x* = W x* + c is (I - W)^-1 c: values and gradients of both arguments."""
    rng = np.random.default_rng(seed)
    w = _contraction(n, dt, rng, 0.6)
    c = random_like(np.zeros(n, dt), rng)
    tol = 2e-4 if _single(dt) else 1e-9
    target = weights((n,), dt, rng)

    def iterative(w: Any, c: Any) -> Any:
        return tf.fixed_point(lambda x, w, c: w @ x + c, tf.zeros_like(c), w, c, solver=solver)

    def closed(w: Any, c: Any) -> Any:
        return tf.linalg.solve(tf.eye(n, dtype=dt) - w, c)

    np.testing.assert_allclose(
        np.asarray(iterative(w, c)), np.asarray(closed(w, c)), atol=tol * (1 + np.abs(c).max())
    )
    got = tf.grad(lambda w, c: weighted(iterative(w, c), target), argnums=(0, 1))(w, c)
    want = tf.grad(lambda w, c: weighted(closed(w, c), target), argnums=(0, 1))(w, c)
    for g, e in zip(got, want, strict=True):
        scale = 1 + float(np.abs(np.asarray(e)).max())
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), atol=10 * tol * scale)


@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
@pytest.mark.parametrize("solver", ["iterate", "anderson"])
def test_fixed_point_gradients_in_every_mode(dt, solver):
    """A nonlinear map closing over a matrix and taking a parameter explicitly: every
    mode to second order against the same fixed point written densely: two Newton
    steps with tf.linalg.solve from the converged point held constant (the error of the
    second step is of fourth order in a parameter change, so first and second
    derivatives are exact)."""
    rng = np.random.default_rng(0)
    n = 4
    w = _contraction(n, dt, rng, 0.5)
    c = random_like(np.zeros(n, dt), rng)
    target = weights((n,), dt, rng)

    def f(x: Any, m: Any, c: Any) -> Any:
        return 0.5 * tf.tanh(m @ x) + c

    def loss(m: Any, c: Any) -> Any:
        return weighted(tf.fixed_point(f, tf.zeros_like(c), m, c, solver=solver, tol=1e-14), target)

    def newton(point: Any, m: Any, c: Any) -> Any:
        jacobian = tf.jacfwd(lambda x: f(x, m, c))(point)
        residual = f(point, m, c) - point
        return point - tf.linalg.solve(jacobian - tf.eye(n, dtype=dt), residual)

    def reference(m: Any, c: Any) -> Any:
        point = tf.stop_gradient(tf.fixed_point(f, tf.zeros_like(c), m, c, tol=1e-14))
        return weighted(newton(newton(point, m, c), m, c), target)

    assert_every_mode(loss, reference, [w, c], rng, tol=1e-8)


def test_scalar_fixed_point_second_derivative_equals_the_analytic_one():
    """x* = cos(t x*): dx/dt = -s x / (1 + s t), s = sin(t x*); and d2x/dt2 from
    differentiating that again (implicitly), against finite differences of the first."""
    t = 0.7

    def solution(t: Any) -> Any:
        return tf.fixed_point(lambda x, t: tf.cos(t * x), tf.asarray(1.0), t, tol=1e-15)

    x = float(np.asarray(solution(t)))
    s = np.sin(t * x)
    first = -s * x / (1 + s * t)
    np.testing.assert_allclose(np.asarray(tf.grad(solution)(t)), first, rtol=1e-12)
    h = 1e-5
    slope = lambda t: float(np.asarray(tf.grad(solution)(t)))  # noqa: E731
    second = (slope(t + h) - slope(t - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(tf.grad(tf.grad(solution))(t)), second, rtol=1e-7)
    np.testing.assert_allclose(
        np.asarray(tf.hvp(solution, (np.asarray(t),), (np.asarray(1.0),))), second, rtol=1e-7
    )
    tape = tf.Tape()
    np.testing.assert_allclose(
        np.asarray(tape.hvp(solution, [np.asarray(t)], [np.asarray(1.0)])), second, rtol=1e-7
    )


def test_pytree_fixed_points_and_captured_parameters():
    """An environment-like pair of tensors; parameters captured by the map or passed
    explicitly give the same derivatives, equal to finite differences."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(3)

    def environment(x: Any, a: Any) -> Any:
        left, right = x
        return 0.5 * tf.tanh(right) + a, 0.3 * left * a

    def explicit(a: Any) -> Any:
        left, right = tf.fixed_point(environment, (tf.zeros(3), tf.zeros(3)), a, tol=1e-14)
        return tf.sum(left**2) + tf.sum(tf.sin(right))

    def captured(a: Any) -> Any:
        left, right = tf.fixed_point(
            lambda x: environment(x, a), (tf.zeros(3), tf.zeros(3)), tol=1e-14
        )
        return tf.sum(left**2) + tf.sum(tf.sin(right))

    np.testing.assert_allclose(
        np.asarray(tf.grad(explicit)(a)), np.asarray(tf.grad(captured)(a)), atol=1e-12
    )
    tf.testing.check_grads(captured, [a], order=2)


def test_complex_parameters_promote_a_real_start():
    rng = np.random.default_rng(2)
    w = _contraction(3, np.complex128, rng, 0.5)
    x = tf.fixed_point(lambda x: tf.asarray(w) @ x + 1.0, tf.zeros(3), tol=1e-14)
    assert np.asarray(x).dtype == np.complex128
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(np.eye(3) - w, np.ones(3)))


def _newton(f: Callable[[Any], Any], x: Any) -> Any:
    for _ in range(60):
        x = x - f(x) / (3.0 * x * x)
    return x


@pytest.mark.parametrize("tangent", ["gmres", "division", "jacobian"])
def test_custom_root_derivatives(tangent):
    """The cube root by Newton's method (never differentiated): d a^(1/3) / da and its
    second derivative, with the default matrix-free tangent solve and with users'."""
    solves = {
        "gmres": None,
        "division": lambda g, y: y / g(tf.ones_like(y)),
        "jacobian": lambda g, y: tf.linalg.solve(tf.jacfwd(g)(y), y),
    }

    def cube_root(a: Any) -> Any:
        return tf.custom_root(lambda x: x * x * x - a, tf.ones_like(a), _newton, solves[tangent])

    a = np.array([8.0, 27.0, 2.0])
    np.testing.assert_allclose(np.asarray(cube_root(a)), np.cbrt(a), rtol=1e-14)
    gradient = tf.grad(lambda a: tf.sum(cube_root(a)))(a)
    np.testing.assert_allclose(np.asarray(gradient), a ** (-2 / 3) / 3, rtol=1e-9)
    tf.testing.check_grads(cube_root, [a], order=2)
    leaf = tf.EagerTensor(a, requires_grad=True)
    tf.sum(cube_root(leaf)).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), a ** (-2 / 3) / 3, rtol=1e-9)


def test_custom_root_runs_the_users_solver_on_concrete_tensors():
    seen = []

    def solve(f: Any, x: Any) -> Any:
        seen.append(type(f(x)).__name__)
        return _newton(f, x)

    tf.grad(lambda a: tf.custom_root(lambda x: x * x * x - a, tf.asarray(1.0), solve))(8.0)
    assert seen == ["Tensor"]


def _peak(function: Callable[[], Any]) -> int:
    function()  # programs compiled and cached before measuring
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_number_of_iterations():
    """A fixed point reached in about 500 iterations has the peak memory of one reached
    in 5, in reverse mode (traced and on the tape); unrolling the iteration on the tape
    does grow (the measurement can fail)."""
    n = 8_000  # vectors of 64 KiB (larger ones use threaded BLAS: slow on a busy machine)
    c = np.linspace(0.0, 1.0, n)

    def solve(rate: float, maxiter: int = 1000) -> Any:
        def loss(a: Any, c: Any) -> Any:
            return tf.sum(tf.fixed_point(lambda x: a * x + c, tf.zeros_like(c), maxiter=maxiter))

        return loss

    slow, fast = 0.955, 0.01
    with pytest.raises(tf.ConvergenceError, match="fixed-point iteration"):
        solve(slow, 400)(np.asarray(slow), c)  # it takes more than 400 iterations
    solve(fast, 6)(np.asarray(fast), c)  # and this one at most 6
    for mode in ("traced", "tape"):

        def gradient(rate: float, mode: str = mode) -> Any:
            if mode == "traced":
                return lambda: tf.grad(solve(rate), argnums=(0, 1))(np.asarray(rate), c)
            a, b = (tf.EagerTensor(v, requires_grad=True) for v in (np.asarray(rate), c))
            return lambda: solve(rate)(a, b).backward()

        peak_slow, peak_fast = _peak(gradient(slow)), _peak(gradient(fast))
        # one more vector (64 KiB) per iteration would add 32 MiB
        assert peak_slow <= 1.1 * peak_fast + 16 * 1024, (mode, peak_slow, peak_fast)

    def unrolled(steps: int) -> Any:
        a, b = (tf.EagerTensor(v, requires_grad=True) for v in (np.asarray(0.5), c))

        def run() -> None:
            x = tf.zeros_like(b)
            for _ in range(steps):
                x = a * x + b
            tf.sum(x).backward()

        return run

    assert _peak(unrolled(50)) > 5 * _peak(unrolled(5))


def test_no_convergence_raises_naming_solver_tolerance_and_iterations():
    with pytest.raises(tf.ConvergenceError) as caught:
        tf.fixed_point(lambda x: 0.999 * x + 1.0, tf.zeros(2), maxiter=7)
    assert caught.value.solver == "fixed-point iteration"
    assert caught.value.iterations == 7
    assert "fixed_point" in str(caught.value)
    with pytest.raises(tf.ConvergenceError, match="anderson"):
        tf.fixed_point(lambda x: x + 1.0, tf.ones(2), solver="anderson", maxiter=5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tf.fixed_point(lambda x: x[:1], tf.zeros(2)), "must keep shapes"),
        (lambda: tf.fixed_point(lambda x: (x, x), tf.zeros(2)), "structure"),
        (lambda: tf.fixed_point(lambda x: x, tf.zeros(2), solver="newton"), "solver must be"),
        (lambda: tf.fixed_point(lambda x: x, tf.zeros(2), tol=-1.0), "tol must be >= 0"),
        (lambda: tf.fixed_point(lambda x: x, tf.zeros(2), maxiter=0), "maxiter must be >= 1"),
        (lambda: tf.fixed_point("f", tf.zeros(2)), "f must be callable"),
        (lambda: tf.custom_root(lambda x: x, tf.zeros(2), "solve"), "solve must be callable"),
        (
            lambda: tf.custom_root(lambda x: x - 1.0, tf.zeros(2), lambda f, x: x[:1]),
            "solve's result",
        ),
    ],
)
def test_bad_input_is_reported_where_it_is_made(call, match):
    with pytest.raises(tf.TenferroError, match=match):
        call()


def test_a_tangent_solve_may_read_tensors_from_its_scope():
    """As in JAX, the tangent solve is closure-converted: what it reads (here a scale,
    and the identity basis of the jacfwd in the other tests) becomes an operand."""
    scale = tf.asarray(np.full(2, 0.5))

    def loss(a: Any) -> Any:
        root = tf.custom_root(
            lambda x: 2.0 * x - a, tf.zeros(2), lambda f, x: x - f(x) / 2.0, lambda g, y: y * scale
        )
        return tf.sum(root**2)

    a = np.array([1.0, 3.0])
    np.testing.assert_allclose(np.asarray(tf.grad(loss)(a)), a / 2, rtol=1e-14)
