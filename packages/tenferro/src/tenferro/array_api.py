"""tenferro as an Array API namespace: ``x.__array_namespace__()`` returns this module.

Code written against the Python array API standard (``xp = x.__array_namespace__()``;
``xp.sum(xp.exp(x), axis=0)``) runs on every tenferro tensor kind, with derivatives:
each function here is the tenferro function, called with the standard's signature
(``concat``, ``pow``, ``std(correction=)``, ``device=`` on creation functions, ...).
Tensors live on the CPU (``device`` is ``"cpu"``). :data:`NOT_COVERED` lists the
names of the standard tenferro does not provide yet (docs/coming-from-pytorch.md).
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
from collections.abc import Sequence
from typing import Any

import numpy as _np

from tenferro import dtypes as _dtypes
from tenferro import linalg as _tf_linalg
from tenferro import surface as _tf
from tenferro.core.flags import check_flag as _check_flag
from tenferro.core.flags import check_optional_flag as _check_optional_flag
from tenferro.errors import ParameterError as _ParameterError
from tenferro.errors import UnsupportedError as _UnsupportedError
from tenferro.meta import broadcast_shapes as _broadcast_shapes

__array_api_version__ = "2023.12"

bool = _dtypes.bool_
float32, float64 = _dtypes.float32, _dtypes.float64
complex64, complex128 = _dtypes.complex64, _dtypes.complex128
int32, int64 = _dtypes.int32, _dtypes.int64

e, pi, inf, nan, newaxis = _math.e, _math.pi, _math.inf, _math.nan, None

_SAME = [
    "abs",
    "add",
    "all",
    "any",
    "asarray",
    "broadcast_to",
    "ceil",
    "conj",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "flip",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "moveaxis",
    "multiply",
    "negative",
    "not_equal",
    "permute_dims",
    "positive",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "stack",
    "subtract",
    "take",
    "tan",
    "tanh",
    "tensordot",
    "tril",
    "triu",
    "trunc",
    "vecdot",
    "where",
]
"""Functions whose tenferro signature already is the standard's."""

globals().update({name: getattr(_tf, name) for name in _SAME})


def _cpu(op: str, device: Any) -> None:
    if device not in (None, "cpu"):
        raise _ParameterError(op, f"tenferro tensors live on the cpu, not {device!r}")


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    """Join along ``axis`` (``None``: flattened first)."""
    if axis is None:
        return _tf.concatenate([_tf.ravel(a) for a in arrays], 0)
    return _tf.concatenate(list(arrays), axis)


def pow(x1: Any, x2: Any, /) -> Any:
    return _tf.power(x1, x2)


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: _builtins.bool = False) -> Any:
    return _tf.sum(x, axis, keepdims, dtype)


def prod(
    x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: _builtins.bool = False
) -> Any:
    return _tf.prod(x, axis, keepdims, dtype)


def std(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: _builtins.bool = False
) -> Any:
    return _tf.std(x, axis, keepdims, int(correction))


def var(
    x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: _builtins.bool = False
) -> Any:
    return _tf.var(x, axis, keepdims, int(correction))


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    return _tf.clip(x, min, max)


def astype(x: Any, dtype: Any, /, *, copy: _builtins.bool = True, device: Any = None) -> Any:
    _cpu("astype", device)
    _check_flag("astype", "copy", copy)
    return _tf.astype(x, dtype)


def reshape(x: Any, /, shape: Sequence[int], *, copy: _builtins.bool | None = None) -> Any:
    _check_optional_flag("reshape", "copy", copy)
    return _tf.reshape(x, tuple(shape))


def squeeze(x: Any, /, axis: int | tuple[int, ...]) -> Any:
    return _tf.squeeze(x, axis)


def matrix_transpose(x: Any, /) -> Any:
    return x.mT


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("zeros", device)
    return _tf.zeros(shape, float64 if dtype is None else dtype)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("ones", device)
    return _tf.ones(shape, float64 if dtype is None else dtype)


