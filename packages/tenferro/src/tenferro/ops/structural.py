"""Structural primitives: transpose, reshape, broadcast_in_dim, convert, diagonals,
triangles and reverse. All are linear (convert only between floating/complex
dtypes); their transposes restore the input layout.

numpy layout throughout: row-major reshape; ``broadcast_in_dim`` puts operand axis
``j`` at output axis ``dims[j]`` (StableHLO); ``tril``/``triu`` act on the last two
axes with numpy's diagonal offsets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import bind1
from tenferro.core.checks import check_static
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.dtypes import bool_, is_inexact
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import AxisError, ScalarOverflowError, ShapeError
from tenferro.meta import Meta, check_permutation, normalize_axes, normalize_axis
from tenferro.ops.batching import elementwise, leading, move_axis, rebind

__all__ = [
    "BroadcastInDim",
    "Convert",
    "EmbedDiag",
    "ExtractDiag",
    "Reshape",
    "Reverse",
    "Transpose",
    "Tril",
    "Triu",
]


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for position, axis in enumerate(perm):
        inverse[axis] = position
    return tuple(inverse)


@primitive
class Transpose(TensorPrimitive):
    """Output axis ``i`` is input axis ``permutation[i]``."""

    conj_commutes = True

    moves_data = True
    name = "transpose"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        perm = (0, *(p + 1 for p in self.permutation))
        return rebind(self, [x], permutation=perm), [0]

    linear = True
    extent_generic = True  # its transpose is the inverse permutation

    def extent_facts(self) -> Any:
        return ()  # its derivative programs hold no extent

    def any_extent_kernel(self) -> Any:
        return self.impl  # a permutation of the axes, whatever their extents

    permutation: tuple[int, ...]

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        perm = check_permutation(self.permutation, x.ndim, self.name)
        dynamic = tuple(sorted(i for i, p in enumerate(perm) if p in x.dynamic))
        return (Meta(tuple(x.shape[p] for p in perm), x.dtype, x.weak, dynamic),)

    def impl(self, x: Any) -> Any:
        return x.transpose(self.permutation)  # np.transpose without its wrappers

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.transpose(x, self.permutation)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.transpose(present(cts[0]), _inverse(self.permutation))]


@primitive
class Reshape(TensorPrimitive):
    """Same elements, new shape, row-major (C) order."""

    conj_commutes = True

    moves_data = True
    name = "reshape"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], shape=(x.meta.shape[0], *self.shape)), [0]

    linear = True
    extent_generic = True  # its rules reshape to its own metas' shapes
    extent_params = ("shape",)
    reads_extent_coincidences = False  # (see tenferro.eager.extents)
    shape: tuple[int, ...]

    @classmethod
    def remake(
        cls, inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> Reshape:
        return cls.make(inputs, shape=outputs[0].shape)

    def extent_kernel(self, shape: tuple[int, ...]) -> Any:
        return lambda x: x.reshape(shape)

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(not isinstance(n, int) or n < 0 for n in self.shape):
            raise ShapeError(self.name, f"invalid target shape {self.shape}")
        if math.prod(self.shape) != x.size:
            raise ShapeError(
                self.name,
                f"cannot reshape {x.shape} ({x.size} elements) into {self.shape} "
                f"({math.prod(self.shape)} elements)",
            )
        if x.dynamic:
            return (
                Meta(
                    self.shape, x.dtype, x.weak, (dynamic_reshape_axis(self.name, x, self.shape),)
                ),
            )
        return (Meta(self.shape, x.dtype, x.weak),)

    def impl(self, x: Any) -> Any:
        if self.outputs[0].dynamic:  # the data-dependent axis takes what is left
            shape = list(self.shape)
            shape[self.outputs[0].dynamic[0]] = -1
            return x.reshape(shape)
        return x.reshape(self.shape)  # np.reshape without its wrapper (arrays and scalars)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.reshape(x, self.shape)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.reshape(present(cts[0]), self.inputs[0].shape)]


@primitive
class BroadcastInDim(TensorPrimitive):
    """Operand axis ``j`` becomes output axis ``dims[j]`` (extent equal, or 1 to expand);
    the other output axes repeat the operand."""

    conj_commutes = True

    moves_data = True
    name = "broadcast_in_dim"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        shape = (x.meta.shape[0], *self.shape)
        return rebind(self, [x], shape=shape, dims=(0, *(d + 1 for d in self.dims))), [0]

    linear = True
    extent_generic = True  # its transpose sums the axes its metas show broadcast
    extent_params = ("shape",)
    reads_extent_coincidences = False  # only which extents are 1
    shape: tuple[int, ...]
    dims: tuple[int, ...]

    @classmethod
    def remake(
        cls, inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> BroadcastInDim:
        return cls.make(inputs, shape=outputs[0].shape, dims=params["dims"])

    def extent_kernel(self, shape: tuple[int, ...]) -> Any:
        """``impl`` with the operand's extents read from the array."""
        order = sorted(range(len(self.dims)), key=self.dims.__getitem__)
        targets = [self.dims[axis] for axis in order]
        permutation = None if order == list(range(len(order))) else tuple(order)
        small = math.prod(shape) <= 1024

        def run(x: Any) -> Any:
            if type(x) is not np.ndarray:
                x = np.asarray(x)
            if permutation is not None:
                x = x.transpose(permutation)
            expanded = [1] * len(shape)
            for target, extent in zip(targets, x.shape, strict=True):
                expanded[target] = extent
            x = x.reshape(expanded)
            if small:
                out = np.empty(shape, x.dtype)
                out[...] = x
                return out
            return np.broadcast_to(x, shape)

        return run

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(not isinstance(n, int) or n < 0 for n in self.shape):
            raise ShapeError(self.name, f"invalid target shape {self.shape}")
        if len(self.dims) != x.ndim:
            raise AxisError(
                self.name, f"dims {self.dims} must list one output axis per operand axis ({x.ndim})"
            )
        normalize_axes(self.dims, len(self.shape), self.name)
        if any(d < 0 for d in self.dims):
            raise AxisError(self.name, f"dims {self.dims} must be non-negative")
        for axis, (extent, target) in enumerate(zip(x.shape, self.dims, strict=True)):
            if extent not in (1, self.shape[target]):
                raise ShapeError(
                    self.name,
                    f"operand axis {axis} (extent {extent}) cannot broadcast to output axis "
                    f"{target} (extent {self.shape[target]}) of {self.shape}",
                )
        if x.dynamic:  # a data-dependent axis keeps its run-time extent where it lands
            for axis in x.dynamic:
                if x.shape[axis] != self.shape[self.dims[axis]]:
                    raise ShapeError(
                        self.name,
                        f"the data-dependent operand axis {axis} of {x.describe()} cannot be "
                        f"expanded to {self.shape[self.dims[axis]]}",
                    )
            dynamic = tuple(sorted(self.dims[axis] for axis in x.dynamic))
            return (Meta(self.shape, x.dtype, x.weak, dynamic),)
        return (Meta(self.shape, x.dtype, x.weak),)

    def impl(self, x: Any) -> Any:
        if self.inputs[0].dynamic:
            return self._dynamic_impl(np.asarray(x))
        plan = self._prepared
        if plan is None:
            plan = self._plan()
            object.__setattr__(self, "_prepared", plan)
        order, expanded, small = plan
        if type(x) is not np.ndarray:  # a number taken as it is (a rank-0 operand)
            x = np.asarray(x)
        if order is not None:
            x = x.transpose(order)
        x = x.reshape(expanded)  # ndarray methods: numpy's function wrappers cost more
        if small:  # a copy costs less than np.broadcast_to's Python-level view
            out = np.empty(self.shape, x.dtype)
            out[...] = x
            return out
        return np.broadcast_to(x, self.shape)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.broadcast_in_dim(x, self.shape, self.dims)

    def _dynamic_impl(self, x: Any) -> Any:
        """``impl`` for an operand with data-dependent axes: the output takes their
        run-time extents."""
        order = sorted(range(len(self.dims)), key=self.dims.__getitem__)
        shape = list(self.shape)
        for axis in self.inputs[0].dynamic:
            shape[self.dims[axis]] = x.shape[axis]
        expanded = [1] * len(shape)
        for axis in order:
            expanded[self.dims[axis]] = x.shape[axis]
        if order != list(range(len(order))):
            x = x.transpose(order)
        return np.broadcast_to(x.reshape(expanded), shape)

    def _plan(self) -> tuple[tuple[int, ...] | None, tuple[int, ...], bool]:
        """(the operand's axis order, ``None`` when kept; its shape with the new axes as
        1; whether the output is small enough to be written out), from the metas."""
        order = sorted(range(len(self.dims)), key=self.dims.__getitem__)
        expanded = [1] * len(self.shape)
        for axis in order:
            expanded[self.dims[axis]] = self.inputs[0].shape[axis]
        kept = order == list(range(len(order)))
        return None if kept else tuple(order), tuple(expanded), math.prod(self.shape) <= 1024

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        ct = present(*cts)
        operand = self.inputs[0]
        expanded = {
            d for j, d in enumerate(self.dims) if operand.shape[j] == 1 and self.shape[d] != 1
        }
        summed = tuple(a for a in range(len(self.shape)) if a not in self.dims or a in expanded)
        reduced = lax.reduce_sum(ct, summed)
        order = sorted(range(len(self.dims)), key=self.dims.__getitem__)
        in_target_order = tuple(operand.shape[j] for j in order)
        if reduced.shape != in_target_order:
            reduced = lax.reshape(reduced, in_target_order)
        if order != list(range(len(order))):
            reduced = lax.transpose(reduced, _inverse(order))
        return [reduced]


