"""Turning arguments into operands: conversion, lifting, promotion, broadcasting.

Every numpy-style function prepares its operands here, then applies
:mod:`tenferro.lax` primitives. Operands are first lifted to the highest tensor
kind present (so a Python scalar used with a traced tensor becomes a traced
constant, not an eagerly broadcast array), then promoted with numpy's rules
(NEP 50: Python scalars are weak) by explicit conversions, then broadcast with
explicit ``broadcast_in_dim``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.core.bind import lift
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import promote_types
from tenferro.errors import DTypeError
from tenferro.meta import Meta, broadcast_shapes

__all__ = [
    "asarray",
    "astype",
    "broadcast_to",
    "is_tensor",
    "prepare",
    "register_concrete",
]

_concrete: Any = None


def register_concrete(cls: type) -> None:
    """Record the concrete tensor class (``tenferro.Tensor``) that plain data becomes."""
    global _concrete
    _concrete = cls


def _concrete_class() -> Any:
    """The concrete tensor class (registered by ``tenferro.tensor``)."""
    return _concrete


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor of some kind (concrete, eager, traced, rule value)."""
    return getattr(type(value), "_priority", None) is not None


def asarray(value: Any, dtype: Any = None) -> Any:
    """``value`` as a tensor: tensors pass through (converted if ``dtype`` is given);
    arrays, sequences and scalars become concrete tensors."""
    if is_tensor(value):
        return value if dtype is None else astype(value, dtype)
    return _concrete(value, dtype)


def astype(x: Any, dtype: Any) -> Any:
    """``x`` converted to ``dtype``; the result is strongly typed."""
    converted = lax.convert_element_type(x, as_dtype(dtype, "astype"))
    if converted.meta.weak:
        converted = converted._rewrap(converted.meta._replace(weak=False))
    return converted


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    """numpy broadcasting of ``x`` to ``shape`` (right-aligned, extents equal or 1)."""
    target = tuple(int(n) for n in shape)
    if x.meta.shape == target:
        return x
    broadcast_shapes(x.meta.shape, target, op="broadcast_to")
    if len(target) < x.meta.ndim or broadcast_shapes(x.meta.shape, target) != target:
        from tenferro.errors import ShapeError

        raise ShapeError("broadcast_to", f"cannot broadcast {x.meta.shape} to {target}")
    offset = len(target) - x.meta.ndim
    return lax.broadcast_in_dim(x, target, range(offset, len(target)))


def prepare(
    op: str,
    values: Sequence[Any],
    *,
    kinds: str = "bifc",
    broadcast: bool = True,
    dtype: Any = None,
) -> list[Any]:
    """Operands for a numpy-style function: converted, lifted, promoted, broadcast.

    ``kinds`` lists the numpy dtype kinds the operation accepts after promotion;
    ``dtype`` forces the result dtype instead of promoting.
    """
    first = values[0]
    kind = type(first)
    if dtype is None and getattr(kind, "_priority", None) is not None:
        meta = first.meta
        for value in values:
            if type(value) is not kind:
                break
            other = value.meta
            if other.dtype != meta.dtype or other.shape != meta.shape or other.dynamic:
                break
        else:  # one kind, dtype and shape: nothing to lift, promote or broadcast
            if meta.dtype.kind not in kinds:
                _reject(op, meta.dtype, [v.meta for v in values], kinds)
            return list(values)
    if len(values) == 2 and dtype is None and broadcast:
        quick = _tensor_and_scalar(values[0], values[1], kinds)
        if quick is not None:
            return quick
    operands = lift([asarray(v) for v in values])
    metas = [o.meta for o in operands]
    target = (
        as_dtype(dtype, op)
        if dtype is not None
        else promote_types(*((m.dtype, m.weak) for m in metas), op=op)
    )
    if target.kind not in kinds:
        _reject(op, target, metas, kinds)
    operands = [
        o if o.meta.dtype == target else lax.convert_element_type(o, target) for o in operands
    ]
    if broadcast and len(operands) > 1:
        shape = broadcast_shapes(*(o.meta.shape for o in operands), op=op)
        operands = [broadcast_to(o, shape) for o in operands]
    return operands


_SCALARS = (bool, int, float, complex)
_SCALAR_DTYPES = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


_SCALAR_OPERANDS: DictCache[Any, Any] = DictCache(4096, "scalar operands")


def _tensor_and_scalar(first: Any, second: Any, kinds: str) -> list[Any] | None:
    """The common ``tensor op scalar`` (either order) for concrete tensor kinds, when the
    scalar adopts the tensor's dtype: the scalar's constant is cached, keyed by the
    tensor's meta (a hit means every check below passed before). ``None`` otherwise."""
    if type(second) in _SCALARS:
        tensor, scalar, scalar_first = first, second, False
    elif type(first) in _SCALARS:
        tensor, scalar, scalar_first = second, first, True
    else:
        return None
    kind = type(tensor)
    meta = tensor.meta
    # ``0.0 == -0.0`` and ``nan != nan`` as keys: only finite non-zero values are cached.
    cacheable = scalar == scalar and scalar != 0
    key = (kind, meta, kinds, type(scalar), scalar)
    constant = _SCALAR_OPERANDS.get(key) if cacheable else None
    if constant is None:
        make_full = getattr(kind, "_full", None)
        if make_full is None or meta.weak or meta.dynamic or meta.dtype.kind not in kinds:
            return None
        scalar_dtype = _SCALAR_DTYPES[type(scalar)]
        if promote_types((meta.dtype, False), (scalar_dtype, True)) != meta.dtype:
            return None
        constant = make_full(Meta(meta.shape, meta.dtype, scalar_dtype == meta.dtype), scalar)
        if cacheable:
            _SCALAR_OPERANDS.put(key, constant)
    return [constant, tensor] if scalar_first else [tensor, constant]


def _reject(op: str, target: Any, metas: Sequence[Meta], kinds: str) -> None:
    names = {"b": "bool", "i": "integer", "f": "floating", "c": "complex"}
    raise DTypeError(
        op,
        f"{target} operands are not supported (got {', '.join(str(m.dtype) for m in metas)}; "
        f"allowed: {', '.join(names[k] for k in kinds)})",
    )
