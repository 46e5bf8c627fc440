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
from tenferro.core.names import public_dir as _public_dir
from tenferro.errors import DTypeError as _DTypeError
from tenferro.errors import ParameterError as _ParameterError
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
    """The standard's ``clip``: without bounds, ``x`` itself (numpy's needs one)."""
    if min is None and max is None:
        return _tf.asarray(x)
    return _tf.clip(x, min, max)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    """Coordinate grids, as a list (the standard's 2023.12 return type)."""
    return list(_tf.meshgrid(*arrays, indexing=indexing))


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
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def isdtype(dtype: Any, kind: Any) -> _builtins.bool:
    """The standard's dtype-kind test: ``kind`` is a dtype, one of the kind names
    (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``, ``"real
    floating"``, ``"complex floating"``, ``"numeric"``) or a tuple of them."""
    resolved = _as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return _builtins.any(isdtype(resolved, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise _ParameterError(
                "isdtype", f"unknown dtype kind {kind!r}; the kinds are {sorted(_KINDS)}"
            )
        return resolved.kind in _KINDS[kind]
    same: _builtins.bool = resolved == _as_dtype(kind, "isdtype")
    return same


def _as_dtype(value: Any, op: str) -> Any:
    if not isinstance(value, _np.dtype) and hasattr(value, "meta"):
        raise _DTypeError(op, f"expected a dtype, got a {type(value).__name__} (use x.dtype)")
    return _dtypes.dtype(value, op)


def cumulative_sum(
    x: Any,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: _builtins.bool = False,
) -> Any:
    return _with_initial("cumulative_sum", _tf.cumsum(x, axis, dtype), axis, include_initial, 0)


def cumulative_prod(
    x: Any,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: _builtins.bool = False,
) -> Any:
    return _with_initial("cumulative_prod", _tf.cumprod(x, axis, dtype), axis, include_initial, 1)


def _with_initial(
    op: str, result: Any, axis: Any, include_initial: _builtins.bool, identity: int
) -> Any:
    """``result`` with the scan's identity first along ``axis`` when ``include_initial``
    (its extent grows by one), as the standard asks."""
    if not _check_flag(op, "include_initial", include_initial):
        return result
    position = 0 if axis is None else axis
    widths = [(0, 0)] * result.ndim
    widths[position] = (1, 0)
    return _tf.pad(result, widths, constant_values=identity)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return _broadcast_shapes(*shapes, op="broadcast_shapes")


def broadcast_arrays(*arrays: Any) -> list[Any]:
    shape = broadcast_shapes(*(_tf.asarray(a).shape for a in arrays))
    return [_tf.broadcast_to(a, shape) for a in arrays]


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    moved = _tf.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


def from_dlpack(x: Any, /, *, device: Any = None, copy: _builtins.bool | None = None) -> Any:
    return _tf.from_dlpack(x, device=device, copy=copy)


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: _builtins.bool = False) -> Any:
    return _tf.count_nonzero(x, axis, keepdims)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    return _tf.searchsorted(x1, x2, side=side, sorter=sorter)


class _NamespaceInfo:
    """What ``__array_namespace_info__()`` returns: the namespace's devices, dtypes and
    capabilities (the standard's inspection API)."""

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes work (on concrete tensors; traced
        values need static shapes). At most 64 dimensions (numpy's)."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        _cpu("default_dtypes", device)
        return {
            "real floating": float64,
            "complex floating": complex128,
            "integral": int64,
            "indexing": int64,
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        """The supported dtypes by name, of ``kind`` (a kind name of :func:`isdtype`, or a
        tuple of them) when given."""
        _cpu("dtypes", device)
        every = {
            "bool": bool,
            "int32": int32,
            "int64": int64,
            "float32": float32,
            "float64": float64,
            "complex64": complex64,
            "complex128": complex128,
        }
        if kind is None:
            return every
        return {name: dt for name, dt in every.items() if isdtype(dt, kind)}


_INFO = _NamespaceInfo()


def __array_namespace_info__() -> _NamespaceInfo:  # noqa: N807  (the standard's name)
    """The standard's inspection API: ``capabilities()``, ``default_device()``,
    ``devices()``, ``default_dtypes()``, ``dtypes(kind=...)``."""
    return _INFO


class _FloatInfo:
    """``finfo``'s fields as the standard types them: Python floats, and the dtype."""

    __slots__ = ("bits", "dtype", "eps", "max", "min", "smallest_normal")

    def __init__(self, info: Any) -> None:
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = info.dtype

    def __repr__(self) -> str:
        return f"finfo(bits={self.bits}, eps={self.eps}, dtype={self.dtype})"


class _IntInfo:
    """``iinfo``'s fields as the standard types them: Python ints, and the dtype."""

    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, info: Any) -> None:
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = info.dtype

    def __repr__(self) -> str:
        return f"iinfo(bits={self.bits}, min={self.min}, max={self.max}, dtype={self.dtype})"


def finfo(type: Any, /) -> _FloatInfo:  # noqa: A002  (the standard's name)
    """Machine limits of a floating or complex dtype (of a tensor's dtype too)."""
    dtype = type.dtype if hasattr(type, "meta") else type
    return _FloatInfo(_np.finfo(_as_dtype(dtype, "finfo")))


def iinfo(type: Any, /) -> _IntInfo:  # noqa: A002  (the standard's name)
    """Machine limits of an integer dtype (of a tensor's dtype too)."""
    dtype = type.dtype if hasattr(type, "meta") else type
    return _IntInfo(_np.iinfo(_as_dtype(dtype, "iinfo")))


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
        return _tf.trace(x, offset, -2, -1, dtype)

    @staticmethod
    def diagonal(x: Any, /, *, offset: int = 0) -> Any:
        return _tf.diagonal(x, offset, -2, -1)

    @staticmethod
    def pinv(x: Any, /, *, rtol: Any = None) -> Any:
        """The pseudo-inverse; ``rtol`` may also be an array of one tolerance per matrix
        (broadcast against the batch shape), as the standard allows."""
        if rtol is None or (_np.ndim(rtol) == 0 and not hasattr(rtol, "meta")):
            return _tf_linalg.pinv(x, rtol)
        if hasattr(rtol, "meta") and not hasattr(rtol, "_value"):
            raise _ParameterError(
                "linalg.pinv",
                "an array of tolerances must be concrete (a traced rtol has no values to "
                "pick each matrix's tolerance with); give a number, or the values",
            )
        tolerances = _np.asarray(rtol.detach() if hasattr(rtol, "detach") else rtol)
        if tolerances.ndim == 0:
            return _tf_linalg.pinv(x, float(tolerances))
        a = _tf.asarray(x)
        batch = a.shape[:-2]
        spread = _np.broadcast_to(tolerances, batch)
        if spread.size == 0:
            return _tf_linalg.pinv(a)
        flat = _tf.reshape(a, (-1, *a.shape[-2:]))
        pieces = [_tf_linalg.pinv(flat[i], float(r)) for i, r in enumerate(spread.reshape(-1))]
        result = _tf.stack(pieces)
        return _tf.reshape(result, (*batch, *result.shape[-2:]))

    def __getattr__(self, name: str) -> Any:
        return getattr(_tf_linalg, name)


linalg = _Linalg()


_STANDARD = [
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
"""The standard's (2023.12) function, constant and extension names."""


def _not_covered() -> list[str]:
    """The standard's function and constant names this namespace does not provide."""
    namespace = globals()
    return [name for name in _STANDARD if name not in namespace]


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


__all__ = sorted(
    {name for name in _STANDARD if name in globals() or _has(name)}
    | {"bool", "int32", "int64", "float32", "float64", "complex64", "complex128", "not_covered"}
)
"""The standard's names this namespace provides (``dtype`` constants included), and
:func:`not_covered`."""

__dir__ = _public_dir([*__all__, "__array_api_version__", "__array_namespace_info__"])