@primitive
class Convert(TensorPrimitive):
    """Cast to ``dtype`` (complex to real keeps the real part; to bool is ``!= 0``).

    Linear between floating/complex dtypes; casts from or to integers and bool carry
    no derivative.
    """

    conj_commutes = True

    name = "convert"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        return elementwise(self, xs, dims)

    extent_generic = True  # elementwise: its rules read dtypes only
    dtype: np.dtype[Any]
    weak: bool = False
    """Whether the result is weak (a Python scalar's promotion with another: NEP 50)."""

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        target = as_dtype(self.dtype, self.name)
        return (Meta(x.shape, target, bool(self.weak), x.dynamic),)

    def impl(self, x: Any) -> Any:
        source = self.inputs[0].dtype
        target = self.dtype
        if source == target:
            return x
        if self.inputs[0].weak and source.kind == "i" and target.kind == "i":
            _check_python_ints_fit(x, target)
        if target == bool_:
            return np.not_equal(x, 0)
        if source.kind == "c" and target.kind != "c":
            x = np.real(x)
        return np.asarray(x).astype(target)

    def lower(self, lo: Any, x: Any) -> Any:
        source, target = self.inputs[0].dtype, self.dtype
        if source == target:
            return x
        if target == bool_:
            return lo.lax.ne(x, lo.full((), 0, source))
        if source.kind == "c" and target.kind != "c":
            x = lo.lax.real(x)
        return lo.lax.convert_element_type(x, target)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        if not (is_inexact(self.inputs[0].dtype) and is_inexact(self.dtype)):
            return [None]
        return [lax.convert_element_type(present(ts[0]), self.dtype)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.convert_element_type(present(cts[0]), self.inputs[0].dtype)]


