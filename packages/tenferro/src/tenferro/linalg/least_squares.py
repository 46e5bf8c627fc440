"""Least squares and numerical rank: ``lstsq`` and ``matrix_rank`` (numpy.linalg names
and conventions, leading batch axes as everywhere in ``tf.linalg``).

Both read the thin SVD of ``a``: singular values at or below a cut-off are treated as
zero. ``lstsq`` is composed of the SVD family and matrix products, so its derivative is
the SVD's (exact for a constant numerical rank; the derivative of the kept part, as
``pinv``'s); ``matrix_rank`` is an integer and has none.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint, matmul, scale_rows
from tenferro.core.flags import check_flag
from tenferro.core.params import as_real
from tenferro.dtypes import is_complex
from tenferro.errors import ParameterError, ShapeError
from tenferro.linalg._common import broadcast_batch, inexact_operands
from tenferro.linalg.checks import check_matrix, check_square
from tenferro.linalg.spectral import eigvalsh, svd, svdvals
from tenferro.meta import Meta
from tenferro.surface.convert import asarray

__all__ = ["LstsqResult", "lstsq", "matrix_rank"]


class LstsqResult(NamedTuple):
    """``lstsq``'s result, unpackable as numpy's ``(x, residuals, rank, s)``."""

    solution: Any
    residuals: Any
    rank: Any
    singular_values: Any


def _tolerance(op: str, name: str, value: Any) -> float | None:
    if value is None:
        return None
    value = as_real(op, name, value)
    if not np.isfinite(value):
        raise ParameterError(op, f"{name} must be finite, got {value!r}")
    return float(value)


def lstsq(a: Any, b: Any, rcond: float | None = None) -> LstsqResult:
    """The least-squares solution of ``a @ x = b`` (numpy.linalg.lstsq; the minimum-norm
    one where ``a`` is rank-deficient or wide).

    ``a`` is ``[..., M, N]``; ``b`` is ``[..., M, K]``, or a vector ``[M]`` (one axis:
    the solution is then ``[..., N]``); batch axes broadcast. Singular values below
    ``rcond * S_max`` count as zero (default ``eps(dtype) * max(M, N)``, numpy 2's; a
    negative ``rcond`` means ``eps``). Returns ``(solution, residuals, rank,
    singular_values)``: ``residuals`` are the squared 2-norms of the columns of ``b - a
    @ x`` (``[..., K]``, ``[..., 1]`` for a vector ``b``), always computed, as
    ``jax.numpy.linalg.lstsq`` does (numpy returns an empty array when the rank is
    below N or M <= N: a shape that depends on the data), ``rank`` is int64 ``[...]``.
    Derivatives flow to ``solution``, ``residuals`` and ``singular_values`` through the
    SVD (constant rank).
    """
    op = "linalg.lstsq"
    cut = _tolerance(op, "rcond", rcond)
    x, y = inexact_operands(op, a, b)
    check_matrix(op, x.meta)
    vector = y.meta.ndim == 1
    if vector:
        y = lax.reshape(y, (*y.meta.shape, 1))
    check_matrix(op, y.meta)
    m, n = x.meta.shape[-2:]
    if y.meta.shape[-2] != m:
        raise ShapeError(
            op, f"a has {m} rows, b has {y.meta.shape[-2]} (shapes {x.meta.shape}, {y.meta.shape})"
        )
    if x.meta.shape[:-2] != y.meta.shape[:-2]:
        x, y = broadcast_batch(op, x, y)
    real = np.empty(0, x.meta.dtype).real.dtype
    if cut is None:
        cut = float(np.finfo(real).eps) * max(m, n, 1)
    elif cut < 0:
        cut = float(np.finfo(real).eps)
    batch, k = x.meta.shape[:-2], y.meta.shape[-1]
    if min(m, n) == 0:
        solution = lax.zeros(Meta((*batch, n, k), x.meta.dtype), x)
        s = lax.zeros(Meta((*batch, 0), real), x)
        rank = lax.zeros(Meta(batch, np.dtype(np.int64)), x)
    else:
        u, s, vh = svd(x, full_matrices=False)
        ndim = s.meta.ndim
        largest = lax.slice(s, (0,) * ndim, (*s.meta.shape[:-1], 1))
        threshold = lax.broadcast_in_dim(
            lax.mul(largest, lax.full_like(largest, cut)), s.meta.shape, tuple(range(ndim))
        )
        keep = lax.compare(s, threshold, "gt")
        safe = lax.select(keep, s, lax.full_like(s, 1))
        inverse = lax.select(keep, lax.div(lax.full_like(s, 1), safe), lax.zeros_like(s))
        if inverse.meta.dtype != x.meta.dtype:
            inverse = lax.convert_element_type(inverse, x.meta.dtype)
        solution = matmul(adjoint(vh), scale_rows(inverse, matmul(adjoint(u), y)))
        rank = lax.reduce_sum(
            lax.convert_element_type(keep, np.dtype(np.int64)), (keep.meta.ndim - 1,)
        )
    misfit = lax.sub(matmul(x, solution), y)
    squares = lax.mul(lax.conj(misfit), misfit) if is_complex(misfit.meta.dtype) else None
    squares = lax.mul(misfit, misfit) if squares is None else lax.real(squares)
    residuals = lax.reduce_sum(squares, (misfit.meta.ndim - 2,))
    if vector:
        solution = lax.reshape(solution, solution.meta.shape[:-1])
    return LstsqResult(solution, residuals, rank, s)


def matrix_rank(
    A: Any,  # noqa: N803  (numpy's name)
    tol: Any = None,
    hermitian: bool = False,
    *,
    rtol: float | None = None,
) -> Any:
    """The numerical rank of ``A`` (numpy.linalg.matrix_rank): how many singular values
    (eigenvalue magnitudes with ``hermitian=True``) exceed the tolerance, int64
    ``[...]``. ``tol`` is absolute (a number, or one per matrix of the batch); without
    it, ``rtol * S_max`` with ``rtol`` defaulting to ``eps(dtype) * max(M, N)``. A value
    with fewer than two axes has rank 1 unless it is all zeros (numpy). No derivative
    (an integer)."""
    op = "linalg.matrix_rank"
    symmetric = check_flag(op, "hermitian", hermitian)
    relative = _tolerance(op, "rtol", rtol)
    (x,) = inexact_operands(op, A)
    if x.meta.ndim < 2:
        nonzero = lax.compare(lax.abs(x), lax.zeros_like(lax.abs(x)), "ne")
        flags = lax.convert_element_type(nonzero, np.dtype(np.int64))
        return lax.reduce_max(flags, tuple(range(x.meta.ndim))) if x.meta.ndim else flags
    m, n = x.meta.shape[-2:]
    if symmetric:
        check_square(op, x.meta)
        magnitudes = lax.abs(eigvalsh(x))
    else:
        magnitudes = svdvals(x)
    magnitudes = lax.stop_gradient(magnitudes)
    if min(m, n) == 0:
        return lax.zeros(Meta(x.meta.shape[:-2], np.dtype(np.int64)), x)
    top = lax.reduce_max(magnitudes, (magnitudes.meta.ndim - 1,))
    if tol is None:
        if relative is None:
            relative = float(np.finfo(magnitudes.meta.dtype).eps) * max(m, n)
        cutoff = lax.mul(top, lax.full_like(top, relative))
    else:
        if relative is not None:
            raise ParameterError(op, "give tol or rtol, not both")
        cutoff = asarray(tol, op=op)
        if cutoff.meta.dtype.kind not in "if" or cutoff.meta.shape not in ((), top.meta.shape):
            raise ParameterError(
                op,
                f"tol must be a real number or one per matrix (shape {top.meta.shape}), "
                f"got {tol!r}",
            )
        cutoff = lax.broadcast_in_dim(
            lax.convert_element_type(cutoff, top.meta.dtype),
            top.meta.shape,
            () if cutoff.meta.ndim == 0 else tuple(range(top.meta.ndim)),
        )
    ndim = magnitudes.meta.ndim
    spread = lax.broadcast_in_dim(cutoff, magnitudes.meta.shape, tuple(range(ndim - 1)))
    above = lax.compare(magnitudes, spread, "gt")
    return lax.reduce_sum(lax.convert_element_type(above, np.dtype(np.int64)), (ndim - 1,))
