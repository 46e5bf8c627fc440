"""Indexing primitives with StableHLO / ``jax.lax`` semantics.

slice (static, strided), pad (zero padding; negative edges crop; interior
padding), concatenate, dynamic_slice and dynamic_update_slice (start indices in a
rank-1 integer tensor, clamped so the window fits), gather (start indices clamped
so the slice fits) and scatter-add (windows out of bounds are dropped).

Index operands are never differentiated; derivatives are promised for in-bounds
indices only.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.checks import check_static
from tenferro.core.primitive import TensorPrimitive, extent_pattern, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.errors import AxisError, DTypeError, ShapeError
from tenferro.meta import Meta, normalize_axis
from tenferro.ops.batching import batch_size, counted_indices, loop, move_axis, rebind, to_front

__all__ = [
    "Concatenate",
    "DynamicSlice",
    "DynamicUpdateSlice",
    "Gather",
    "Pad",
    "Scatter",
    "Slice",
]

_slice = builtins.slice  # this module defines lax.slice


def _check_integer_indices(op: str, meta: Meta, what: str = "indices") -> None:
    if meta.dtype.kind != "i":
        raise DTypeError(op, f"{what} must be integers, got {meta.dtype}")


# ---------------------------------------------------------------------- slice and pad


@primitive
class Slice(TensorPrimitive):
    """``x[start:limit:stride]`` on every axis (static, positive strides)."""

    moves_data = True
    name = "slice"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        starts, limits = (0, *self.starts), (x.meta.shape[0], *self.limits)
        return rebind(self, [x], starts=starts, limits=limits, strides=(1, *self.strides)), [0]

    linear = True
    extent_generic = True  # limits follow from the output extents (canonical ones only)
    extent_params = ("limits",)
    reads_extent_coincidences = False  # (see tenferro.eager.extents)
    extent_offsets = ("starts",)
    starts: tuple[int, ...]
    limits: tuple[int, ...]
    strides: tuple[int, ...]

    def extent_facts(self) -> Any:
        if self.limits != _canonical_limits(self.starts, self.strides, self.outputs[0].shape):
            return None
        return extent_pattern((*self.inputs, *self.outputs))

    @classmethod
    def remake(
        cls, inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> Slice:
        starts, strides = params["starts"], params["strides"]
        limits = _canonical_limits(starts, strides, outputs[0].shape)
        return cls.make(inputs, starts=starts, limits=limits, strides=strides)

    def extent_kernel(self, shape: tuple[int, ...]) -> Any:
        limits = _canonical_limits(self.starts, self.strides, shape)
        index = tuple(
            _slice(s, e, t) for s, e, t in zip(self.starts, limits, self.strides, strict=True)
        )
        return lambda x: x[index]

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(
            (self.starts[a], self.limits[a], self.strides[a]) != (0, x.shape[a], 1)
            for a in x.dynamic
            if a < len(self.starts) and a < len(self.limits) and a < len(self.strides)
        ):
            check_static(self.name, x)  # a data-dependent axis is taken whole, or not at all
        if not len(self.starts) == len(self.limits) == len(self.strides) == x.ndim:
            raise AxisError(
                self.name,
                f"starts {self.starts}, limits {self.limits} and strides {self.strides} need one "
                f"entry per axis of {x.shape}",
            )
        shape = []
        for axis, (start, limit, stride, extent) in enumerate(
            zip(self.starts, self.limits, self.strides, x.shape, strict=True)
        ):
            if not 0 <= start <= limit <= extent or stride < 1:
                raise ShapeError(
                    self.name,
                    f"axis {axis}: need 0 <= start {start} <= limit {limit} <= extent {extent} "
                    f"and stride {stride} >= 1",
                )
            shape.append(-(-(limit - start) // stride))
        return (Meta(tuple(shape), x.dtype, x.weak, x.dynamic),)

    def impl(self, x: Any) -> Any:
        index = self._prepared
        if index is None:
            index = tuple(
                _slice(s, e, t)
                for s, e, t in zip(self.starts, self.limits, self.strides, strict=True)
            )
            object.__setattr__(self, "_prepared", index)
        return x[index]  # values are arrays or numpy scalars: both index like arrays

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.slice(x, self.starts, self.limits, self.strides)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (x,) = self.inputs
        (out,) = self.outputs
        high = []
        for start, stride, extent, count in zip(
            self.starts, self.strides, x.shape, out.shape, strict=True
        ):
            covered = (count - 1) * stride + 1 if count else 0
            high.append(extent - start - covered)
        interior = [
            max(stride - 1, 0) if count else 0
            for stride, count in zip(self.strides, out.shape, strict=True)
        ]
        return [lax.pad(present(cts[0]), self.starts, high, interior)]


def _canonical_limits(
    starts: tuple[int, ...], strides: tuple[int, ...], counts: tuple[int, ...]
) -> tuple[int, ...]:
    """The smallest limits taking ``counts`` elements from ``starts`` by ``strides``."""
    return tuple(
        start + ((count - 1) * stride + 1 if count else 0)
        for start, stride, count in zip(starts, strides, counts, strict=True)
    )


@primitive
class Pad(TensorPrimitive):
    """Zero padding: ``low`` and ``high`` per axis (negative crops), ``interior`` zeros
    between neighbouring elements."""

    name = "pad"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        config = {k: (0, *getattr(self, k)) for k in ("low", "high", "interior")}
        return rebind(self, [x], **config), [0]

    linear = True
    extent_generic = True  # ``high`` follows from the output extents
    extent_params = ("high",)
    reads_extent_coincidences = False  # (see tenferro.eager.extents)
    extent_offsets = ("low",)
    low: tuple[int, ...]
    high: tuple[int, ...]
    interior: tuple[int, ...]

    def extent_facts(self) -> Any:
        """No class with interior padding: the transpose's intermediate extent
        ``(n - 1) * (interior + 1) + 1`` is neither an operand's nor an output's, so a
        class mapping extents by value could take it for another axis's."""
        if any(self.interior):
            return None
        return super().extent_facts()

    @classmethod
    def remake(
        cls, inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> Pad:
        low, interior = params["low"], params["interior"]
        high = _pad_high(low, interior, inputs[0].shape, outputs[0].shape)
        return cls.make(inputs, low=low, high=high, interior=interior)

    def extent_kernel(self, shape: tuple[int, ...]) -> Any:
        """``impl`` for the output extents ``shape``, the operand's read from the array.
        Without interior padding or cropping (a truncation's transpose) the output is
        ``shape`` itself and the operand goes at ``low``: :func:`_pad_plan`'s grown
        shape and placement, found without its loops."""
        low, interior = self.low, self.interior

        def run(x: Any) -> Any:
            x = np.asarray(x)
            high = _pad_high(low, interior, x.shape, shape)
            grown, placed, crop = _pad_plan(low, high, interior, x.shape)
            out = np.zeros(grown, dtype=x.dtype)
            out[placed] = x
            return out if crop is None else out[crop]

        if any(interior) or min(low, default=0) < 0:
            return run
        ends_of = functools.partial(map, operator.add, low)

        def place(x: Any) -> Any:
            x = np.asarray(x)
            ends = tuple(ends_of(x.shape))
            if not all(map(operator.le, ends, shape)):  # the high edge crops
                return run(x)
            out = np.zeros(shape, dtype=x.dtype)
            out[tuple(map(_slice, low, ends))] = x
            return out

        return place

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(
            (self.low[a], self.high[a], self.interior[a]) != (0, 0, 0)
            for a in x.dynamic
            if a < min(len(self.low), len(self.high), len(self.interior))
        ):
            check_static(self.name, x)  # a data-dependent axis is never padded
        if not len(self.low) == len(self.high) == len(self.interior) == x.ndim:
            raise AxisError(self.name, f"padding needs one entry per axis of {x.shape}")
        shape = []
        for axis, (lo, hi, inner, extent) in enumerate(
            zip(self.low, self.high, self.interior, x.shape, strict=True)
        ):
            if inner < 0:
                raise ShapeError(self.name, f"axis {axis}: interior padding {inner} is negative")
            size = lo + hi + ((extent - 1) * (inner + 1) + 1 if extent else 0)
            if size < 0:
                raise ShapeError(
                    self.name, f"axis {axis}: padding crops more than the extent {extent}"
                )
            shape.append(size)
        return (Meta(tuple(shape), x.dtype, x.weak, x.dynamic),)

    def impl(self, x: Any) -> Any:
        x = np.asarray(x)
        plan = self._prepared
        if self.inputs[0].dynamic:  # planned for the run-time extents
            plan = _pad_plan(self.low, self.high, self.interior, x.shape)
        elif plan is None:
            plan = self._plan()
            object.__setattr__(self, "_prepared", plan)
        grown, placed, crop = plan
        out = np.zeros(grown, dtype=x.dtype)
        out[placed] = x
        return out if crop is None else out[crop]

    def lower(self, lo: Any, x: Any) -> Any:
        zero = lo.full((), 0, self.inputs[0].dtype)
        return lo.lax.pad(x, zero, tuple(zip(self.low, self.high, self.interior, strict=True)))

    def _plan(self) -> tuple[tuple[int, ...], tuple[slice, ...], tuple[slice, ...] | None]:
        """(the grown shape, where the operand goes in it, the crop of negative padding or
        ``None``), from the static metas."""
        return _pad_plan(self.low, self.high, self.interior, self.inputs[0].shape)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        ct = present(*cts)
        (x,) = self.inputs
        ndim = x.ndim
        unpadded = lax.pad(ct, [-lo for lo in self.low], [-hi for hi in self.high], [0] * ndim)
        limits = [
            min(
                unpadded.shape[a],
                (x.shape[a] - 1) * (self.interior[a] + 1) + 1 if x.shape[a] else 0,
            )
            for a in range(ndim)
        ]
        return [lax.slice(unpadded, [0] * ndim, limits, [i + 1 for i in self.interior])]


def _pad_high(
    low: tuple[int, ...],
    interior: tuple[int, ...],
    extents: tuple[int, ...],
    padded: tuple[int, ...],
) -> tuple[int, ...]:
    """The high padding taking an operand of ``extents`` to ``padded``."""
    return tuple(
        size - lo - ((n - 1) * (inner + 1) + 1 if n else 0)
        for size, lo, inner, n in zip(padded, low, interior, extents, strict=True)
    )


def _pad_plan(
    low: tuple[int, ...],
    high: tuple[int, ...],
    interior: tuple[int, ...],
    extents: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[slice, ...], tuple[slice, ...] | None]:
    """:meth:`Pad._plan` for an operand of ``extents``."""
    grown = []
    placed = []
    for lo, hi, inner, extent in zip(low, high, interior, extents, strict=True):
        spread = (extent - 1) * (inner + 1) + 1 if extent else 0
        before = max(lo, 0)
        grown.append(before + spread + max(hi, 0))
        placed.append(_slice(before, before + spread, inner + 1))
    crop = tuple(
        _slice(max(-lo, 0), size - max(-hi, 0))
        for lo, hi, size in zip(low, high, grown, strict=True)
    )
    cropped = any(lo < 0 for lo in low) or any(hi < 0 for hi in high)
    return tuple(grown), tuple(placed), crop if cropped else None


@primitive
class Concatenate(TensorPrimitive):
    """Join operands along ``axis`` (other extents equal)."""

    name = "concatenate"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        size = batch_size(xs, dims)
        fronted = [to_front(x, d, size) for x, d in zip(xs, dims, strict=True)]
        return rebind(self, fronted, axis=self.axis + 1), [0]

    linear = True
    extent_generic = True  # as an instruction: its operands' metas give its output

    def extent_facts(self) -> Any:
        return None  # as a node, no class: its transpose slices at extent-derived offsets

    axis: int

    def infer(self) -> tuple[Meta]:
        if not self.inputs:
            raise ShapeError(self.name, "needs at least one operand")
        first = self.inputs[0]
        for meta in self.inputs:
            # Data-dependent axes are allowed away from the axis joined, alike in all.
            if self.axis in meta.dynamic or meta.dynamic != first.dynamic:
                check_static(self.name, meta)
        axis = normalize_axis(self.axis, first.ndim, self.name) if first.ndim else -1
        if first.ndim == 0 or axis != self.axis:
            raise AxisError(
                self.name, f"axis {self.axis} invalid for operands of rank {first.ndim}"
            )
        total = 0
        for meta in self.inputs:
            if meta.dtype != first.dtype:
                raise DTypeError(
                    self.name, f"operands must have one dtype, got {meta.dtype} and {first.dtype}"
                )
            if meta.ndim != first.ndim or any(
                a != b
                for i, (a, b) in enumerate(zip(meta.shape, first.shape, strict=True))
                if i != axis
            ):
                raise ShapeError(
                    self.name,
                    f"shapes {first.shape} and {meta.shape} differ away from axis {axis}",
                )
            total += meta.shape[axis]
        shape = list(first.shape)
        shape[axis] = total
        weak = all(m.weak for m in self.inputs)
        return (Meta(tuple(shape), first.dtype, weak, first.dynamic),)

    def impl(self, *operands: Any) -> Any:
        if self.inputs[0].dynamic:  # data-dependent extents must agree at run time
            shapes = [np.shape(x) for x in operands]
            if any(
                s[: self.axis] + s[self.axis + 1 :]
                != shapes[0][: self.axis] + shapes[0][self.axis + 1 :]
                for s in shapes
            ):
                raise ShapeError(
                    self.name,
                    f"operands of run-time shapes {shapes} differ away from axis {self.axis} "
                    f"(their data-dependent extents disagree)",
                    phase="execution",
                )
        return np.concatenate(operands, axis=self.axis)

    def lower(self, lo: Any, *operands: Any) -> Any:
        return lo.lax.concatenate(operands, self.axis)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        ct = present(*cts)
        (out,) = self.outputs
        results: list[RuleValue | None] = []
        offset = 0
        for meta, is_active in zip(self.inputs, active, strict=True):
            extent = meta.shape[self.axis]
            if is_active:
                starts = [0] * out.ndim
                limits = list(out.shape)
                starts[self.axis], limits[self.axis] = offset, offset + extent
                results.append(lax.slice(ct, starts, limits, [1] * out.ndim))
            else:
                results.append(None)
            offset += extent
        return results


# ---------------------------------------------------------------------- dynamic slices


def _prepend_zero(starts: Any) -> Any:
    """Start indices with a leading 0 (for a new leading batch axis)."""
    zero = lax.zeros(starts.meta._replace(shape=(1,), weak=False), starts)
    return lax.concatenate([zero, starts], 0)


def _clamped_starts(starts: Any, extents: Sequence[int], sizes: Sequence[int]) -> list[int]:
    values = np.asarray(starts).reshape(-1)
    return [int(min(max(int(s), 0), e - n)) for s, e, n in zip(values, extents, sizes, strict=True)]


@primitive
class DynamicSlice(TensorPrimitive):
    """A ``sizes`` window at ``starts`` (a rank-1 integer tensor), clamped to fit."""

    name = "dynamic_slice"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        if dims[1] is not None:
            # A window per example: the equivalent gather (it clamps starts the same way).
            rank = len(self.sizes)
            gather = Gather.make(
                self.inputs,
                offset_dims=tuple(range(rank)),
                collapsed_slice_dims=(),
                start_index_map=tuple(range(rank)),
                index_vector_dim=0,
                slice_sizes=self.sizes,
            )
            return gather.batch(xs, dims)
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x, _prepend_zero(xs[1])], sizes=(x.meta.shape[0], *self.sizes)), [0]

    sizes: tuple[int, ...]

    def infer(self) -> tuple[Meta]:
        x, starts = self.inputs
        check_static(self.name, x)
        _check_integer_indices(self.name, starts, "start indices")
        if starts.shape != (x.ndim,):
            raise ShapeError(
                self.name, f"start indices must have shape ({x.ndim},), got {starts.shape}"
            )
        if len(self.sizes) != x.ndim or any(
            not 0 <= n <= e for n, e in zip(self.sizes, x.shape, strict=True)
        ):
            raise ShapeError(self.name, f"slice sizes {self.sizes} do not fit in {x.shape}")
        return (Meta(self.sizes, x.dtype, x.weak),)

    def impl(self, x: Any, starts: Any) -> Any:
        x = np.asarray(x)
        begin = _clamped_starts(starts, x.shape, self.sizes)
        return x[tuple(_slice(b, b + n) for b, n in zip(begin, self.sizes, strict=True))]

    def lower(self, lo: Any, x: Any, starts: Any) -> Any:
        return lo.lax.dynamic_slice(x, _start_list(lo, starts), self.sizes)  # clamps to fit

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.dynamic_slice(present(ts[0]), xs[1], self.sizes)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        zeros = lax.zeros(self.inputs[0], like=present(cts[0]))
        return [lax.dynamic_update_slice(zeros, present(cts[0]), xs[1]), None]


