"""numpy indexing: ``x[...]`` and ``take``.

Basic indexing (integers, slices with any step, ``None``, ``...``) lowers to
``slice``, ``rev`` and ``reshape``; integer-array indexing to ``gather`` with
numpy's placement of the broadcast index dimensions. Boolean masks have
data-dependent shapes, so only concrete tensors accept them. Integer indices are
bounds-checked when their values are known; traced index tensors are clamped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.errors import AxisError, DTypeError, IndexingError, ShapeError
from tenferro.meta import broadcast_shapes, normalize_axis
from tenferro.surface.convert import _concrete_class, asarray, broadcast_to, is_tensor

__all__ = ["getitem", "take"]

_SLICE = slice  # the builtin, before any shadowing


def _is_concrete(value: Any) -> bool:
    """Holds its data now (Tensor and EagerTensor), as opposed to traced values."""
    return isinstance(value, _concrete_class())


def _expand(index: Any, ndim: int) -> list[Any]:
    """The index as a list with ``...`` expanded to slices."""
    items = list(index) if isinstance(index, tuple) else [index]
    ellipses = [i for i, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexingError("getitem", "an index can only have a single ellipsis ('...')")
    used = sum(
        1 for item in items if item is not None and item is not Ellipsis and not _is_bool_mask(item)
    )
    used += sum(_mask_ndim(item) for item in items if _is_bool_mask(item))
    if used > ndim:
        raise IndexingError("getitem", f"too many indices for a tensor of rank {ndim}: {index!r}")
    fill = [_SLICE(None)] * (ndim - used)
    if ellipses:
        position = ellipses[0]
        items[position : position + 1] = fill
    else:
        items.extend(fill)
    return items


def _is_bool_mask(item: Any) -> bool:
    if isinstance(item, (bool, np.bool_)):
        return False
    dtype = getattr(item, "dtype", None)
    if dtype is None and isinstance(item, (list, tuple)):
        dtype = np.asarray(item).dtype
    return dtype is not None and np.dtype(dtype) == np.bool_


def _mask_ndim(item: Any) -> int:
    return int(getattr(item, "ndim", np.ndim(item)))


def _is_advanced(item: Any) -> bool:
    if isinstance(item, (list, np.ndarray)):
        return True
    return is_tensor(item)


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` with numpy semantics."""
    a = asarray(x)
    items = _expand(index, a.meta.ndim)
    items = _masks_to_indices(a, items)
    advanced = [i for i, item in enumerate(items) if _is_advanced(item)]
    if advanced:
        return _advanced(a, items, advanced)
    return _basic(a, items)


def _masks_to_indices(a: Any, items: list[Any]) -> list[Any]:
    """Boolean masks become integer index arrays (their nonzero positions)."""
    out: list[Any] = []
    for item in items:
        if not _is_bool_mask(item):
            out.append(item)
            continue
        if is_tensor(item) and not _is_concrete(item):
            raise ShapeError(
                "getitem",
                "a boolean mask of a traced tensor has a data-dependent shape; use tf.where, or "
                "the eager surface",
            )
        out.extend(np.nonzero(np.asarray(item)))
    return out


def _basic(a: Any, items: list[Any]) -> Any:
    """Integers, slices and ``None`` only."""
    starts, limits, strides, reversed_axes = [], [], [], []
    shape: list[int] = []
    axis = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        extent = a.meta.shape[axis]
        if isinstance(item, _SLICE):
            start, stop, step = item.indices(extent)
            count = len(range(start, stop, step))
            if step < 0:
                reversed_axes.append(axis)
                start, step = extent - 1 - start, -step
            starts.append(start)
            limits.append(start + (count - 1) * step + 1 if count else start)
            strides.append(step)
            shape.append(count)
        else:
            position = _integer(item, extent, axis)
            starts.append(position)
            limits.append(position + 1)
            strides.append(1)
        axis += 1
    if reversed_axes:
        a = lax.rev(a, reversed_axes)
    sliced = lax.slice(a, starts, limits, strides)
    return lax.reshape(sliced, shape)


def _integer(item: Any, extent: int, axis: int) -> int:
    try:
        value = int(item.__index__())
    except (AttributeError, TypeError):
        raise IndexingError(
            "getitem",
            f"only integers, slices, ..., None and integer or boolean arrays are valid "
            f"indices, got {item!r}",
        ) from None
    if not -extent <= value < extent:
        raise IndexingError(
            "getitem", f"index {value} is out of bounds for axis {axis} with size {extent}"
        )
    return value % extent


