"""Least squares and numerical rank: ``lstsq`` and ``matrix_rank`` (numpy.linalg names
and conventions, leading batch axes as everywhere in ``tf.linalg``).

Both read the thin SVD of ``a``: singular values at or below a cut-off are treated as
zero. ``lstsq``'s solution, residuals and rank are one node (the family
``linalg.lstsq``); the solution is ``A^+ b``, so its derivative is the
pseudo-inverse's (the derivative of the kept part at a constant numerical rank,
repeated singular values included); its singular values' is the SVD's.
``matrix_rank`` is an integer and has no derivative.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, NamedTuple, overload

import numpy as np

from tenferro import lax
from tenferro.core.flags import check_flag
from tenferro.core.params import as_real
from tenferro.errors import ParameterError, ShapeError
from tenferro.linalg._common import broadcast_batch, inexact_operands
from tenferro.linalg.checks import check_matrix, check_square
from tenferro.linalg.hermitian_eigen import eigvalsh
from tenferro.linalg.pseudo_inverse import Lstsq
from tenferro.linalg.singular_values import svdvals
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.surface.signatures import preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from tenferro.concrete import Tensor

__all__ = ["LstsqResult", "lstsq", "matrix_rank"]


class LstsqResult(NamedTuple, Generic[TensorLikeT]):
    """``lstsq``'s result, unpackable as numpy's ``(x, residuals, rank, s)``."""

    solution: TensorLikeT
    residuals: TensorLikeT
    rank: TensorLikeT
    singular_values: TensorLikeT


def _tolerance(op: str, name: str, value: Any) -> float | None:
    if value is None:
        return None
    value = as_real(op, name, value)
    if not np.isfinite(value):
        raise ParameterError(op, f"{name} must be finite, got {value!r}")
    return float(value)


@overload
def lstsq(
    a: TensorLikeT, b: TensorLikeT | ArrayLike, rcond: float | None = None
) -> LstsqResult[TensorLikeT]: ...
@overload
def lstsq(a: ArrayLike, b: TensorLikeT, rcond: float | None = None) -> LstsqResult[TensorLikeT]: ...
@overload
def lstsq(a: ArrayLike, b: ArrayLike, rcond: float | None = None) -> LstsqResult[Tensor]: ...
def lstsq(a: Any, b: Any, rcond: float | None = None) -> LstsqResult[Any]:
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
    Derivatives flow to ``solution`` and ``residuals`` through ``A^+`` (constant rank;
    see the module documentation) and to ``singular_values`` through the SVD.
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
    solution, residuals, rank, s = Lstsq.bind(x, y, rtol=float(cut))
    if vector:
        solution = lax.reshape(solution, solution.meta.shape[:-1])
    return LstsqResult(solution, residuals, rank, s)


@preserving
def matrix_rank(
    A: Any,  # noqa: N803  (numpy's name)
    tol: Any = None,
    hermitian: bool = False,
    *,
    rtol: Any = None,
) -> Any:
    """The numerical rank of ``A`` (numpy.linalg.matrix_rank): how many singular values
    (eigenvalue magnitudes with ``hermitian=True``) exceed the tolerance, int64.
    ``tol`` is absolute; without it, the tolerance is ``rtol * S_max`` with ``rtol``
    defaulting to ``eps(dtype) * max(M, N)``. ``tol`` and ``rtol`` are real numbers or
    arrays that broadcast against the batch axes (numpy 2: one per matrix, or more: the
    result has the broadcast shape of the batch and the tolerance). A value with fewer
    than two axes has rank 1 unless it is all zeros (an empty one: 0). No derivative
    (an integer)."""
    op = "linalg.matrix_rank"
    symmetric = check_flag(op, "hermitian", hermitian)
    if tol is not None and rtol is not None:
        raise ParameterError(op, "give tol or rtol, not both")
    (x,) = inexact_operands(op, A)
    int64 = np.dtype(np.int64)
    if x.meta.ndim < 2:
        nonzero = lax.convert_element_type(
            lax.compare(lax.abs(x), lax.zeros_like(lax.abs(x)), "ne"), int64
        )
        if not x.meta.ndim:
            return nonzero
        count = lax.reduce_sum(nonzero, tuple(range(x.meta.ndim)))
        return lax.convert_element_type(lax.compare(count, lax.zeros_like(count), "gt"), int64)
    m, n = x.meta.shape[-2:]
    batch = x.meta.shape[:-2]
    name, given = ("tol", tol) if tol is not None else ("rtol", rtol)
    level = None if given is None else _tolerance_array(op, name, given)
    shape = batch if level is None else _broadcast(op, name, batch, level.meta.shape)
    if min(m, n) == 0:
        return lax.zeros(Meta(shape, int64), x)
    if symmetric:
        check_square(op, x.meta)
        magnitudes = lax.abs(eigvalsh(x))
    else:
        magnitudes = svdvals(x)
    magnitudes = lax.stop_gradient(magnitudes)
    real = magnitudes.meta.dtype
    if level is not None:
        level = lax.broadcast_in_dim(
            lax.convert_element_type(level, real),
            shape,
            tuple(range(len(shape) - level.meta.ndim, len(shape))),
        )
    if tol is None:
        top = lax.reduce_max(magnitudes, (magnitudes.meta.ndim - 1,))
        top = lax.broadcast_in_dim(top, shape, tuple(range(len(shape) - len(batch), len(shape))))
        if level is None:
            level = lax.full_like(top, float(np.finfo(real).eps) * max(m, n))
        level = lax.mul(top, level)
    k = magnitudes.meta.shape[-1]
    spread = lax.broadcast_in_dim(
        magnitudes, (*shape, k), tuple(range(len(shape) - len(batch), len(shape) + 1))
    )
    assert level is not None  # given, or made from the largest magnitude above
    cutoff = lax.broadcast_in_dim(level, (*shape, k), tuple(range(len(shape))))
    above = lax.convert_element_type(lax.compare(spread, cutoff, "gt"), int64)
    return lax.reduce_sum(above, (len(shape),))


def _tolerance_array(op: str, name: str, value: Any) -> Any:
    """A tolerance of ``matrix_rank``: real numbers (any shape), as a tensor."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ParameterError(op, f"{name} must be real numbers, got {value!r}")
    level = asarray(value, op=op)
    if level.meta.dtype.kind not in "if":
        raise ParameterError(op, f"{name} must be real numbers, got {value!r}")
    return level


def _broadcast(op: str, name: str, batch: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """The shape of the ranks: the batch axes broadcast with a tolerance's (numpy 2)."""
    try:
        return tuple(np.broadcast_shapes(batch, shape))
    except ValueError:
        raise ShapeError(
            op, f"{name} of shape {shape} does not broadcast against the batch axes {batch}"
        ) from None
