"""``tf.linalg.eigsh`` and ``eigs``: eigenpairs and their derivatives equal those of the
dense ``eigh``/``eig`` on the same operator, in every mode and dtype and at second
order; degenerate targets warn as the dense spectral rules do (or raise where no
derivative exists); failures to converge and bad input raise clear errors."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from iterative_support import assert_every_mode, random_like
from tenferro_support import INEXACT, dtype_id

import tenferro as tf


def _hermitian(n: int, dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    x = random_like(np.zeros((n, n), dt), rng)
    return ((x + x.conj().T) / 2).astype(dt)


def _with_spectrum(values: list[float], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    n = len(values)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q @ np.diag(values) @ q.T


def _single(dt: Any) -> bool:
    return np.finfo(np.dtype(dt)).bits <= 32


def _selection(values: np.ndarray[Any, Any], k: int, which: str) -> np.ndarray[Any, Any]:
    key = {"SA": values, "LA": -values, "SM": np.abs(values), "LM": -np.abs(values)}[which]
    return np.sort(values[np.argsort(key, kind="stable")[:k]])


def _assert_same_jvp(iterative: Any, dense: Any, a: Any, direction: Any, tol: float) -> None:
    """The JVPs of the iterative and the dense function agree (relative to each
    output's scale, at least 1)."""
    got = tf.jvp(iterative, (a,), (direction,))[1]
    want = tf.jvp(dense, (a,), (direction,))[1]
    for g, e in zip(got, want, strict=True):
        slope = max(1.0, float(np.abs(np.asarray(e)).max()))
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), atol=tol * slope)


def _projectors(v: Any) -> Any:
    return tf.einsum("...ik,...jk->...kij", v, tf.conj(v))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    n=st.integers(2, 12),
    dt=st.sampled_from(INEXACT),
    k=st.integers(1, 3),
    which=st.sampled_from(["SA", "LA", "SM", "LM"]),
    seed=st.integers(0, 2**16),
)
def test_eigsh_equals_eigh_values_vectors_and_derivatives(n, dt, k, which, seed):
    """The class of the checks: random Hermitian matrices, every ``which``; values,
    eigen-equations, and the JVPs of eigenvalues and projectors against eigh's."""
    rng = np.random.default_rng(seed)
    k = min(k, n)
    a = _hermitian(n, dt, rng)
    exact = np.linalg.eigvalsh(a.astype(np.complex128))
    key = {"SA": exact, "LA": -exact, "SM": np.abs(exact), "LM": -np.abs(exact)}[which]
    ranked = np.sort(key)
    scale = max(1.0, float(np.abs(exact).max()))
    # a well-defined selection, and gaps the comparison can resolve
    assume(k == n or ranked[k] - ranked[k - 1] > 1e-2 * scale)
    assume(np.min(np.diff(exact)) > 1e-2 * scale)
    tol = 2e-3 if _single(dt) else 1e-8
    w, v = tf.linalg.eigsh(a, k=k, which=which)
    np.testing.assert_allclose(np.asarray(w), _selection(exact, k, which), atol=tol * scale)
    vectors = np.asarray(v)
    np.testing.assert_allclose(a @ vectors, vectors * np.asarray(w), atol=tol * scale)
    np.testing.assert_allclose(vectors.conj().T @ vectors, np.eye(k), atol=tol)
    direction = _hermitian(n, dt, rng)
    picked = np.argsort(key, kind="stable")[:k]
    order = np.sort(picked) if which == "SA" else picked

    def dense(a: Any) -> Any:
        values, vectors = tf.linalg.eigh(a)
        positions = tf.asarray(np.sort(order))
        return tf.take(values, positions), _projectors(tf.take(vectors, positions, axis=1))

    def iterative(a: Any) -> Any:
        values, vectors = tf.linalg.eigsh(a, k=k, which=which)
        return values, _projectors(vectors)

    _assert_same_jvp(iterative, dense, a, direction, 10 * tol)