def _check_python_ints_fit(x: Any, target: np.dtype[Any]) -> None:
    """A weak integer is a Python int known only when the program runs (an argument of a
    traced function): narrowing it must fail as numpy fails on the number, not wrap."""
    info = np.iinfo(target)
    values = np.asarray(x)
    if values.size and not (info.min <= values.min() and values.max() <= info.max):
        bad = values[(values < info.min) | (values > info.max)].flat[0]
        raise ScalarOverflowError("convert", f"Python integer {bad} is out of bounds for {target}")


def _diagonal_position(axis_a: int, axis_b: int) -> int:
    return axis_a if axis_a < axis_b else axis_a - 1


@primitive
class ExtractDiag(TensorPrimitive):
    """The diagonal between ``axis_a`` and ``axis_b``: ``axis_b`` is removed and the
    diagonal (length ``min`` of the two extents) takes ``axis_a``'s place."""

    name = "extract_diag"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axis_a=self.axis_a + 1, axis_b=self.axis_b + 1), [0]

    linear = True
    extent_generic = True  # its transpose pads where its metas show a non-square operand
    axis_a: int
    axis_b: int

    def any_extent_kernel(self) -> Any:
        return self.impl  # reads the extents from the array

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        check_static(self.name, x)
        a = normalize_axis(self.axis_a, x.ndim, self.name)
        b = normalize_axis(self.axis_b, x.ndim, self.name)
        if a == b or (a, b) != (self.axis_a, self.axis_b):
            raise AxisError(
                self.name, f"needs two distinct non-negative axes, got {self.axis_a}, {self.axis_b}"
            )
        shape = list(x.shape)
        shape[a] = min(x.shape[a], x.shape[b])
        del shape[b]
        return (Meta(tuple(shape), x.dtype, x.weak),)

    def impl(self, x: Any) -> Any:
        diagonal = np.asarray(x).diagonal(0, self.axis_a, self.axis_b)  # no np.diagonal wrapper
        position = _diagonal_position(self.axis_a, self.axis_b)
        if position == diagonal.ndim - 1:  # numpy puts it last: already in place
            return diagonal
        return np.moveaxis(diagonal, -1, position)

    def lower(self, lo: Any, x: Any) -> Any:
        diagonal = lo.jnp.diagonal(x, 0, self.axis_a, self.axis_b)  # numpy's: put last
        return lo.jnp.moveaxis(diagonal, -1, _diagonal_position(self.axis_a, self.axis_b))

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (x,) = self.inputs
        a, b = self.axis_a, self.axis_b
        embedded = lax.embed_diag(present(cts[0]), _diagonal_position(a, b), b)
        m = min(x.shape[a], x.shape[b])
        if x.shape[a] == x.shape[b]:
            return [embedded]
        high = [0] * x.ndim
        high[a], high[b] = x.shape[a] - m, x.shape[b] - m
        return [lax.pad(embedded, [0] * x.ndim, high, [0] * x.ndim)]


