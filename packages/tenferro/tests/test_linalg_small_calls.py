"""The small-size fast paths of tf.linalg compute exactly what the LAPACK drivers compute.

The batched kernels of ``tenferro.linalg.lapack`` (``planned_qr_batch``,
``cholesky_batch``, ``eigh_batch``, ``factor_and_solve_batch``, ``inv_batch``: drivers
looked up once, results written in place) and the one-matrix kernels (optional
arguments passed by position) are compared bit for bit with the scipy wrappers called
matrix by matrix with keywords, as the kernels called them before; the public
functions (whose repeated calls skip the operand checks through per-meta call caches)
are compared with numpy over hypothesis-generated shapes and dtypes (real and complex,
batched, empty, wide and tall), and bad input raises the same tenferro errors on a
first and a repeated call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from tenferro_support import sample

import tenferro as tf
from tenferro import linalg
from tenferro.errors import DTypeError, LinAlgError, ParameterError, ShapeError
from tenferro.linalg import lapack

DTYPES = [np.dtype(d) for d in ("float32", "float64", "complex64", "complex128")]
BATCHES = [(1,), (3,), (2, 2), (2, 1, 3)]

Array = np.ndarray[Any, Any]


def _driver(name: str, dt: np.dtype[Any]) -> Any:
    return scipy.linalg.get_lapack_funcs(name, dtype=dt)


def _reference_qr(a: Array, complete: bool) -> tuple[Array, Array]:
    """geqrf + orgqr/ungqr on one matrix, keywords and np.triu (numpy's recipe)."""
    m, n = a.shape
    k = min(m, n)
    packed, tau, _, info = _driver("geqrf", a.dtype)(a)
    assert info == 0
    rows = m if complete else k
    r = np.triu(packed[:rows])
    generate = _driver("ungqr" if a.dtype.kind == "c" else "orgqr", a.dtype)
    if complete and m > n:
        full = np.zeros((m, m), a.dtype, order="F")
        full[:, :n] = packed
        q, _, info = generate(full, tau)
    else:
        q, _, info = generate(packed[:, :k], tau)
    assert info == 0
    return q, r


def _per_matrix(function: Any, *arrays: Array) -> list[Any]:
    batch = arrays[0].shape[:-2]
    return [function(*[x[index] for x in arrays]) for index in np.ndindex(*batch)]


def _same(actual: Array, expected: Array) -> None:
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected, strict=True)


shapes = st.tuples(
    st.sampled_from(BATCHES),
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from(DTYPES),
    st.integers(0, 2**16),
)


@fuzz_settings(60)
@given(case=shapes, complete=st.booleans())
def test_qr_kernels_equal_the_drivers_bit_for_bit(case, complete):
    batch, m, n, dt, seed = case
    a = sample((*batch, m, n), dt, np.random.default_rng(seed))
    plan = lapack.qr_plan(m, n, dt, complete)
    q, r = lapack.planned_qr_batch(plan, a)
    for index, (ref_q, ref_r) in zip(
        np.ndindex(*batch), _per_matrix(lambda x: _reference_qr(x, complete), a), strict=True
    ):
        _same(q[index], ref_q)
        _same(r[index], ref_r)
        one_q, one_r = lapack.planned_qr(plan, a[index])
        _same(one_q, ref_q)
        _same(one_r, ref_r)


@fuzz_settings(60)
@given(case=shapes, lower=st.booleans())
def test_hermitian_kernels_equal_the_drivers_bit_for_bit(case, lower):
    batch, n, _, dt, seed = case
    a = sample((*batch, n, n), dt, np.random.default_rng(seed))
    driver = _driver("heevd" if dt.kind == "c" else "syevd", dt)
    w, v = lapack.eigh_batch(a, lower)
    for index in np.ndindex(*batch):
        ref_w, ref_v, info = driver(a[index], compute_v=1, lower=int(lower))
        assert info == 0
        _same(w[index], ref_w)
        _same(v[index], ref_v)
        one_w, one_v = lapack.eigh(a[index], lower)
        _same(one_w, ref_w)
        _same(one_v, ref_v)
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dt)
    factor = lapack.cholesky_batch(spd)
    for index in np.ndindex(*batch):
        ref, info = _driver("potrf", dt)(spd[index], lower=1, clean=1)
        assert info == 0
        _same(factor[index], ref)
        _same(lapack.cholesky(spd[index]), ref)


