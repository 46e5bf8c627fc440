"""Functions whose result shape depends on the data: ``nonzero`` and the ``unique``
family (numpy 2 / Array API names and named-tuple results).

They run on concrete tensors (``Tensor``, ``EagerTensor``), whose data is known. On a
``TracedTensor`` the number of results is not known until the program runs, so they
raise :class:`~tenferro.UnsupportedError` saying so (use them outside the transform, or
keep shapes static with ``tf.where``). ``unique_*`` values keep their derivative on the
tape: each is the input element at its first occurrence.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tenferro.concrete import Tensor
from tenferro.errors import ShapeError, UnsupportedError
from tenferro.surface.convert import asarray
from tenferro.surface.indexing import take
from tenferro.surface.shapes import ravel

__all__ = [
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "nonzero",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def _data(op: str, x: Any) -> tuple[Any, np.ndarray[Any, Any]]:
    """``x`` as a tensor and its data; a traced value has none yet."""
    a = asarray(x, op=op)
    value = getattr(a, "_value", None)
    if value is None:
        raise UnsupportedError(
            op,
            f"the shape of its result depends on the data, which a {type(a).__name__} "
            f"({a.meta.describe()}) does not have while it is traced; call it outside the "
            f"transform, or keep shapes static (tf.where(condition, x, y))",
        )
    return a, np.asarray(value)


def _like(a: Any, array: np.ndarray[Any, Any]) -> Any:
    """Integer results of the kind of ``a`` (untracked)."""
    made = Tensor._convert(array, None, "unique")
    return made if type(a) is Tensor else type(a)._lift(made)


def nonzero(x: Any) -> tuple[Any, ...]:
    """The int64 indices of the non-zero (true) elements, one tensor per axis, in
    row-major order (numpy's ``nonzero``; rank 0 is refused, as numpy 2 refuses it)."""
    a, data = _data("nonzero", x)
    if data.ndim == 0:
        raise ShapeError("nonzero", "needs rank >= 1 (numpy 2 refuses 0-d arrays); use x[None]")
    return tuple(_like(a, index.astype(np.int64)) for index in np.nonzero(data))


def _unique(op: str, x: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(tensor, first indices, inverse indices of x's shape, counts, values) with NaNs
    distinct (every NaN is its own value, as the Array API asks)."""
    a, data = _data(op, x)
    flat = data.reshape(-1)
    _, first, inverse, counts = np.unique(
        flat, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    indices = _like(a, first.astype(np.int64))
    values = take(ravel(a), indices)
    return (
        a,
        indices,
        _like(a, inverse.reshape(data.shape).astype(np.int64)),
        _like(a, counts.astype(np.int64)),
        values,
    )


def unique_all(x: Any) -> UniqueAllResult:
    """The sorted distinct values of ``x`` (flattened; NaNs distinct), the index of each
    one's first occurrence, the inverse indices (``x``'s shape) and the counts."""
    _, first, inverse, counts, values = _unique("unique_all", x)
    return UniqueAllResult(values, first, inverse, counts)


def unique_counts(x: Any) -> UniqueCountsResult:
    """The sorted distinct values of ``x`` and how often each occurs."""
    _, _, _, counts, values = _unique("unique_counts", x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any) -> UniqueInverseResult:
    """The sorted distinct values of ``x`` and, for each element, the index of its value."""
    _, _, inverse, _, values = _unique("unique_inverse", x)
    return UniqueInverseResult(values, inverse)


def unique_values(x: Any) -> Any:
    """The sorted distinct values of ``x`` (flattened; NaNs distinct)."""
    return _unique("unique_values", x)[4]