@primitive
class EmbedDiag(TensorPrimitive):
    """Inserts output axis ``axis_b`` with the extent of input axis ``axis_a`` and puts
    the input on the diagonal between them (zeros elsewhere)."""

    name = "embed_diag"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axis_a=self.axis_a + 1, axis_b=self.axis_b + 1), [0]

    linear = True
    extent_generic = True  # its transpose is extract_diag
    axis_a: int
    axis_b: int

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        check_static(self.name, x)
        if not 0 <= self.axis_a < x.ndim or not 0 <= self.axis_b <= x.ndim:
            raise AxisError(
                self.name, f"axes ({self.axis_a}, {self.axis_b}) out of range for rank {x.ndim}"
            )
        shape = list(x.shape)
        shape.insert(self.axis_b, x.shape[self.axis_a])
        return (Meta(tuple(shape), x.dtype, x.weak),)

    def _source_position(self) -> int:
        """Where input axis ``axis_a`` lands in the output."""
        return self.axis_a if self.axis_a < self.axis_b else self.axis_a + 1

    def impl(self, x: Any) -> Any:
        (out_meta,) = self.outputs
        return self._embed(x, out_meta.shape, out_meta.dtype)

    def lower(self, lo: Any, x: Any) -> Any:
        (out,) = self.outputs
        b = self.axis_b
        spread = lo.lax.broadcast_in_dim(
            x, out.shape, tuple(i if i < b else i + 1 for i in range(len(self.inputs[0].shape)))
        )
        on_diagonal = lo.lax.eq(
            lo.lax.broadcasted_iota("int32", out.shape, self._source_position()),
            lo.lax.broadcasted_iota("int32", out.shape, b),
        )
        return lo.lax.select(on_diagonal, spread, lo.full(out.shape, 0, out.dtype))

    def any_extent_kernel(self) -> Any:
        """``impl`` with the output's extents read from the operand's."""
        axis_a, axis_b, dtype = self.axis_a, self.axis_b, self.outputs[0].dtype

        def run(x: Any) -> Any:
            shape = list(np.shape(x))
            shape.insert(axis_b, shape[axis_a])
            return self._embed(x, tuple(shape), dtype)

        return run

    def _embed(self, x: Any, shape: tuple[int, ...], dtype: Any) -> Any:
        out = np.zeros(shape, dtype=dtype)
        a, b = self._source_position(), self.axis_b
        if a == len(shape) - 2 and b == a + 1:  # the trailing pair: one strided write
            n = shape[b]
            out.reshape((*shape[:-2], n * n))[..., :: n + 1] = x
            return out
        work = np.moveaxis(out, (a, b), (-2, -1))
        index = np.arange(shape[b])
        work[..., index, index] = np.moveaxis(np.asarray(x), self.axis_a, -1)
        return out

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.extract_diag(present(cts[0]), self._source_position(), self.axis_b)]