@primitive
class DynamicUpdateSlice(TensorPrimitive):
    """A copy of ``operand`` with ``update`` written at ``starts`` (clamped to fit)."""

    name = "dynamic_update_slice"
    batch_loop = "batched start indices write a different window per example"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        if dims[2] is not None:
            return loop(self, xs, dims)
        size = batch_size(xs, dims)
        x, update = (to_front(v, d, size) for v, d in zip(xs[:2], dims[:2], strict=True))
        return rebind(self, [x, update, _prepend_zero(xs[2])]), [0]

    def infer(self) -> tuple[Meta]:
        x, update, starts = self.inputs
        check_static(self.name, x)
        check_static(self.name, update, "update")
        _check_integer_indices(self.name, starts, "start indices")
        if update.dtype != x.dtype:
            raise DTypeError(self.name, f"update dtype {update.dtype} differs from {x.dtype}")
        if starts.shape != (x.ndim,) or update.ndim != x.ndim:
            raise ShapeError(
                self.name, f"update {update.shape} and starts {starts.shape} do not fit {x.shape}"
            )
        if any(u > e for u, e in zip(update.shape, x.shape, strict=True)):
            raise ShapeError(self.name, f"update {update.shape} is larger than operand {x.shape}")
        return (x._replace(weak=x.weak and update.weak),)

    def impl(self, x: Any, update: Any, starts: Any) -> Any:
        out = np.array(x, copy=True)
        update = np.asarray(update)
        begin = _clamped_starts(starts, out.shape, update.shape)
        out[tuple(_slice(b, b + n) for b, n in zip(begin, update.shape, strict=True))] = update
        return out

    def lower(self, lo: Any, x: Any, update: Any, starts: Any) -> Any:
        return lo.lax.dynamic_update_slice(x, update, _start_list(lo, starts))  # clamps to fit

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, update, starts = xs
        dx, du = ts[0], ts[1]
        return [
            lax.dynamic_update_slice(
                dx if dx is not None else lax.zeros_like(x),
                du if du is not None else lax.zeros_like(update),
                starts,
            )
        ]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        starts = xs[2]
        update = self.inputs[1]
        return [
            lax.dynamic_update_slice(ct, lax.zeros(update, like=ct), starts) if active[0] else None,
            lax.dynamic_slice(ct, starts, update.shape) if active[1] else None,
            None,
        ]


