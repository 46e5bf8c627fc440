"""Creating tensors: from data, filled, identity, ranges, and ``*_like`` variants."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.flags import check_flag
from tenferro.core.kinds import concrete_class
from tenferro.core.params import as_int, as_real
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import float64
from tenferro.eager import EagerTensor
from tenferro.eager.tape import _refuse_tracked
from tenferro.errors import AllocationError, DTypeError, ParameterError, ShapeError
from tenferro.surface import convert as _convert
from tenferro.surface.convert import as_shape, check_int_fits
from tenferro.surface.signatures import TensorT, preserving

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "arange",
    "array",
    "asarray",
    "eye",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "tensor",
    "zeros",
    "zeros_like",
]


def array(data: Any, dtype: Any = None) -> Tensor:
    """A concrete tensor holding a copy of ``data``."""
    tensor: Tensor = concrete_class()._convert(data, dtype, "array")
    return tensor


def tensor(data: Any, dtype: Any = None, *, requires_grad: bool = False) -> EagerTensor:
    """PyTorch's ``torch.tensor``: an ``EagerTensor`` holding a copy of ``data`` (so
    ``.requires_grad_()`` works on it later); with ``requires_grad``, a tracked leaf of
    the default tape. Data that is a tracked tensor is refused (``detach()`` it)."""
    requires_grad = check_flag("tensor", "requires_grad", requires_grad)

    if getattr(data, "tape", None) is not None:
        _refuse_tracked(data)
    if _convert.is_tensor(data) and not hasattr(data, "_value"):
        raise DTypeError("tensor", f"a {type(data).__name__} has no data while it is traced")
    return EagerTensor(data, dtype, requires_grad=requires_grad)


@overload
def asarray(
    x: TensorT,
    dtype: Any = None,
    *,
    requires_grad: Literal[False] = False,
    device: Any = None,
    copy: bool | None = None,
) -> TensorT: ...
@overload
def asarray(
    x: ArrayLike,
    dtype: Any = None,
    *,
    requires_grad: Literal[False] = False,
    device: Any = None,
    copy: bool | None = None,
) -> Tensor: ...
@overload
def asarray(
    x: Any,
    dtype: Any = None,
    *,
    requires_grad: Literal[True],
    device: Any = None,
    copy: bool | None = None,
) -> EagerTensor: ...
@overload
def asarray(
    x: Any,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    copy: bool | None = None,
) -> Any: ...
def asarray(
    x: Any,
    dtype: Any = None,
    *,
    requires_grad: bool = False,
    device: Any = None,
    copy: bool | None = None,
) -> Any:
    """``x`` as a tensor: a tensor passes through unchanged (converted if ``dtype`` is
    given); arrays, sequences and scalars become a ``Tensor``. With ``requires_grad``
    the result is a tracked leaf ``EagerTensor`` of the default tape sharing ``x``'s data
    (PyTorch's ``torch.asarray(x, requires_grad=True)``). ``device`` may only be
    ``None``/``"cpu"``; ``copy`` is accepted for the array API (tensors are immutable,
    so a copy is never observable)."""
    if device not in (None, "cpu"):
        raise ParameterError("asarray", f"tenferro tensors live on the cpu, not {device!r}")
    if copy is not None:
        check_flag("asarray", "copy", copy)
    if requires_grad is not False and check_flag("asarray", "requires_grad", requires_grad):
        return tensor(x, dtype, requires_grad=True)
    if dtype is None:
        return _convert.asarray(x, "asarray")
    if _convert.is_tensor(x):
        return _convert.astype(x, dtype)
    return concrete_class()._convert(x, dtype, "asarray")


def _physical_memory() -> int | None:
    """This machine's physical memory in bytes (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _allocate(op: str, shape: tuple[int, ...], dtype: Any, make: Any) -> Any:
    """``make()``, with allocation failures reported as tenferro errors. An array larger
    than the physical memory is refused up front: where the system overcommits memory,
    trying would not fail but get the process killed while the array is filled."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    message = f"cannot allocate {nbytes} bytes for a {np.dtype(dtype)} array of shape {shape}"
    memory = _physical_memory()
    if memory is not None and nbytes > memory:
        raise AllocationError(op, f"{message} (the machine has {memory} bytes)")
    try:
        return make()
    except MemoryError:
        raise AllocationError(op, message) from None


def full(shape: int | Sequence[int], fill_value: Any, dtype: Any = None) -> Tensor:
    """A concrete tensor of ``shape`` filled with ``fill_value``."""
    return _full("full", shape, fill_value, dtype)


def _full(op: str, shape: Any, fill_value: Any, dtype: Any) -> Tensor:
    extents = as_shape(shape, op)
    fill = np.asarray(fill_value._value if hasattr(fill_value, "_value") else fill_value)
    target = as_dtype(dtype if dtype is not None else fill.dtype, op)
    _check_fill(op, fill_value, fill, target)
    values = _allocate(op, extents, target, lambda: np.full(extents, fill, dtype=target))
    tensor: Tensor = concrete_class()._convert(values, None, op)
    return tensor


def _check_fill(op: str, value: Any, fill: np.ndarray[Any, Any], target: np.dtype[Any]) -> None:
    """Refuse fill values the target dtype cannot hold (numpy would wrap, warn or drop)."""
    check_int_fits(op, value, target)
    if fill.dtype.kind == "c" and target.kind != "c":
        raise DTypeError(op, f"a complex fill value {value!r} does not fit {target}")
    if fill.dtype.kind in "fc" and target.kind in "bi" and not np.all(np.isfinite(fill)):
        raise ParameterError(op, f"{target} cannot hold the fill value {value!r}")


def zeros(shape: int | Sequence[int], dtype: Any = float64) -> Tensor:
    return _full("zeros", shape, 0, dtype)


def ones(shape: int | Sequence[int], dtype: Any = float64) -> Tensor:
    return _full("ones", shape, 1, dtype)


def _count(op: str, name: str, value: Any) -> int:
    """A non-negative integer argument of a creation function."""
    count = as_int(op, name, value, ShapeError)
    if count < 0:
        raise ShapeError(op, f"{name} must be non-negative, got {count}")
    return count


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float64) -> Tensor:
    """The ``n x m`` matrix with ones on diagonal ``k``."""
    rows = _count("eye", "n", n)
    columns = rows if m is None else _count("eye", "m", m)
    offset = as_int("eye", "k", k)
    as_shape((rows, columns), "eye")
    target = as_dtype(dtype, "eye")
    values = _allocate(
        "eye", (rows, columns), target, lambda: np.eye(rows, columns, offset, dtype=target)
    )
    return array(values)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Tensor:
    """``[start, stop)`` in steps of ``step`` (numpy's ``arange``; integers give int64).
    Bounds and step are real numbers (numpy's scalars and 0-d arrays or concrete tensors
    too, never bools); ``step=None`` is 1."""
    start = as_real("arange", "start", start)
    stop = None if stop is None else as_real("arange", "stop", stop)
    step = 1 if step is None else as_real("arange", "step", step)
    if step == 0:
        raise ParameterError("arange", f"step must not be zero (start={start}, stop={stop})")
    low, high = (0, start) if stop is None else (start, stop)
    if type(low) is int and type(high) is int and type(step) is int:
        length = max(-((low - high) // step), 0)  # exact: Python ints may exceed floats
    elif all(type(v) is int or math.isfinite(v) for v in (low, high, step)):
        length = max(math.ceil((high - low) / step), 0)
    else:
        raise ParameterError(
            "arange", f"bounds and step must be finite, got {start}, {stop}, {step}"
        )
    as_shape((length,), "arange")
    values = _allocate("arange", (length,), np.float64, lambda: np.arange(low, high, step))
    if dtype is None and values.dtype.kind == "i":
        values = values.astype(np.int64)
    tensor: Tensor = concrete_class()._convert(values, dtype, "arange")
    return tensor


def linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = float64
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    endpoint = check_flag("linspace", "endpoint", endpoint)
    count = _count("linspace", "num", num)
    as_shape((count,), "linspace")
    try:
        values = np.linspace(start, stop, count, endpoint=endpoint)
    except (TypeError, ValueError) as error:
        raise ParameterError("linspace", f"{error} (start={start!r}, stop={stop!r})") from None
    tensor: Tensor = concrete_class()._convert(values, dtype, "linspace")
    return tensor


@preserving
def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Any:
    """``x``'s shape filled with ``fill_value`` (the same tensor kind as ``x``)."""
    a = _convert.asarray(x, op="full_like")
    if dtype is not None:
        a = lax.convert_element_type(a, as_dtype(dtype, "full_like"))
    if type(fill_value) in (bool, int, float, complex):
        _check_fill("full_like", fill_value, np.asarray(fill_value), a.meta.dtype)
    return lax.full_like(a, fill_value)


@preserving
def zeros_like(x: Any, dtype: Any = None) -> Any:
    return full_like(x, 0, dtype)


@preserving
def ones_like(x: Any, dtype: Any = None) -> Any:
    return full_like(x, 1, dtype)