empty = zeros


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("full", device)
    return _tf.full(shape, fill_value, dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("zeros_like", device)
    return _tf.zeros_like(x, dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("ones_like", device)
    return _tf.ones_like(x, dtype)


empty_like = zeros_like


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    _cpu("full_like", device)
    return _tf.full_like(x, fill_value, dtype)


def eye(
    n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None
) -> Any:
    _cpu("eye", device)
    return _tf.eye(n_rows, n_cols, k, float64 if dtype is None else dtype)


def arange(
    start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None
) -> Any:
    _cpu("arange", device)
    return _tf.arange(start, stop, step, dtype)


def linspace(
    start: Any,
    stop: Any,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: _builtins.bool = True,
) -> Any:
    _cpu("linspace", device)
    return _tf.linspace(start, stop, num, endpoint, float64 if dtype is None else dtype)


def result_type(*arrays_and_dtypes: Any) -> Any:
    return _np.result_type(*(a.dtype if hasattr(a, "meta") else a for a in arrays_and_dtypes))


def can_cast(from_: Any, to: Any, /) -> _builtins.bool:
    return _np.can_cast(from_.dtype if hasattr(from_, "meta") else from_, to)


_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "integral": "i",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "ifc",
}


def isdtype(dtype: Any, kind: Any) -> _builtins.bool:
    """The standard's dtype-kind test (``"real floating"``, a dtype, or a tuple of them)."""
    if isinstance(kind, tuple):
        return _builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        return _np.dtype(dtype).kind in _KINDS[kind]
    same: _builtins.bool = _np.dtype(dtype) == _np.dtype(kind)
    return same


def cumulative_sum(
    x: Any,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: _builtins.bool = False,
) -> Any:
    _no_initial("cumulative_sum", include_initial)
    return _tf.cumsum(x, axis, dtype)


def cumulative_prod(
    x: Any,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: _builtins.bool = False,
) -> Any:
    _no_initial("cumulative_prod", include_initial)
    return _tf.cumprod(x, axis, dtype)


def _no_initial(op: str, include_initial: _builtins.bool) -> None:
    if _check_flag(op, "include_initial", include_initial):
        raise _UnsupportedError(op, "include_initial=True is not supported")


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return _broadcast_shapes(*shapes, op="broadcast_shapes")


def broadcast_arrays(*arrays: Any) -> list[Any]:
    shape = broadcast_shapes(*(_tf.asarray(a).shape for a in arrays))
    return [_tf.broadcast_to(a, shape) for a in arrays]


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    moved = _tf.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


def from_dlpack(x: Any, /, *, device: Any = None, copy: _builtins.bool | None = None) -> Any:
    _cpu("from_dlpack", device)
    _check_optional_flag("from_dlpack", "copy", copy)
    return _tf.asarray(_np.from_dlpack(x))


finfo = _np.finfo
iinfo = _np.iinfo


class _Linalg:
    """The standard's ``linalg`` extension: ``tf.linalg``'s functions, and the names the
    standard puts there (matmul, tensordot, vecdot, outer, matrix_transpose, and
    ``trace``/``diagonal`` over the last two axes)."""

    matmul = staticmethod(_tf.matmul)
    outer = staticmethod(_tf.outer)
    matrix_transpose = staticmethod(matrix_transpose)

    @staticmethod
    def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
        return _tf.tensordot(x1, x2, axes)

    @staticmethod
    def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
        return _tf.vecdot(x1, x2, axis)

    @staticmethod
    def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
        result = _tf.trace(x, offset, -2, -1)
        return result if dtype is None else _tf.astype(result, dtype)

    @staticmethod
    def diagonal(x: Any, /, *, offset: int = 0) -> Any:
        return _tf.diagonal(x, offset, -2, -1)

    def __getattr__(self, name: str) -> Any:
        return getattr(_tf_linalg, name)


linalg = _Linalg()


def _not_covered() -> list[str]:
    """The standard's function and constant names this namespace does not provide."""
    standard = [
        "abs",
        "acos",
        "acosh",
        "add",
        "all",
        "any",
        "arange",
        "argmax",
        "argmin",
        "argsort",
        "asarray",
        "asin",
        "asinh",
        "astype",
        "atan",
        "atan2",
        "atanh",
        "bitwise_and",
        "bitwise_invert",
        "bitwise_left_shift",
        "bitwise_or",
        "bitwise_right_shift",
        "bitwise_xor",
        "broadcast_arrays",
        "broadcast_shapes",
        "broadcast_to",
        "can_cast",
        "ceil",
        "clip",
        "concat",
        "conj",
        "copysign",
        "cos",
        "cosh",
        "count_nonzero",
        "cumulative_prod",
        "cumulative_sum",
        "diff",
        "divide",
        "e",
        "empty",
        "empty_like",
        "equal",
        "exp",
        "expand_dims",
        "expm1",
        "eye",
        "fft",
        "finfo",
        "flip",
        "floor",
        "floor_divide",
        "from_dlpack",
        "full",
        "full_like",
        "greater",
        "greater_equal",
        "hypot",
        "iinfo",
        "imag",
        "inf",
        "isdtype",
        "isfinite",
        "isin",
        "isinf",
        "isnan",
        "less",
        "less_equal",
        "linalg",
        "linspace",
        "log",
        "log10",
        "log1p",
        "log2",
        "logaddexp",
        "logical_and",
        "logical_not",
        "logical_or",
        "logical_xor",
        "matmul",
        "matrix_transpose",
        "max",
        "maximum",
        "mean",
        "meshgrid",
        "min",
        "minimum",
        "moveaxis",
        "multiply",
        "nan",
        "negative",
        "newaxis",
        "nextafter",
        "nonzero",
        "not_equal",
        "ones",
        "ones_like",
        "permute_dims",
        "pi",
        "positive",
        "pow",
        "prod",
        "real",
        "reciprocal",
        "remainder",
        "repeat",
        "reshape",
        "result_type",
        "roll",
        "round",
        "searchsorted",
        "sign",
        "signbit",
        "sin",
        "sinh",
        "sort",
        "sqrt",
        "square",
        "squeeze",
        "stack",
        "std",
        "subtract",
        "sum",
        "take",
        "take_along_axis",
        "tan",
        "tanh",
        "tensordot",
        "tile",
        "tril",
        "triu",
        "trunc",
        "unique_all",
        "unique_counts",
        "unique_inverse",
        "unique_values",
        "unstack",
        "var",
        "vecdot",
        "where",
        "zeros",
        "zeros_like",
    ]
    namespace = globals()
    return [name for name in standard if name not in namespace]


def __getattr__(name: str) -> Any:
    """Functions of the standard that tenferro gains later under the same name
    (``argmax``, ``sort``, ``cumulative_sum`` ...) are looked up on ``tenferro``."""
    found = {"atan2": "arctan2"}.get(name, name)
    if name in NOT_COVERED_CANDIDATES and hasattr(_tf, found):
        return getattr(_tf, found)
    raise AttributeError(f"module 'tenferro.array_api' has no attribute {name!r}")


NOT_COVERED_CANDIDATES = frozenset(_not_covered())


def not_covered() -> list[str]:
    """The names of the standard this namespace does not provide (now)."""
    return [name for name in sorted(NOT_COVERED_CANDIDATES) if not _has(name)]


def _has(name: str) -> _builtins.bool:
    try:
        __getattr__(name)
    except AttributeError:
        return False
    return True
