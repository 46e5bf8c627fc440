"""``tf.linalg.cg``, ``gmres`` and ``bicgstab``: solutions and derivatives equal those of
``tf.linalg.solve`` on the same operator, in every mode and dtype, for matrices and for
matrix-free operators that capture the tensors being differentiated; failures to
converge and bad input raise clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iterative_support import assert_every_mode, random_like, weighted, weights
from tenferro_support import INEXACT, dtype_id

import tenferro as tf

SOLVERS = {"cg": tf.linalg.cg, "gmres": tf.linalg.gmres, "bicgstab": tf.linalg.bicgstab}


def _tight(dt: Any) -> float:
    return 1e-6 if np.finfo(np.dtype(dt)).bits <= 32 else 1e-13


def _tolerance(dt: Any) -> float:
    return 2e-3 if np.finfo(np.dtype(dt)).bits <= 32 else 1e-9


def _operator(method: str, n: int, dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Hermitian positive definite for cg, a general nonsingular matrix otherwise."""
    x = random_like(np.zeros((n, n), dt), rng)
    if method == "cg":
        return (x @ x.conj().T + n * np.eye(n)).astype(dt)
    return (x + 2 * n * np.eye(n)).astype(dt)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    method=st.sampled_from(sorted(SOLVERS)),
    n=st.integers(1, 9),
    dt=st.sampled_from(INEXACT),
    columns=st.sampled_from([None, 1, 3]),
    seed=st.integers(0, 2**16),
)
def test_solutions_and_gradients_equal_dense_solve(method, n, dt, columns, seed):
    """The class of the checks: random sizes, dtypes, right-hand side shapes."""
    rng = np.random.default_rng(seed)
    a = _operator(method, n, dt, rng)
    b = random_like(np.zeros((n,) if columns is None else (n, columns), dt), rng)
    solve = SOLVERS[method]
    x, info = solve(a, b, rtol=_tight(dt))
    assert info == 0
    tol = _tolerance(dt)
    expected = np.linalg.solve(a.astype(np.complex128), b.astype(np.complex128))
    np.testing.assert_allclose(np.asarray(x), expected, atol=tol * np.abs(expected).max() + tol)
    w = weights(b.shape, dt, rng)
    got = tf.grad(lambda a, b: weighted(solve(a, b, rtol=_tight(dt))[0], w), argnums=(0, 1))(a, b)
    want = tf.grad(lambda a, b: weighted(tf.linalg.solve(a, b), w), argnums=(0, 1))(a, b)
    for g, e in zip(got, want, strict=True):
        scale = max(1.0, float(np.abs(np.asarray(e)).max()))
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), atol=10 * tol * scale)


@pytest.mark.parametrize("method", sorted(SOLVERS))
@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
def test_matrix_free_operator_gradients_in_every_mode(method, dt):
    """An operator closing over a parameter and a matrix, both differentiated: every
    mode against the dense solve of the same matrix."""
    rng = np.random.default_rng(3)
    n = 5
    base = _operator(method, n, dt, rng)
    b = random_like(np.zeros(n, dt), rng)
    w = weights((n,), dt, rng)
    solve = SOLVERS[method]
    shift = np.asarray(0.7 + (0.0 if method == "cg" or dt.kind == "f" else 0.2j), dt)

    def loss(t: Any, m: Any, b: Any) -> Any:
        def operator(v: Any) -> Any:
            hermitian = (m + tf.conj(tf.transpose(m))) * 0.5 if method == "cg" else m
            return hermitian @ v + tf.real(t) * v if method == "cg" else m @ v + t * v

        return weighted(solve(operator, b, rtol=1e-13)[0], w)

    def reference(t: Any, m: Any, b: Any) -> Any:
        hermitian = (m + tf.conj(tf.transpose(m))) * 0.5 if method == "cg" else m
        shift = tf.real(t) if method == "cg" else t
        return weighted(tf.linalg.solve(hermitian + shift * tf.eye(n, dtype=dt), b), w)

    assert_every_mode(loss, reference, [shift, base, b], rng, tol=1e-8)


def test_pytree_unknowns_and_closures():
    """The unknown may be a pytree of tensors (as JAX's solvers take); the gradient of a
    captured parameter equals that of the dense block system."""
    rng = np.random.default_rng(0)
    n = 4
    a = _operator("gmres", n, np.float64, rng)

    def loss(theta: Any) -> Any:
        def operator(v: Any) -> Any:
            return {
                "x": tf.asarray(a) @ v["x"] + theta * v["y"],
                "y": 3.0 * v["y"] - theta * v["x"],
            }

        rhs = {"x": tf.ones(n), "y": tf.arange(n) * 1.0}
        solution, _ = tf.linalg.gmres(operator, rhs, rtol=1e-13)
        return tf.sum(solution["x"] ** 2) + tf.sum(tf.sin(solution["y"]))

    def reference(theta: Any) -> Any:
        top = tf.concatenate([tf.asarray(a), theta * tf.eye(n)], axis=1)
        bottom = tf.concatenate([-theta * tf.eye(n), 3.0 * tf.eye(n)], axis=1)
        big = tf.concatenate([top, bottom], axis=0)
        solution = tf.linalg.solve(big, tf.concatenate([tf.ones(n), tf.arange(n) * 1.0]))
        return tf.sum(solution[:n] ** 2) + tf.sum(tf.sin(solution[n:]))

    assert_every_mode(loss, reference, [np.asarray(0.4)], rng)