# ---------------------------------------------------------------------- gather / scatter


def _index_vectors(indices: Any, index_vector_dim: int) -> Any:
    """Indices with the index vector as the last axis."""
    indices = np.asarray(indices)
    if index_vector_dim < indices.ndim:
        return np.moveaxis(indices, index_vector_dim, -1)
    return indices[..., None]


def _vectors_last(lo: Any, indices: Any, index_vector_dim: int) -> Any:
    """Indices with the index vector as their last axis (jax.lax's layout); the order
    of the other axes is kept."""
    if index_vector_dim < indices.ndim:
        return lo.jnp.moveaxis(indices, index_vector_dim, -1)
    return lo.lax.expand_dims(indices, (indices.ndim,))


def _start_list(lo: Any, starts: Any) -> list[Any]:
    """A rank-1 tensor of start indices as the list of scalars jax.lax takes."""
    return [lo.lax.index_in_dim(starts, i, keepdims=False) for i in range(starts.shape[0])]


def _window_index(
    starts: Any, window_dims: Sequence[int], window_shape: Sequence[int], rank: int
) -> tuple[Any, ...]:
    """One index array per operand axis, broadcastable to ``batch + window`` shape."""
    batch_ndim = starts.ndim - 1
    arrays = []
    for axis in range(rank):
        base = starts[..., axis].reshape(starts.shape[:-1] + (1,) * len(window_dims))
        if axis in window_dims:
            w = window_dims.index(axis)
            offset_shape = [1] * (batch_ndim + len(window_dims))
            offset_shape[batch_ndim + w] = window_shape[w]
            base = base + np.arange(window_shape[w]).reshape(offset_shape)
        arrays.append(base)
    return tuple(arrays)


