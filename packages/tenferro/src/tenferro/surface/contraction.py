"""numpy-style products lowered to ``dot_general``: matmul, dot, vdot, inner, outer,
vecdot, tensordot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tenferro import lax
from tenferro.core.params import as_int, as_int_or_ints
from tenferro.errors import AxisError, ShapeError
from tenferro.meta import broadcast_shapes, normalize_axis
from tenferro.surface.convert import broadcast_to, prepare
from tenferro.surface.dispatch import dispatch_cached
from tenferro.surface.shapes import moveaxis, ravel, reshape
from tenferro.surface.signatures import binary, binary_preserving

__all__ = ["dot", "inner", "matmul", "outer", "tensordot", "vdot", "vecdot"]

NUMERIC = "ifc"


@binary
@dispatch_cached(operands=2)
def matmul(x: Any, y: Any) -> Any:
    """numpy ``matmul``: batch axes broadcast; 1-D operands are promoted and squeezed."""
    a, b = prepare("matmul", (x, y), kinds=NUMERIC, broadcast=False)
    if a.meta.ndim == 0 or b.meta.ndim == 0:
        raise ShapeError("matmul", "operands must be at least 1-D (use multiply for scalars)")
    squeeze_first, squeeze_last = a.meta.ndim == 1, b.meta.ndim == 1
    if squeeze_first:
        a = reshape(a, (1, a.meta.shape[0]))
    if squeeze_last:
        b = reshape(b, (b.meta.shape[0], 1))
    if a.meta.shape[-1] != b.meta.shape[-2]:
        raise ShapeError("matmul", f"inner dimensions differ: {a.meta.shape} @ {b.meta.shape}")
    batch = broadcast_shapes(a.meta.shape[:-2], b.meta.shape[:-2], op="matmul")
    a = broadcast_to(a, batch + a.meta.shape[-2:])
    b = broadcast_to(b, batch + b.meta.shape[-2:])
    n = len(batch)
    out = lax.dot_general(a, b, (n + 1,), (n,), tuple(range(n)), tuple(range(n)))
    shape = list(out.meta.shape)
    if squeeze_last:
        del shape[-1]
    if squeeze_first:
        del shape[-2 if not squeeze_last else -1]
    return reshape(out, shape) if len(shape) != out.meta.ndim else out


def _axis_pair(axes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """tensordot's ``(x_axes, y_axes)``, each an int or a sequence of ints."""
    if len(axes) != 2:
        raise AxisError(
            "tensordot",
            f"axes must be an int or a pair (x_axes, y_axes) of ints or int sequences, got "
            f"{axes!r}",
        )
    return (
        as_int_or_ints("tensordot", "axes", axes[0], AxisError),
        as_int_or_ints("tensordot", "axes", axes[1], AxisError),
    )


@binary_preserving
@dispatch_cached(operands=2)
def tensordot(x: Any, y: Any, axes: int | Sequence[Any] = 2) -> Any:
    """numpy ``tensordot``: contract the last ``axes`` of ``x`` with the first of ``y``,
    or the listed axis pairs; the result has ``x``'s free axes then ``y``'s."""
    a, b = prepare("tensordot", (x, y), kinds=NUMERIC, broadcast=False)
    if not isinstance(axes, (list, tuple)):
        count = as_int("tensordot", "axes", axes, AxisError)
        if not 0 <= count <= min(a.meta.ndim, b.meta.ndim):
            raise AxisError(
                "tensordot", f"cannot contract {count} axes of {a.meta.shape} and {b.meta.shape}"
            )
        left = tuple(range(a.meta.ndim - count, a.meta.ndim))
        right = tuple(range(count))
    else:
        first, second = _axis_pair(axes)
        if len(first) != len(second):
            raise AxisError("tensordot", f"axes {axes} pair unequal numbers of axes")
        left = tuple(normalize_axis(i, a.meta.ndim, "tensordot") for i in first)
        right = tuple(normalize_axis(i, b.meta.ndim, "tensordot") for i in second)
    for i, j in zip(left, right, strict=True):
        if a.meta.shape[i] != b.meta.shape[j]:
            raise ShapeError(
                "tensordot",
                f"axis {i} of {a.meta.shape} and axis {j} of {b.meta.shape} differ in extent",
            )
    return lax.dot_general(a, b, left, right)


@binary
@dispatch_cached(operands=2)
def dot(x: Any, y: Any) -> Any:
    """numpy ``dot``: sum over the last axis of ``x`` and the second-to-last of ``y``."""
    a, b = prepare("dot", (x, y), kinds=NUMERIC, broadcast=False)
    if a.meta.ndim == 0 or b.meta.ndim == 0:
        return lax.mul(*prepare("dot", (a, b), kinds=NUMERIC))
    return tensordot(a, b, ((a.meta.ndim - 1,), (max(b.meta.ndim - 2, 0),)))


@binary
def inner(x: Any, y: Any) -> Any:
    """numpy ``inner``: sum over the last axes (no conjugation)."""
    a, b = prepare("inner", (x, y), kinds=NUMERIC, broadcast=False)
    if a.meta.ndim == 0 or b.meta.ndim == 0:
        return lax.mul(*prepare("inner", (a, b), kinds=NUMERIC))
    return tensordot(a, b, ((a.meta.ndim - 1,), (b.meta.ndim - 1,)))


@binary
def outer(x: Any, y: Any) -> Any:
    """numpy ``outer`` of the flattened operands."""
    a, b = prepare("outer", (x, y), kinds=NUMERIC, broadcast=False)
    return lax.dot_general(ravel(a), ravel(b), (), ())


@binary
def vdot(x: Any, y: Any) -> Any:
    """numpy ``vdot``: ``sum(conj(x) * y)`` over the flattened operands."""
    a, b = prepare("vdot", (x, y), kinds=NUMERIC, broadcast=False)
    return lax.dot_general(lax.conj(ravel(a)), ravel(b), (0,), (0,))


@binary_preserving
def vecdot(x: Any, y: Any, axis: int = -1) -> Any:
    """numpy 2 ``vecdot``: ``sum(conj(x) * y, axis)`` with broadcasting of the other axes
    (the vectors must have one length: that axis does not broadcast)."""
    first, second = prepare("vecdot", (x, y), kinds=NUMERIC, broadcast=False)
    rank = max(first.meta.ndim, second.meta.ndim)
    if min(first.meta.ndim, second.meta.ndim) == 0:
        raise ShapeError("vecdot", "operands must be at least 1-D")
    position = normalize_axis(axis, rank, "vecdot") - rank
    lengths = [v.meta.shape[position] if v.meta.ndim >= -position else 1 for v in (first, second)]
    if lengths[0] != lengths[1]:
        raise ShapeError(
            "vecdot",
            f"the vectors along axis {axis} have lengths {lengths[0]} and {lengths[1]} "
            f"(shapes {first.meta.shape} and {second.meta.shape}); they must be equal",
        )
    a, b = prepare("vecdot", (first, second), kinds=NUMERIC)
    ndim = a.meta.ndim
    if ndim == 0:
        raise ShapeError("vecdot", "operands must be at least 1-D")
    axis = normalize_axis(axis, ndim, "vecdot")
    a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    batch = tuple(range(ndim - 1))
    return lax.dot_general(lax.conj(a), b, (ndim - 1,), (ndim - 1,), batch, batch)
