"""numpy indexing: ``x[...]`` and ``take``.

Basic indexing (integers, slices with any step, ``None``, ``...``) lowers to
``slice``, ``rev`` and ``reshape``. Advanced indexing (integer arrays, boolean
masks, Python/numpy ``bool`` scalars) lowers to one ``gather`` on the basic-indexed
tensor, with numpy's placement of the broadcast index dimensions: where the first
advanced index stood when all advanced indices are adjacent in the index, first
otherwise (``None`` and ``...`` separate them, and integers count as advanced once an
array is present). A scalar ``bool`` is a 0-d mask: a new axis of length 1 (``True``)
or 0 (``False``). Boolean masks have data-dependent shapes, so only concrete masks are
accepted, and their shape must equal the axes they index. Integer indices are
bounds-checked when their values are known; traced index tensors are clamped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.kinds import concrete_class
from tenferro.errors import AxisError, DTypeError, IndexingError, ShapeError
from tenferro.meta import broadcast_shapes, normalize_axis
from tenferro.surface.convert import asarray, broadcast_to, is_tensor
from tenferro.surface.dispatch import dispatch_cached
from tenferro.surface.signatures import preserving

__all__ = ["getitem", "take"]

_SLICE = slice  # the builtin, before any shadowing


def _is_concrete(value: Any) -> bool:
    """Holds its data now (Tensor and EagerTensor), as opposed to traced values."""
    return isinstance(value, concrete_class())


@dataclass(frozen=True)
class _Item:
    """One entry of an index expression, classified.

    ``kind`` is one of ``new`` (None), ``ellipsis``, ``slice``, ``int``, ``array``
    (integer array), ``mask`` (boolean array of rank >= 1) or ``bool0`` (a scalar or
    0-d boolean)."""

    kind: str
    value: Any

    @property
    def consumed(self) -> int:
        """How many axes of the indexed tensor this entry indexes."""
        if self.kind in ("slice", "int", "array"):
            return 1
        if self.kind == "mask":
            return int(np.ndim(self.value)) if not is_tensor(self.value) else self.value.meta.ndim
        return 0


def _dtype_of(item: Any) -> np.dtype[Any] | None:
    if is_tensor(item):
        dtype: np.dtype[Any] = np.dtype(item.meta.dtype)
        return dtype
    if isinstance(item, np.ndarray):
        array_dtype: np.dtype[Any] = item.dtype
        return array_dtype
    if isinstance(item, list):
        return np.asarray(item).dtype
    return None


def _classify(item: Any) -> _Item:
    if item is None:
        return _Item("new", None)
    if item is Ellipsis:
        return _Item("ellipsis", None)
    if isinstance(item, _SLICE):
        _check_slice(item)
        return _Item("slice", item)
    if isinstance(item, (bool, np.bool_)):
        return _Item("bool0", bool(item))
    dtype = _dtype_of(item)
    if dtype is not None:
        ndim = item.meta.ndim if is_tensor(item) else np.ndim(item)
        if dtype == np.bool_:
            if ndim == 0:
                if is_tensor(item) and not _is_concrete(item):
                    raise ShapeError("getitem", _DATA_DEPENDENT)
                return _Item("bool0", bool(np.asarray(item)))
            return _Item("mask", item)
        return _Item("array", item)
    if hasattr(item, "__index__"):
        return _Item("int", item)
    raise IndexingError(
        "getitem",
        f"only integers, slices, ..., None and integer or boolean arrays are valid indices, "
        f"got {item!r}",
    )


def _check_slice(item: slice) -> None:
    """numpy's rules for a slice's bounds: integers (``__index__``) or None, a nonzero step."""
    for part in ("start", "stop", "step"):
        bound = getattr(item, part)
        if bound is not None and not hasattr(bound, "__index__"):
            raise IndexingError(
                "getitem",
                f"slice {part}s must be integers or None, got {bound!r} in {item!r}",
            )
    if item.step is not None and item.step.__index__() == 0:
        raise IndexingError("getitem", f"a slice step cannot be zero: {item!r}")


_DATA_DEPENDENT = (
    "a boolean mask of a traced tensor has a data-dependent shape; use tf.where, or the "
    "eager surface"
)


@preserving
@dispatch_cached()
def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` with numpy semantics (see the module docstring)."""
    a = asarray(x)
    items = [_classify(item) for item in (index if isinstance(index, tuple) else (index,))]
    if sum(1 for item in items if item.kind == "ellipsis") > 1:
        raise IndexingError("getitem", "an index can only have a single ellipsis ('...')")
    ndim = a.meta.ndim
    used = sum(item.consumed for item in items)
    if used > ndim:
        raise IndexingError("getitem", f"too many indices for a tensor of rank {ndim}: {index!r}")
    has_arrays = any(item.kind in ("array", "mask", "bool0") for item in items)
    fill = [_Item("slice", _SLICE(None))] * (ndim - used)
    expanded: list[_Item] = []
    for item in items:
        expanded.extend(fill if item.kind == "ellipsis" else [item])
    if not any(item.kind == "ellipsis" for item in items):
        expanded.extend(fill)
    if not has_arrays:
        return _basic(a, [item.value for item in expanded])
    advanced = [i for i, item in enumerate(items) if item.kind in ("array", "mask", "bool0", "int")]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    return _advanced(a, expanded, adjacent)


