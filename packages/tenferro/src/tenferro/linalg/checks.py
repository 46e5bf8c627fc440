"""Validation shared by the linear-algebra families, with errors that name the operation."""

from __future__ import annotations

import cmath
import math
from typing import Any

import numpy as np

from tenferro.core.params import as_real
from tenferro.errors import DTypeError, LinAlgError, ParameterError, ShapeError
from tenferro.meta import Meta

__all__ = [
    "check_eps",
    "check_finite",
    "check_matrix",
    "check_square",
    "failing_batch",
    "inexact_dtype",
    "non_negative",
]


def check_matrix(op: str, meta: Meta) -> None:
    """``meta`` is a (batch of) matrices: at least two axes."""
    if meta.ndim < 2:
        raise ShapeError(
            op, f"needs a matrix or a batch of matrices [..., M, N], got shape {meta.shape}"
        )
    if meta.dynamic:
        raise ShapeError(op, f"needs a static shape, got {meta.describe()}")


def check_square(op: str, meta: Meta) -> None:
    """``meta`` is a (batch of) square matrices."""
    check_matrix(op, meta)
    if meta.shape[-1] != meta.shape[-2]:
        raise ShapeError(op, f"needs square matrices [..., N, N], got shape {meta.shape}")


def inexact_dtype(op: str, meta: Meta) -> np.dtype[Any]:
    """The dtype a decomposition computes in: float/complex as given; integers and bool
    promote to float64 (numpy.linalg's rule)."""
    kind = meta.dtype.kind
    if kind in "fc":
        return meta.dtype
    if kind in "biu":
        return np.dtype(np.float64)
    raise DTypeError(op, f"dtype {meta.dtype} is not supported")


def check_eps(op: str, eps: float) -> float:
    """The relative tie tolerance of spectral derivatives: finite and > 0."""
    value = float(as_real(op, "eps", eps))
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(op, f"eps must be a positive finite number, got {eps!r}")
    return value


def failing_batch(bad: np.ndarray[Any, Any]) -> str:
    """`` at batch index (i, j)`` for the first True entry of a per-matrix flag array
    (empty for an unbatched matrix)."""
    if bad.ndim == 0:
        return ""
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f" at batch index {index}"


_vdot = np.vdot


def check_finite(op: str, a: np.ndarray[Any, Any]) -> None:
    """Raise :class:`LinAlgError` when a decomposition's input holds NaN or Inf."""
    # One BLAS dot, the sum of the squared magnitudes (np.vdot flattens and conjugates):
    # a NaN or Inf entry makes a non-finite term (|inf|^2 = inf; an Inf part of a
    # complex entry also makes a NaN imaginary part), which no finite term cancels, so a
    # finite sum clears every entry (huge finite entries overflow it and take the exact
    # check below).
    if cmath.isfinite(_vdot(a, a)):
        return
    finite = np.isfinite(a).all(axis=(-2, -1))
    if not finite.all():
        raise LinAlgError(
            op,
            f"the input of shape {a.shape} holds NaN or Inf{failing_batch(~finite)}",
        )


def non_negative(op: str, name: str, value: Any) -> float:
    """A tolerance: a finite real number >= 0 (read by
    :func:`~tenferro.core.params.as_real`: numpy's scalars, 0-d arrays and concrete
    tensors too, never a bool or a string)."""
    number = as_real(op, name, value)
    if not (math.isfinite(number) and number >= 0):
        raise ParameterError(op, f"{name} must be a non-negative finite number, got {value!r}")
    return float(number)
