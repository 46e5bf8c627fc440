"""Rule-test cases of the tf.linalg spectral families (joined to the core table by
test_primitive_rules.py).

Losses on singular/eigen vectors are gauge-invariant (``|U|**2``, ``U diag(f(S)) Vh``,
projectors) unless the canonical gauge fixes the phases; inputs are random Gaussian
matrices (distinct, well-separated spectra for the seeds used)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rule_cases import Case
from tenferro_support import FLOATS, sample

import tenferro as tf
from tenferro.algebra import adjoint, scale_columns
from tenferro.linalg.degeneracy import TieCheck, TieGuard
from tenferro.linalg.gaps import ClusterBlocks, GapScale, SpectralBlock, TiedInverse
from tenferro.linalg.singular_values import SvdTruncate

MATRICES = ((3, 3), (4, 2), (2, 4), (2, 3, 3))
SQUARE = ((3, 3), (2, 3, 3))


def _abs2(x: Any) -> Any:
    return tf.real(x * tf.conj(x))


def _weighted(u: Any, s: Any, vh: Any) -> Any:
    """``U diag(S**3) Vh``: gauge-invariant in every dtype."""
    f = (s * s * s).astype(u.dtype)
    return tf.matmul(scale_columns(u, f), vh)


def _gaps(values: np.ndarray[Any, Any]) -> float:
    ordered = np.sort(values, axis=-1)
    return float(np.min(np.diff(ordered, axis=-1), initial=np.inf))


def _pivot_margin(vectors: np.ndarray[Any, Any]) -> float:
    """How far each column's largest magnitude is above its second largest."""
    top = np.sort(np.abs(vectors), axis=-2)
    return float(np.min(top[..., -1, :] - top[..., -2, :], initial=np.inf))


def _well_conditioned(a: np.ndarray[Any, Any]) -> bool:
    """Singular values, eigenvalues (of the lower triangle), abs row/column sums and
    canonical pivots all well separated: every loss of these cases is smooth near ``a``."""
    u, s, vh = np.linalg.svd(a)
    checks = [
        float(np.min(s, initial=np.inf)) > 0.1,
        _gaps(s) > 0.1,
        _gaps(np.abs(a).sum(axis=-2)) > 0.1,
        _gaps(np.abs(a).sum(axis=-1)) > 0.1,
        _pivot_margin(u) > 0.02,
        _pivot_margin(np.conj(np.swapaxes(vh, -1, -2))) > 0.02,
    ]
    if a.shape[-1] == a.shape[-2]:
        hermitian_part = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
        for uplo in ("L", "U"):
            for m in (a, hermitian_part):
                w, v = np.linalg.eigh(m, UPLO=uplo)
                checks += [_gaps(w) > 0.1, _pivot_margin(v) > 0.02]
    return all(checks)


