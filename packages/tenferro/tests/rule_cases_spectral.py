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
from tenferro_support import sample

import tenferro as tf

MATRICES = ((3, 3), (4, 2), (2, 4), (2, 3, 3))
SQUARE = ((3, 3), (2, 3, 3))


def _abs2(x: Any) -> Any:
    return tf.real(x * tf.conj(x))


def _weighted(u: Any, s: Any, vh: Any) -> Any:
    """``U diag(S**2 + 1) Vh``: gauge-invariant in every dtype."""
    f = (s * s + 1).astype(u.dtype)
    return tf.matmul(u * tf.expand_dims(f, -2), vh)


def _matrix(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return sample(shape, dt, rng)


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


def _eigh(uplo: str, gauge: str) -> Any:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        def f(a: Any) -> Any:
            w, v = tf.linalg.eigh(a, uplo, gauge=gauge)
            f_w = (tf.tanh(w) + 2).astype(v.dtype)
            projected = tf.matmul(v * tf.expand_dims(f_w, -2), tf.conj(tf.swapaxes(v, -1, -2)))
            vectors = v if gauge == "canonical" else _abs2(v)
            return w, projected, vectors

        # Not Hermitian: eigh reads one triangle, so the derivative is that function's.
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
            return (lambda x: tf.linalg.pinv(x, hermitian=True)), [a]
        return tf.linalg.pinv, [a]

    return build


def _truncated(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """A rank-2 matrix plus tiny noise: the data decide to keep two triplets."""
    left, right = sample((5, 2), dt, rng), sample((2, 4), dt, rng)
    a = (left @ right + 1e-9 * sample((5, 4), dt, rng)).astype(dt)

    def f(x: Any) -> Any:
        u, s, vh = tf.linalg.truncated_svd(x, rtol=1e-4)
        return s, _weighted(u, s, vh)

    return f, [a]


def _norm(fn: Any) -> Any:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        return fn, [_matrix(dt, shape, rng)]

    return build


CASES: list[Case] = [
    Case("linalg_svd_thin", _svd_thin, shapes=MATRICES),
    Case("linalg_svd_full", _svd_full, shapes=MATRICES),
    Case("linalg_svd_canonical", _svd_canonical, shapes=((3, 3), (4, 2), (2, 4))),
    Case("linalg_eigh_lower", _eigh("L", "raw"), shapes=SQUARE),
    Case("linalg_eigh_upper", _eigh("U", "raw"), shapes=((3, 3),)),
    Case("linalg_eigh_canonical", _eigh("L", "canonical"), shapes=((3, 3),)),
    Case("linalg_eig", _eig, shapes=SQUARE),
    Case("linalg_pinv", _pinv(False), shapes=((3, 3), (4, 2), (2, 4))),
    Case("linalg_pinv_hermitian", _pinv(True), shapes=((3, 3),)),
    Case("linalg_truncated_svd", _truncated, shapes=((),), static_output=False),
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
