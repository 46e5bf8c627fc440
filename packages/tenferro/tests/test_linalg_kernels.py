"""The one-matrix LAPACK kernels (``tenferro.linalg.lapack``) equal the general path
(numpy.linalg's batched gufuncs) for every dtype, shape class and batch, including the
looped small batches, and fail the same way on singular, indefinite and non-finite
input. Also: every linalg family returns exactly the metas it declares (its kernels
are trusted, so the per-output check of user families does not run)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from rule_cases_solvers import dominant
from tenferro_support import sample

import tenferro as tf
from tenferro import linalg
from tenferro.errors import LinAlgError
from tenferro.linalg import lapack
from tenferro.linalg.factorizations import QR, Cholesky
from tenferro.linalg.gaps import GapScale
from tenferro.linalg.hermitian_eigen import Eigh
from tenferro.linalg.norms import Norm2
from tenferro.linalg.singular_values import Svd, SvdTruncate
from tenferro.linalg.solvers import Inv, Solve, SolveWithFactors, TriangularSolve
from tenferro.meta import Meta

DTYPES = [np.dtype(d) for d in ("float32", "float64", "complex64", "complex128")]
BATCHES = [(), (1,), (3,), (2, 2)]


def _tol(dt: np.dtype[Any]) -> float:
    return 2e-4 if (dt.itemsize <= 8 and dt.kind == "c") or dt == np.float32 else 1e-11


def _close(actual: Any, expected: Any, dt: np.dtype[Any]) -> None:
    tol = _tol(dt)
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol)


def _gauge_free(u: Any, vh: Any) -> np.ndarray[Any, Any]:
    """``U Vh`` with the columns of U paired to the rows of Vh: free of their phases."""
    return np.asarray(u) @ np.asarray(vh)


matrices = st.tuples(
    st.sampled_from(BATCHES),
    st.integers(1, 5),
    st.integers(1, 5),
    st.sampled_from(DTYPES),
    st.integers(0, 2**16),
)


@fuzz_settings(40)
@given(case=matrices)
def test_qr_and_svd_kernels_equal_numpy(case):
    batch, m, n, dt, seed = case
    a = sample((*batch, m, n), dt, np.random.default_rng(seed))
    for mode in ("reduced", "complete"):
        q, r = linalg.qr(a, mode=mode)
        ref_q, ref_r = np.linalg.qr(a, mode=mode)
        _close(r, ref_r, dt)  # the same drivers: the same signs
        _close(q, ref_q, dt)
    u, s, vh = linalg.svd(a, full_matrices=False)
    ref_u, ref_s, ref_vh = np.linalg.svd(a, full_matrices=False)
    _close(s, ref_s, dt)
    k = min(m, n)
    if k == 1 or np.all(np.diff(ref_s, axis=-1) < -0.05):  # distinct values: U Vh unique
        _close(_gauge_free(u, vh), _gauge_free(ref_u, ref_vh), dt)
    _close(np.asarray(u) @ (np.asarray(s)[..., None] * np.asarray(vh)), a, dt)


@fuzz_settings(40)
@given(case=matrices, lower=st.booleans())
def test_hermitian_kernels_equal_numpy(case, lower):
    batch, n, _, dt, seed = case
    rng = np.random.default_rng(seed)
    a = sample((*batch, n, n), dt, rng)
    uplo = "L" if lower else "U"
    w, v = linalg.eigh(a, UPLO=uplo)
    ref_w, ref_v = np.linalg.eigh(a, UPLO=uplo)
    _close(w, ref_w, dt)
    hermitian = np.asarray(v) @ (np.asarray(w)[..., None] * np.conj(np.swapaxes(v, -1, -2)))
    _close(hermitian, ref_v @ (ref_w[..., None] * np.conj(np.swapaxes(ref_v, -1, -2))), dt)
    spd = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n, dtype=dt)
    _close(linalg.cholesky(spd), np.linalg.cholesky(spd), dt)


@fuzz_settings(40)
@given(case=matrices, upper=st.booleans(), left=st.booleans(), unit=st.booleans())
def test_solve_kernels_equal_numpy(case, upper, left, unit):
    batch, n, k, dt, seed = case
    rng = np.random.default_rng(seed)
    a = dominant((*batch, n, n), dt, rng)
    b = sample((*batch, n, k), dt, rng)
    _close(linalg.solve(a, b), np.linalg.solve(a, b), dt)
    _close(linalg.inv(a), np.linalg.inv(a), dt)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri = tri - np.einsum("...ii->...i", tri)[..., None] * np.eye(n) + np.eye(n)
    rhs = b if left else np.swapaxes(b, -1, -2)
    x = linalg.solve_triangular(a, rhs, upper=upper, left=left, unitriangular=unit)
    expected = np.linalg.solve(tri, b)
    _close(
        x,
        expected if left else np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), b), -1, -2),
        dt,
    )


@pytest.mark.parametrize("dt", DTYPES)
def test_large_batches_take_numpy_and_agree_with_the_loop(dt):
    count = lapack.LOOP_LIMIT + 1
    rng = np.random.default_rng(1)
    a = dominant((count, 3, 3), dt, rng)
    looped = lapack.looped(lapack.svd, a)
    whole = Svd.make((Meta(a.shape, dt),), eps=1e-12, gauge="raw").impl(a)
    _close(whole[1], looped[1], dt)
    _close(linalg.solve(a, a), lapack.looped(lapack.solve, a, a), dt)
    _close(linalg.inv(a[:2]), np.linalg.inv(a[:2]), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_the_kernels_fail_as_numpy_does(dt, batch):
    n = 3
    a = np.broadcast_to(np.eye(n, dtype=dt), (*batch, n, n)).copy()
    a[(*(0,) * len(batch), 1, 1)] = 0  # singular, and not positive definite
    where = r"at batch index \(0,\)" if batch else r"\(3, 3\) is"
    for call in (lambda: linalg.solve(a, a), lambda: linalg.inv(a), lambda: linalg.cholesky(a)):
        with pytest.raises(LinAlgError, match=where):
            call()
    with pytest.raises(LinAlgError, match="singular"):
        linalg.solve_triangular(a, a, upper=True)
    bad = np.ones((*batch, n, n), dtype=dt)
    bad[(*(0,) * len(batch), 0, 2)] = np.nan
    for call in (linalg.qr, linalg.svd, linalg.eigh, linalg.cholesky, linalg.inv):
        with pytest.raises(LinAlgError, match="NaN or Inf"):
            call(bad)


def test_a_finite_input_whose_sum_overflows_is_accepted():
    a = np.full((2, 2), 2e38, dtype=np.float32)  # its sum is inf, its entries are finite
    a[1, 1] = 0
    _close(linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), np.dtype(np.float32))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 3), (0, 3, 3), (3, 0)])
def test_every_family_returns_the_metas_it_declares(dt, shape):
    rng = np.random.default_rng(0)
    a = sample(shape, dt, rng)
    meta = Meta(shape, dt)
    square = shape[-1] == shape[-2]
    ops: list[Any] = [
        QR.make((meta,), complete=False, positive=False),
        QR.make((meta,), complete=True, positive=True),
        Svd.make((meta,), eps=1e-12, gauge="raw"),
        Svd.make((meta,), eps=1e-12, gauge="canonical"),
        Norm2.make((meta,), axes=(len(shape) - 1,), keepdims=True),
    ]
    operands: list[Any] = [(a,)] * len(ops)
    factors = Svd.make((meta,), eps=1e-12, gauge="raw").eval((a,), None)
    k = factors[1].shape[-1]
    for rank in {0, k // 2, k}:
        ops.append(SvdTruncate.make(tuple(Meta(f.shape, f.dtype) for f in factors), rank=rank))
        operands.append(tuple(factors))
    if square:
        spd = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(shape[-1], dtype=dt)
        ops += [
            Eigh.make((meta,), uplo="L", eps=1e-12, gauge="raw"),
            Cholesky.make((meta,), upper=True),
            Inv.make((meta,)),
            Solve.make((meta, meta), caller="solve"),
            TriangularSolve.make(
                (meta, meta), upper=True, left=False, unitriangular=True, caller="t"
            ),
        ]
        operands += [(a,), (spd,), (spd,), (spd, a), (a, a)]
        _, factors, pivots = Solve.make((meta, meta), caller="solve").eval((spd, a), None)
        ops.append(
            SolveWithFactors.make(
                (meta, meta, Meta(pivots.shape, pivots.dtype), meta), adjoint=True, caller="s"
            )
        )
        operands.append((spd, factors, pivots, a))
    for op, args in zip(ops, operands, strict=True):
        results = op.eval(args, None)
        assert len(results) == len(op.outputs), op
        for value, declared in zip(results, op.outputs, strict=True):
            assert (value.shape, value.dtype) == (declared.shape, declared.dtype), op


@fuzz_settings(30)
@given(
    shape=st.sampled_from([(5,), (2, 3), (2, 3, 2)]),
    dt=st.sampled_from(DTYPES),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_the_2_norm_primitive_equals_numpy(shape, dt, keepdims, seed):
    x = sample(shape, dt, np.random.default_rng(seed))
    axis = tuple(range(len(shape)))[-2:]
    _close(
        linalg.vector_norm(x, axis=axis, keepdims=keepdims),
        np.linalg.vector_norm(x, axis=axis, keepdims=keepdims),
        dt,
    )
    _close(linalg.norm(x), np.linalg.norm(x.ravel()), dt)
    assert np.asarray(linalg.norm(x)).dtype == np.finfo(dt).dtype


@pytest.mark.parametrize("dt", ["float64", "complex128"])
def test_the_2_norm_derivatives(dt):
    rng = np.random.default_rng(3)
    x = sample((2, 3), dt, rng)
    tf.testing.check_grads(lambda v: linalg.norm(v), (x,), order=2)
    tf.testing.check_grads(
        lambda v: linalg.vector_norm(v, axis=0, keepdims=True), (x,), order=2, modes=("rev",)
    )
    zero = np.zeros((2, 2), dt)
    np.testing.assert_array_equal(np.asarray(tf.grad(lambda v: linalg.norm(v))(zero)), 0)


@fuzz_settings(30)
@given(
    k=st.integers(1, 5),
    batch=st.sampled_from([(), (2,)]),
    kind=st.sampled_from(["difference", "sum"]),
    pre=st.sampled_from(["hermitian", "antihermitian", "full"]),
    dt=st.sampled_from(["float32", "float64", "complex128"]),
    scale=st.sampled_from([1e-150, 1.0, 1e150]),
    seed=st.integers(0, 2**16),
)
def test_the_gap_kernel_equals_its_formula(k, batch, kind, pre, dt, scale, seed):
    """``R o pre(x)`` with ``R = 1/(v_j -+ v_i)``, 0 inside a tied cluster (relative to
    ``max|v|``: the result scales exactly as ``1/scale``) and, for sums, between values
    of the cluster at zero."""
    rng = np.random.default_rng(seed)
    real = np.empty(0, dt).real.dtype
    if real == np.float32:
        scale = 1.0  # 1e+-150 is outside single precision
    v = np.sort(rng.uniform(0.1, 2.0, (*batch, k)))[..., ::-1]
    v[..., -1] = v[..., 0]  # a tie (and the diagonal)
    if kind == "sum":
        v[..., -1] = 0.0  # a value at zero
    v = np.sort(v)[..., ::-1].copy()
    x = sample((*batch, k, k), np.dtype(dt), rng)
    eps = 1e-9
    y = {"full": x, "hermitian": (x + np.conj(np.swapaxes(x, -1, -2))) / 2}.get(
        pre, (x - np.conj(np.swapaxes(x, -1, -2))) / 2
    )
    g = (
        v[..., None, :] - v[..., :, None]
        if kind == "difference"
        else v[..., None, :] + v[..., :, None]
    )
    top = np.max(np.abs(v), axis=-1)[..., None, None]
    if kind == "difference":
        cut = np.abs(g) <= eps * top  # sorted: the tied runs are the clusters
    else:
        zero = np.abs(v) <= eps * top[..., 0]
        cut = zero[..., :, None] & zero[..., None, :]
    expected = np.where(cut, 0, y / np.where(cut, 1, g)) / scale
    got = GapScale.bind(
        tf.asarray((v * scale).astype(real)),
        tf.zeros(x.shape, dt),
        tf.asarray(x),
        eps=eps,
        kind=kind,
        pre=pre,
        post="full",
        conjugate=False,
        reverse=False,
        family_name="linalg.svd",
    )
    _close(np.asarray(got) * scale, expected * scale, np.dtype(dt))
    assert np.asarray(got).dtype == np.dtype(dt)


nonfinite = st.tuples(
    st.sampled_from([(), (3,)]),
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from(DTYPES),
    st.sampled_from([np.nan, np.inf, -np.inf]),
    st.booleans(),  # in the imaginary part (complex dtypes)
    st.booleans(),  # a transposed (non-contiguous) view
    st.integers(0, 2**16),
)


@fuzz_settings(40)
@given(case=nonfinite)
def test_the_finiteness_check_finds_every_non_finite_entry(case):
    batch, m, n, dt, bad, imaginary, transposed, seed = case
    rng = np.random.default_rng(seed)
    a = sample((*batch, m, n), dt, rng) * 1e30  # large finite entries stay accepted
    where = tuple(int(rng.integers(0, extent)) for extent in a.shape)
    if imaginary and dt.kind == "c":
        a[where] = complex(a[where].real, bad)
    else:
        a[where] = bad
    if transposed:
        a = np.swapaxes(a, -1, -2)
    with pytest.raises(LinAlgError, match="NaN or Inf"):
        linalg.qr(a)
    a[np.isfinite(a) == 0] = 1
    linalg.qr(a)  # all finite again: accepted


@fuzz_settings(30)
@given(
    batch=st.sampled_from([(), (1,), (3,), (2, 2)]),
    shape=st.sampled_from([(2, 3), (3, 3), (4, 1)]),
    dt=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_looped_batches_equal_the_matrix_by_matrix_kernels(batch, shape, dt, seed):
    a = sample((*batch, *shape), dt, np.random.default_rng(seed))
    q, r = lapack.looped(lambda m: lapack.qr(m, False), a)
    s = lapack.looped(lambda m: lapack.svd(m)[1], a)
    for index in np.ndindex(*batch):
        one_q, one_r = lapack.qr(a[index], False)
        np.testing.assert_array_equal(q[index], one_q)
        np.testing.assert_array_equal(r[index], one_r)
        np.testing.assert_array_equal(s[index], lapack.svd(a[index])[1])