class _Triangle(TensorPrimitive):
    __slots__ = ()
    linear = True
    extent_generic = True  # the diagonal offset is a parameter; its transpose is itself

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        return leading(self, xs, dims)

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        check_static(self.name, x)
        if x.ndim < 2:
            raise ShapeError(self.name, f"needs at least 2 dimensions, got shape {x.shape}")
        return (x,)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [bind1(self, (cts[0],))]

    def _kept(self) -> Any:
        """The entries kept, ``[M, N]`` (``np.tri``'s mask, as ``np.tril``/``np.triu``
        build per call)."""
        raise NotImplementedError

    def impl(self, x: Any) -> Any:
        plan = self._prepared
        if plan is None:  # the mask and a zero of the dtype, once per instance
            plan = (self._kept(), np.zeros(1, self.inputs[0].dtype))
            object.__setattr__(self, "_prepared", plan)
        return np.where(plan[0], x, plan[1])  # np.tril's own formula

    def lower(self, lo: Any, x: Any) -> Any:
        function = lo.jnp.tril if self.name == "tril" else lo.jnp.triu
        return function(x, self.k)  # type: ignore[attr-defined]


@primitive
class Tril(_Triangle):
    """Keep the lower triangle of the last two axes (entries with column - row <= k)."""

    name = "tril"
    k: int = 0

    def _kept(self) -> Any:
        m, n = self.inputs[0].shape[-2:]
        return np.tri(m, n, self.k, dtype=bool)


@primitive
class Triu(_Triangle):
    """Keep the upper triangle of the last two axes (entries with column - row >= k)."""

    name = "triu"
    k: int = 0

    def _kept(self) -> Any:
        m, n = self.inputs[0].shape[-2:]
        return ~np.tri(m, n, self.k - 1, dtype=bool)


@primitive
class Reverse(TensorPrimitive):
    """Flip the listed axes."""

    conj_commutes = True

    moves_data = True
    name = "reverse"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axes=tuple(a + 1 for a in self.axes)), [0]

    linear = True
    axes: tuple[int, ...]

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        normalize_axes(self.axes, x.ndim, self.name)
        if any(a < 0 for a in self.axes):
            raise AxisError(self.name, f"axes {self.axes} must be non-negative")
        return (x,)

    def impl(self, x: Any) -> Any:
        return np.flip(x, self.axes) if self.axes else x

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.rev(x, self.axes) if self.axes else x

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.rev(present(cts[0]), self.axes)]


def dynamic_reshape_axis(op: str, x: Meta, shape: tuple[int, ...]) -> int:
    """The output axis that keeps the one data-dependent axis of ``x`` when reshaped to
    ``shape``: reshape groups axes into runs of equal size on both sides (row-major);
    the data-dependent axis must lead its run, whose other axes are static, and it
    becomes the leading axis of the matching output run (merging ``(<=k, d)`` into
    ``(<=k*d,)`` or splitting it back)."""
    if len(x.dynamic) != 1:
        raise ShapeError(
            op,
            f"cannot reshape {x.describe()}: it has several data-dependent axes {x.dynamic} "
            f"(apply pad_to_match first)",
        )
    (axis,) = x.dynamic
    i = j = 0
    while i < x.ndim or j < len(shape):
        start_i, start_j = i, j
        left = x.shape[i] if i < x.ndim else 1
        right = shape[j] if j < len(shape) else 1
        i, j = i + 1, j + 1
        while left != right and (i < x.ndim or j < len(shape)):
            if left < right and i < x.ndim:
                left, i = left * x.shape[i], i + 1
            elif j < len(shape):
                right, j = right * shape[j], j + 1
            else:
                left, i = left * x.shape[i], i + 1
        if start_i <= axis < i:
            if axis != start_i or start_j >= len(shape) or 0 in shape:
                break
            return start_j
    raise ShapeError(
        op,
        f"cannot reshape {x.describe()} into {shape}: the data-dependent axis {axis} must stay "
        f"the leading axis of the axes it is merged with or split into",
    )