def _matrix(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """A random matrix (or batch) drawn until it is well conditioned for these losses."""
    for _ in range(2000):
        a = sample(shape, dt, rng)
        if len(shape) < 2 or _well_conditioned(a.astype(np.complex128)):
            return a
    raise AssertionError(f"no well-conditioned {shape} sample")


def _svd_thin(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    def f(a: Any) -> Any:
        u, s, vh = tf.linalg.svd(a, full_matrices=False)
        return s, _weighted(u, s, vh), _abs2(u), _abs2(vh)

    return f, [_matrix(dt, shape, rng)]


def _svd_full(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """Full non-square SVD: S and the factor without extra vectors are differentiable."""

    def f(a: Any) -> Any:
        u, s, vh = tf.linalg.svd(a)
        square = vh if a.shape[-2] >= a.shape[-1] else u
        return s, _abs2(square)

    return f, [_matrix(dt, shape, rng)]


def _svd_canonical(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """The canonical gauge makes the vectors themselves differentiable functions."""

    def f(a: Any) -> Any:
        u, s, vh = tf.linalg.svd(a, full_matrices=False, gauge="canonical")
        return u, s, vh

    return f, [_matrix(dt, shape, rng)]


def _hermitian(a: Any) -> Any:
    """``(A + A^H)/2``: functions of Hermitian inputs are differentiated as such (the
    tangent's Hermitian part), so finite differences must move the input along Hermitian
    directions (as torch's OpInfo does)."""
    return (a + tf.conj(tf.swapaxes(a, -1, -2))) * 0.5


def _eigh(uplo: str, gauge: str) -> Any:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        def f(a: Any) -> Any:
            w, v = tf.linalg.eigh(_hermitian(a), uplo, gauge=gauge)
            f_w = (tf.tanh(w) + 2).astype(v.dtype)
            projected = tf.matmul(v * tf.expand_dims(f_w, -2), tf.conj(tf.swapaxes(v, -1, -2)))
            vectors = v if gauge == "canonical" else _abs2(v)
            return w, projected, vectors

        return f, [_matrix(dt, shape, rng)]

    return build


def _eig(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    def f(a: Any) -> Any:
        w, v = tf.linalg.eig(a)
        return w, _abs2(v)

    return f, [_matrix(dt, shape, rng)]


def _pinv(hermitian: bool) -> Any:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        a = _matrix(dt, shape, rng)
        if hermitian:
            a = (a + np.conj(np.swapaxes(a, -1, -2))).astype(dt)
            return (lambda x: tf.linalg.pinv(_hermitian(x), hermitian=True)), [a]
        return tf.linalg.pinv, [a]

    return build


def _orthonormal(n: int, dt: np.dtype[Any], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    q, _ = np.linalg.qr(sample((n, n), dt, rng).astype(np.complex128 if dt.kind == "c" else float))
    return q


def _tied(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator, rank: int) -> Any:
    """``[..., M, N]`` in random bases with singular values 2 (the first half of the
    kept ones) and 1 (the rest), tied within each level, and ``min(M, N) - rank`` zeros."""
    *batch, m, n = shape
    k = min(m, n)
    levels = np.array([2.0] * (rank // 2) + [1.0] * (rank - rank // 2) + [0.0] * (k - rank))
    out = np.empty(shape, dt)
    for index in np.ndindex(*batch):
        left, right = _orthonormal(m, dt, rng)[:, :k], _orthonormal(n, dt, rng)[:, :k]
        out[index] = (left * levels) @ np.conj(right.T)
    return out


def _pinv_tied(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """pinv of a full-rank matrix whose singular values repeat (smooth there: every
    order; rank-deficient ones are test_linalg_pseudo_inverse's, first order)."""
    return tf.linalg.pinv, [_tied(dt, shape, rng, min(shape[-2:]))]


def _lstsq_tied(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """lstsq's solution and residuals for such a matrix (see _pinv_tied)."""

    def f(x: Any, y: Any) -> Any:
        result = tf.linalg.lstsq(x, y)
        return result.solution, result.residuals

    return f, [_tied(dt, shape, rng, min(shape[-2:])), sample((*shape[:-1], 2), dt, rng)]


def _truncated(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """Singular values (3, 2, 0.05, 0.02) and rtol 0.05: the data decide to keep two
    triplets, with a margin wider than the finite-difference step."""
    s = np.diag([3.0, 2.0, 0.05, 0.02])
    a = (_orthonormal(5, dt, rng)[:, :4] @ s @ _orthonormal(4, dt, rng)).astype(dt)

    def f(x: Any) -> Any:
        # Traced, the kept extent is data-dependent: contractions, elementwise ops and
        # transposes accept it (broadcasts would need pad_to_match first).
        u, s, _vh = tf.linalg.truncated_svd(x, rtol=0.05)
        return s * s * s, tf.matmul(u, tf.matmul(adjoint(u), x))

    return f, [a]


def _norm(fn: Any) -> Any:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        return fn, [_matrix(dt, shape, rng)]

    return build


def _tie_identity(family: Any) -> Any:
    """A tie guard/check on separated sorted values (no tie: no warning): the identity
    on its second operand, with a zero derivative in the values."""

    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        values = np.cumsum(rng.uniform(0.5, 1.5, shape), axis=-1).astype(dt)
        return (
            lambda w, x: family.bind(w, x, family_name="linalg.eigh", eps=1e-12),
            [values, sample(shape, dt, rng)],
        )

    return build


def _svd_truncate(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """The truncation of thin-SVD factors (any values: it is linear in all three)."""
    *batch, m, n = shape
    k = min(m, n)
    real = np.empty(0, dt).real.dtype
    factors = [
        sample((*batch, m, k), dt, rng),
        sample((*batch, k), real, rng),
        sample((*batch, k, n), dt, rng),
    ]
    return (lambda u, s, vh: SvdTruncate.bind(u, s, vh, rank=k - 1)), factors


def _gap_scale(kind: str, pre: str, pair: int) -> Any:
    """The gap kernel on separated values (no tie): linear in its matrix operand (the
    spectrum's own derivative flows through the block, exercised by the svd/eigh cases)."""

    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        real = np.empty(0, dt).real.dtype
        values = tf.asarray(np.cumsum(rng.uniform(0.5, 1.5, shape[:-1]), axis=-1).astype(real))
        block = tf.zeros(shape, dt)

        def f(x: Any) -> Any:
            out = GapScale.bind(
                values,
                block,
                x,
                eps=1e-12,
                kind=kind,
                pre=pre,
                post="full",
                conjugate=False,
                reverse=False,
                family_name="linalg.eigh",
                pair=pair,
            )
            return tf.sum(_abs2(out[0] - 0.5 * out[1])) if pair else out

        return f, [sample(shape, dt, rng)]

    return build


def _cluster_blocks(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """The tied blocks of a spectrum with a tie (linear in the matrix)."""
    real = np.empty(0, dt).real.dtype
    levels = np.array([1.0, 1.0, 2.5, 4.0], real)[: shape[-1]]
    values = tf.asarray(np.broadcast_to(levels, shape[:-1]).copy())  # the batch of x
    return (lambda x: ClusterBlocks.bind(values, x, eps=1e-12)), [sample(shape, dt, rng)]


def _spectral_block(family: str) -> Any:
    """``diag(spectrum)`` with its block derivative, and the tied inverse of it, through
    a decomposition of a random matrix (separated spectrum: both are ``diag(s)`` and
    ``diag(1/s)`` with their ordinary derivatives)."""

    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        def f(a: Any) -> Any:
            if family == "svd":
                u, s, vh = tf.linalg.svd(a, full_matrices=False)
                v, operands = s, (a, u, vh)
            else:
                a = _hermitian(a)
                w, vectors = tf.linalg.eigh(a)
                v, operands = w, (a, vectors)
            b = SpectralBlock.bind(v, *operands, decomposition=family, eps=1e-12)
            inverse = TiedInverse.bind(v, b, eps=1e-12)
            return tf.sum(_abs2(b)) + tf.sum(_abs2(inverse)) * 0.1

        a = sample(shape, dt, rng)
        if family == "eigh":
            a = a + np.conj(np.swapaxes(a, -1, -2))
        return f, [a]

    return build


CASES: list[Case] = [
    Case("linalg_svd_thin", _svd_thin, shapes=MATRICES),
    # Non-square last: the completeness gate runs the last shape (the complement family).
    Case("linalg_svd_full", _svd_full, shapes=((3, 3), (2, 3, 3), (4, 2), (2, 4))),
    Case("linalg_svd_canonical", _svd_canonical, shapes=((3, 3), (4, 2), (2, 4))),
    Case("linalg_eigh_lower", _eigh("L", "raw"), shapes=SQUARE),
    Case("linalg_eigh_upper", _eigh("U", "raw"), shapes=((3, 3),)),
    Case("linalg_eigh_canonical", _eigh("L", "canonical"), shapes=((3, 3),)),
    Case("linalg_eig", _eig, shapes=SQUARE),
    Case("linalg_pinv", _pinv(False), shapes=((3, 3), (4, 2), (2, 4))),
    Case("linalg_pinv_hermitian", _pinv(True), shapes=((3, 3),)),
    Case("linalg_pinv_tied", _pinv_tied, shapes=((3, 3), (4, 2), (2, 4), (2, 3, 3))),
    Case("linalg_lstsq_tied", _lstsq_tied, shapes=((3, 3), (4, 2), (2, 4), (2, 3, 3))),
    Case("linalg_truncated_svd", _truncated, shapes=((),), static_output=False),
    Case("linalg_svd_truncate", _svd_truncate, shapes=((3, 3), (4, 2), (2, 3, 4))),
    Case("linalg_tie_guard", _tie_identity(TieGuard), FLOATS, shapes=((3,), (2, 4))),
    Case("linalg_tie_check", _tie_identity(TieCheck), FLOATS, shapes=((3,), (2, 4))),
    *(
        Case(
            f"linalg_gap_scale_{kind}_{pre}_{pair}",
            _gap_scale(kind, pre, pair),
            shapes=((3, 3), (2, 4, 4)),
        )
        for kind, pre, pair in (
            ("difference", "hermitian", 0),
            ("sum", "antihermitian", -1),
            ("difference", "full", 1),
        )
    ),
    Case("linalg_cluster_blocks", _cluster_blocks, shapes=((4, 4), (2, 3, 3))),
    Case("linalg_spectral_block_svd", _spectral_block("svd"), shapes=((3, 3), (4, 2))),
    Case("linalg_spectral_block_eigh", _spectral_block("eigh"), shapes=((3, 3),)),
    *(
        Case(
            f"linalg_matrix_norm_{name}",
            _norm(lambda a, o=order: tf.linalg.matrix_norm(a, o)),
            shapes=((3, 3), (2, 4, 3)),
        )
        for name, order in (
            ("fro", "fro"),
            ("nuc", "nuc"),
            ("2", 2),
            ("m2", -2),
            ("1", 1),
            ("m1", -1),
            ("inf", math.inf),
            ("minf", -math.inf),
        )
    ),
    *(
        Case(
            f"linalg_vector_norm_{name}",
            _norm(lambda a, o=order: tf.linalg.vector_norm(a, o, axis=-1)),
            shapes=((4,), (2, 3)),
        )
        for name, order in (("2", 2), ("1", 1), ("3", 3), ("half", 0.5), ("inf", math.inf))
    ),
    Case("linalg_norm", _norm(tf.linalg.norm), shapes=((4,), (2, 3))),
]