@fuzz_settings(60)
@given(case=shapes)
def test_solve_kernels_equal_the_drivers_bit_for_bit(case):
    batch, n, k, dt, seed = case
    rng = np.random.default_rng(seed)
    a = sample((*batch, n, n), dt, rng) + 3 * n * np.eye(n, dtype=dt)
    b = sample((*batch, n, k), dt, rng)
    x, factors, pivots = lapack.factor_and_solve_batch(a, b)
    assert pivots.dtype == np.int32
    for index in np.ndindex(*batch):
        packed, ref_pivots, info = _driver("getrf", dt)(a[index].T)
        assert info == 0
        ref_x, info = _driver("getrs", dt)(packed, ref_pivots, b[index], trans=1)
        assert info == 0
        _same(x[index], ref_x)
        _same(factors[index], packed.T)
        _same(pivots[index], ref_pivots.astype(np.int32))
        one_x, one_factors, one_pivots = lapack.factor_and_solve(a[index], b[index])
        _same(one_x, ref_x)
        _same(one_factors, packed.T)
        _same(one_pivots, ref_pivots)
    inverses = lapack.inv_batch(a)
    for index in np.ndindex(*batch):
        _, _, ref, info = _driver("gesv", dt)(a[index], np.eye(n, dtype=dt))
        assert info == 0
        _same(inverses[index], ref)
        _same(lapack.inv(a[index]), ref)


def test_the_batched_kernels_raise_as_the_one_matrix_kernels():
    a = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    a[1, 2, 2] = 0
    with pytest.raises(np.linalg.LinAlgError):
        lapack.factor_and_solve_batch(a, a)
    with pytest.raises(np.linalg.LinAlgError):
        lapack.cholesky_batch(a)
    with pytest.raises(np.linalg.LinAlgError):
        lapack.inv_batch(a)


public_shapes = st.tuples(
    st.sampled_from([(), (1,), (3,), (2, 2), (0,), (lapack.LOOP_LIMIT + 1,)]),
    st.integers(0, 5),
    st.integers(0, 5),
    st.sampled_from(DTYPES),
    st.integers(0, 2**16),
)


def _tol(dt: np.dtype[Any]) -> float:
    return 2e-4 if dt in (np.float32, np.complex64) else 1e-10


def _close(actual: Any, expected: Any, dt: np.dtype[Any]) -> None:
    tol = _tol(dt)
    got = np.asarray(actual)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@fuzz_settings(50)
