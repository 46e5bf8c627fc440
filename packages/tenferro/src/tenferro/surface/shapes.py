"""numpy-style shape manipulation: reshape, transpose, axes, joining, diagonals, padding."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.params import as_data, as_int, as_int_or_ints, torch_alias
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import ArgumentTypeError, AxisError, ShapeError
from tenferro.meta import normalize_axes, normalize_axis
from tenferro.surface.convert import as_shape, asarray, broadcast_to, is_tensor, prepare
from tenferro.surface.dispatch import dispatch_cached
from tenferro.surface.signatures import joining, preserving, unary

__all__ = [
    "broadcast_to",
    "cat",
    "concatenate",
    "diagonal",
    "dynamic_truncate",
    "expand_dims",
    "flip",
    "moveaxis",
    "pad_to_match",
    "permute_dims",
    "ravel",
    "reshape",
    "rollaxis",
    "squeeze",
    "stack",
    "swapaxes",
    "trace",
    "transpose",
    "tril",
    "triu",
]


def _listed(axis: Any, op: str) -> tuple[int, ...]:
    """One axis or a sequence of them, as a tuple of ints (ranges are the caller's)."""
    return as_int_or_ints(op, "axis", axis, AxisError)


@preserving
@dispatch_cached()
def reshape(x: Any, shape: int | Sequence[int]) -> Any:
    """Same elements in a new shape (row-major); one extent may be -1."""
    a = asarray(x, op="reshape")
    target = list(as_shape(shape, "reshape", allow_unknown=True))
    unknown = [i for i, n in enumerate(target) if n == -1]
    if unknown:
        known = math.prod(n for n in target if n != -1)
        if known == 0 or a.meta.size % known:
            raise ShapeError("reshape", f"cannot reshape {a.meta.shape} into {tuple(target)}")
        target[unknown[0]] = a.meta.size // known
    return lax.reshape(a, target)


@preserving
@dispatch_cached()
def transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """Permute axes (reverse them when ``axes`` is None)."""
    a = asarray(x)
    if axes is None:
        axes = tuple(reversed(range(a.meta.ndim)))
    perm = normalize_axes(axes, a.meta.ndim, "transpose")
    if len(perm) != a.meta.ndim:
        raise AxisError("transpose", f"axes {tuple(axes)} do not list all {a.meta.ndim} axes")
    return lax.transpose(a, perm)


permute_dims = transpose


@preserving
@dispatch_cached()
def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    a = asarray(x)
    first = normalize_axis(axis1, a.meta.ndim, "swapaxes")
    second = normalize_axis(axis2, a.meta.ndim, "swapaxes")
    perm = list(range(a.meta.ndim))
    perm[first], perm[second] = perm[second], perm[first]
    return lax.transpose(a, perm)


@preserving
@dispatch_cached()
def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    a = asarray(x)
    ndim = a.meta.ndim
    sources = normalize_axes(_listed(source, "moveaxis"), ndim, "moveaxis")
    targets = normalize_axes(_listed(destination, "moveaxis"), ndim, "moveaxis")
    if len(sources) != len(targets):
        raise AxisError("moveaxis", "source and destination must have the same number of axes")
    order = [n for n in range(ndim) if n not in sources]
    for target, axis in sorted(zip(targets, sources, strict=True)):
        order.insert(target, axis)
    return lax.transpose(a, order)


@preserving
def rollaxis(x: Any, axis: int, start: int = 0) -> Any:
    """numpy's ``rollaxis``: axis ``axis`` moved to stand before position ``start`` (the
    others keep their order); ``moveaxis`` says the same more plainly."""
    a = asarray(x)
    ndim = a.meta.ndim
    source = normalize_axis(as_int("rollaxis", "axis", axis, AxisError), ndim, "rollaxis")
    target = as_int("rollaxis", "start", start, AxisError)
    if target < 0:
        target += ndim
    if not 0 <= target <= ndim:
        raise AxisError("rollaxis", f"start {start} is out of range for {ndim} axes")
    if source < target:
        target -= 1
    return a if source == target else moveaxis(a, source, target)


@preserving
@dispatch_cached()
def expand_dims(x: Any, axis: int | Sequence[int] = 0, *, dim: int | None = None) -> Any:
    """``x`` with extent-1 axes inserted at ``axis`` (positions in the result; 0 by
    default, as the Array API's; ``dim`` is PyTorch's name, as in ``unsqueeze``)."""
    axis = torch_alias("expand_dims", "axis", axis, 0, "dim", dim)
    a = asarray(x, op="expand_dims")
    axes = _listed(axis, "expand_dims")
    ndim = a.meta.ndim + len(axes)
    as_shape((1,) * ndim, "expand_dims")
    positions = set(normalize_axes(axes, ndim, "expand_dims"))
    extents = iter(a.meta.shape)
    return lax.reshape(a, [1 if i in positions else next(extents) for i in range(ndim)])


@preserving
@dispatch_cached()
def squeeze(x: Any, axis: int | Sequence[int] | None = None, *, dim: Any = None) -> Any:
    """``x`` without the extent-1 axes ``axis`` (all of them when None; ``dim`` is
    PyTorch's name)."""
    axis = torch_alias("squeeze", "axis", axis, None, "dim", dim)
    a = asarray(x)
    shape = a.meta.shape
    if axis is None:
        axes = {i for i, n in enumerate(shape) if n == 1}
    else:
        axes = set(normalize_axes(_listed(axis, "squeeze"), len(shape), "squeeze"))
        for i in axes:
            if shape[i] != 1:
                raise ShapeError("squeeze", f"axis {i} of {shape} has extent {shape[i]}, not 1")
    return lax.reshape(a, [n for i, n in enumerate(shape) if i not in axes])


@unary
@dispatch_cached()
def ravel(x: Any) -> Any:
    a = asarray(x)
    return lax.reshape(a, (a.meta.size,))


def rows_of(op: str, arrays: Any) -> Any | None:
    """The argument of a function of a sequence of arrays (``concatenate``, ``stack``,
    ``hstack`` ...) when it is one array or tensor, which numpy and JAX read as the
    sequence of its rows; ``None`` for a list or tuple. Anything else, an array
    without rows (0-d, or an extent 0 first) or an empty sequence raises a tenferro
    error naming ``op``."""
    if isinstance(arrays, (list, tuple)):
        if not arrays:
            raise ShapeError(op, "needs at least one array, got an empty sequence")
        return None
    if not (is_tensor(arrays) or isinstance(arrays, np.ndarray)):
        raise ArgumentTypeError(
            op, f"needs a sequence of arrays (a list, a tuple or an array), got {arrays!r}"
        )
    a = asarray(arrays, op=op)
    if a.meta.ndim == 0 or a.meta.shape[0] == 0:
        raise ShapeError(
            op, f"needs at least one array, got an array of shape {a.meta.shape} (no rows)"
        )
    return a


def join_rows(a: Any, row: tuple[int, ...], axis: int, *, new_axis: bool = False) -> Any:
    """The rows of ``a`` (``a[0], a[1], ...``), each reshaped to ``row``, joined along
    their ``axis`` (``new_axis``: stacked along a new ``axis``): one reshape and one
    transpose, however many rows."""
    count = a.meta.shape[0]
    order = list(range(1, len(row) + 1))
    order.insert(axis, 0)
    stacked = lax.transpose(lax.reshape(a, (count, *row)), order)
    if new_axis:
        return stacked
    shape = list(row)
    shape[axis] *= count
    return lax.reshape(stacked, shape)


@joining
def concatenate(arrays: Sequence[Any], axis: int = 0, *, dim: int | None = None) -> Any:
    """Join along ``axis`` (dtypes promoted; other extents must match). One array is
    the sequence of its rows. ``dim`` is PyTorch's name for ``axis``."""
    axis = torch_alias("concatenate", "axis", axis, 0, "dim", dim)
    a = rows_of("concatenate", arrays)
    if a is not None:
        row = a.meta.shape[1:]
        if not row:
            raise AxisError("concatenate", "zero-dimensional arrays cannot be concatenated")
        return join_rows(a, row, normalize_axis(axis, len(row), "concatenate"))
    operands = prepare("concatenate", arrays, broadcast=False)
    first = operands[0]
    if first.meta.ndim == 0:
        raise AxisError("concatenate", "zero-dimensional arrays cannot be concatenated")
    return lax.concatenate(operands, normalize_axis(axis, first.meta.ndim, "concatenate"))


@joining
def stack(arrays: Sequence[Any], axis: int = 0, *, dim: int | None = None) -> Any:
    """Join along a new ``axis`` (shapes must be equal). One array is the sequence of
    its rows. ``dim`` is PyTorch's name for ``axis``."""
    axis = torch_alias("stack", "axis", axis, 0, "dim", dim)
    a = rows_of("stack", arrays)
    if a is not None:
        row = a.meta.shape[1:]
        return join_rows(a, row, normalize_axis(axis, len(row) + 1, "stack"), new_axis=True)
    operands = prepare("stack", arrays, broadcast=False)
    shapes = {o.meta.shape for o in operands}
    if len(shapes) != 1:
        raise ShapeError("stack", f"all arrays need one shape, got {sorted(shapes)}")
    position = normalize_axis(axis, operands[0].meta.ndim + 1, "stack")
    return lax.concatenate([expand_dims(o, position) for o in operands], position)


@joining
def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """PyTorch's ``torch.cat``: ``concatenate(tensors, axis=dim)``."""
    return concatenate(tensors, dim)


@preserving
def flip(x: Any, axis: int | Sequence[int] | None = None, *, dims: Any = None) -> Any:
    """The order of the elements reversed along ``axis`` (every axis when None;
    ``dims`` is PyTorch's name for it)."""
    axis = torch_alias("flip", "axis", axis, None, "dims", dims)
    a = asarray(x)
    axes = range(a.meta.ndim) if axis is None else _listed(axis, "flip")
    return lax.rev(a, normalize_axes(axes, a.meta.ndim, "flip"))


@preserving
def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """numpy's diagonal: the diagonal becomes the last axis."""
    return _diagonal("diagonal", x, offset, axis1, axis2)


def _diagonal(op: str, x: Any, offset: Any, axis1: Any, axis2: Any) -> Any:
    a = asarray(x)
    ndim = a.meta.ndim
    shift = as_int(op, "offset", offset)
    first = normalize_axis(axis1, ndim, op)
    second = normalize_axis(axis2, ndim, op)
    if first == second:
        raise AxisError(op, f"axis1 and axis2 are both {first}")
    starts, limits = [0] * ndim, list(a.meta.shape)
    if shift >= 0:
        starts[second] = min(shift, limits[second])
    else:
        starts[first] = min(-shift, limits[first])
    a = lax.slice(a, starts, limits, [1] * ndim)
    diag = (
        lax.extract_diag(a, first, second) if first < second else lax.extract_diag(a, second, first)
    )
    position = min(first, second)
    return moveaxis(diag, position, -1)


@preserving
def trace(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    """Sum of the diagonal; bool and integers sum as int64 (numpy's, and the Array API's
    default integer) unless ``dtype`` says otherwise."""
    diag = _diagonal("trace", x, offset, axis1, axis2)
    if dtype is not None:
        diag = lax.convert_element_type(diag, as_dtype(dtype, "trace"))
    elif diag.meta.dtype.kind in "bi":
        diag = lax.convert_element_type(diag, np.dtype(np.int64))
    return lax.reduce_sum(diag, (diag.meta.ndim - 1,))


@preserving
def tril(x: Any, k: int = 0) -> Any:
    """Lower triangle of the last two axes (numpy offsets)."""
    return lax.tril(asarray(x), k)


@preserving
def triu(x: Any, k: int = 0) -> Any:
    """Upper triangle of the last two axes (numpy offsets)."""
    return lax.triu(asarray(x), k)


def _pad_widths(pad_width: Any, ndim: int) -> list[list[int]]:
    """numpy.pad's reading of ``pad_width`` (see :mod:`tenferro.surface.padding`):
    integers (never bools or floats) broadcast to ``(ndim, 2)``, without negative
    widths."""
    try:
        widths = np.array(_width_entries(pad_width, ndim, 0), dtype=np.int64)
        pairs = np.broadcast_to(widths, (ndim, 2))
    except (ValueError, OverflowError):  # ragged nesting, a shape that does not broadcast
        raise ShapeError("pad", f"pad_width {pad_width!r} does not fit rank {ndim}") from None
    if (pairs < 0).any():
        raise ShapeError("pad", f"pad_width {pad_width!r} holds negative widths")
    return cast(list[list[int]], pairs.tolist())


def _width_entries(value: Any, ndim: int, depth: int) -> Any:
    """``value`` as nested lists of Python ints (at most two levels, as ``(ndim, 2)``)."""
    value = as_data("pad", "pad_width", value, ShapeError)
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim):
        if depth == 2:
            raise ValueError("nested too deeply")  # pad reports it as a ShapeError
        if isinstance(value, np.ndarray) and value.dtype.kind not in "iu":
            raise ShapeError("pad", f"pad_width must hold integers, got {value!r}")
        return [_width_entries(v, ndim, depth + 1) for v in value]
    return as_int("pad", "pad_width", value, ShapeError)


@preserving
def dynamic_truncate(x: Any, size: Any, axis: int) -> Any:
    """The first ``round(size)`` entries along ``axis`` (clamped); the extent is data-dependent."""
    a, s = lift([asarray(x), asarray(size)])
    return lax.dynamic_truncate(a, s, normalize_axis(axis, a.meta.ndim, "dynamic_truncate"))


@preserving
def pad_to_match(x: Any, reference: Any, axis: int) -> Any:
    """Zero-pad the end of ``axis`` up to ``reference``'s extent there."""
    a, ref = lift([asarray(x), asarray(reference)])
    return lax.pad_to_match(a, ref, normalize_axis(axis, a.meta.ndim, "pad_to_match"))