@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
def test_matrix_free_ground_state_gradients_in_every_mode(dt):
    """A Hermitian operator on tensor-shaped vectors closing over a coupling and a
    matrix: the ground energy plus an expectation value, in every mode and to second
    order, against eigh of the same operator written as a matrix."""
    rng = np.random.default_rng(0)
    shape = (2, 3)
    n = 6
    base = _hermitian(n, dt, rng)
    observable = tf.asarray(_hermitian(n, dt, rng))

    def loss(coupling: Any, m: Any) -> Any:
        hermitian = (m + tf.conj(tf.transpose(m))) * 0.5

        def operator(x: Any) -> Any:
            flat = tf.reshape(x, (n,))
            return tf.reshape(
                hermitian @ flat + coupling * tf.sin(tf.arange(n) * 1.0) * flat, shape
            )

        start = tf.ones(shape, dtype=dt)
        w, v = tf.linalg.eigsh(operator, k=2, v0=start)
        ground = tf.reshape(v[..., 0], (n,))
        expectation = tf.real(tf.vdot(ground, observable @ ground))
        return w[0] + 0.5 * w[1] + expectation

    def reference(coupling: Any, m: Any) -> Any:
        hermitian = (m + tf.conj(tf.transpose(m))) * 0.5
        w, v = tf.linalg.eigh(hermitian + coupling * tf.diag(tf.sin(tf.arange(n) * 1.0)))
        ground = v[:, 0]
        return w[0] + 0.5 * w[1] + tf.real(tf.vdot(ground, observable @ ground))

    assert_every_mode(loss, reference, [np.asarray(0.3), base], rng, tol=1e-7)