@given(case=public_shapes, tracked=st.booleans())
def test_public_calls_equal_numpy_on_first_and_repeated_calls(case, tracked):
    batch, m, n, dt, seed = case
    rng = np.random.default_rng(seed)
    a = sample((*batch, m, n), dt, rng)
    square = a[..., :m, :m] if n >= m else sample((*batch, m, m), dt, rng)
    spd = square @ np.conj(np.swapaxes(square, -1, -2)) + (m + 1) * np.eye(m, dtype=dt)
    rhs = sample((*batch, m, n), dt, rng)
    tape = tf.Tape()

    def wrap(x: Array) -> Any:
        return tape.track(x) if tracked else tf.Tensor(x)

    for _ in range(2):  # the second call takes the call caches
        for mode in ("reduced", "complete"):
            q, r = linalg.qr(wrap(a), mode=mode)
            ref_q, ref_r = np.linalg.qr(a, mode=mode)
            _close(q, ref_q, dt)
            _close(r, ref_r, dt)
        _close(linalg.qr(wrap(a), mode="r"), np.linalg.qr(a, mode="r"), dt)
        _close(linalg.norm(wrap(a)), np.linalg.norm(a.reshape(-1)), dt)
        _close(linalg.cholesky(wrap(spd)), np.linalg.cholesky(spd), dt)
        upper = np.conj(np.swapaxes(np.linalg.cholesky(spd), -1, -2))
        _close(linalg.cholesky(wrap(spd), upper=True), upper, dt)
        for uplo in ("L", "U"):
            _close(linalg.eigvalsh(wrap(square), UPLO=uplo), np.linalg.eigvalsh(square, uplo), dt)
            w, _ = linalg.eigh(wrap(spd), UPLO=uplo)
            _close(w, np.linalg.eigvalsh(spd, uplo), dt)
        _close(linalg.solve(wrap(spd), wrap(rhs)), np.linalg.solve(spd, rhs), dt)
        _close(linalg.inv(wrap(spd)), np.linalg.inv(spd), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_norm_of_every_entry_is_numpys_value(dt):
    rng = np.random.default_rng(5)
    for shape in ((4, 4), (3, 5), (2, 3, 4), (7,)):
        a = sample(shape, dt, rng)
        got = linalg.norm(tf.Tensor(a))
        expected = np.sqrt(np.vdot(a, a).real)
        assert got.dtype == expected.dtype
        assert np.asarray(got) == expected
    for bad in (np.inf, -np.inf, np.nan):
        a = np.ones((2, 2), dt)
        a[0, 1] = bad
        value = np.asarray(linalg.norm(tf.Tensor(a)))
        np.testing.assert_array_equal(value, np.sqrt(np.vdot(a, a).real))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_bad_input_raises_on_first_and_repeated_calls(dt, batch):
    good = np.broadcast_to(np.eye(3, dtype=dt), (*batch, 3, 3)).copy()
    calls = {
        "qr": linalg.qr,
        "cholesky": linalg.cholesky,
        "eigh": linalg.eigh,
        "eigvalsh": linalg.eigvalsh,
        "solve": lambda x: linalg.solve(x, x),
        "inv": linalg.inv,
    }
    for name, call in calls.items():
        call(tf.Tensor(good))  # the call caches now hold this meta
        bad = good.copy()
        bad[(*(0,) * len(batch), 0, 2)] = np.nan
        for _ in range(2):
            with pytest.raises(LinAlgError, match="NaN or Inf"):
                call(tf.Tensor(bad))
            with pytest.raises(ShapeError, match=r"square|matrix"):
                call(tf.Tensor(np.ones((*batch, 3, 4), dt)) if name != "qr" else np.ones(3, dt))
            with pytest.raises(DTypeError):
                call(np.ones((*batch, 3, 3), np.float16))
    singular = good.copy()
    singular[(*(0,) * len(batch), 1, 1)] = 0
    where = r"at batch index \(0,\)" if batch else r"\(3, 3\) is"
    for _ in range(2):
        with pytest.raises(LinAlgError, match=where):
            linalg.solve(tf.Tensor(singular), tf.Tensor(good))
        with pytest.raises(LinAlgError, match=where):
            linalg.cholesky(tf.Tensor(singular))
        with pytest.raises(LinAlgError, match=where):
            linalg.inv(tf.Tensor(singular))
        with pytest.raises(ParameterError):
            linalg.qr(tf.Tensor(good), mode="full")
        with pytest.raises(ParameterError):
            linalg.eigh(tf.Tensor(good), UPLO="X")


def test_integer_operands_promote_on_every_call():
    a = np.array([[4, 1], [1, 3]])
    for _ in range(2):
        _close(linalg.cholesky(tf.Tensor(a)), np.linalg.cholesky(a.astype(float)), np.dtype(float))
        _close(linalg.eigvalsh(tf.Tensor(a)), np.linalg.eigvalsh(a.astype(float)), np.dtype(float))
        _close(linalg.solve(tf.Tensor(a), tf.Tensor(a)), np.eye(2), np.dtype(float))
        q, r = linalg.qr(tf.Tensor(a))
        _close(np.asarray(q) @ np.asarray(r), a, np.dtype(float))


def test_call_caches_are_cleared_by_clear_caches():
    from tenferro.linalg.factorizations import _CHOLESKY_CALLS, _QR_CALLS
    from tenferro.linalg.hermitian_eigen import _EIGH_CALLS
    from tenferro.linalg.solvers import _SOLVE_CALLS

    a = tf.Tensor(np.eye(2))
    linalg.qr(a)
    linalg.cholesky(a)
    linalg.solve(a, a)
    linalg.eigvalsh(a)
    assert all(len(c) for c in (_QR_CALLS, _CHOLESKY_CALLS, _SOLVE_CALLS, _EIGH_CALLS))
    tf.clear_caches()
    assert not any(len(c) for c in (_QR_CALLS, _CHOLESKY_CALLS, _SOLVE_CALLS, _EIGH_CALLS))