@primitive
class Gather(TensorPrimitive):
    """StableHLO gather (``jax.lax.gather``); start indices are clamped so slices fit."""

    name = "gather"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        offsets = tuple(d + 1 for d in self.offset_dims)
        if dims[1] is not None:
            indices = move_axis(xs[1], dims[1], 0)
            if dims[0] is None:
                # One more leading batch axis of the indices: the output's first axis.
                (out,) = rebind(
                    self,
                    [xs[0], indices],
                    offset_dims=offsets,
                    index_vector_dim=self.index_vector_dim + 1,
                )
                return [out], [0]
            # Both batched: each index vector also selects its example's operand.
            operand = move_axis(xs[0], dims[0], 0)
            indices, vector_dim = counted_indices(indices, self.index_vector_dim)
            (out,) = rebind(
                self,
                [operand, indices],
                offset_dims=offsets,
                collapsed_slice_dims=(0, *(d + 1 for d in self.collapsed_slice_dims)),
                start_index_map=(0, *(d + 1 for d in self.start_index_map)),
                index_vector_dim=vector_dim,
                slice_sizes=(1, *self.slice_sizes),
            )
            return [out], [0]
        # The batch axis becomes the first window axis, placed first in the output.
        operand = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        (out,) = rebind(
            self,
            [operand, xs[1]],
            offset_dims=(0, *(d + 1 for d in self.offset_dims)),
            collapsed_slice_dims=tuple(d + 1 for d in self.collapsed_slice_dims),
            start_index_map=tuple(d + 1 for d in self.start_index_map),
            slice_sizes=(operand.meta.shape[0], *self.slice_sizes),
        )
        return [out], [0]

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    slice_sizes: tuple[int, ...]

    def infer(self) -> tuple[Meta]:
        operand, indices = self.inputs
        name = self.name
        check_static(name, operand)
        check_static(name, indices, "indices")
        _check_integer_indices(name, indices)
        if len(self.slice_sizes) != operand.ndim:
            raise ShapeError(
                name, f"slice_sizes {self.slice_sizes} need one entry per axis of {operand.shape}"
            )
        if any(not 0 <= n <= e for n, e in zip(self.slice_sizes, operand.shape, strict=True)):
            raise ShapeError(name, f"slice_sizes {self.slice_sizes} do not fit in {operand.shape}")
        if list(self.collapsed_slice_dims) != sorted(set(self.collapsed_slice_dims)) or any(
            not 0 <= d < operand.ndim or self.slice_sizes[d] != 1 for d in self.collapsed_slice_dims
        ):
            raise AxisError(name, f"collapsed_slice_dims {self.collapsed_slice_dims} invalid")
        if len(set(self.start_index_map)) != len(self.start_index_map) or any(
            not 0 <= d < operand.ndim for d in self.start_index_map
        ):
            raise AxisError(name, f"start_index_map {self.start_index_map} invalid")
        if not 0 <= self.index_vector_dim <= indices.ndim:
            raise AxisError(name, f"index_vector_dim {self.index_vector_dim} out of range")
        vector = indices.shape[self.index_vector_dim] if self.index_vector_dim < indices.ndim else 1
        if vector != len(self.start_index_map):
            raise ShapeError(
                name, f"index vectors of length {vector} for start_index_map {self.start_index_map}"
            )
        batch = [n for i, n in enumerate(indices.shape) if i != self.index_vector_dim]
        window = [n for d, n in enumerate(self.slice_sizes) if d not in self.collapsed_slice_dims]
        rank = len(batch) + len(window)
        if (
            len(self.offset_dims) != len(window)
            or list(self.offset_dims) != sorted(set(self.offset_dims))
            or any(not 0 <= d < rank for d in self.offset_dims)
        ):
            raise AxisError(name, f"offset_dims {self.offset_dims} invalid for output rank {rank}")
        shape, windows, batches = [], iter(window), iter(batch)
        for position in range(rank):
            shape.append(next(windows) if position in self.offset_dims else next(batches))
        return (Meta(tuple(shape), operand.dtype, operand.weak),)

    def impl(self, operand: Any, indices: Any) -> Any:
        operand = np.asarray(operand)
        vectors = _index_vectors(indices, self.index_vector_dim)
        starts = np.zeros((*vectors.shape[:-1], operand.ndim), dtype=np.int64)
        for k, axis in enumerate(self.start_index_map):
            starts[..., axis] = vectors[..., k]
        starts = np.clip(starts, 0, np.subtract(operand.shape, self.slice_sizes))
        window_dims = [d for d in range(operand.ndim) if d not in self.collapsed_slice_dims]
        window_shape = [self.slice_sizes[d] for d in window_dims]
        gathered = operand[_window_index(starts, window_dims, window_shape, operand.ndim)]
        gathered = np.broadcast_to(gathered, starts.shape[:-1] + tuple(window_shape))
        batch_ndim = starts.ndim - 1
        source, windows, batches = (
            [],
            iter(range(batch_ndim, gathered.ndim)),
            iter(range(batch_ndim)),
        )
        for position in range(gathered.ndim):
            source.append(next(windows) if position in self.offset_dims else next(batches))
        return np.transpose(gathered, source)

    def lower(self, lo: Any, operand: Any, indices: Any) -> Any:
        numbers = lo.lax.GatherDimensionNumbers(
            offset_dims=self.offset_dims,
            collapsed_slice_dims=self.collapsed_slice_dims,
            start_index_map=self.start_index_map,
        )
        return lo.lax.gather(
            operand,
            _vectors_last(lo, indices, self.index_vector_dim),
            numbers,
            self.slice_sizes,
            mode=lo.lax.GatherScatterMode.CLIP,  # start indices clamped so slices fit
        )

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.gather(present(ts[0]), xs[1], **self._numbers())]

    def _numbers(self) -> dict[str, Any]:
        return {
            "offset_dims": self.offset_dims,
            "collapsed_slice_dims": self.collapsed_slice_dims,
            "start_index_map": self.start_index_map,
            "index_vector_dim": self.index_vector_dim,
            "slice_sizes": self.slice_sizes,
        }

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        zeros = lax.zeros(self.inputs[0], like=present(cts[0]))
        return [
            lax.scatter_add(
                zeros,
                xs[1],
                present(cts[0]),
                update_window_dims=self.offset_dims,
                inserted_window_dims=self.collapsed_slice_dims,
                scatter_dims_to_operand_dims=self.start_index_map,
                index_vector_dim=self.index_vector_dim,
            ),
            None,
        ]


