"""Turning arguments into operands: conversion, lifting, promotion, broadcasting.

Every numpy-style function prepares its operands here, then applies
:mod:`tenferro.lax` primitives. Operands are first lifted to the highest tensor
kind present (so a Python scalar used with a traced tensor becomes a traced
constant, not an eagerly broadcast array), then promoted with numpy's rules
(NEP 50: Python scalars are weak) by explicit conversions, then broadcast with
explicit ``broadcast_in_dim``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.kinds import asarray, is_tensor, owned
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import promote_types
from tenferro.errors import DTypeError, ScalarOverflowError, ShapeError
from tenferro.meta import MAX_RANK, Meta, as_shape, broadcast_shapes
from tenferro.surface.dispatch import REPLAYABLE
from tenferro.surface.signatures import preserving

__all__ = [
    "MAX_RANK",
    "as_shape",
    "asarray",
    "astype",
    "broadcast_to",
    "check_int_fits",
    "is_tensor",
    "prepare",
]


def _is_integer(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def check_int_fits(op: str, value: Any, target: np.dtype[Any]) -> None:
    """Raise ``ScalarOverflowError`` when the Python integer ``value`` does not fit the
    dtype ``target``: out of range of an integer dtype (numpy 2 raises ``OverflowError``;
    numpy 1 wrapped around), or beyond every finite float64 for an inexact one. (A value
    that fits float64 but not float32 becomes inf, as in numpy: IEEE values are data.)"""
    if type(value) is not int:
        return
    if target.kind == "i":
        info = np.iinfo(target)
        if not info.min <= value <= info.max:
            raise ScalarOverflowError(op, f"Python integer {value} is out of bounds for {target}")
    elif target.kind in "fc":
        try:
            float(value)
        except OverflowError:
            raise ScalarOverflowError(
                op, f"Python integer {value} is too large to convert to {target}"
            ) from None


@preserving
def astype(x: Any, dtype: Any) -> Any:
    """``x`` converted to ``dtype``; the result is strongly typed."""
    converted = lax.convert_element_type(x, as_dtype(dtype, "astype"))
    if converted.meta.weak:
        converted = converted._rewrap(converted.meta._replace(weak=False))
    return converted


@preserving
def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    """numpy broadcasting of ``x`` to ``shape`` (right-aligned, extents equal or 1)."""
    meta = getattr(x, "meta", None)
    if meta is None:
        x = asarray(x, op="broadcast_to")
        meta = x.meta
    if type(shape) is tuple and meta.shape == shape:  # the common internal call
        return owned(x)
    return _broadcast(x, as_shape(shape, "broadcast_to"))


def broadcast_operand(x: Any, shape: tuple[int, ...]) -> Any:
    """A tensor ``x`` broadcast to a validated ``shape``, as the operand of an operation
    that consumes it at once: one of that shape is returned as is, borrowed or not (the
    operation copies a result that would alias a borrowed operand)."""
    return x if x.meta.shape == shape else _broadcast(x, shape)


def _broadcast(x: Any, target: tuple[int, ...]) -> Any:
    """``broadcast_to`` for a validated target shape."""
    shape = x.meta.shape
    if shape == target:
        return owned(x)
    if len(target) < len(shape) or broadcast_shapes(shape, target, op="broadcast_to") != target:
        raise ShapeError("broadcast_to", f"cannot broadcast {shape} to {target}")
    offset = len(target) - len(shape)
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
        quick = _tensor_and_scalar(op, values[0], values[1], kinds)
        if quick is not None:
            return quick
    if dtype is None:
        alike = _alike_arrays(op, values, kinds)
        if alike is not None:
            return alike
    operands = lift([asarray(v, op=op) for v in values])
    metas = [o.meta for o in operands]
    target = (
        as_dtype(dtype, op)
        if dtype is not None
        else promote_types(*((m.dtype, m.weak) for m in metas), op=op)
    )
    if target.kind not in kinds:
        _reject(op, target, metas, kinds)
    if target.kind != "b":
        for value in values:
            if type(value) is int:
                check_int_fits(op, value, target)
    weak = dtype is None and all(m.weak for m in metas)  # Python scalars combine weakly
    operands = [
        o if o.meta.dtype == target else lax.convert_element_type(o, target, weak) for o in operands
    ]
    if broadcast and len(operands) > 1:
        shape = broadcast_shapes(*(o.meta.shape for o in operands), op=op)
        given = [o.meta for o in operands]
        operands = [broadcast_operand(o, shape) for o in operands]
        if any(m.dynamic for m in given):
            operands = _share_dynamic_extents(op, given, operands)
    return operands


def _alike_arrays(op: str, values: Sequence[Any], kinds: str) -> list[Any] | None:
    """Tensors of one concrete kind mixed with numpy arrays, all of one dtype and shape:
    the arrays borrowed (not copied), everything lifted to one kind; nothing to promote
    or broadcast. ``None`` otherwise."""
    kind = None
    dtype = shape = None
    arrays = False
    for value in values:
        if type(value) is np.ndarray:
            arrays = True
            meta_dtype, meta_shape = value.dtype, value.shape
        else:
            if kind is None:
                kind = type(value)
                if kind not in REPLAYABLE:
                    return None
            elif type(value) is not kind:
                return None
            meta = value.meta
            if meta.weak or meta.dynamic:
                return None
            meta_dtype, meta_shape = meta.dtype, meta.shape
        if dtype is None:
            dtype, shape = meta_dtype, meta_shape
        elif meta_dtype != dtype or meta_shape != shape:
            return None
    if kind is None or not arrays or dtype is None or dtype.kind not in kinds:
        return None
    return lift([asarray(v, op=op) for v in values])


def _share_dynamic_extents(op: str, given: list[Meta], operands: list[Any]) -> list[Any]:
    """Broadcast operands (one shape) that meet data-dependent axes (traced truncations):
    an operand broadcast along such an axis takes its run-time extent from an operand
    that has it. A static extent above 1 cannot meet one (its length is unknown until
    the program runs)."""
    sources: dict[int, Any] = {}
    for o in operands:
        for axis in o.meta.dynamic:
            sources.setdefault(axis, o)
    shared = []
    for meta, o in zip(given, operands, strict=True):
        for axis in sorted(sources):
            if axis in o.meta.dynamic:
                continue
            offset = axis - (o.meta.ndim - meta.ndim)  # the operand's own axis, if any
            if offset >= 0 and meta.shape[offset] != 1:
                raise ShapeError(
                    op,
                    f"the static extent {o.meta.shape[axis]} of {o.meta.describe()} meets the "
                    f"data-dependent extent of {sources[axis].meta.describe()} on axis {axis} "
                    f"(truncate it alike, or pad the other with pad_to_match)",
                )
            o = lax.dynamic_truncate(o, lax.shape_of(sources[axis], axis), axis)
        shared.append(o)
    return shared


_SCALARS = (bool, int, float, complex)
_SCALAR_DTYPES = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


_SCALAR_OPERANDS: DictCache[Any, Any] = DictCache(4096, "scalar operands")
"""(kind, meta, kinds, scalar type) -> the meta of a Python number's operand beside a
tensor of that meta (or ``_PROMOTES``): structure only; the operand holding the number is
made at each call."""

_PROMOTES = "promotes"

_LITERALS: DictCache[Any, Any] = DictCache(4096, "traced scalar literals")
"""(kind, meta, kinds, scalar type, scalar) -> a Python number's constant beside a traced tensor:
a literal node of the traced program (structure, like the program itself), so retraces
share it. Concrete kinds never use it: their numbers are data."""


def _tensor_and_scalar(op: str, first: Any, second: Any, kinds: str) -> list[Any] | None:
    """The common ``tensor op scalar`` (either order) for concrete tensor kinds, when the
    scalar adopts the tensor's dtype: whether it does is cached by structure (the
    tensor's meta and the scalar's type); the number's range is checked at each call.
    ``None`` otherwise."""
    if type(second) in _SCALARS:
        tensor, scalar, scalar_first = first, second, False
    elif type(first) in _SCALARS:
        tensor, scalar, scalar_first = second, first, True
    else:
        return None
    kind = type(tensor)
    try:
        meta = tensor.meta
    except AttributeError:  # an array, a list or another scalar: the general path converts it
        return None
    literal_key: Any = None
    # Traced: a known literal answers at once (one lookup). ``0.0 == -0.0`` and
    # ``nan != nan`` as keys: only finite non-zero values are kept.
    if kind not in REPLAYABLE and scalar == scalar and scalar != 0:
        literal_key = (kind, meta, kinds, type(scalar), scalar)
        constant = _LITERALS.get(literal_key)
        if constant is not None:
            return [constant, tensor] if scalar_first else [tensor, constant]
    make_full = getattr(kind, "_full", None)
    if make_full is None:
        return None
    scalar_type = type(scalar)
    key = (kind, meta, kinds, scalar_type)
    constant_meta = _SCALAR_OPERANDS.get(key)
    if constant_meta is None:
        constant_meta = _PROMOTES
        if not (meta.weak or meta.dynamic or meta.dtype.kind not in kinds):
            scalar_dtype = _SCALAR_DTYPES[scalar_type]
            if promote_types((meta.dtype, False), (scalar_dtype, True)) == meta.dtype:
                constant_meta = Meta(meta.shape, meta.dtype, scalar_dtype == meta.dtype)
        _SCALAR_OPERANDS.put(key, constant_meta)
    if constant_meta is _PROMOTES:
        return None
    check_int_fits(op, scalar, meta.dtype)
    if kind in REPLAYABLE:  # concrete data: the number's operand is made now
        constant = make_full(constant_meta, scalar)
    else:  # a traced literal is a node of the program's structure: shared
        constant = make_full(constant_meta, scalar)
        if literal_key is not None:
            _LITERALS.put(literal_key, constant)
    return [constant, tensor] if scalar_first else [tensor, constant]


def _reject(op: str, target: Any, metas: Sequence[Meta], kinds: str) -> None:
    names = {"b": "bool", "i": "integer", "f": "floating", "c": "complex"}
    raise DTypeError(
        op,
        f"{target} operands are not supported (got {', '.join(str(m.dtype) for m in metas)}; "
        f"allowed: {', '.join(names[k] for k in kinds)})",
    )