def test_starting_point_changes_nothing_and_gets_no_derivative():
    rng = np.random.default_rng(1)
    a = _operator("cg", 6, np.float64, rng)
    b = rng.standard_normal(6)
    start = rng.standard_normal(6)
    x, _ = tf.linalg.cg(a, b, start, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), atol=1e-11)
    gradient = tf.grad(lambda s: tf.sum(tf.linalg.cg(a, b, s, rtol=1e-13)[0]))(start)
    np.testing.assert_array_equal(np.asarray(gradient), 0.0)


def test_jax_tol_alias_and_scipy_info():
    a = np.diag([2.0, 3.0, 4.0])
    x, info = tf.linalg.gmres(a, np.ones(3), tol=1e-12)
    assert info == 0
    np.testing.assert_allclose(np.asarray(x), [0.5, 1 / 3, 0.25])
    with pytest.raises(tf.ParameterError, match="rtol or its alias tol"):
        tf.linalg.cg(a, np.ones(3), rtol=1e-5, tol=1e-5)


@pytest.mark.parametrize("method", sorted(SOLVERS))
def test_no_convergence_raises_naming_solver_tolerance_and_iterations(method):
    rng = np.random.default_rng(2)
    n = 30
    a = _operator("cg", n, np.float64, rng) + np.diag(np.linspace(0, 1e4, n))
    with pytest.raises(tf.ConvergenceError) as caught:
        SOLVERS[method](a, np.ones(n), rtol=1e-14, maxiter=2)
    error = caught.value
    assert error.solver == method
    assert error.iterations >= 1
    assert error.residual > error.tolerance > 0
    message = str(error)
    assert f"linalg.{method}" in message
    assert method in message
    assert "did not converge" in message


def test_cg_on_an_indefinite_operator_says_so():
    with pytest.raises(tf.ConvergenceError, match="not positive definite"):
        tf.linalg.cg(np.diag([1.0, -2.0, 3.0]), np.ones(3))


def test_derivative_solves_raise_convergence_errors_too():
    """The derivative's solve uses the same settings: a failure is an error, never a
    silently unconverged derivative. Here the forward solve starts at the solution (it
    converges at once) and the adjoint system does not converge in one short cycle."""
    rng = np.random.default_rng(4)
    n = 30
    a = _operator("gmres", n, np.float64, rng) + np.diag(np.linspace(0, 1e5, n))
    b = np.ones(n)
    exact = np.linalg.solve(a, b)

    def loss(a: Any) -> Any:
        return tf.sum(tf.linalg.gmres(a, b, exact, rtol=1e-8, restart=3, maxiter=1)[0])

    np.testing.assert_allclose(np.asarray(loss(a)), exact.sum())
    with pytest.raises(tf.ConvergenceError, match=r"linalg\.gmres: gmres did not converge"):
        tf.grad(loss)(a)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tf.linalg.cg(np.ones((3, 4)), np.ones(3)), "square matrix"),
        (lambda: tf.linalg.cg(np.eye(3), np.ones(4)), "does not fit"),
        (lambda: tf.linalg.cg(np.eye(3), np.ones(3), rtol=-1.0), "rtol must be >= 0"),
        (lambda: tf.linalg.gmres(np.eye(3), np.ones(3), restart=0), "restart must be >= 1"),
        (lambda: tf.linalg.cg(lambda v: v[:2], np.ones(3)), "must keep shapes"),
        (lambda: tf.linalg.cg(lambda v: (v, v), np.ones(3)), "structure"),
        (lambda: tf.linalg.cg(np.eye(2), np.ones(2), np.ones(3)), "x0 has shapes"),
        (lambda: tf.linalg.bicgstab(lambda v: v, "b"), "b must hold tensors"),
    ],
)
def test_bad_input_is_reported_where_it_is_made(call, match):
    with pytest.raises(tf.TenferroError, match=match):
        call()


def test_memory_and_structure_are_cached_not_data():
    """A second solve of the same structure reuses its programs; the caches are
    cleared by tf.clear_caches and hold no user data (a changed operator is seen)."""
    rng = np.random.default_rng(5)
    a = _operator("cg", 4, np.float64, rng)
    b = rng.standard_normal(4)
    first = np.asarray(tf.linalg.cg(lambda v: tf.asarray(a) @ v, b, rtol=1e-13)[0])
    second = np.asarray(tf.linalg.cg(lambda v: tf.asarray(2 * a) @ v, b, rtol=1e-13)[0])
    np.testing.assert_allclose(second, first / 2, atol=1e-12)
    stats = tf.cache_stats()["closed-function programs"]
    assert stats.hits >= 1
    tf.clear_caches()
    assert tf.cache_stats()["closed-function programs"].size == 0


@pytest.mark.parametrize("method", sorted(SOLVERS))
def test_an_operator_returning_its_argument(method):
    """The identity (its program returns its input array): the kernels never write into
    what the operator returns."""
    b = np.arange(1.0, 5.0)
    x, _ = SOLVERS[method](lambda v: v, b)
    np.testing.assert_allclose(np.asarray(x), b)
    x, _ = SOLVERS[method](lambda v: (v, 2.0 * v[1])[0], b)
    np.testing.assert_allclose(np.asarray(x), b)
