"""The one reader of integer parameters: extents, axes, positions, padding configs,
dimension numbers, slice sizes, index maps, counts.

An integer parameter is what numpy and JAX take for one: anything with ``__index__``
(Python ints, numpy integer scalars, 0-d integer arrays, concrete 0-d integer tensors),
never a bool (numpy refuses ``True`` as a pad width or a shape) and never a float, not
even an integral one (numpy: "pad_width must be of integral type"; ``int(0.5)`` would
silently make it 0). A sequence of them is a tuple, list, range, 1-d integer array or
concrete 1-d integer tensor (``Tensor``, ``EagerTensor``); a string, a bare scalar,
``None`` or a nested sequence is refused, as is a sequence of the wrong length when the
length is known. A traced tensor is refused in either role: its values are data, unknown
while it is traced, and a parameter fixes structure (a shape, an axis).

Every refusal is the error class of the parameter's role (an :class:`AxisError` for
axes, a :class:`ShapeError` for extents and positions, a :class:`ParameterError` for
other counts) naming the operation, the parameter and the offending value. Python ints
and tuples of Python ints (what internal callers pass) take a fast path.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro.errors import ArgumentTypeError, ParameterError, ShapeError, TenferroError

__all__ = [
    "argnum_positions",
    "as_argnums",
    "as_data",
    "as_int",
    "as_int_or_ints",
    "as_ints",
    "as_real",
    "is_listed",
]

_ONLY_INT = frozenset({int}).issuperset
"""``_ONLY_INT(map(type, values))``: every value is an ``int`` (not a bool)."""


def as_int(op: str, what: str, value: Any, error: type[TenferroError] = ParameterError) -> int:
    """``value`` as a Python ``int``; ``error`` naming ``op``, ``what`` and the value
    unless it is an integer (bools and floats refused, see the module documentation)."""
    if type(value) is int:
        return value
    found = _integer(value)
    if found is None:
        _refuse_traced(op, what, value, error)
        raise error(op, f"{what} must be an integer, got {_show(value)}")
    return found


def as_real(
    op: str, what: str, value: Any, error: type[TenferroError] = ParameterError
) -> int | float:
    """``value`` as a Python int or float: a real number (numpy's too, and 0-d real
    arrays), never a bool, a string, ``None`` or a complex number (numpy's ``ddof``)."""
    if type(value) is int or type(value) is float:
        return value
    if not isinstance(value, (bool, np.bool_)):
        found = _integer(value)
        if found is not None:
            return found
        if isinstance(value, (float, np.floating)):
            return float(value)
        data = _data(value)
        if data is not None and data.shape == () and data.dtype.kind == "f":
            return float(data)
    _refuse_traced(op, what, value, error)
    raise error(op, f"{what} must be a real number, got {_show(value)}")


def as_ints(
    op: str,
    what: str,
    values: Any,
    length: int | None = None,
    error: type[TenferroError] = ShapeError,
) -> tuple[int, ...]:
    """``values`` (a sequence of integers) as a tuple of Python ints, of ``length``
    entries when it is given; ``error`` naming ``op``, ``what`` and the value otherwise."""
    if type(values) is tuple and _ONLY_INT(map(type, values)):
        read = values
    else:
        read = _sequence(op, what, values, error)
    if length is not None and len(read) != length:
        raise error(
            op,
            f"{what} {_show(values)} has {len(read)} entries; it needs {length}, one per "
            f"axis of the rank-{length} operand",
        )
    return read


def as_int_or_ints(
    op: str, what: str, value: Any, error: type[TenferroError] = ShapeError
) -> tuple[int, ...]:
    """One integer or a sequence of them (numpy's ``axis=1`` or ``axis=(0, 1)``) as a
    tuple of Python ints."""
    if is_listed(value):
        return as_ints(op, what, value, error=error)
    return (as_int(op, what, value, error),)


def is_listed(value: Any) -> bool:
    """A sequence of values, rather than one (a 0-d array or tensor is one)."""
    if isinstance(value, (list, tuple, range)):
        return True
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    return _is_tensor(value) and value.meta.shape != ()


def as_argnums(op: str, argnums: Any) -> int | tuple[int, ...]:
    """A transform's ``argnums``: an int, or a non-empty tuple of ints (a list or 1-d
    integer array read as a tuple); :class:`ArgumentTypeError` for anything else.
    Positions are checked against the arguments of each call by
    :func:`argnum_positions`."""
    positions = as_int_or_ints(op, "argnums", argnums, ArgumentTypeError)
    if not is_listed(argnums):
        return positions[0]
    if not positions:
        raise ParameterError(op, "argnums must not be empty")
    return positions


def argnum_positions(op: str, argnums: int | tuple[int, ...], count: int) -> tuple[int, ...]:
    """The positions ``argnums`` (read by :func:`as_argnums`) select among ``count``
    positional arguments, negative ones counted from the end; :class:`ParameterError`
    naming ``op`` when one is out of range. Every transform taking ``argnums`` reads
    them here, so all treat a repeated position alike: it stays repeated, and the
    transform gives the derivative with respect to that argument at each place it is
    listed (``grad(f, argnums=(0, 0))`` is ``(g, g)``)."""
    listed = (argnums,) if isinstance(argnums, int) else argnums
    for position in listed:
        if not -count <= position < count:
            raise ParameterError(
                op, f"argnums {argnums!r} out of range for {count} positional argument(s)"
            )
    return tuple(p % count for p in listed)


def _sequence(op: str, what: str, values: Any, error: type[TenferroError]) -> tuple[int, ...]:
    if _is_tensor(values) or isinstance(values, np.ndarray):
        _refuse_traced(op, what, values, error)
        data = _data(values)
        assert data is not None
        if data.ndim != 1 or data.dtype.kind not in "iu":
            raise error(op, f"{what} must be a 1-d integer array, got {_show(values)}")
        return tuple(data.tolist())
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
        raise error(op, f"{what} must be a sequence of integers, got {_show(values)}")
    read = []
    for position, item in enumerate(values):
        found = item if type(item) is int else _integer(item)
        if found is None:
            _refuse_traced(op, f"{what} entry {position}", item, error)
            raise error(
                op,
                f"{what} must be a sequence of integers, got {_show(values)} (entry "
                f"{position} is {_show(item)})",
            )
        read.append(found)
    return tuple(read)


def _integer(value: Any) -> int | None:
    """``value`` as an int if it is an integer in numpy's sense (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, np.ndarray) and value.dtype.kind == "b":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None
    except TenferroError:  # a traced or otherwise data-less tensor has no value to read
        return None


def as_data(op: str, what: str, value: Any, error: type[TenferroError] = ParameterError) -> Any:
    """``value`` with a concrete tensor replaced by its data (a numpy array), for readers
    of nested integer parameters (pad widths); a traced tensor is refused (see the
    module documentation), anything else passes unchanged."""
    if not _is_tensor(value):
        return value
    _refuse_traced(op, what, value, error)
    return _data(value)


def _is_tensor(value: Any) -> bool:
    """A tensor of any kind (the test :func:`tenferro.core.kinds.is_tensor` makes;
    this module sits below the tensor classes)."""
    return getattr(type(value), "_priority", None) is not None


def _data(value: Any) -> np.ndarray[Any, Any] | None:
    """The data of an array or a concrete tensor; ``None`` for anything else (a traced
    tensor has none while it is traced)."""
    if isinstance(value, np.ndarray):
        return value
    if _is_tensor(value):
        data = getattr(value, "_value", None)
        return None if data is None else np.asarray(data)
    return None


def _refuse_traced(op: str, what: str, value: Any, error: type[TenferroError]) -> None:
    """The error for a tensor without concrete data given as a parameter."""
    if _is_tensor(value) and getattr(value, "_value", None) is None:
        raise error(
            op,
            f"{what} must be concrete, got a {type(value).__name__} "
            f"({value.meta.describe()}): its value is unknown while it is traced, and "
            f"{what} fixes the structure of the result; pass Python ints",
        )


def _show(value: Any) -> str:
    """``value`` and, unless obvious from its repr, its type."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    kind = type(value)
    if kind in (int, float, str, list, tuple) or value is None:
        return text
    return f"{text} of type {kind.__name__}"
