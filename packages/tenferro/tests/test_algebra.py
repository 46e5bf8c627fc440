"""The matrix-algebra helpers of tenferro.algebra against numpy, and differentiated."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tenferro_support import INEXACT, dtype_id, sample

import tenferro as tf
from tenferro import algebra

RNG_SEED = 1234


def _pair(dt: Any, shape: tuple[int, ...]) -> tuple[np.ndarray[Any, Any], ...]:
    rng = np.random.default_rng(RNG_SEED)
    return sample(shape, dt, rng), sample(shape, dt, rng)


@pytest.mark.parametrize("dt", INEXACT, ids=dtype_id)
def test_helpers_match_numpy(dt):
    a, b = _pair(dt, (2, 3, 3))
    v = a[..., 0]
    ta, tb, tv = tf.asarray(a), tf.asarray(b), tf.asarray(v)
    tol = 1e-5 if dt in (np.float32, np.complex64) else 1e-12
    cases = {
        "matmul": (algebra.matmul(ta, tb), a @ b),
        "matrix_transpose": (algebra.matrix_transpose(ta), np.swapaxes(a, -1, -2)),
        "adjoint": (algebra.adjoint(ta), np.conj(np.swapaxes(a, -1, -2))),
        "diagonal": (algebra.diagonal(ta), np.diagonal(a, axis1=-2, axis2=-1)),
        "diag_embed": (algebra.diag_embed(tv), v[..., :, None] * np.eye(3, dtype=dt)),
        "eye_like": (algebra.eye_like(ta), np.broadcast_to(np.eye(3, dtype=dt), a.shape)),
        "trace": (algebra.trace(ta), np.trace(a, axis1=-2, axis2=-1)),
        "scale_columns": (algebra.scale_columns(ta, tv), a * v[..., None, :]),
        "scale_rows": (algebra.scale_rows(tv, ta), v[..., :, None] * a),
        "hermitian_part": (algebra.hermitian_part(ta), (a + np.conj(np.swapaxes(a, -1, -2))) / 2),
        "skew_hermitian_part": (
            algebra.skew_hermitian_part(ta),
            (a - np.conj(np.swapaxes(a, -1, -2))) / 2,
        ),
    }
    for name, (ours, expected) in cases.items():
        assert ours.dtype == expected.dtype, name
        np.testing.assert_allclose(np.asarray(ours), expected, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("dt", [np.float64, np.complex128], ids=dtype_id)
def test_helpers_differentiate(dt):
    a, b = _pair(dt, (2, 3, 3))

    def f(x: Any, y: Any) -> Any:
        product = algebra.matmul(algebra.adjoint(x), algebra.scale_columns(y, algebra.diagonal(x)))
        return algebra.hermitian_part(product) + algebra.trace(x)[..., None, None]

    tf.testing.check_grads(f, [a, b], order=2, modes=("fwd", "rev"))


def test_bilinear_is_the_product_rule_with_symbolic_zeros():
    a, b = _pair(np.float64, (3, 3))
    da, db = _pair(np.float64, (3, 3))
    ta, tb, tda, tdb = (tf.asarray(v) for v in (a, b, da, db))
    both = algebra.bilinear(algebra.matmul, ta, tb, tda, tdb)
    np.testing.assert_allclose(np.asarray(both), da @ b + a @ db, rtol=1e-12)
    only = algebra.bilinear(algebra.matmul, ta, tb, None, tdb)
    np.testing.assert_allclose(np.asarray(only), a @ db, rtol=1e-12)
    assert algebra.bilinear(algebra.matmul, ta, tb, None, None) is None


def test_helpers_reject_vectors():
    with pytest.raises(tf.ShapeError, match="matmul"):
        algebra.matmul(tf.ones(3), tf.ones(3))
    with pytest.raises(tf.ShapeError, match="eye_like"):
        algebra.eye_like(tf.ones((2, 3)))