@primitive
class Scatter(TensorPrimitive):
    """StableHLO scatter with addition: ``operand`` plus ``updates`` added at the windows
    the indices select; windows out of bounds are dropped."""

    name = "scatter_add"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        size = batch_size(xs, dims)
        operand, updates = to_front(xs[0], dims[0], size), to_front(xs[2], dims[2], size)
        if dims[1] is not None:
            # Each index vector also selects its example's operand; the updates' batch
            # axis is a scatter axis (it pairs with the indices' first axis).
            indices, vector_dim = counted_indices(
                to_front(xs[1], dims[1], size), self.index_vector_dim
            )
            (out,) = rebind(
                self,
                [operand, indices, updates],
                update_window_dims=tuple(d + 1 for d in self.update_window_dims),
                inserted_window_dims=(0, *(d + 1 for d in self.inserted_window_dims)),
                scatter_dims_to_operand_dims=(
                    0,
                    *(d + 1 for d in self.scatter_dims_to_operand_dims),
                ),
                index_vector_dim=vector_dim,
            )
            return [out], [0]
        # The batch axis becomes the first window axis of operand and updates.
        (out,) = rebind(
            self,
            [operand, xs[1], updates],
            update_window_dims=(0, *(d + 1 for d in self.update_window_dims)),
            inserted_window_dims=tuple(d + 1 for d in self.inserted_window_dims),
            scatter_dims_to_operand_dims=tuple(d + 1 for d in self.scatter_dims_to_operand_dims),
        )
        return [out], [0]

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int

    def infer(self) -> tuple[Meta]:
        operand, indices, updates = self.inputs
        name = self.name
        for meta, what in ((operand, "operand"), (indices, "indices"), (updates, "updates")):
            check_static(name, meta, what)
        _check_integer_indices(name, indices)
        if updates.dtype != operand.dtype:
            raise DTypeError(name, f"updates dtype {updates.dtype} differs from {operand.dtype}")
        inserted, scattered = self.inserted_window_dims, self.scatter_dims_to_operand_dims
        if list(inserted) != sorted(set(inserted)) or any(
            not 0 <= d < operand.ndim for d in inserted
        ):
            raise AxisError(
                name, f"inserted_window_dims {inserted} invalid for operand rank {operand.ndim}"
            )
        if len(set(scattered)) != len(scattered) or any(
            not 0 <= d < operand.ndim for d in scattered
        ):
            raise AxisError(
                name,
                f"scatter_dims_to_operand_dims {scattered} invalid for operand rank {operand.ndim}",
            )
        if not 0 <= self.index_vector_dim <= indices.ndim:
            raise AxisError(
                name,
                f"index_vector_dim {self.index_vector_dim} out of range for indices of rank "
                f"{indices.ndim}",
            )
        window_operand = [d for d in range(operand.ndim) if d not in inserted]
        if len(window_operand) != len(self.update_window_dims) or any(
            not 0 <= d < updates.ndim for d in self.update_window_dims
        ):
            raise AxisError(
                name,
                f"update_window_dims {self.update_window_dims} and inserted_window_dims "
                f"{self.inserted_window_dims} do not fit operand rank {operand.ndim}",
            )
        for w, d in zip(self.update_window_dims, window_operand, strict=True):
            if updates.shape[w] > operand.shape[d]:
                raise ShapeError(name, f"update window axis {w} is larger than operand axis {d}")
        vector = indices.shape[self.index_vector_dim] if self.index_vector_dim < indices.ndim else 1
        if vector != len(self.scatter_dims_to_operand_dims):
            raise ShapeError(
                name, "index vector length does not match scatter_dims_to_operand_dims"
            )
        batch = tuple(n for i, n in enumerate(indices.shape) if i != self.index_vector_dim)
        update_batch = tuple(
            n for i, n in enumerate(updates.shape) if i not in self.update_window_dims
        )
        if batch != update_batch:
            raise ShapeError(
                name, f"update scatter dims {update_batch} do not match index batch {batch}"
            )
        return (operand._replace(weak=operand.weak and updates.weak),)

    def impl(self, operand: Any, indices: Any, updates: Any) -> Any:
        out = np.array(operand, copy=True)
        updates = np.asarray(updates)
        vectors = _index_vectors(indices, self.index_vector_dim)
        starts = np.zeros((*vectors.shape[:-1], out.ndim), dtype=np.int64)
        for k, axis in enumerate(self.scatter_dims_to_operand_dims):
            starts[..., axis] = vectors[..., k]
        window_dims = [d for d in range(out.ndim) if d not in self.inserted_window_dims]
        window_shape = [updates.shape[w] for w in self.update_window_dims]
        extents = np.ones(out.ndim, dtype=np.int64)
        extents[window_dims] = window_shape
        valid = np.all((starts >= 0) & (starts + extents <= np.array(out.shape)), axis=-1)
        scatter_dims = [d for d in range(updates.ndim) if d not in self.update_window_dims]
        ordered = np.transpose(updates, (*scatter_dims, *self.update_window_dims))
        full = ordered.shape
        index = tuple(
            np.broadcast_to(a, full)[valid]
            for a in _window_index(starts, window_dims, window_shape, out.ndim)
        )
        np.add.at(out, index, ordered[valid])
        return out

    def lower(self, lo: Any, operand: Any, indices: Any, updates: Any) -> Any:
        numbers = lo.lax.ScatterDimensionNumbers(
            update_window_dims=self.update_window_dims,
            inserted_window_dims=self.inserted_window_dims,
            scatter_dims_to_operand_dims=self.scatter_dims_to_operand_dims,
        )
        return lo.lax.scatter_add(
            operand,
            _vectors_last(lo, indices, self.index_vector_dim),
            updates,
            numbers,
            mode=lo.lax.GatherScatterMode.FILL_OR_DROP,  # windows out of bounds are dropped
        )

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        operand, indices, updates = xs
        d_operand, d_updates = ts[0], ts[2]
        return [
            lax.scatter_add(
                d_operand if d_operand is not None else lax.zeros_like(operand),
                indices,
                d_updates if d_updates is not None else lax.zeros_like(updates),
                **self._numbers(),
            )
        ]

    def _numbers(self) -> dict[str, Any]:
        return {
            "update_window_dims": self.update_window_dims,
            "inserted_window_dims": self.inserted_window_dims,
            "scatter_dims_to_operand_dims": self.scatter_dims_to_operand_dims,
            "index_vector_dim": self.index_vector_dim,
        }

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        operand, _, updates = self.inputs
        window = iter(self.update_window_dims)
        slice_sizes = tuple(
            1 if d in self.inserted_window_dims else updates.shape[next(window)]
            for d in range(operand.ndim)
        )
        gathered = None
        if active[2]:
            gathered = lax.gather(
                ct,
                xs[1],
                offset_dims=self.update_window_dims,
                collapsed_slice_dims=self.inserted_window_dims,
                start_index_map=self.scatter_dims_to_operand_dims,
                index_vector_dim=self.index_vector_dim,
                slice_sizes=slice_sizes,
            )
        return [ct if active[0] else None, None, gathered]
