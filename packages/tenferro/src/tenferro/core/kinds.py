"""Tensor kinds as the core sees them: which class plain data becomes, and ``asarray``.

Every layer needs to turn data (an array, a nested sequence, a Python or numpy scalar)
into a tensor, but the concrete tensor class sits above the primitives that need it.
So the class registers itself here (the package's initialisation calls
:func:`register_concrete`), and everything below it converts through :func:`asarray`.
A tensor of any kind is recognised by its ``_priority`` (the order in which
:func:`~tenferro.core.bind.bind` lifts mixed operands).
"""

from __future__ import annotations

from typing import Any

__all__ = ["asarray", "concrete_class", "is_tensor", "register_concrete"]

_concrete: Any = None


def register_concrete(cls: type) -> None:
    """Record the concrete tensor class (``tenferro.Tensor``) that plain data becomes."""
    global _concrete
    _concrete = cls


def concrete_class() -> Any:
    """The concrete tensor class (registered by the package's initialisation)."""
    return _concrete


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor of some kind (concrete, eager, traced, rule value)."""
    return getattr(type(value), "_priority", None) is not None


def asarray(value: Any, op: str = "asarray") -> Any:
    """``value`` as a tensor: tensors pass through unchanged; arrays, sequences and
    scalars become concrete tensors (a ``DTypeError`` naming ``op`` for anything that
    is not numeric data). Converting a tensor to another dtype is a primitive
    (``tenferro.surface.convert.astype``)."""
    if getattr(type(value), "_priority", None) is not None:
        return value
    return _concrete._convert(value, None, op)
