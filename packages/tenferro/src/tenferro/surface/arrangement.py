"""numpy-style functions that arrange existing values: diagonal matrices, rolling,
tiling and repeating, numpy's stacking conventions (``hstack``, ``vstack``, ...),
minimum ranks, coordinate grids, broadcasting several arrays, finite differences.

Each is composed of structural primitives (reshape, broadcast, slice, concatenate,
pad, gather, embed_diag), so it serves every tensor kind and every transform and
needs no derivative rule of its own. numpy's semantics and argument names throughout
(the stacking functions read one array given for their sequence as the sequence of its
rows, as numpy and JAX do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.flags import check_flag
from tenferro.core.kinds import owned
from tenferro.core.params import as_int, as_int_or_ints, is_listed
from tenferro.errors import AxisError, ParameterError, ShapeError
from tenferro.meta import MAX_ELEMENTS, broadcast_shapes, check_size, normalize_axis
from tenferro.surface.convert import as_shape, asarray, broadcast_to, prepare
from tenferro.surface.indexing import take
from tenferro.surface.math import subtract
from tenferro.surface.shapes import (
    diagonal,
    flip,
    join_rows,
    permute_dims,
    ravel,
    reshape,
    rows_of,
)
from tenferro.surface.signatures import preserving, stacking

__all__ = [
    "append",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_arrays",
    "column_stack",
    "diag",
    "diagflat",
    "diff",
    "dstack",
    "fliplr",
    "flipud",
    "hstack",
    "meshgrid",
    "repeat",
    "roll",
    "rot90",
    "tile",
    "vstack",
]


# ---------------------------------------------------------------------- diagonals


@preserving
def diag(v: Any, k: int = 0) -> Any:
    """A 1-D ``v`` on diagonal ``k`` of a square matrix of zeros; of a 2-D ``v``, its
    diagonal ``k`` (numpy's ``diag``)."""
    a = asarray(v)
    offset = as_int("diag", "k", k)
    if a.meta.ndim == 2:
        return diagonal(a, offset)
    if a.meta.ndim != 1:
        raise ShapeError("diag", f"needs a 1-D or 2-D input, got shape {a.meta.shape}")
    return _on_diagonal("diag", a, offset)


@preserving
def diagflat(v: Any, k: int = 0) -> Any:
    """The flattened ``v`` on diagonal ``k`` of a square matrix of zeros."""
    return _on_diagonal("diagflat", ravel(asarray(v)), as_int("diagflat", "k", k))


def _on_diagonal(op: str, a: Any, offset: int) -> Any:
    """The 1-D ``a`` on diagonal ``offset`` of a square matrix of zeros."""
    shift = abs(offset)
    extent = a.meta.shape[0] + shift
    check_size(op, (extent, extent), "the result shape")
    square = lax.embed_diag(a, 0, 1)
    rows = (shift, 0) if offset < 0 else (0, shift)
    columns = (0, shift) if offset < 0 else (shift, 0)
    return lax.pad(square, [rows[0], columns[0]], [rows[1], columns[1]], [0, 0])


# ---------------------------------------------------------------------- rolling, tiling, repeating


@preserving
def roll(x: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Any:
    """Elements shifted by ``shift`` along ``axis``, those pushed past the end coming back
    at the start (numpy's ``roll``); ``axis=None`` rolls the flattened array and
    restores the shape. ``shift`` and ``axis`` may be sequences (broadcast together:
    an empty one rolls nothing)."""
    a = asarray(x)
    shifts = as_int_or_ints("roll", "shift", shift, ParameterError)
    if axis is None:
        flat = roll(ravel(a), sum(shifts), 0)
        return reshape(flat, a.meta.shape)
    axes = [
        normalize_axis(n, a.meta.ndim, "roll")
        for n in as_int_or_ints("roll", "axis", axis, AxisError)
    ]
    if len(shifts) == 1:  # numpy broadcasts the two (an empty one: nothing to roll)
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    elif len(shifts) != len(axes):
        raise ShapeError(
            "roll", f"shift {shift!r} and axis {axis!r} have lengths that do not broadcast"
        )
    net = dict.fromkeys(range(a.meta.ndim), 0)
    for s, n in zip(shifts, axes, strict=True):
        net[n] += s
    for n, s in net.items():
        extent = a.meta.shape[n]
        if extent == 0 or s % extent == 0:
            continue
        split = extent - s % extent
        starts, limits = [0] * a.meta.ndim, list(a.meta.shape)
        limits[n] = split
        head = lax.slice(a, starts, limits)
        starts[n], limits[n] = split, extent
        tail = lax.slice(a, starts, limits)
        a = lax.concatenate([tail, head], n)
    return owned(a)


@preserving
def tile(x: Any, reps: int | Sequence[int]) -> Any:
    """``x`` repeated ``reps[i]`` times along each axis (numpy's ``tile``: the shorter of
    ``x.shape`` and ``reps`` is padded with leading ones)."""
    a = asarray(x)
    counts = list(as_int_or_ints("tile", "reps", reps, ParameterError))
    if any(r < 0 for r in counts):
        raise ParameterError("tile", f"reps must be non-negative, got {reps!r}")
    ndim = max(a.meta.ndim, len(counts))
    shape = (1,) * (ndim - a.meta.ndim) + a.meta.shape
    counts = [1] * (ndim - len(counts)) + counts
    target = as_shape([n for pair in zip(counts, shape, strict=True) for n in pair], "tile")
    spread = lax.broadcast_in_dim(lax.reshape(a, shape), target, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(spread, [r * n for r, n in zip(counts, shape, strict=True)])


@preserving
def repeat(x: Any, repeats: Any, axis: int | None = None) -> Any:
    """Each element repeated ``repeats`` times along ``axis`` (numpy's ``repeat``;
    ``axis=None`` works on the flattened array, and so does an axis of a 0-d value).
    ``repeats`` is one count or one count per element; counts are data, so they must be
    concrete (not traced)."""
    a = asarray(x)
    if axis is None or a.meta.ndim == 0:  # along an axis, a 0-d value is 1-d (numpy, JAX)
        a = ravel(a)
    position = 0 if axis is None else normalize_axis(axis, a.meta.ndim, "repeat")
    counts = _repeat_counts(repeats)
    extent = a.meta.shape[position]
    if counts.ndim == 0 or counts.size == 1:
        count = int(counts.reshape(()))
        shape = list(a.meta.shape)
        target = [*shape[: position + 1], count, *shape[position + 1 :]]
        dims = [n if n <= position else n + 1 for n in range(a.meta.ndim)]
        spread = lax.broadcast_in_dim(a, as_shape(target, "repeat"), dims)
        shape[position] *= count
        return lax.reshape(spread, shape)
    if counts.shape != (extent,):
        raise ShapeError(
            "repeat",
            f"repeats has {counts.size} counts for an axis of extent {extent}",
        )
    return take(a, np.repeat(np.arange(extent), counts), axis=position)


def _repeat_counts(repeats: Any) -> np.ndarray[Any, Any]:
    listed = as_int_or_ints("repeat", "repeats", repeats, ParameterError)
    if any(n < 0 for n in listed):
        raise ParameterError("repeat", f"repeats must be non-negative, got {repeats!r}")
    if any(n > MAX_ELEMENTS for n in listed):
        raise ShapeError("repeat", f"repeats {repeats!r} are too large for any array")
    return np.array(listed if is_listed(repeats) else listed[0], dtype=np.int64)


# ---------------------------------------------------------------------- flips and rotations


@preserving
def flipud(m: Any) -> Any:
    """The rows in reverse order (axis 0; numpy's ``flipud``, rank >= 1)."""
    a = asarray(m, op="flipud")
    if a.meta.ndim < 1:
        raise ShapeError("flipud", f"needs rank >= 1, got shape {a.meta.shape}")
    return flip(a, 0)


@preserving
def fliplr(m: Any) -> Any:
    """The columns in reverse order (axis 1; numpy's ``fliplr``, rank >= 2)."""
    a = asarray(m, op="fliplr")
    if a.meta.ndim < 2:
        raise ShapeError("fliplr", f"needs rank >= 2, got shape {a.meta.shape}")
    return flip(a, 1)


@preserving
def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Any:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, from the first
    axis toward the second (numpy's ``rot90``; negative ``k`` rotates back)."""
    a = asarray(m, op="rot90")
    turns = as_int("rot90", "k", k) % 4
    pair = as_int_or_ints("rot90", "axes", axes, AxisError)
    if len(pair) != 2:
        raise AxisError("rot90", f"axes must name two axes, got {axes!r}")
    first, second = (normalize_axis(n, a.meta.ndim, "rot90") for n in pair)
    if first == second:
        raise AxisError("rot90", f"axes must be different, got {axes!r}")
    if turns == 0:
        return a
    if turns == 2:
        return flip(flip(a, first), second)
    order = list(range(a.meta.ndim))
    order[first], order[second] = order[second], order[first]
    if turns == 1:
        return permute_dims(flip(a, second), order)
    return flip(permute_dims(a, order), second)


# ---------------------------------------------------------------------- ranks and stacking


def _at_least_shape(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """numpy's ``atleast_{rank}d`` of a shape: ``(N,)`` is a row ``(1, N)``, and for
    rank 3 ``(N,)`` becomes ``(1, N, 1)`` and ``(M, N)`` becomes ``(M, N, 1)``."""
    if len(shape) >= rank:
        return shape
    if rank == 3 and len(shape) == 2:
        return (*shape, 1)
    if rank == 3 and len(shape) == 1:
        return (1, *shape, 1)
    return (1,) * (rank - len(shape)) + shape


def _column_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``column_stack``'s operand shape: 0-d and 1-d values as columns."""
    return (*_at_least_shape(shape, 1), 1) if len(shape) < 2 else shape


def _reshaped(a: Any, shape: tuple[int, ...]) -> Any:
    return a if a.meta.shape == shape else lax.reshape(a, shape)


def _at_least(op: str, arrays: tuple[Any, ...], rank: int) -> tuple[Any, ...]:
    result = []
    for value in arrays:
        a = asarray(value, op=op)
        result.append(owned(_reshaped(a, _at_least_shape(a.meta.shape, rank))))
    return tuple(result)


def atleast_1d(*arys: Any) -> Any:
    """Each input with at least one axis (a 0-d value becomes shape ``(1,)``); one input
    gives one tensor, several a tuple (numpy's ``atleast_1d``)."""
    result = _at_least("atleast_1d", arys, 1)
    return result[0] if len(result) == 1 else result


def atleast_2d(*arys: Any) -> Any:
    """Each input with at least two axes (``(N,)`` becomes ``(1, N)``)."""
    result = _at_least("atleast_2d", arys, 2)
    return result[0] if len(result) == 1 else result


def atleast_3d(*arys: Any) -> Any:
    """Each input with at least three axes (``(N,)`` becomes ``(1, N, 1)``, ``(M, N)``
    becomes ``(M, N, 1)``)."""
    result = _at_least("atleast_3d", arys, 3)
    return result[0] if len(result) == 1 else result


def _stack(
    op: str,
    tup: Any,
    shape_of: Callable[[tuple[int, ...]], tuple[int, ...]],
    axis_of: Callable[[int], int],
) -> Any:
    """The operands of ``tup``, each reshaped by ``shape_of``, joined along ``axis_of``
    of their rank. One array or tensor is the sequence of its rows (numpy, JAX)."""
    rows = rows_of(op, tup)
    if rows is not None:
        row = shape_of(rows.meta.shape[1:])
        return join_rows(rows, row, axis_of(len(row)))
    operands = [asarray(value, op=op) for value in tup]
    operands = [_reshaped(a, shape_of(a.meta.shape)) for a in operands]
    return _join(op, operands, axis_of(operands[0].meta.ndim))


def _join(op: str, operands: Sequence[Any], axis: int) -> Any:
    """The operands (dtypes promoted) joined along ``axis``; other extents must agree."""
    joined = prepare(op, operands, broadcast=False)
    ranks = {a.meta.ndim for a in joined}
    others = {tuple(n for i, n in enumerate(a.meta.shape) if i != axis) for a in joined}
    if len(ranks) != 1 or len(others) != 1:
        shapes = [a.meta.shape for a in joined]
        raise ShapeError(op, f"shapes {shapes} differ away from the joining axis {axis}")
    return lax.concatenate(joined, axis)


@stacking
def hstack(tup: Sequence[Any]) -> Any:
    """Join along the second axis (the first for 1-D inputs)."""
    return _stack("hstack", tup, lambda s: _at_least_shape(s, 1), lambda r: 0 if r == 1 else 1)


@stacking
def vstack(tup: Sequence[Any]) -> Any:
    """Join along the first axis, 1-D inputs as rows."""
    return _stack("vstack", tup, lambda s: _at_least_shape(s, 2), lambda r: 0)


@stacking
def dstack(tup: Sequence[Any]) -> Any:
    """Join along the third axis (inputs made at least 3-D)."""
    return _stack("dstack", tup, lambda s: _at_least_shape(s, 3), lambda r: 2)


@stacking
def column_stack(tup: Sequence[Any]) -> Any:
    """0-D and 1-D inputs as columns, the others as they are, joined along the second
    axis."""
    return _stack("column_stack", tup, _column_shape, lambda r: 1)


def broadcast_arrays(*args: Any) -> tuple[Any, ...]:
    """The inputs broadcast to their common shape (numpy's ``broadcast_arrays``; none
    give an empty tuple)."""
    if not args:
        return ()
    operands = lift([asarray(a, op="broadcast_arrays") for a in args])
    shape = broadcast_shapes(*(o.meta.shape for o in operands), op="broadcast_arrays")
    return tuple(broadcast_to(o, shape) for o in operands)


def meshgrid(
    *xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy"
) -> tuple[Any, ...]:
    """Coordinate arrays from coordinate vectors (numpy's ``meshgrid``; each input is
    flattened). ``indexing="xy"`` (Cartesian, the default) swaps the first two output
    axes, ``"ij"`` keeps matrix order; ``sparse=True`` leaves each output broadcastable
    (extent 1 except along its own axis); no inputs give an empty tuple. ``copy`` is
    accepted: tensors are immutable."""
    check_flag("meshgrid", "copy", copy)
    is_sparse = check_flag("meshgrid", "sparse", sparse)
    if indexing not in ("xy", "ij"):
        raise ParameterError("meshgrid", f"indexing must be 'xy' or 'ij', got {indexing!r}")
    if not xi:
        return ()
    vectors = [ravel(a) for a in lift([asarray(x, op="meshgrid") for x in xi])]
    ndim = len(vectors)
    positions = list(range(ndim))
    if indexing == "xy" and ndim > 1:
        positions[0], positions[1] = 1, 0
    full = [1] * ndim
    for vector, position in zip(vectors, positions, strict=True):
        full[position] = vector.meta.shape[0]
    grids = []
    for vector, position in zip(vectors, positions, strict=True):
        shape = [1] * ndim
        shape[position] = vector.meta.shape[0]
        grid = lax.reshape(vector, shape)
        grids.append(grid if is_sparse else broadcast_to(grid, tuple(full)))
    return tuple(grids)


# ---------------------------------------------------------------------- differences


@preserving
def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th forward difference along ``axis`` (numpy's ``diff``): ``out[i] =
    a[i + 1] - a[i]``, applied ``n`` times; booleans give ``a[i + 1] != a[i]``.
    ``prepend``/``append`` (scalars or arrays) are joined to ``a`` along ``axis`` first;
    a Python number there is weak, as everywhere in tenferro (``diff(float32_array,
    prepend=0.5)`` stays float32, as in JAX; numpy makes the number a float64 array)."""
    x = asarray(a)
    order = as_int("diff", "n", n)
    if order < 0:
        raise ParameterError("diff", f"order must be non-negative, got n={n!r}")
    if order == 0:
        return owned(x)
    if x.meta.ndim == 0:
        raise ShapeError("diff", "needs an input with at least one axis, got a 0-d value")
    position = normalize_axis(axis, x.meta.ndim, "diff")
    if prepend is not None or append is not None:
        parts = [x]
        if prepend is not None:
            parts.insert(0, _edge("prepend", prepend, x, position))
        if append is not None:
            parts.append(_edge("append", append, x, position))
        x = _join("diff", parts, position)
    for _ in range(order):
        extent = x.meta.shape[position]
        if extent == 0:
            break
        starts, limits = [0] * x.meta.ndim, list(x.meta.shape)
        limits[position] = extent - 1
        before = lax.slice(x, starts, limits)
        starts[position], limits[position] = 1, extent
        after = lax.slice(x, starts, limits)
        if x.meta.dtype.kind == "b":
            x = lax.compare(after, before, "ne")
        else:
            x = subtract(after, before)
    return x


def _edge(name: str, value: Any, x: Any, axis: int) -> Any:
    """``prepend``/``append``: a 0-d value is broadcast to one slice along ``axis``."""
    edge = asarray(value, op="diff")
    if edge.meta.ndim == 0:
        shape = list(x.meta.shape)
        shape[axis] = 1
        return broadcast_to(edge, tuple(shape))
    expected = [n for i, n in enumerate(x.meta.shape) if i != axis]
    if [n for i, n in enumerate(edge.meta.shape) if i != axis] != expected or (
        edge.meta.ndim != x.meta.ndim
    ):
        raise ShapeError(
            "diff",
            f"{name} has shape {edge.meta.shape}, which does not fit the input's "
            f"{x.meta.shape} along axes other than {axis} (or give a scalar)",
        )
    return edge


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """``values`` joined after ``arr`` (numpy's ``append``): both flattened when ``axis``
    is None, else joined along ``axis`` (same rank, other extents equal)."""
    a, b = asarray(arr, op="append"), asarray(values, op="append")
    if axis is None:
        return _join("append", [ravel(a), ravel(b)], 0)
    if a.meta.ndim != b.meta.ndim:
        raise ShapeError(
            "append",
            f"arr and values must have one rank to join along an axis, got shapes "
            f"{a.meta.shape} and {b.meta.shape}",
        )
    return _join("append", [a, b], normalize_axis(axis, a.meta.ndim, "append"))
