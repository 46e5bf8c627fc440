"""Matrix algebra over the last two axes, for any tensor kind and inside AD rules.

These helpers are compositions of :mod:`tenferro.lax` primitives, so they work on
concrete, eager and traced tensors and on rule values alike (AD rules of the linear
algebra family read like the formulas of the reference: ``matmul(adjoint(U), dA)``...).
Leading axes are batch axes (numpy's ``[..., M, N]`` convention); operands of one
call share their batch shape and dtype (no broadcasting, no promotion).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from tenferro import lax
from tenferro.dtypes import is_complex
from tenferro.errors import ShapeError
from tenferro.typing import TensorLike

T = TypeVar("T", bound=TensorLike)
"""The kind of a function's operands, which it gives back."""

__all__ = [
    "adjoint",
    "bilinear",
    "diag_embed",
    "diagonal",
    "diagonal_of_product",
    "eye_like",
    "hermitian_part",
    "is_complex_value",
    "matmul",
    "matrix_transpose",
    "scale_columns",
    "scale_rows",
    "skew_hermitian_part",
    "to_dtype",
    "trace",
]


def _check_matrix(op: str, x: TensorLike) -> int:
    ndim = x.meta.ndim
    if ndim < 2:
        raise ShapeError(op, f"needs a matrix (at least 2 axes), got shape {x.meta.shape}")
    return ndim


def matmul(a: T, b: T) -> T:
    """``a @ b`` over the last two axes; the leading (batch) axes of ``a`` and ``b`` match."""
    ndim = _check_matrix("matmul", a)
    if b.meta.ndim != ndim:
        raise ShapeError("matmul", f"operands of rank {ndim} and {b.meta.ndim} (batch axes match)")
    batch = tuple(range(ndim - 2))
    return lax.dot_general(a, b, (ndim - 1,), (ndim - 2,), batch, batch)


def matrix_transpose(x: T) -> T:
    """Swap the last two axes."""
    ndim = _check_matrix("matrix_transpose", x)
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def adjoint(x: T) -> T:
    """Conjugate transpose over the last two axes (``matrix_transpose`` for real values)."""
    return lax.conj(matrix_transpose(x))


def diagonal(x: T) -> T:
    """``[..., M, N] -> [..., min(M, N)]``: the main diagonal."""
    ndim = _check_matrix("diagonal", x)
    return lax.extract_diag(x, ndim - 2, ndim - 1)


def diagonal_of_product(left: T, right: T) -> T:
    """``diag(left^H right)`` of ``[..., M, K]`` stacks as column sums of the elementwise
    product: a derivative that needs only this diagonal (singular values or eigenvalues
    alone) then holds one matrix product fewer (the full ``left^H right`` is pruned)."""
    if left.meta.dtype.kind == "c":
        left = lax.conj(left)
    return lax.reduce_sum(lax.mul(left, right), (left.meta.ndim - 2,))


def diag_embed(v: T) -> T:
    """``[..., N] -> [..., N, N]``: ``v`` on the diagonal, zeros elsewhere."""
    ndim = v.meta.ndim
    if ndim < 1:
        raise ShapeError("diag_embed", "needs at least one axis, got a scalar")
    return lax.embed_diag(v, ndim - 1, ndim)


def eye_like(x: T) -> T:
    """The identity of ``x``'s (square) last two axes, broadcast over its batch axes."""
    ndim = _check_matrix("eye_like", x)
    n = x.meta.shape[-1]
    if x.meta.shape[-2] != n:
        raise ShapeError("eye_like", f"needs square matrices, got shape {x.meta.shape}")
    ones = lax.full(x.meta.with_(shape=x.meta.shape[:-1]), 1, x)
    return lax.embed_diag(ones, ndim - 2, ndim - 1)


def trace(x: T) -> T:
    """``[..., N, N] -> [...]``: the sum of the diagonal."""
    d = diagonal(x)
    return lax.reduce_sum(d, (d.meta.ndim - 1,))


def _along(v: T, x: T, axis: int) -> T:
    """``v`` (``[..., K]``) broadcast against ``x`` along ``axis`` (-1: columns, -2: rows)."""
    ndim = x.meta.ndim
    batch = tuple(range(ndim - 2))
    keep = ndim - 1 if axis == -1 else ndim - 2
    return lax.broadcast_in_dim(v, x.meta.shape, (*batch, keep))


def scale_columns(x: T, v: T) -> T:
    """``x @ diag(v)``: column ``j`` of ``x`` times ``v[..., j]``."""
    _check_matrix("scale_columns", x)
    return lax.mul(x, _along(v, x, -1))


def scale_rows(v: T, x: T) -> T:
    """``diag(v) @ x``: row ``i`` of ``x`` times ``v[..., i]``."""
    _check_matrix("scale_rows", x)
    return lax.mul(_along(v, x, -2), x)


def hermitian_part(x: T) -> T:
    """``(x + x^H) / 2``."""
    return lax.mul(lax.add(x, adjoint(x)), lax.full_like(x, 0.5))


def skew_hermitian_part(x: T) -> T:
    """``(x - x^H) / 2``."""
    return lax.mul(lax.sub(x, adjoint(x)), lax.full_like(x, 0.5))


def bilinear(product: Callable[[T, T], T], x: T, y: T, dx: T | None, dy: T | None) -> T | None:
    """The JVP of a bilinear ``product(x, y)``: ``product(dx, y) + product(x, dy)``, with
    ``None`` standing for a zero tangent (returns ``None`` when both are zero).

    Serves ``mul``, ``dot_general``, ``matmul`` and triangular solves alike.
    """
    return lax.add_tangents(
        None if dx is None else product(dx, y),
        None if dy is None else product(x, dy),
    )


def to_dtype(x: T, dt: np.dtype[Any]) -> T:
    """``x`` converted to ``dt`` (itself when it has that dtype)."""
    return x if x.meta.dtype == dt else lax.convert_element_type(x, dt)


def is_complex_value(x: TensorLike) -> bool:
    """Whether ``x`` holds complex values."""
    return is_complex(x.meta.dtype)