def _advanced(a: Any, items: list[Any], advanced: list[int]) -> Any:
    """Integer-array indexing (with slices, integers and ``None`` around it)."""
    # Integers count as advanced indices when arrays are present (numpy broadcasts them).
    positions = [i for i, item in enumerate(items) if _is_advanced(item) or _is_int(item)]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    # 1. Apply the slices first, keeping indexed axes whole; remember where None goes.
    plain: list[Any] = []
    new_axes: list[int] = []
    for i, item in enumerate(items):
        if item is None:
            new_axes.append(i)
            continue
        plain.append(_SLICE(None) if i in positions else item)
    base = _basic(a, plain)
    # Axes of ``base``: one per non-None item.
    axis_of = {}
    counter = 0
    for i, item in enumerate(items):
        if item is None:
            continue
        axis_of[i] = counter
        counter += 1
    index_axes = [axis_of[i] for i in positions]
    index_arrays = lift(
        [base]
        + [
            _index_tensor(items[i], base.meta.shape[axis_of[i]], axis_of[i], base)
            for i in positions
        ]
    )
    base, indices = index_arrays[0], index_arrays[1:]
    batch_shape = broadcast_shapes(*(ix.meta.shape for ix in indices), op="getitem")
    stacked = (
        lax.concatenate(
            [lax.reshape(broadcast_to(ix, batch_shape), (*batch_shape, 1)) for ix in indices],
            len(batch_shape),
        )
        if indices
        else None
    )
    window = [d for d in range(base.meta.ndim) if d not in index_axes]
    batch_rank = len(batch_shape)
    if adjacent:
        first = min(index_axes)
        before = [d for d in window if d < first]
        offset_dims = tuple(range(len(before))) + tuple(
            range(len(before) + batch_rank, batch_rank + len(window))
        )
    else:
        offset_dims = tuple(range(batch_rank, batch_rank + len(window)))
    slice_sizes = tuple(1 if d in index_axes else base.meta.shape[d] for d in range(base.meta.ndim))
    gathered = lax.gather(
        base,
        stacked,
        offset_dims=offset_dims,
        collapsed_slice_dims=tuple(sorted(index_axes)),
        start_index_map=tuple(index_axes),
        index_vector_dim=batch_rank,
        slice_sizes=slice_sizes,
    )
    if new_axes:
        shape = list(gathered.meta.shape)
        for position in new_axes:
            shape.insert(min(position, len(shape)), 1)
        gathered = lax.reshape(gathered, shape)
    return gathered


def _is_int(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _index_tensor(item: Any, extent: int, axis: int, like: Any) -> Any:
    """An int64 index tensor with negative entries wrapped (bounds-checked if concrete)."""
    if is_tensor(item) and not _is_concrete(item):
        index = item
        if index.meta.dtype.kind != "i":
            raise DTypeError("getitem", f"index tensors must be integers, got {index.meta.dtype}")
        index = lax.convert_element_type(index, np.int64)
        wrapped = lax.add(index, lax.full_like(index, extent))
        return lax.select(lax.compare(index, lax.zeros_like(index), "lt"), wrapped, index)
    values = np.asarray(item)
    if values.dtype.kind not in "iu":
        if values.size == 0:
            values = values.astype(np.int64)
        else:
            raise IndexingError(
                "getitem", f"arrays used as indices must be integers, got {values.dtype}"
            )
    if values.size and (values.min() < -extent or values.max() >= extent):
        bad = values[(values < -extent) | (values >= extent)].flat[0]
        raise IndexingError(
            "getitem", f"index {bad} is out of bounds for axis {axis} with size {extent}"
        )
    return asarray(np.where(values < 0, values + extent, values).astype(np.int64))


def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    """numpy ``take``: entries along ``axis`` (the flattened tensor when None)."""
    a = asarray(x)
    if axis is None:
        a = lax.reshape(a, (a.meta.size,))
        axis = 0
    if a.meta.ndim == 0:
        raise AxisError("take", "cannot take from a 0-d tensor along an axis")
    axis = normalize_axis(axis, a.meta.ndim, "take")
    index: list[Any] = [_SLICE(None)] * a.meta.ndim
    index[axis] = indices if not _is_int(indices) else np.asarray(indices)
    return getitem(a, tuple(index))
