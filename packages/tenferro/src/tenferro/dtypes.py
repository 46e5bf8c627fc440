"""The seven dtypes and numpy's promotion rules (NEP 50: Python scalars are weak).

Exactly float32, float64, complex64, complex128, int32, int64 and bool are
supported; anything else is rejected with a clear error. Only floating and
complex values carry tangents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro.errors import DTypeError

__all__ = [
    "DTYPES",
    "bool_",
    "complex64",
    "complex128",
    "complex_dtype",
    "dtype",
    "float32",
    "float64",
    "int32",
    "int64",
    "is_complex",
    "is_floating",
    "is_inexact",
    "is_integer",
    "promote_types",
    "real_dtype",
]

bool_ = np.dtype(np.bool_)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

DTYPES: tuple[np.dtype[Any], ...] = (bool_, int32, int64, float32, float64, complex64, complex128)
_SUPPORTED = frozenset(DTYPES)
_NAMES = ", ".join(str(d) for d in DTYPES)

_REAL: dict[np.dtype[Any], np.dtype[Any]] = {
    complex64: float32,
    complex128: float64,
    float32: float32,
    float64: float64,
}
_COMPLEX: dict[np.dtype[Any], np.dtype[Any]] = {
    float32: complex64,
    float64: complex128,
    complex64: complex64,
    complex128: complex128,
}


def dtype(value: Any, op: str = "dtype") -> np.dtype[Any]:
    """The supported numpy dtype named by ``value`` (a dtype, type or name)."""
    try:
        normalized: np.dtype[Any] = np.dtype(value)
    except TypeError:
        raise DTypeError(op, f"{value!r} is not a dtype; supported: {_NAMES}") from None
    if normalized not in _SUPPORTED:
        raise DTypeError(op, f"dtype {normalized} is not supported; supported: {_NAMES}")
    return normalized


def is_floating(dt: np.dtype[Any]) -> bool:
    return dt.kind == "f"


def is_complex(dt: np.dtype[Any]) -> bool:
    return dt.kind == "c"


def is_inexact(dt: np.dtype[Any]) -> bool:
    """Floating or complex: the dtypes that carry tangents."""
    return dt.kind in "fc"


def is_integer(dt: np.dtype[Any]) -> bool:
    return dt.kind == "i"


def real_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """float32 for complex64, float64 for complex128; floats map to themselves."""
    return _REAL[dt]


def complex_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    """complex64 for float32, complex128 for float64; complex map to themselves."""
    return _COMPLEX[dt]


_WEAK_SAMPLE = {"b": False, "i": 0, "f": 0.0, "c": 0j}


_PROMOTED: DictCache[tuple[tuple[np.dtype[Any], bool], ...], np.dtype[Any]] = DictCache(
    4096, "promotions"
)


def promote_types(*operands: tuple[np.dtype[Any], bool], op: str = "promote") -> np.dtype[Any]:
    """numpy's result dtype for ``(dtype, weak)`` operands; weak ones act as Python scalars."""
    found = _PROMOTED.get(operands)
    if found is None:
        found = _promote(operands, op)
        _PROMOTED.put(operands, found)
    return found


def _promote(operands: tuple[tuple[np.dtype[Any], bool], ...], op: str) -> np.dtype[Any]:
    strong = [dt for dt, weak in operands if not weak]
    if not strong:
        # All weak: the widest kind wins with numpy's default precision for it.
        kinds = {dt.kind for dt, _ in operands}
        for kind, result in (("c", complex128), ("f", float64), ("i", int64)):
            if kind in kinds:
                return result
        return bool_
    weak = [_WEAK_SAMPLE[dt.kind] for dt, weak in operands if weak]
    result = np.result_type(*strong, *weak)
    if result not in _SUPPORTED:  # pragma: no cover - numpy only promotes within the set
        raise DTypeError(op, f"promotes to unsupported dtype {result}")
    return result
