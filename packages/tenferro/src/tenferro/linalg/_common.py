"""Helpers shared by the solver and factorization families: operand preparation for the
public functions, batch-axis bookkeeping and LAPACK error translation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.bind import lift
from tenferro.errors import DTypeError, LinAlgError, ShapeError
from tenferro.linalg.checks import failing_batch, inexact_dtype
from tenferro.meta import Meta
from tenferro.surface.convert import asarray

__all__ = [
    "broadcast_batch",
    "inexact_operands",
    "matrix_slice",
    "on_tape_of",
    "raise_per_matrix",
    "require_inexact",
    "same_batch",
    "scipy_linalg",
]


def inexact_operands(op: str, *values: Any) -> list[Any]:
    """``values`` as tensors of one kind in one inexact dtype (numpy.linalg's promotion:
    integers and bool to float64, mixed operands to their common type)."""
    first = values[0]
    if isinstance(first, Tensor):  # the common case: tensors of one kind and dtype already
        kind, dt = type(first), first.meta.dtype
        if dt.kind in "fc" and all(type(v) is kind and v.meta.dtype == dt for v in values):
            return list(values)
    tensors = lift([asarray(v) for v in values])
    kinds = [inexact_dtype(op, t.meta) for t in tensors]
    common = np.result_type(*kinds)
    return [lax.convert_element_type(t, common) for t in tensors]


def require_inexact(op: str, meta: Meta) -> None:
    """Families compute in float32/float64/complex64/complex128 only."""
    if meta.dtype.kind not in "fc":
        raise DTypeError(op, f"needs a float or complex operand, got {meta.dtype}")


def same_batch(op: str, a: Meta, b: Meta) -> None:
    """Two operands of a family share their batch axes and dtype."""
    if a.shape[:-2] != b.shape[:-2] or a.ndim != b.ndim:
        raise ShapeError(op, f"batch axes differ: {a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise DTypeError(op, f"operands of dtypes {a.dtype} and {b.dtype}")


def broadcast_batch(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Broadcast the batch axes (all but the last two) of two matrix stacks together."""
    try:
        batch = np.broadcast_shapes(a.meta.shape[:-2], b.meta.shape[:-2])
    except ValueError:
        raise ShapeError(
            op, f"batch axes of shapes {a.meta.shape} and {b.meta.shape} do not broadcast"
        ) from None
    return _to_batch(a, batch), _to_batch(b, batch)


def _to_batch(x: Any, batch: tuple[int, ...]) -> Any:
    shape = (*batch, *x.meta.shape[-2:])
    if x.meta.shape == shape:
        return x
    offset = len(shape) - x.meta.ndim
    return lax.broadcast_in_dim(x, shape, tuple(range(offset, len(shape))))


def matrix_slice(x: Any, rows: tuple[int, int], cols: tuple[int, int]) -> Any:
    """``x[..., r0:r1, c0:c1]``."""
    ndim = x.meta.ndim
    starts = (0,) * (ndim - 2) + (rows[0], cols[0])
    limits = (*x.meta.shape[:-2], rows[1], cols[1])
    return lax.slice(x, starts, limits)


def on_tape_of(value: Any, x: Any) -> Any:
    """``value``, of ``x``'s shape and dtype but not read from ``x``'s entries (the
    identity of ``matrix_power(x, 0)``), as a result of ``x`` with a zero derivative: a
    fresh constant would be detached from the tape, so ``backward()`` from it would
    refuse a tensor that does not require grad where PyTorch (and ``tf.grad``) give
    zeros. A ``select`` that always picks ``value``: ``x``'s entries are never read."""
    always = lax.full(x.meta.with_(dtype=np.dtype(bool)), True, x)
    return lax.select(always, value, x)


def raise_per_matrix(
    op: str, a: np.ndarray[Any, Any], fails: Callable[[np.ndarray[Any, Any]], bool], what: str
) -> None:
    """After a batched LAPACK call failed: find the first failing matrix (error path only,
    one matrix at a time) and raise :class:`LinAlgError` naming it."""
    batch = a.shape[:-2]
    bad = np.zeros(batch, dtype=bool)
    for index in np.ndindex(*batch):
        if fails(a[index]):
            bad[index] = True
            break
    raise LinAlgError(op, f"the matrix of shape {a.shape} is {what}{failing_batch(bad)}")


def scipy_linalg() -> Any:
    """``scipy.linalg``, imported on first use (``import tenferro`` stays light: scipy's
    compiled modules load only when a kernel runs)."""
    import scipy.linalg  # type: ignore[import-untyped]  # on first use: import stays light

    return scipy.linalg
