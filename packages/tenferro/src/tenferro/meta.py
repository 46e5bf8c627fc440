"""``Meta``: the static description of a tensor value (shape, dtype, flags).

Traced graphs have concrete shapes, so every primitive instance carries the metas
of its inputs and computes those of its outputs when it is constructed; bad
shapes and dtypes are reported there, at graph-build time.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tenferro.core.params import as_int, as_int_or_ints, as_ints
from tenferro.errors import AxisError, ShapeError

__all__ = [
    "MAX_ELEMENTS",
    "MAX_RANK",
    "Meta",
    "as_shape",
    "broadcast_shapes",
    "check_permutation",
    "check_size",
    "normalize_axes",
    "normalize_axis",
]

MAX_ELEMENTS = sys.maxsize // 16
"""More elements than any array can have (16 bytes each, the widest dtype, would exceed
the address space): a shape beyond it is refused before numpy tries to allocate it."""

MAX_RANK = 64
"""The largest rank numpy supports (tenferro tensors are numpy arrays underneath)."""


def as_shape(shape: Any, op: str, *, allow_unknown: bool = False) -> tuple[int, ...]:
    """``shape`` (an integer or a sequence of integers) as a tuple of extents.

    Rejects, with a ``ShapeError`` naming ``op`` and the shape: non-integer extents
    (``2.5``, strings, bools), negative extents (``-1`` is allowed once when
    ``allow_unknown``), ranks above :data:`MAX_RANK`, and sizes no array can have.
    """
    if type(shape) is tuple and len(shape) <= MAX_RANK:  # the common case, checked fast
        for n in shape:
            if type(n) is not int or n < 0:
                break
        else:
            if math.prod(shape) <= MAX_ELEMENTS:
                return shape
    extents = as_int_or_ints(op, "shape", shape, ShapeError)
    if len(extents) > MAX_RANK:
        raise ShapeError(op, f"rank {len(extents)} exceeds the maximum rank {MAX_RANK}")
    lowest = -1 if allow_unknown else 0
    if any(n < lowest for n in extents) or (allow_unknown and extents.count(-1) > 1):
        raise ShapeError(op, f"invalid shape {extents}: extents must be non-negative")
    check_size(op, extents)
    return extents


class Meta(NamedTuple):
    """Shape and dtype of a value.

    * ``weak``: the value came from a Python scalar and promotes like one (NEP 50);
    * ``dynamic``: axes whose extent is only an upper bound (after a data-dependent
      truncation); their true extent is known when the value is computed.
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    weak: bool = False
    dynamic: tuple[int, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def with_(self, **changes: Any) -> Meta:
        """A copy with some fields replaced (``weak`` and ``dynamic`` reset unless given)."""
        changes.setdefault("weak", False)
        changes.setdefault("dynamic", ())
        return self._replace(**changes)

    def describe(self) -> str:
        dims = ",".join(f"<={n}" if i in self.dynamic else str(n) for i, n in enumerate(self.shape))
        return f"{self.dtype}[{dims}]"


def check_size(op: str, shape: tuple[int, ...], what: str = "shape") -> None:
    """A :class:`ShapeError` naming ``op`` when ``shape`` holds more than
    :data:`MAX_ELEMENTS` elements."""
    if math.prod(n for n in shape if n > 0) > MAX_ELEMENTS:
        raise ShapeError(op, f"{what} {shape} is too large for any array")


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` (an integer in numpy's sense: not a bool or a float) in ``[0, ndim)``
    (negative axes count from the end)."""
    index = as_int(op, "axis", axis, AxisError)
    if not -ndim <= index < ndim:
        raise AxisError(op, f"axis {index} is out of range for rank {ndim}")
    return index % ndim


def normalize_axes(axes: Iterable[int], ndim: int, op: str) -> tuple[int, ...]:
    """Distinct axes in ``[0, ndim)``, in the order given (a sequence of integers)."""
    read = as_ints(op, "axes", axes, error=AxisError)
    for axis in read:
        if not -ndim <= axis < ndim:
            raise AxisError(op, f"axis {axis} is out of range for rank {ndim}")
    normalized = tuple(a % ndim for a in read)
    if len(set(normalized)) != len(normalized):
        raise AxisError(op, f"axes {read} contain duplicates for rank {ndim}")
    return normalized


def check_permutation(perm: Sequence[int], ndim: int, op: str) -> tuple[int, ...]:
    """``perm`` validated as a permutation of ``range(ndim)``."""
    normalized = as_ints(op, "permutation", perm, error=AxisError)
    if sorted(normalized) != list(range(ndim)):
        raise AxisError(op, f"{normalized} is not a permutation of the {ndim} axes")
    return normalized


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast") -> tuple[int, ...]:
    """numpy's broadcast shape (right-aligned; extents equal or 1)."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for position in range(ndim):
        extent = 1
        for shape in shapes:
            offset = position - (ndim - len(shape))
            if offset < 0:
                continue
            value = shape[offset]
            if value == 1:
                continue
            if extent not in (1, value):
                raise ShapeError(op, f"shapes {' and '.join(map(str, shapes))} cannot be broadcast")
            extent = value
        result.append(extent)
    return tuple(result)


class HasMeta:
    """``shape``, ``dtype``, ``ndim`` and ``size`` of anything carrying a :class:`Meta`
    (every tensor kind, and values inside AD rules)."""

    __slots__ = ()
    meta: Meta

    @property
    def shape(self) -> tuple[int, ...]:
        return self.meta.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.meta.dtype

    @property
    def ndim(self) -> int:
        return len(self.meta.shape)

    @property
    def size(self) -> int:
        return self.meta.size
