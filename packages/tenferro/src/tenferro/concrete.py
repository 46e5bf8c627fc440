"""``Tensor``: an immutable n-dimensional array evaluated eagerly, without AD."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tenferro.core.methods import TensorMethods
from tenferro.core.primitive import TensorPrimitive
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import AllocationError, DTypeError, ScalarOverflowError
from tenferro.ieee import quiet, restore
from tenferro.meta import Meta

__all__ = ["Tensor", "filled", "to_array"]

_PYTHON_DTYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def to_array(data: Any, dtype: Any = None, op: str = "tensor") -> tuple[np.ndarray[Any, Any], bool]:
    """A fresh read-only array of a supported dtype, and whether it is weakly typed.

    Python scalars are weak (they promote like numpy's Python scalars, NEP 50)
    unless ``dtype`` is given; any other dtype outside the seven is rejected.
    """
    weak = False
    target = None
    if dtype is not None:
        target = as_dtype(dtype, op)
    elif type(data) in _PYTHON_DTYPES:
        target = np.dtype(_PYTHON_DTYPES[type(data)])
        weak = True
    try:
        array = np.array(data, dtype=target, copy=True)
    except OverflowError as error:
        raise ScalarOverflowError(op, f"{data!r} does not fit {target}: {error}") from None
    except (TypeError, ValueError) as error:
        raise DTypeError(op, f"cannot make a tensor of {type(data).__name__}: {error}") from None
    except MemoryError as error:
        raise AllocationError(op, str(error)) from None
    as_dtype(array.dtype, op)
    array.flags.writeable = False
    return array, weak


class Tensor(TensorMethods):
    """An immutable array, evaluated eagerly, without automatic differentiation.

    ``Tensor(data, dtype=None)`` copies ``data`` (an array, nested sequence or
    scalar). Supports numpy interop (``np.asarray(t)``, ``t.numpy()``) and every
    function of the tenferro surface, operators and methods included.
    """

    __slots__ = ("_value", "meta")
    _priority: ClassVar[int] = 0

    _value: Any
    meta: Meta

    def __init__(self, data: Any, dtype: Any = None) -> None:
        if isinstance(data, Tensor) and dtype is None:
            self._value, self.meta = data._value, data.meta
            return
        array, weak = to_array(data, dtype)
        self._value = array
        self.meta = Meta(array.shape, array.dtype, weak)

    @classmethod
    def _convert(cls, data: Any, dtype: Any, op: str) -> Tensor:
        """``Tensor(data, dtype)``, with conversion errors naming ``op``."""
        array, weak = to_array(data, dtype, op)
        return cls._wrap(array, weak)

    @classmethod
    def _wrap(cls, value: Any, weak: bool = False) -> Tensor:
        tensor = object.__new__(cls)
        tensor._value = value
        tensor.meta = Meta(np.shape(value), value.dtype, weak)
        return tensor

    @classmethod
    def _scalar_operand(cls, meta: Meta, value: Any) -> Tensor:
        """The operand of ``meta`` that stands for a Python number in ``tensor op number``:
        ``value`` is the number as a numpy scalar of ``meta``'s dtype (rank 0), which the
        ufunc primitive it is given to broadcasts. Made per call; never returned to users
        (see :mod:`tenferro.surface.math`)."""
        tensor = object.__new__(cls)
        tensor._value = value
        tensor.meta = meta
        return tensor

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Tensor], like: Any = None
    ) -> tuple[Tensor, ...]:
        token = quiet()
        try:
            values = op.eval([o._value for o in operands], None)
        except MemoryError as error:
            raise AllocationError(op.name, str(error)) from None
        finally:
            restore(token)
        return tuple(cls._wrap(v, m.weak) for v, m in zip(values, op.outputs, strict=True))

    @classmethod
    def _full(cls, meta: Meta, value: Any) -> Tensor:
        """A constant of ``meta`` filled with the Python scalar ``value`` (a broadcast view)."""
        return cls._wrap(filled(meta, value), meta.weak)

    def _rewrap(self, meta: Meta) -> Tensor:
        tensor = object.__new__(Tensor)
        tensor._value, tensor.meta = self._value, meta
        return tensor

    @classmethod
    def _lift(cls, value: Any) -> Tensor:
        raise TypeError(f"cannot use {type(value).__name__} as a concrete Tensor")

    def numpy(self) -> np.ndarray[Any, Any]:
        """The data as a (read-only) numpy array."""
        return _read_only(self._value)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        return np.asarray(self._value).item()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        array = _read_only(self._value)
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        if copy:
            return array.copy()
        return array

    def __bool__(self) -> bool:
        return bool(np.asarray(self._value))

    def __float__(self) -> float:
        return float(np.asarray(self._value))

    def __int__(self) -> int:
        return int(np.asarray(self._value))

    def __complex__(self) -> complex:
        return complex(np.asarray(self._value))

    def __index__(self) -> int:
        if self.meta.dtype.kind != "i" or self.meta.shape != ():
            raise TypeError("only integer scalar tensors can be used as an index")
        return int(np.asarray(self._value))

    def __len__(self) -> int:
        if not self.meta.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.meta.shape[0]

    def __iter__(self) -> Any:
        for index in range(len(self)):
            yield self[index]

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="Tensor(")
        return f"Tensor({body}, dtype={self.meta.dtype})"

    def __reduce__(self) -> Any:
        return (Tensor, (np.asarray(self._value), self.meta.dtype))


def filled(meta: Meta, value: Any) -> np.ndarray[Any, Any]:
    """A read-only array of ``meta``'s shape and dtype holding ``value`` everywhere: a
    zero-strided view of one element, made at each call (no cache holds the value)."""
    token = quiet()  # a Python float beyond float32 becomes inf: data
    try:
        element = np.asarray(value, dtype=meta.dtype)[()]  # a numpy scalar: read-only
    finally:
        restore(token)
    return np.ndarray(meta.shape, meta.dtype, element, 0, (0,) * len(meta.shape))


def _read_only(value: Any) -> np.ndarray[Any, Any]:
    """``value`` as an array the caller cannot write into (tensor data is shared, never
    copied, so it is made read-only where it escapes to user code)."""
    array = np.asarray(value)
    if array.flags.writeable:
        array.flags.writeable = False
    return array
