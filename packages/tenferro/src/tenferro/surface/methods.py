"""``TensorMethods``: the operators and methods of every tensor class, defined once.

``Tensor``, ``EagerTensor`` and ``TracedTensor`` inherit this mixin; each method
calls the numpy-style function of the same name, so behaviour (broadcasting,
promotion, errors) is identical across kinds. Tensors hash by identity and
compare elementwise, like PyTorch's; numpy defers to their reflected operators.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from tenferro.meta import HasMeta, Meta
from tenferro.surface import contraction as _contraction
from tenferro.surface import convert as _convert
from tenferro.surface import indexing as _indexing
from tenferro.surface import math as _math
from tenferro.surface import numerics as _numerics
from tenferro.surface import numpy_api as _numpy_api
from tenferro.surface import reductions as _reductions
from tenferro.surface import shapes as _shapes

__all__ = ["TensorMethods"]


class TensorMethods(HasMeta):
    """Operators and methods shared by all tensor kinds (they only need ``meta``)."""

    __slots__ = ()
    meta: Meta

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy ufuncs on tensors run as tenferro functions (``np.exp(t)``, and
        ``ndarray + t``); a ufunc without a tenferro counterpart raises
        ``UnsupportedError`` (see :mod:`tenferro.surface.numpy_api`)."""
        return _numpy_api.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy functions on tensors (``np.sum(t)``, ``np.dot(x, y)``) run as tenferro
        functions on the tensors' kind (tape and graph kept); a function without a
        tenferro counterpart raises ``UnsupportedError``."""
        return _numpy_api.array_function(func, types, args, kwargs)

    def backward(self, seed: Any = None) -> None:
        """Reverse mode into ``.grad``: only tracked ``EagerTensor`` values have it."""
        from tenferro.errors import TenferroError

        raise TenferroError(
            "backward",
            f"a {type(self).__name__} records no operations, so it has no backward(); use "
            f"tf.EagerTensor(data, requires_grad=True) (or tape.track) for tape AD, or "
            f"tf.grad / TracedTensor.grad for traced AD",
        )

    # ------------------------------------------------------------------ metadata

    @property
    def T(self) -> Any:  # noqa: N802 - numpy's name
        return _shapes.transpose(self)

    @property
    def mT(self) -> Any:  # noqa: N802 - numpy's name
        return _shapes.swapaxes(self, -1, -2)

    @property
    def real(self) -> Any:
        return _math.real(self)

    @property
    def imag(self) -> Any:
        return _math.imag(self)

    __hash__ = object.__hash__

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other: Any) -> Any:
        return _math.add(self, other)

    def __radd__(self, other: Any) -> Any:
        return _math.add(other, self)

    def __sub__(self, other: Any) -> Any:
        return _math.subtract(self, other)

    def __rsub__(self, other: Any) -> Any:
        return _math.subtract(other, self)

    def __mul__(self, other: Any) -> Any:
        return _math.multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        return _math.multiply(other, self)

    def __truediv__(self, other: Any) -> Any:
        return _math.true_divide(self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _math.true_divide(other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _math.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _math.floor_divide(other, self)

    def __mod__(self, other: Any) -> Any:
        return _math.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return _math.remainder(other, self)

    def __pow__(self, other: Any) -> Any:
        return _math.power(self, other)

    def __rpow__(self, other: Any) -> Any:
        return _math.power(other, self)

    def __matmul__(self, other: Any) -> Any:
        return _contraction.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _contraction.matmul(other, self)

    def __neg__(self) -> Any:
        return _math.negative(self)

    def __pos__(self) -> Any:
        return _math.positive(self)

    def __abs__(self) -> Any:
        return _math.abs(self)

    def __invert__(self) -> Any:
        return _math.logical_not(self._boolean("~"))

    def __and__(self, other: Any) -> Any:
        return _math.logical_and(self._boolean("&"), other)

    def __rand__(self, other: Any) -> Any:
        return _math.logical_and(other, self._boolean("&"))

    def __or__(self, other: Any) -> Any:
        return _math.logical_or(self._boolean("|"), other)

    def __ror__(self, other: Any) -> Any:
        return _math.logical_or(other, self._boolean("|"))

    def __xor__(self, other: Any) -> Any:
        return _math.logical_xor(self._boolean("^"), other)

    def __rxor__(self, other: Any) -> Any:
        return _math.logical_xor(other, self._boolean("^"))

    def _boolean(self, operator: str) -> Any:
        if self.meta.dtype.kind != "b":
            from tenferro.errors import DTypeError

            raise DTypeError(
                operator, f"bitwise operators need bool tensors, got {self.meta.dtype}"
            )
        return self

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> Any:
        return _math.equal(self, other)

    def __ne__(self, other: object) -> Any:
        return _math.not_equal(self, other)

    def __lt__(self, other: Any) -> Any:
        return _math.less(self, other)

    def __le__(self, other: Any) -> Any:
        return _math.less_equal(self, other)

    def __gt__(self, other: Any) -> Any:
        return _math.greater(self, other)

    def __ge__(self, other: Any) -> Any:
        return _math.greater_equal(self, other)

    # ------------------------------------------------------------------ indexing

    def __getitem__(self, index: Any) -> Any:
        return _indexing.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        raise TypeError(
            f"{type(self).__name__} is immutable; build a new tensor instead (e.g. tf.where, "
            f"tf.concatenate, or lax.dynamic_update_slice / lax.scatter_add)"
        )

    # ------------------------------------------------------------------ methods

    def astype(self, dtype: Any) -> Any:
        return _convert.astype(self, dtype)

    def conj(self) -> Any:
        return _math.conj(self)

    conjugate = conj

    def reshape(self, *shape: Any) -> Any:
        target = shape[0] if len(shape) == 1 and not _convert._is_integer(shape[0]) else shape
        return _shapes.reshape(self, target)

    def transpose(self, *axes: Any) -> Any:
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        return _shapes.transpose(self, axes or None)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return _shapes.swapaxes(self, axis1, axis2)

    def ravel(self) -> Any:
        return _shapes.ravel(self)

    flatten = ravel

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Any:
        return _shapes.squeeze(self, axis)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return _shapes.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return _shapes.trace(self, offset, axis1, axis2)

    def sum(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        return _reductions.sum(self, axis, keepdims, dtype)

    def prod(self, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> Any:
        return _reductions.prod(self, axis, keepdims, dtype)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _reductions.mean(self, axis, keepdims)

    def var(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Any:
        return _reductions.var(self, axis, keepdims, ddof)

    def std(self, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Any:
        return _reductions.std(self, axis, keepdims, ddof)

    def max(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _reductions.max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _reductions.min(self, axis, keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _reductions.all(self, axis, keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _reductions.any(self, axis, keepdims)

    def clip(self, a_min: Any = None, a_max: Any = None) -> Any:
        return _math.clip(self, a_min, a_max)

    def dot(self, other: Any) -> Any:
        return _contraction.dot(self, other)

    def take(self, indices: Any, axis: int | None = None) -> Any:
        return _indexing.take(self, indices, axis)

    # numerics (tenferro.surface.numerics): jax.Array's semantics, sort returns a copy

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Any:
        return _numerics.argmax(self, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Any:
        return _numerics.argmin(self, axis, keepdims)

    def sort(self, axis: int | None = -1, *, descending: bool = False) -> Any:
        return _numerics.sort(self, axis, descending=descending)

    def argsort(self, axis: int | None = -1, *, descending: bool = False) -> Any:
        return _numerics.argsort(self, axis, descending=descending)

    def cumsum(self, axis: int | None = None, dtype: Any = None) -> Any:
        return _numerics.cumsum(self, axis, dtype)

    def cumprod(self, axis: int | None = None, dtype: Any = None) -> Any:
        return _numerics.cumprod(self, axis, dtype)
