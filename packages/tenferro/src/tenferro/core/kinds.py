"""Tensor kinds as the core sees them: which class plain data becomes, and ``asarray``.

Every layer needs to turn data (an array, a nested sequence, a Python or numpy scalar)
into a tensor, but the concrete tensor class sits above the primitives that need it.
So the class registers itself here (the package's initialisation calls
:func:`register_concrete`), and everything below it converts through :func:`asarray`.
A tensor of any kind is recognised by its ``_priority`` (the order in which
:func:`~tenferro.core.bind.bind` lifts mixed operands).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import numpy as np

__all__ = ["asarray", "concrete_class", "is_tensor", "owned", "register_concrete"]

_concrete: Any = None
_borrowed: Any = None

_BORROWABLE = frozenset(
    np.dtype(name)
    for name in ("float32", "float64", "complex64", "complex128", "int32", "int64", "bool")
)
"""The dtypes a caller's numpy array may have to be consumed without a copy."""


def register_concrete(cls: type, borrowed: type | None = None) -> None:
    """Record the concrete tensor class (``tenferro.Tensor``) that plain data becomes,
    and the class of borrowed operands (numpy arrays consumed without a copy)."""
    global _concrete, _borrowed
    _concrete = cls
    _borrowed = borrowed


def concrete_class() -> Any:
    """The concrete tensor class (registered by the package's initialisation)."""
    return _concrete


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor of some kind (concrete, eager, traced, rule value)."""
    return getattr(type(value), "_priority", None) is not None


def asarray(value: Any, op: str = "asarray") -> Any:
    """``value`` as an operand: tensors pass through unchanged; sequences and scalars
    become concrete tensors (a ``DTypeError`` naming ``op`` for anything that is not
    numeric data); a numpy array of a supported dtype is borrowed, not copied (a
    ``Borrowed`` tensor: results that would alias it, and tapes or traces that would
    keep it, copy it). Converting a tensor to another dtype is a primitive
    (``tenferro.surface.convert.astype``)."""
    kind = type(value)
    if getattr(kind, "_priority", None) is not None:
        return value
    if kind is np.ndarray and value.dtype in _BORROWABLE and _borrowed is not None:
        return _borrowed._borrow(value)
    return _concrete._convert(value, None, op)


T = TypeVar("T")


def owned(value: T) -> T:
    """``value`` itself, or for a borrowed operand (a caller's numpy array converted
    by :func:`asarray` without a copy) a tensor owning a copy of its data: what an
    operation returns where its result would otherwise be its operand (an identity
    reshape, transpose, ``real`` of real data ...), so that no caller's buffer
    outlives the call."""
    if type(value) is _borrowed:
        return cast("T", _copy_of(value))
    return value


def _copy_of(borrowed: Any) -> Any:
    return borrowed._owned()
