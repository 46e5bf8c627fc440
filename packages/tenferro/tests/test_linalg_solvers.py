"""tf.linalg solvers and factorizations: values against numpy/scipy, conventions, errors,
outputs without a derivative, and parity across tensor kinds. (Derivatives of every
family are checked by test_primitive_rules.py's solvers cases and the oracle replay.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st
from rule_cases_solvers import dominant
from tenferro_support import sample

import tenferro as tf
from tenferro import linalg
from tenferro.errors import LinAlgError, ParameterError, ShapeError
from tidu import ADRuleError

DTYPES = [np.dtype(d) for d in ("float32", "float64", "complex64", "complex128")]


def _tol(dt: np.dtype[Any]) -> float:
    return 1e-4 if dt in (np.dtype("float32"), np.dtype("complex64")) else 1e-10


def _close(actual: Any, expected: Any, dt: np.dtype[Any]) -> None:
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=_tol(dt), atol=_tol(dt))


shapes = st.tuples(st.sampled_from([(), (2,), (2, 1)]), st.integers(1, 4), st.integers(1, 4)).map(
    lambda t: (*t[0], t[1], t[2])
)


@given(shape=shapes, dt=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_factorizations_reconstruct_their_input(shape, dt, seed):
    rng = np.random.default_rng(seed)
    a = sample(shape, dt, rng)
    q, r = linalg.qr(a)
    _close(np.asarray(q) @ np.asarray(r), a, dt)
    _close(np.triu(np.asarray(r)), np.asarray(r), dt)
    p, lower, upper = linalg.lu(a)
    _close(np.asarray(p) @ np.asarray(lower) @ np.asarray(upper), a, dt)  # a = P L U
    packed, pivots = linalg.lu_factor(a)
    ref_lu, ref_piv = scipy.linalg.lu_factor(a)
    _close(packed, ref_lu, dt)
    np.testing.assert_array_equal(np.asarray(pivots), ref_piv)
    assert np.asarray(pivots).dtype.kind == "i"


@given(n=st.integers(1, 4), batch=st.sampled_from([(), (3,)]), dt=st.sampled_from(DTYPES))
def test_solvers_match_numpy(n, batch, dt):
    rng = np.random.default_rng(n)
    a = dominant((*batch, n, n), dt, rng)
    b = sample((*batch, n, 2), dt, rng)
    _close(linalg.solve(a, b), np.linalg.solve(a, b), dt)
    if not batch:  # numpy 2: only a one-axis b is a vector
        _close(linalg.solve(a, b[:, 0]), np.linalg.solve(a, b[:, 0]), dt)
    _close(linalg.inv(a), np.linalg.inv(a), dt)
    _close(linalg.det(a), np.linalg.det(a), dt)
    sign, logabsdet = linalg.slogdet(a)
    ref_sign, ref_log = np.linalg.slogdet(a)
    _close(sign, ref_sign, dt)
    _close(logabsdet, ref_log, dt)
    assert np.asarray(logabsdet).dtype.kind == "f"
    for trans in (0, 1, 2):
        factors = linalg.lu_factor(a)
        _close(
            linalg.lu_solve(factors, b, trans=trans),
            scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=trans),
            dt,
        )
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(n)
    _close(linalg.cholesky(spd), np.linalg.cholesky(spd), dt)
    upper = np.asarray(linalg.cholesky(spd, upper=True))
    _close(np.conj(np.swapaxes(upper, -1, -2)) @ upper, spd, dt)
    _close(linalg.matrix_exp(0.1 * a), scipy.linalg.expm(0.1 * a), dt)
    for power in (-3, -1, 0, 1, 2, 5):
        expected = np.linalg.matrix_power(a / (2 * n), power)
        _close(linalg.matrix_power(a / (2 * n), power), expected, dt)


def test_solve_triangular_reads_one_triangle_and_takes_the_unit_diagonal():
    rng = np.random.default_rng(3)
    a = dominant((4, 4), np.float64, rng)
    b = sample((4, 2), np.float64, rng)
    for upper in (True, False):
        tri = np.triu(a) if upper else np.tril(a)
        np.testing.assert_allclose(
            linalg.solve_triangular(a, b, upper=upper), np.linalg.solve(tri, b)
        )
        unit = tri - np.diag(np.diag(tri)) + np.eye(4)
        np.testing.assert_allclose(
            linalg.solve_triangular(a, b, upper=upper, unitriangular=True),
            np.linalg.solve(unit, b),
        )
        np.testing.assert_allclose(
            linalg.solve_triangular(a, b.T, upper=upper, left=False), b.T @ np.linalg.inv(tri)
        )


def test_qr_modes_and_positive_gauge():
    rng = np.random.default_rng(4)
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        a = sample(shape, np.complex128, rng)
        for mode in ("reduced", "complete"):
            q, r = linalg.qr(a, mode)
            ref_q, ref_r = np.linalg.qr(a, mode=mode)
            assert np.asarray(q).shape == ref_q.shape
            assert np.asarray(r).shape == ref_r.shape
            np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)
        np.testing.assert_allclose(linalg.qr(a, "r"), np.linalg.qr(a, mode="r"), atol=1e-12)
        q, r = linalg.qr(a, gauge="positive")
        d = np.diagonal(np.asarray(r), axis1=-2, axis2=-1)
        assert np.all(d.real > 0)
        np.testing.assert_allclose(d.imag, 0, atol=1e-14)
        np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, atol=1e-12)


def test_multi_dot_tensorinv_tensorsolve_match_numpy():
    rng = np.random.default_rng(5)
    chain = [rng.standard_normal(s) for s in ((6,), (6, 2), (2, 7), (7, 3))]
    np.testing.assert_allclose(linalg.multi_dot(chain), np.linalg.multi_dot(chain))
    chain[-1] = rng.standard_normal((7,))
    chain = [chain[0], rng.standard_normal((6, 7)), chain[-1]]
    np.testing.assert_allclose(linalg.multi_dot(chain), np.linalg.multi_dot(chain))
    a = rng.standard_normal((4, 6, 8, 3)) + 0.0
    a = a.reshape(24, 24) + 10 * np.eye(24)
    a = a.reshape(4, 6, 8, 3)
    np.testing.assert_allclose(linalg.tensorinv(a), np.linalg.tensorinv(a), atol=1e-12)
    b = rng.standard_normal((4, 6))
    np.testing.assert_allclose(linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b))
    c = rng.standard_normal((8, 3))
    np.testing.assert_allclose(
        linalg.tensorsolve(a, c, axes=(0, 1)), np.linalg.tensorsolve(a, c, axes=(0, 1))
    )


def test_multi_dot_gradient_matches_finite_differences():
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s) for s in ((3, 4), (4, 2), (2, 5))]
    tf.testing.check_grads(lambda a, b, c: linalg.multi_dot([a, b, c]), xs, order=2)


def test_integer_input_promotes_to_float64():
    a = np.array([[2, 1], [1, 3]])
    assert np.asarray(linalg.inv(a)).dtype == np.float64
    assert np.asarray(linalg.solve(a, [1, 2])).dtype == np.float64
    np.testing.assert_allclose(linalg.det(a), 5.0)
    assert np.asarray(linalg.matrix_power(a, 2)).dtype.kind == "i"  # numpy keeps integers


# ---------------------------------------------------------------------- errors


def test_singular_matrices_name_the_operation_and_the_batch_index():
    a = np.stack([np.eye(3), np.zeros((3, 3)), np.eye(3)])
    b = np.ones((3, 3, 1))
    for call, name in (
        (lambda: linalg.solve(a, b), "solve"),
        (lambda: linalg.inv(a), "inv"),
        (lambda: linalg.lu_solve(linalg.lu_factor(a), b), "lu_solve"),
        (lambda: linalg.solve_triangular(a, b, upper=True), "solve_triangular"),
    ):
        with pytest.raises(
            LinAlgError, match=rf"{name}.*\(3, 3, 3\).*singular.*batch index \(1,\)"
        ):
            call()


def test_cholesky_of_an_indefinite_matrix_names_the_batch_index():
    a = np.stack([np.eye(2), np.eye(2), np.diag([1.0, -1.0])])
    with pytest.raises(LinAlgError, match=r"cholesky.*not positive definite.*batch index \(2,\)"):
        linalg.cholesky(a)


@pytest.mark.parametrize(
    "call",
    [
        lambda a: linalg.qr(a),
        lambda a: linalg.lu(a),
        lambda a: linalg.lu_factor(a),
        lambda a: linalg.cholesky(a),
        lambda a: linalg.solve(a, np.ones(3)),
        lambda a: linalg.inv(a),
        lambda a: linalg.matrix_exp(a),
    ],
)
def test_non_finite_input_raises(call):
    a = np.stack([np.eye(3), np.eye(3)])
    a[1, 0, 2] = np.nan
    with pytest.raises(LinAlgError, match=r"NaN or Inf.*batch index \(1,\)"):
        call(a)


@pytest.mark.parametrize(
    "call",
    [
        linalg.inv,
        linalg.det,
        linalg.slogdet,
        linalg.cholesky,
        linalg.matrix_exp,
        lambda a: linalg.solve(a, np.ones(2)),
        lambda a: linalg.matrix_power(a, 2),
    ],
)
def test_non_square_and_rank_below_two_raise_shape_errors(call):
    with pytest.raises(ShapeError, match="square"):
        call(np.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"\[\.\.\., M, N\]|square"):
        call(np.ones(3))


def test_parameter_errors():
    with pytest.raises(ParameterError, match="mode"):
        linalg.qr(np.eye(2), "economic")
    with pytest.raises(ParameterError, match="gauge"):
        linalg.qr(np.eye(2), gauge="canonical")
    with pytest.raises(ParameterError, match="trans"):
        linalg.lu_solve(linalg.lu_factor(np.eye(2)), np.ones(2), trans=3)
    with pytest.raises(ParameterError, match="integer"):
        linalg.matrix_power(np.eye(2), 1.5)
    with pytest.raises(ShapeError, match="multi_dot"):
        linalg.multi_dot([np.ones((2, 3)), np.ones((2, 3))])


# ---------------------------------------------------------------------- no derivative


def test_permutation_and_complete_q_have_no_derivative_and_raise_only_when_used():
    rng = np.random.default_rng(7)
    a = dominant((4, 4), np.float64, rng)
    tall = rng.standard_normal((5, 3))
    # L, U and the complete R are differentiable ...
    tf.grad(lambda x: tf.sum(linalg.lu(x).U))(a)
    tf.grad(lambda x: tf.sum(linalg.qr(x, "complete").R))(tall)
    # ... a derivative through P or the complete Q raises, in reverse and forward mode.
    with pytest.raises(ADRuleError, match=r"linalg\.lu"):
        tf.grad(lambda x: tf.sum(linalg.lu(x).P))(a)
    with pytest.raises(ADRuleError, match=r"mode='reduced'"):
        tf.grad(lambda x: tf.sum(linalg.qr(x, "complete").Q))(tall)
    with pytest.raises(ADRuleError, match=r"linalg\.lu"):
        tf.jvp(lambda x: linalg.lu(x).P, (a,), (a,))


def test_lu_solve_adjoint_matches_finite_differences_of_the_adjoint_system():
    rng = np.random.default_rng(8)
    a = dominant((3, 3), np.complex128, rng)
    b = sample((3, 2), np.complex128, rng)
    x = np.asarray(linalg.lu_solve(linalg.lu_factor(a), b, trans=2))
    np.testing.assert_allclose(np.conj(a.T) @ x, b, atol=1e-12)
    tf.testing.check_grads(
        lambda a, b: linalg.lu_solve(linalg.lu_factor(a), b, trans=2), [a, b], order=1
    )


def test_slogdet_sign_has_a_zero_derivative_for_real_input_and_a_phase_one_for_complex():
    rng = np.random.default_rng(9)
    a = dominant((3, 3), np.float64, rng)
    _, tangent = tf.jvp(lambda x: linalg.slogdet(x).sign, (a,), (np.ones((3, 3)),))
    np.testing.assert_array_equal(np.asarray(tangent), 0.0)
    z = dominant((3, 3), np.complex128, rng)
    tf.testing.check_grads(lambda x: linalg.slogdet(x).sign, [z], order=2)


# ---------------------------------------------------------------------- tensor kinds


def _loss(a: Any, b: Any) -> Any:
    q, r = linalg.qr(a)
    x = linalg.solve(a, b)
    _, logabsdet = linalg.slogdet(a)
    lower = linalg.lu(a).L
    return (
        tf.sum(tf.abs(q) ** 2 * 0.5)
        + tf.sum(r)
        + tf.sum(x)
        + logabsdet
        + tf.sum(lower)
        + tf.sum(linalg.matrix_exp(0.1 * a))
        + tf.sum(linalg.inv(a))
        + linalg.det(a)
        + tf.sum(linalg.cholesky(tf.matmul(a, tf.swapaxes(a, -1, -2))))
    )


def test_eager_traced_and_transformed_results_agree():
    rng = np.random.default_rng(10)
    a = dominant((4, 4), np.float64, rng)
    b = sample((4, 2), np.float64, rng)
    concrete = float(np.asarray(_loss(a, b)))
    traced = float(np.asarray(_loss(tf.traced(a), tf.traced(b)).eval()))
    jitted = float(np.asarray(tf.jit(_loss)(a, b)))
    assert concrete == pytest.approx(traced, rel=1e-12)
    assert concrete == pytest.approx(jitted, rel=1e-12)
    grads = tf.grad(_loss, argnums=(0, 1))(a, b)
    ea = tf.EagerTensor(a, requires_grad=True)
    eb = tf.EagerTensor(b, requires_grad=True)
    _loss(ea, eb).backward()
    np.testing.assert_allclose(np.asarray(ea.grad), np.asarray(grads[0]), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(eb.grad), np.asarray(grads[1]), rtol=1e-10)
    tf.testing.check_grads(_loss, [a, b], order=2)