def _basic(a: Any, items: list[Any]) -> Any:
    """Integers, slices and ``None`` only, one entry per axis (``None`` aside)."""
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


def _advanced(a: Any, items: list[_Item], adjacent: bool) -> Any:
    """Advanced indexing: basic-index every other entry (``None`` and scalar bools become
    length-1 axes), then gather the advanced axes of that base in one go."""
    plain: list[Any] = []
    indexed: list[tuple[int, Any]] = []  # (base axis, index values or tensor)
    axis = 0  # axis of ``a``
    for item in items:
        base_axis = len(plain)
        if item.kind in ("new", "slice"):
            plain.append(item.value)
            axis += item.kind == "slice"
        elif item.kind == "bool0":
            plain.append(None)
            indexed.append((base_axis, np.zeros(1 if item.value else 0, dtype=np.int64)))
        elif item.kind == "mask":
            mask = _concrete_mask(item.value, a.meta.shape, axis)
            for offset, positions in enumerate(np.nonzero(mask)):
                plain.append(_SLICE(None))
                indexed.append((base_axis + offset, (positions, axis + offset)))
            axis += mask.ndim
        else:
            plain.append(_SLICE(None))
            indexed.append((base_axis, (item.value, axis)))
            axis += 1
    base = _basic(a, plain)
    index_axes = [base_axis for base_axis, _ in indexed]
    # numpy checks bounds only when the broadcast index selects anything.
    shapes = [_shape_of(entry) for _, entry in indexed]
    try:
        selects = math.prod(broadcast_shapes(*shapes, op="getitem")) > 0
    except ShapeError:
        raise IndexingError(
            "getitem",
            f"shape mismatch: indexing arrays could not be broadcast together with shapes "
            f"{' '.join(str(shape) for shape in shapes)}",
        ) from None
    tensors = []
    for base_axis, entry in indexed:
        if isinstance(entry, tuple):
            value, source_axis = entry
            extent = base.meta.shape[base_axis]
            tensors.append(_index_tensor(value, extent, source_axis, check=selects))
        else:
            tensors.append(asarray(entry))
    empty = [d in index_axes and base.meta.shape[d] == 0 for d in range(base.meta.ndim)]
    if any(empty):
        # Only empty index arrays fit an empty axis (checked above); a zero row gives
        # gather a slice to take, which it never does: the batch is empty too.
        base = lax.pad(base, [0] * len(empty), [int(e) for e in empty], [0] * len(empty))
    base, *indices = lift([base, *tensors])
    batch_shape = broadcast_shapes(*(ix.meta.shape for ix in indices), op="getitem")
    batch_rank = len(batch_shape)
    stacked = lax.concatenate(
        [lax.reshape(broadcast_to(ix, batch_shape), (*batch_shape, 1)) for ix in indices],
        batch_rank,
    )
    window = [d for d in range(base.meta.ndim) if d not in index_axes]
    before = len([d for d in window if d < index_axes[0]]) if adjacent else 0
    offset_dims = tuple(range(before)) + tuple(range(before + batch_rank, batch_rank + len(window)))
    slice_sizes = tuple(1 if d in index_axes else base.meta.shape[d] for d in range(base.meta.ndim))
    return lax.gather(
        base,
        stacked,
        offset_dims=offset_dims,
        collapsed_slice_dims=tuple(sorted(index_axes)),
        start_index_map=tuple(index_axes),
        index_vector_dim=batch_rank,
        slice_sizes=slice_sizes,
    )