def test_degenerate_levels_are_found_whole():
    """A single-vector Krylov space holds one direction of each eigenspace; eigsh
    completes the level (numpy's values, orthonormal vectors)."""
    rng = np.random.default_rng(1)
    a = _with_spectrum([-2.0, -2.0, -2.0, 0.0, 1.0, 1.0, 3.0, 4.0], rng)
    w, v = tf.linalg.eigsh(a, k=3)
    np.testing.assert_allclose(np.asarray(w), [-2.0, -2.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(v).T @ np.asarray(v), np.eye(3), atol=1e-12)
    w, _ = tf.linalg.eigsh(a, k=2, which="LA")
    np.testing.assert_allclose(np.asarray(w), [3.0, 4.0], atol=1e-12)


def _warnings_of(call: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [
        str(c.message) for c in caught if issubclass(c.category, tf.DegenerateDerivativeWarning)
    ]


def test_a_level_split_by_k_warns_and_a_whole_level_is_exact():
    rng = np.random.default_rng(2)
    a = _with_spectrum([-1.0, -1.0, 0.0, 0.5, 1.0, 2.0], rng)
    # w[0] of a degenerate ground state is not differentiable: warned, as eigh warns
    found = _warnings_of(lambda: tf.grad(lambda a: tf.linalg.eigsh(a, k=1)[0][0])(a))
    assert found
    assert "tied with the next one" in found[0]
    dense = _warnings_of(lambda: tf.grad(lambda a: tf.linalg.eigh(a)[0][0])(a))
    assert dense, "the dense rule warns there too"
    # the level as a whole is differentiable: no warning, the exact projector
    level = _warnings_of(lambda: tf.grad(lambda a: tf.sum(tf.linalg.eigsh(a, k=2)[0]))(a))
    assert not level
    gradient = tf.grad(lambda a: tf.sum(tf.linalg.eigsh(a, k=2)[0]))(a)
    q = np.linalg.eigh(a)[1][:, :2]
    np.testing.assert_allclose(np.asarray(gradient), q @ q.T, atol=1e-10)
    # a projector onto the complete level: eigh's derivatives, exact at the tie, to
    # second order
    observable = tf.asarray(_with_spectrum([3.0, 1.0, -2.0, 0.5, 0.0, 1.0], rng))

    def level(a: Any, solver: Any) -> Any:
        v = solver(a)
        return tf.real(tf.sum(tf.conj(v) * (observable @ v)))

    def iterative(a: Any) -> Any:
        return level(a, lambda a: tf.linalg.eigsh(a, k=2)[1])

    def dense(a: Any) -> Any:
        return level(a, lambda a: tf.linalg.eigh(a)[1][:, :2])

    direction = _with_spectrum([1.0, -2.0, 0.3, 0.0, 0.5, 1.5], rng)
    first = tf.jvp(iterative, (a,), (direction,))[1]
    np.testing.assert_allclose(
        np.asarray(first), np.asarray(tf.jvp(dense, (a,), (direction,))[1]), atol=1e-10
    )
    second = tf.hvp(iterative, (a,), (direction,))
    np.testing.assert_allclose(
        np.asarray(second), np.asarray(tf.hvp(dense, (a,), (direction,))), atol=1e-8
    )
    # tied values weighted differently inside the block: the dense rules' warning
    uneven = _warnings_of(lambda: tf.grad(lambda a: tf.linalg.eigsh(a, k=2)[0][0])(a))
    assert uneven
    assert "tied" in uneven[0]
    # forward tangents of tied values pass unchecked, as in the dense rules
    assert not _warnings_of(lambda: tf.jvp(lambda a: tf.linalg.eigsh(a, k=1)[0], (a,), (a,)))


def test_eigenvector_derivative_at_a_split_level_is_an_error_saying_why():
    """The eigenvector of a level split by k has no derivative: the projected system
    is singular along the tied vector and the solve's error says what it means."""
    rng = np.random.default_rng(3)
    a = _with_spectrum([-1.0, -1.0, 0.0, 0.5, 1.0, 2.0], rng)
    observable = tf.asarray(np.diag(np.arange(6.0)))

    def loss(a: Any) -> Any:
        v = tf.linalg.eigsh(a, k=1)[1][:, 0]
        return tf.real(tf.vdot(v, observable @ v))

    with pytest.raises(tf.ConvergenceError, match="degenerate with the rest of the spectrum"):
        tf.grad(loss)(a)
    direction = _with_spectrum([1.0, -2.0, 0.3, 0.0, 0.5, 1.5], rng)
    with pytest.raises(tf.ConvergenceError, match="degenerate with the rest of the spectrum"):
        tf.jvp(lambda a: tf.linalg.eigsh(a, k=1)[1], (a,), (direction,))


def _positive(n: int, dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    a = rng.uniform(0.2, 1.0, (n, n))
    if np.dtype(dt).kind == "c":
        a = a + 0.2j * rng.standard_normal((n, n))
    return a.astype(dt)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(n=st.integers(2, 10), dt=st.sampled_from(INEXACT), seed=st.integers(0, 2**16))
def test_eigs_dominant_pair_and_derivatives_equal_eig(n, dt, seed):
    rng = np.random.default_rng(seed)
    a = _positive(n, dt, rng)
    exact = np.linalg.eigvals(a.astype(np.complex128))
    order = np.argsort(-np.abs(exact))
    top = order[0]
    assume(n == 1 or abs(exact[order[0]]) - abs(exact[order[1]]) > 1e-2 * abs(exact[top]))
    tol = 2e-3 if _single(dt) else 1e-8
    w, v = tf.linalg.eigs(a, k=1)
    np.testing.assert_allclose(np.asarray(w)[0], exact[top], atol=tol * abs(exact[top]))
    vector = np.asarray(v)[:, 0]
    np.testing.assert_allclose(a @ vector, np.asarray(w)[0] * vector, atol=tol * abs(exact[top]))
    direction = random_like(np.zeros((n, n), dt), rng)
    index = int(np.argmin(np.abs(np.linalg.eigvals(a) - exact[top])))

    def dense(a: Any) -> Any:
        values, vectors = tf.linalg.eig(a)
        return values[index], tf.abs(vectors[:, index]) ** 2

    def iterative(a: Any) -> Any:
        values, vectors = tf.linalg.eigs(a, k=1)
        return values[0], tf.abs(vectors[:, 0]) ** 2

    _assert_same_jvp(iterative, dense, a, direction, 10 * tol)


@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
def test_eigs_gradients_in_every_mode(dt):
    """A non-Hermitian operator closing over a matrix: the dominant eigenvalue's real
    part and |v|^2 weighted, in every mode and to second order, against eig."""
    rng = np.random.default_rng(4)
    n = 5
    a = _positive(n, dt, rng)
    weights = tf.asarray(np.arange(1.0, n + 1))
    index = int(np.argmax(np.abs(np.linalg.eigvals(a))))

    def loss(m: Any) -> Any:
        w, v = tf.linalg.eigs(
            lambda x: m @ x, k=1, v0=tf.ones(n, dtype=np.result_type(dt, np.complex64))
        )
        return tf.real(w[0]) + tf.sum(weights * tf.abs(v[:, 0]) ** 2)

    def reference(m: Any) -> Any:
        w, v = tf.linalg.eig(m)
        return tf.real(w[index]) + tf.sum(weights * tf.abs(v[:, index]) ** 2)

    assert_every_mode(loss, reference, [a], rng, tol=1e-7)


def test_eigs_of_a_real_operator_is_complex_and_a_degenerate_target_warns():
    rng = np.random.default_rng(5)
    rotation = np.array([[0.0, -2.0], [2.0, 0.0]])  # eigenvalues +-2i: equal magnitudes
    a = np.block([[rotation, np.zeros((2, 2))], [np.zeros((2, 2)), np.diag([0.5, 0.1])]])
    w, _ = tf.linalg.eigs(a, k=2)
    assert np.asarray(w).dtype == np.complex128
    np.testing.assert_allclose(sorted(np.asarray(w), key=np.imag), [-2j, 2j], atol=1e-12)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    degenerate = q @ np.diag([3.0, 3.0, 1.0, 0.5]) @ q.T
    found = _warnings_of(
        lambda: tf.grad(lambda a: tf.real(tf.linalg.eigs(a, k=1)[0][0]))(degenerate)
    )
    assert found
    assert "degenerate" in found[0]


def test_no_convergence_raises_naming_method_tolerance_and_iterations():
    rng = np.random.default_rng(6)
    a = np.diag(np.linspace(0.0, 1.0, 200)) + 1e-3 * _hermitian(200, np.float64, rng)
    with pytest.raises(tf.ConvergenceError) as caught:
        tf.linalg.eigsh(a, k=4, ncv=9, maxiter=1, tol=1e-14)
    assert caught.value.solver == "lanczos"
    assert caught.value.iterations == 1
    assert "linalg.eigsh" in str(caught.value)
    with pytest.raises(tf.ConvergenceError) as caught:
        tf.linalg.eigs(a + 1e-3 * rng.standard_normal((200, 200)), k=4, ncv=9, maxiter=1, tol=1e-14)
    assert caught.value.solver == "arnoldi"


def test_a_non_hermitian_operator_given_to_eigsh_is_reported():
    a = np.triu(np.ones((6, 6))) + np.diag(np.arange(6.0))
    with pytest.raises(tf.ConvergenceError, match="may not be Hermitian"):
        tf.linalg.eigsh(lambda v: tf.asarray(a) @ v, k=1, v0=np.ones(6))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tf.linalg.eigsh(lambda v: v, k=1), "needs v0"),
        (lambda: tf.linalg.eigsh(np.eye(3), k=0), "k must be between 1"),
        (lambda: tf.linalg.eigsh(np.eye(3), k=4), "k must be between 1"),
        (lambda: tf.linalg.eigsh(np.eye(3), which="BE"), "which must be one of"),
        (lambda: tf.linalg.eigs(np.eye(3), which="SA"), "which must be one of"),
        (lambda: tf.linalg.eigsh(np.ones((2, 3))), "square matrix"),
        (lambda: tf.linalg.eigsh(np.eye(3), v0=np.ones(4)), "does not fit"),
        (lambda: tf.linalg.eigsh(lambda v: v, v0=(np.ones(2), np.ones(2))), "one tensor"),
        (lambda: tf.linalg.eigsh(lambda v: v[:1], v0=np.ones(2)), "must keep shapes"),
    ],
)
def test_bad_input_is_reported_where_it_is_made(call, match):
    with pytest.raises(tf.TenferroError, match=match):
        call()


def test_return_eigenvectors_false_and_scipy_order():
    rng = np.random.default_rng(7)
    a = _hermitian(7, np.float64, rng)
    w = tf.linalg.eigsh(a, k=3, which="LA", return_eigenvectors=False)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a)[-3:], atol=1e-12)
