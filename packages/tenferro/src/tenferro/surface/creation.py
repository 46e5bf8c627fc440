"""Creating tensors: from data, filled, identity, ranges, and ``*_like`` variants."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import float64
from tenferro.surface.convert import _concrete_class, asarray

__all__ = [
    "arange",
    "array",
    "eye",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]


def array(data: Any, dtype: Any = None) -> Any:
    """A concrete tensor holding a copy of ``data``."""
    return _concrete_class()(data, dtype)


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)


def full(shape: int | Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """A concrete tensor of ``shape`` filled with ``fill_value``."""
    target = as_dtype(dtype, "full") if dtype is not None else np.asarray(fill_value).dtype
    return array(np.full(_shape(shape), fill_value, dtype=as_dtype(target, "full")))


def zeros(shape: int | Sequence[int], dtype: Any = float64) -> Any:
    return full(shape, 0, dtype)


def ones(shape: int | Sequence[int], dtype: Any = float64) -> Any:
    return full(shape, 1, dtype)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float64) -> Any:
    return array(np.eye(n, m, k, dtype=as_dtype(dtype, "eye")))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Any:
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    if dtype is None and values.dtype.kind == "i":
        values = values.astype(np.int64)
    return array(values, dtype)


def linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = float64
) -> Any:
    return array(np.linspace(start, stop, num, endpoint=endpoint), dtype)


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``x``'s shape filled with ``fill_value`` (the same tensor kind as ``x``)."""
    a = asarray(x)
    if dtype is not None:
        a = lax.convert_element_type(a, dtype)
    return lax.full_like(a, fill_value)


def zeros_like(x: Any, dtype: Any = None) -> Any:
    return full_like(x, 0, dtype)


def ones_like(x: Any, dtype: Any = None) -> Any:
    return full_like(x, 1, dtype)