def _concrete_mask(mask: Any, shape: tuple[int, ...], axis: int) -> Any:
    """The mask's values, checked against the axes it indexes (as numpy and JAX check)."""
    if is_tensor(mask) and not _is_concrete(mask):
        raise ShapeError("getitem", _DATA_DEPENDENT)
    values = np.asarray(mask)
    for offset, length in enumerate(values.shape):
        extent = shape[axis + offset]
        if length != extent:
            raise IndexingError(
                "getitem",
                f"boolean index did not match indexed tensor along axis {axis + offset}; size "
                f"of axis is {extent} but size of corresponding boolean axis is {length}",
            )
    return values


def _shape_of(entry: Any) -> tuple[int, ...]:
    """The shape of an index entry: ``(values, axis)`` or an index array."""
    value = entry[0] if isinstance(entry, tuple) else entry
    return tuple(value.meta.shape) if is_tensor(value) else np.shape(value)


def _is_int(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _index_tensor(item: Any, extent: int, axis: int, check: bool = True) -> Any:
    """An int64 index tensor with negative entries wrapped (bounds-checked if concrete, arrays
    only if ``check``: unchecked values are never read, so they become zeros)."""
    if is_tensor(item) and not _is_concrete(item):
        index = item
        if index.meta.dtype.kind != "i":
            raise DTypeError("getitem", f"index tensors must be integers, got {index.meta.dtype}")
        index = lax.convert_element_type(index, np.int64)
        wrapped = lax.add(index, lax.full_like(index, extent))
        return lax.select(lax.compare(index, lax.zeros_like(index), "lt"), wrapped, index)
    if _is_int(item) or (not isinstance(item, (list, np.ndarray)) and not is_tensor(item)):
        item = _integer(item, extent, axis)
    values = np.asarray(item)
    if values.dtype.kind not in "iu":
        if values.size == 0:
            values = values.astype(np.int64)
        else:
            raise IndexingError(
                "getitem", f"arrays used as indices must be integers, got {values.dtype}"
            )
    if not check and values.ndim:  # numpy checks integers (and 0-d arrays) always
        return asarray(np.zeros(values.shape, dtype=np.int64))
    if values.size and (values.min() < -extent or values.max() >= extent):
        bad = values[(values < -extent) | (values >= extent)].flat[0]
        raise IndexingError(
            "getitem", f"index {bad} is out of bounds for axis {axis} with size {extent}"
        )
    return asarray(np.where(values < 0, values + extent, values).astype(np.int64))


@preserving
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
    index[axis] = _integer_indices(indices)
    return getitem(a, tuple(index))


def _integer_indices(indices: Any) -> Any:
    """``take``'s indices as integers: numpy casts booleans to 0/1 (never a mask)."""
    if is_tensor(indices):
        if indices.meta.dtype.kind == "b":
            return lax.convert_element_type(indices, np.dtype(np.int64))
        return indices
    if _is_int(indices) or isinstance(indices, (bool, np.bool_)):
        return np.asarray(indices, dtype=np.int64)
    if isinstance(indices, np.ndarray) or (
        isinstance(indices, (list, tuple)) and _plain_bools(indices)
    ):
        array = np.asarray(indices)
        if array.dtype.kind == "b":
            return array.astype(np.int64)
    return indices


def _plain_bools(items: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a (nested) list holds only Python or numpy booleans."""
    stack: list[Any] = [items]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif not isinstance(item, (bool, np.bool_)):
            return False
    return True
