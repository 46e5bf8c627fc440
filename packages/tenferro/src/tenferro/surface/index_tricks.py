"""numpy's index tricks ``r_`` and ``c_``: concatenation by index notation.

``tf.r_[1:4, [7, 8], x]`` joins slices (as ``arange``; a complex step ``5j`` means
``linspace`` with 5 points), sequences, numbers and tensors of any kind along the first
axis; ``tf.c_[a, b]`` joins along the last axis with every operand at least 2-D, 1-D ones
as columns. A leading string directive ``"axis[,ndmin[,trans1d]]"`` sets the axis, the
minimum rank and where a 1-D operand's axis goes, as in numpy. The matrix directives
``"r"`` and ``"c"`` (numpy's ``matrix`` class) are not supported.
"""

from __future__ import annotations

from typing import Any

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.errors import ParameterError, UnsupportedError
from tenferro.meta import normalize_axis
from tenferro.surface.convert import asarray, prepare
from tenferro.surface.creation import arange, linspace
from tenferro.surface.shapes import permute_dims, reshape

__all__ = ["c_", "r_"]

_SCALARS = (bool, int, float, complex)


class AxisConcatenator:
    """Concatenation by index notation (see the module documentation)."""

    __slots__ = ("axis", "name", "ndmin", "trans1d")

    def __init__(self, name: str, axis: int = 0, ndmin: int = 1, trans1d: int = -1) -> None:
        self.name = name
        self.axis = axis
        self.ndmin = ndmin
        self.trans1d = trans1d

    def __getitem__(self, key: Any) -> Any:
        op = self.name
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        parts: list[Any] = []
        for position, item in enumerate(items):
            if isinstance(item, str):
                if position:
                    raise ParameterError(op, "a string directive must be the first entry")
                axis, ndmin, trans1d = _directive(op, item, axis, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                part = _range(op, item)
                if ndmin > 1:
                    part = _at_least(part, ndmin)
                    if trans1d != -1:
                        order = list(range(ndmin))
                        order[-1], order[trans1d] = order[trans1d], order[-1]
                        part = permute_dims(part, order)
                parts.append(part)
            elif type(item) in _SCALARS:
                parts.append(item)
            else:
                part = asarray(item, op=op)
                rank = part.meta.ndim
                part = _at_least(part, ndmin)
                if trans1d != -1 and rank < ndmin:
                    added = ndmin - rank
                    first = trans1d + added + 1 if trans1d < 0 else trans1d
                    every = list(range(ndmin))
                    part = permute_dims(part, every[:first] + every[added:] + every[first:added])
                parts.append(part)
        if not parts:
            raise ParameterError(op, "nothing to join")
        operands = lift(prepare(op, parts, broadcast=False))
        operands = [_at_least(o, ndmin) for o in operands]
        rank = operands[0].meta.ndim
        return lax.concatenate(operands, normalize_axis(axis, rank, op))

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"tenferro.{self.name}"


def _directive(op: str, text: str, axis: int, ndmin: int, trans1d: int) -> tuple[int, int, int]:
    if text in ("r", "c"):
        raise UnsupportedError(op, f"the matrix directive {text!r} (numpy.matrix) is not supported")
    fields = text.split(",")
    try:
        numbers = [int(field) for field in fields]
    except ValueError:
        raise ParameterError(
            op, f"unknown directive {text!r}; use 'axis[,ndmin[,trans1d]]'"
        ) from None
    if len(numbers) > 3:
        raise ParameterError(op, f"unknown directive {text!r}; use 'axis[,ndmin[,trans1d]]'")
    axis = numbers[0]
    if len(numbers) > 1:
        ndmin = numbers[1]
    if len(numbers) > 2:
        trans1d = numbers[2]
    return axis, ndmin, trans1d


def _range(op: str, item: slice) -> Any:
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if isinstance(step, complex):
        return linspace(start, item.stop, int(abs(step)))
    if item.stop is None:
        raise ParameterError(op, f"the slice {item!r} has no stop")
    return arange(start, item.stop, step)


def _at_least(value: Any, ndmin: int) -> Any:
    a = asarray(value)
    missing = ndmin - a.meta.ndim
    return a if missing <= 0 else reshape(a, (1,) * missing + a.meta.shape)


r_ = AxisConcatenator("r_", 0)
"""Join along the first axis (numpy's ``r_``)."""

c_ = AxisConcatenator("c_", -1, ndmin=2, trans1d=0)
"""Join along the last axis, operands at least 2-D, 1-D ones as columns (numpy's ``c_``)."""
