"""tf.linalg spectral operations: values against numpy, derivatives at exactly degenerate
spectra, eager/traced parity, an eager truncated-SVD sweep against finite differences,
gauges and errors. (Per-dtype FD/adjoint/second-order checks of every family are the
rule cases in rule_cases_spectral.py; the oracle replay is test_oracles.py.)"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tenferro_support import INEXACT, dtype_id, sample, tolerance

import tenferro as tf
from tenferro.errors import LinAlgError
from tidu import ADRuleError

rng0 = np.random.default_rng(20261122)


def _orthonormal(n: int, dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    work = np.complex128 if np.dtype(dt).kind == "c" else np.float64
    q, _ = np.linalg.qr(sample((n, n), np.dtype(work), rng))
    return q


def _close(actual: Any, expected: Any, dt: Any, scale: float = 1.0) -> None:
    np.testing.assert_allclose(
        np.asarray(actual), expected, rtol=0, atol=tolerance(dt) * 100 * scale
    )


# ---------------------------------------------------------------------- values vs numpy


@given(
    m=st.integers(0, 5),
    n=st.integers(0, 5),
    batch=st.sampled_from([(), (2,), (1, 3)]),
    dt=st.sampled_from(INEXACT),
    seed=st.integers(0, 2**16),
)
def test_svd_matches_numpy_for_every_shape_and_dtype(m, n, batch, dt, seed):
    a = sample((*batch, m, n), dt, np.random.default_rng(seed))
    for full in (True, False):
        u, s, vh = (np.asarray(x) for x in tf.linalg.svd(a, full_matrices=full))
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (nu.shape, ns.shape, nvh.shape)
        assert u.dtype == nu.dtype
        assert s.dtype == ns.dtype
        _close(s, ns, dt)
        k = min(m, n)
        _close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dt)
        gram_u = np.conj(np.swapaxes(u, -1, -2)) @ u
        gram_v = vh @ np.conj(np.swapaxes(vh, -1, -2))
        _close(gram_u, np.broadcast_to(np.eye(u.shape[-1]), gram_u.shape), dt)
        _close(gram_v, np.broadcast_to(np.eye(vh.shape[-2]), gram_v.shape), dt)
    _close(tf.linalg.svdvals(a), np.linalg.svd(a, compute_uv=False), dt)


@given(
    n=st.integers(0, 5),
    batch=st.sampled_from([(), (2,)]),
    dt=st.sampled_from(INEXACT),
    uplo=st.sampled_from(["L", "U"]),
    seed=st.integers(0, 2**16),
)
def test_eigh_and_eig_match_numpy(n, batch, dt, uplo, seed):
    a = sample((*batch, n, n), dt, np.random.default_rng(seed))
    w, v = (np.asarray(x) for x in tf.linalg.eigh(a, uplo))
    nw, _ = np.linalg.eigh(a, UPLO=uplo)
    _close(w, nw, dt)
    _close(tf.linalg.eigvalsh(a, uplo), nw, dt)
    herm = np.linalg.eigh(a, UPLO=uplo)[1]
    assert v.shape == herm.shape
    assert v.dtype == herm.dtype
    ew, ev = (np.asarray(x) for x in tf.linalg.eig(a))
    assert ew.dtype.kind == "c"
    assert ev.dtype.kind == "c"
    _close(a @ ev, ev * ew[..., None, :], dt, scale=10)
    _close(np.linalg.norm(ev, axis=-2), np.ones(ew.shape), dt)
    _close(np.sort_complex(np.asarray(tf.linalg.eigvals(a))), np.sort_complex(ew), dt)


@given(
    shape=st.sampled_from([(4,), (3, 4), (2, 3, 4)]),
    dt=st.sampled_from(INEXACT),
    order=st.sampled_from([None, 1, 2, 3.5, 0.5, math.inf, -math.inf, 0]),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_vector_norms_match_numpy(shape, dt, order, keepdims, seed):
    x = sample(shape, dt, np.random.default_rng(seed))
    expected = np.linalg.norm(x, order, axis=-1, keepdims=keepdims)
    _close(tf.linalg.norm(x, order, axis=-1, keepdims=keepdims), expected, dt)
    if order is not None:
        _close(tf.linalg.vector_norm(x, order, axis=-1, keepdims=keepdims), expected, dt)
    _close(tf.linalg.norm(x), np.linalg.norm(x), dt)


@pytest.mark.parametrize("order", [1, 2, 3.5, 0.5, 0, math.inf, -1, -2, -0.5])
@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_vector_norms_of_empty_vectors_match_numpy(shape, order):
    """Over no entries, numpy's norms are 0, except negative orders (0 ** (1/ord) = inf);
    the largest |x| of none is 0 (numpy's ``initial``)."""
    x = np.zeros(shape)
    with np.errstate(divide="ignore"):
        expected = np.linalg.vector_norm(x, ord=order, axis=-1)
    got = np.asarray(tf.linalg.vector_norm(x, order, axis=-1))
    np.testing.assert_array_equal(got, expected)
    assert got.shape == expected.shape


@given(
    dt=st.sampled_from(INEXACT),
    order=st.sampled_from(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matrix_norms_match_numpy(dt, order, keepdims, seed):
    x = sample((2, 3, 4), dt, np.random.default_rng(seed))
    expected = np.linalg.norm(x, order, axis=(-2, -1), keepdims=keepdims)
    _close(tf.linalg.matrix_norm(x, order, keepdims=keepdims), expected, dt)
    flipped = np.linalg.norm(x, order, axis=(2, 0), keepdims=keepdims)
    _close(tf.linalg.norm(x, order, axis=(2, 0), keepdims=keepdims), flipped, dt)
    _close(tf.linalg.norm(x[0], order), np.linalg.norm(x[0], order), dt)


@pytest.mark.parametrize("dt", INEXACT, ids=dtype_id)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_pinv_matches_numpy(dt, shape):
    a = sample(shape, dt, rng0)
    _close(tf.linalg.pinv(a), np.linalg.pinv(a), dt, scale=10)
    low_rank = (sample((shape[0], 1), dt, rng0) @ sample((1, shape[1]), dt, rng0)).astype(dt)
    _close(tf.linalg.pinv(low_rank), np.linalg.pinv(low_rank, rcond=1e-5), dt, scale=10)
    h = (a[:, :1] @ np.conj(a[:, :1]).T + np.eye(shape[0])).astype(dt)
    _close(tf.linalg.pinv(h, hermitian=True), np.linalg.pinv(h, hermitian=True), dt, scale=10)


def test_integer_input_promotes_to_float64():
    a = [[2, 1], [1, 3]]
    assert tf.linalg.svdvals(a).dtype == np.float64
    assert tf.linalg.eigvalsh(a).dtype == np.float64
    assert tf.linalg.eigvals(a).dtype == np.complex128
    assert tf.linalg.norm(a).dtype == np.float64


# ---------------------------------------------------------------------- gauges


@pytest.mark.parametrize("dt", INEXACT, ids=dtype_id)
def test_canonical_gauge_makes_pivots_real_positive(dt):
    a = sample((2, 4, 3), dt, rng0)
    u, s, vh = (np.asarray(x) for x in tf.linalg.svd(a, gauge="canonical"))
    pivots = np.take_along_axis(u, np.argmax(np.abs(u), axis=-2)[..., None, :], axis=-2)
    assert np.all(pivots.real > 0)
    assert np.allclose(pivots.imag, 0, atol=1e-6)
    _close((u[..., :3] * s[..., None, :]) @ vh, a, dt)
    h = a[..., :3, :] + np.conj(np.swapaxes(a[..., :3, :], -1, -2))
    w, v = (np.asarray(x) for x in tf.linalg.eigh(h, gauge="canonical"))
    pivots = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    assert np.all(pivots.real > 0)
    assert np.allclose(pivots.imag, 0, atol=1e-6)
    _close((v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2)), h, dt, scale=10)


def test_canonical_gauge_gives_phase_dependent_losses_a_derivative():
    """Re(sum U) depends on the phases: in the canonical gauge it is a smooth function,
    so its gradient equals finite differences."""
    a = sample((3, 3), np.complex128, rng0)

    def loss(x: Any) -> Any:
        u, _, vh = tf.linalg.svd(x, gauge="canonical")
        return tf.sum(tf.real(u)) + tf.sum(tf.imag(vh))

    tf.testing.check_grads(loss, [a], order=1)


# ---------------------------------------------------------------------- degenerate spectra


def _degenerate_svd_input(dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    s = np.diag([2.0, 2.0, 0.5])
    return (_orthonormal(4, dt, rng)[:, :3] @ s @ _orthonormal(3, dt, rng)).astype(dt)


def _degenerate_hermitian(dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    q = _orthonormal(4, dt, rng)
    h = q @ np.diag([1.0, 1.0, 1.0, -2.0]) @ np.conj(q).T
    return ((h + np.conj(h).T) / 2).astype(dt)


@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
def test_svd_at_an_exactly_degenerate_spectrum_gives_finite_fd_exact_gradients(dt):
    a = _degenerate_svd_input(dt, np.random.default_rng(1))
    s = np.linalg.svd(a, compute_uv=False)
    assert abs(s[0] - s[1]) < 1e-12  # exactly degenerate to rounding
    weights = sample((4, 4), dt, rng0)

    def projector(x: Any) -> Any:  # onto the complete degenerate left subspace
        u, _, _ = tf.linalg.svd(x, full_matrices=False)
        top = u[:, :2]
        p = tf.matmul(top, tf.conj(tf.swapaxes(top, 0, 1)))
        return tf.sum(tf.real(tf.conj(tf.asarray(weights)) * p))

    def values(x: Any) -> Any:
        return tf.sum(tf.linalg.svdvals(x) ** 3)

    def reconstruction(x: Any) -> Any:
        u, s, vh = tf.linalg.svd(x, full_matrices=False)
        return tf.sum(tf.abs(tf.matmul(u * tf.sqrt(s).astype(u.dtype), vh)) ** 2)

    for loss in (projector, values, reconstruction):
        gradient = np.asarray(tf.grad(loss)(a))
        assert np.all(np.isfinite(gradient))
        tf.testing.check_grads(loss, [a], order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("dt", [np.dtype("float64"), np.dtype("complex128")], ids=dtype_id)
def test_eigh_at_an_exactly_degenerate_spectrum_gives_finite_fd_exact_gradients(dt):
    h = _degenerate_hermitian(dt, np.random.default_rng(2))
    weights = sample((4, 4), dt, rng0)

    def projector(x: Any) -> Any:  # onto the threefold eigenvalue 1
        _, v = tf.linalg.eigh(x)
        top = v[:, 1:]
        p = tf.matmul(top, tf.conj(tf.swapaxes(top, 0, 1)))
        return tf.sum(tf.real(tf.conj(tf.asarray(weights)) * p))

    def values(x: Any) -> Any:
        return tf.sum(tf.exp(tf.linalg.eigvalsh(x)))

    def complement_projector(x: Any) -> Any:  # onto the simple eigenvalue -2
        _, v = tf.linalg.eigh(x)
        low = v[:, :1]
        p = tf.matmul(low, tf.conj(tf.swapaxes(low, 0, 1)))
        return tf.sum(tf.real(tf.conj(tf.asarray(weights)) * p))

    for loss in (projector, values, complement_projector):
        assert np.all(np.isfinite(np.asarray(tf.grad(loss)(h))))
        # Hermitian input: finite differences along Hermitian directions.
        tf.testing.check_grads(
            lambda x, f=loss: f((x + tf.conj(tf.swapaxes(x, 0, 1))) * 0.5),
            [h],
            order=1,
            modes=("fwd", "rev"),
        )


def test_the_unregularised_formula_is_singular_where_ours_is_finite():
    """The reason for cutting tied gaps: the textbook 1/(s_j^2 - s_i^2) is infinite here."""
    a = _degenerate_svd_input(np.dtype("float64"), np.random.default_rng(1))
    s = np.linalg.svd(a, compute_uv=False)
    with np.errstate(divide="ignore"):
        plain = 1.0 / (s[1] ** 2 - s[0] ** 2) if s[1] != s[0] else np.inf
    assert abs(plain) > 1e12
    gradient = np.asarray(tf.grad(lambda x: tf.sum(tf.linalg.svd(x)[1]))(a))
    assert np.all(np.isfinite(gradient))


def test_norms_at_zero_have_the_subgradient_zero():
    zero = np.zeros((3, 3))
    for fn in (
        tf.linalg.norm,
        lambda x: tf.linalg.vector_norm(x, 3),
        lambda x: tf.linalg.matrix_norm(x, "fro"),
    ):
        gradient = np.asarray(tf.grad(fn)(zero))
        np.testing.assert_array_equal(gradient, np.zeros((3, 3)))


# ---------------------------------------------------------------------- parity, sweep


def _eager_grad(loss: Any, a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    x = tf.EagerTensor(a, requires_grad=True)
    loss(x).backward()
    return np.asarray(x.grad)


@pytest.mark.parametrize("dt", INEXACT, ids=dtype_id)
def test_eager_and_traced_gradients_agree(dt):
    a = sample((4, 3), dt, rng0)
    square = sample((3, 3), dt, rng0)
    losses = [
        (lambda x: tf.sum(tf.linalg.svdvals(x) ** 2), a),
        (lambda x: tf.sum(tf.abs(tf.linalg.svd(x, full_matrices=False)[0]) ** 2 * 1.5), a),
        (lambda x: tf.linalg.matrix_norm(x, "nuc") + tf.linalg.norm(x, 2), a),
        (lambda x: tf.sum(tf.real(tf.linalg.pinv(x))), a),
        (lambda x: tf.sum(tf.linalg.eigvalsh(x) ** 3), square),
        (lambda x: tf.sum(tf.real(tf.linalg.eigvals(x) ** 2)), square),
    ]
    for loss, x in losses:
        traced = np.asarray(tf.grad(loss)(x))
        eager = _eager_grad(loss, x)
        np.testing.assert_allclose(eager, traced, rtol=0, atol=tolerance(dt) * 10)
        assert np.any(traced != 0)


def _sweep(cores: list[Any], rtol: float) -> Any:
    """Left-to-right truncated-SVD sweep over an MPS; returns the sum of kept singular
    values over all bonds (the ranks are read from the data at every bond)."""
    total = None
    carry = cores[0]
    for core in cores[1:]:
        left, d, right = carry.shape
        _u, s, vh = tf.linalg.truncated_svd(tf.reshape(carry, (left * d, right)), rtol=rtol)
        term = tf.sum(s)
        total = term if total is None else total + term
        rest = tf.matmul(s.astype(vh.dtype)[:, None] * vh, tf.reshape(core, (right, -1)))
        carry = tf.reshape(rest, (s.shape[0], core.shape[1], core.shape[2]))
    left, d, right = carry.shape
    return total + tf.sum(tf.linalg.svdvals(tf.reshape(carry, (left * d, right))))


def _kept_ranks(cores: list[Any]) -> list[Any]:
    kept = []
    carry = tf.Tensor(cores[0])
    for core in cores[1:]:
        left, d, right = carry.shape
        _, s, vh = tf.linalg.truncated_svd(tf.reshape(carry, (left * d, right)), rtol=1e-3)
        kept.append(s)
        rest = tf.matmul(s[:, None] * vh, tf.reshape(tf.Tensor(core), (right, -1)))
        carry = tf.reshape(rest, (s.shape[0], core.shape[1], core.shape[2]))
    return kept


def test_eager_truncated_svd_sweep_with_data_dependent_ranks_matches_fd():
    rng = np.random.default_rng(5)
    shapes = [(1, 2, 6), (6, 2, 6), (6, 2, 6), (6, 2, 1)]
    # Low-rank cores: the truncation keeps fewer than 6 at some bonds.
    cores = [
        (sample((a, b, 2), np.float64, rng) @ sample((2, c), np.float64, rng))
        if c > 2
        else sample((a, b, c), np.float64, rng)
        for a, b, c in shapes
    ]
    tracked = [tf.EagerTensor(c, requires_grad=True) for c in cores]
    loss = _sweep(tracked, rtol=1e-3)
    loss.backward()
    ranks = [s.shape[0] for s in _kept_ranks(cores)]
    assert max(ranks) < 6, ranks  # read from the data, below the bond dimension 6
    for i, core in enumerate(cores):
        direction = sample(core.shape, np.float64, rng)
        eps = 1e-6

        def at(step: float, i: int = i, direction: Any = direction) -> float:
            moved = [
                tf.Tensor(c + (step * direction if j == i else 0)) for j, c in enumerate(cores)
            ]
            return float(np.asarray(_sweep(moved, rtol=1e-3)))

        fd = (at(eps) - at(-eps)) / (2 * eps)
        ad = float(np.sum(np.asarray(tracked[i].grad) * direction))
        assert abs(fd - ad) < 1e-6 * max(1.0, abs(fd)), (i, fd, ad)


def test_truncated_svd_ranks_eager_and_traced():
    rng = np.random.default_rng(3)
    a = sample((6, 2), np.float64, rng) @ sample((2, 5), np.float64, rng)
    u, s, vh = tf.linalg.truncated_svd(a)
    assert u.shape == (6, 2)
    assert s.shape == (2,)
    assert vh.shape == (2, 5)
    assert tf.linalg.truncated_svd(a, max_rank=1).S.shape == (1,)
    assert tf.linalg.truncated_svd(a, atol=1e9).S.shape == (0,)

    def kept(x: Any) -> Any:  # traced, S has a data-dependent extent: pad it back
        s = tf.linalg.truncated_svd(x).S
        return tf.sum(tf.pad_to_match(s, tf.linalg.svdvals(x), 0) ** 2)

    traced = np.asarray(tf.grad(kept)(a))
    np.testing.assert_allclose(traced, _eager_grad(kept, a), atol=1e-10)


# ---------------------------------------------------------------------- errors


def test_full_non_square_extra_vectors_raise_in_both_modes():
    a = sample((4, 2), np.float64, rng0)
    with pytest.raises(ADRuleError, match="full_matrices=False"):
        tf.grad(lambda x: tf.sum(tf.linalg.svd(x)[0]))(a)
    with pytest.raises(ADRuleError, match="full_matrices=False"):
        tf.jvp(lambda x: tf.linalg.svd(x)[0], (a,), (a,))
    with pytest.raises(ADRuleError, match="full_matrices=False"):
        tf.grad(lambda x: tf.sum(tf.linalg.svd(x.T)[2]))(a)
    # S and the square partner stay differentiable.
    g = tf.grad(lambda x: tf.sum(tf.linalg.svd(x)[1]) + tf.sum(tf.linalg.svd(x)[2] ** 2))(a)
    assert np.all(np.isfinite(np.asarray(g)))


def test_bad_input_raises_tenferro_errors_naming_the_operation():
    good = np.eye(3)
    cases = [
        (lambda: tf.linalg.svd(good, eps=0.0), tf.ParameterError, "eps"),
        (lambda: tf.linalg.eigh(good, eps=-1.0), tf.ParameterError, "eps"),
        (lambda: tf.linalg.eig(good, eps=math.nan), tf.ParameterError, "eps"),
        (lambda: tf.linalg.svd(good, gauge="pretty"), tf.ParameterError, "gauge"),
        (lambda: tf.linalg.eigh(good, "X"), tf.ParameterError, "UPLO"),
        (lambda: tf.linalg.eigh(np.ones((2, 3))), tf.ShapeError, "square"),
        (lambda: tf.linalg.eig(np.ones((2, 3))), tf.ShapeError, "square"),
        (lambda: tf.linalg.svd(np.ones(3)), tf.ShapeError, "matrix"),
        (lambda: tf.linalg.svd(np.array([[1.0, np.nan]])), LinAlgError, "NaN"),
        (lambda: tf.linalg.eigh(np.full((2, 2, 2), np.inf)), LinAlgError, "batch"),
        (lambda: tf.linalg.truncated_svd(good, max_rank=-1), tf.ParameterError, "max_rank"),
        (lambda: tf.linalg.truncated_svd(good, rtol=-1.0), tf.ParameterError, "rtol"),
        (lambda: tf.linalg.pinv(good, rtol=math.inf), tf.ParameterError, "rtol"),
        (lambda: tf.linalg.matrix_norm(good, 3), tf.ParameterError, "ord"),
        (lambda: tf.linalg.norm(np.ones((2, 2, 2)), 2), tf.ShapeError, "axis"),
        (lambda: tf.linalg.norm(np.ones(3), "fro", axis=0), tf.ParameterError, "vector"),
        (lambda: tf.linalg.svd(np.array([["a"]])), tf.TenferroError, None),
    ]
    for call, error, fragment in cases:
        with pytest.raises(error, match=fragment) as info:
            call()
        assert "linalg" in str(info.value) or error is tf.TenferroError


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_matches_numpy_and_differentiates(p):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 4, 4)) + 3 * np.eye(4)
    np.testing.assert_allclose(np.asarray(tf.linalg.cond(a, p)), np.linalg.cond(a, p), rtol=1e-10)
    if p in (None, 2, -2, "fro"):  # smooth at this generic point
        tf.testing.check_grads(lambda x: tf.linalg.cond(x, p), [a[0]], order=2)
    with pytest.raises(tf.ParameterError, match=r"linalg\.cond"):
        tf.linalg.cond(a, 3)
