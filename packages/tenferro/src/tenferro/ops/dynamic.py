"""Constants and data-dependent shapes: constant, shape_of, dynamic_truncate, pad_to_match.

Traced graphs have static shapes; ``dynamic_truncate`` is how a traced value gets
a data-dependent extent. Its meta keeps the static extent as an upper bound and
marks the axis dynamic; operations that need exact static shapes reject such
values at build time, while elementwise operations, transposes, reversals,
conversions and contractions accept them, and ``pad_to_match`` restores a static
shape. (General data-dependent shapes are the eager surface's job.)

The linear uses of ``dynamic_truncate`` and ``pad_to_match`` carry the primal
operand as an extra, never-differentiated shape source, so their transposes know
the runtime extent to restore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.checks import check_kind
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import float64
from tenferro.errors import ShapeError
from tenferro.meta import Meta, normalize_axis
from tenferro.ops.batching import batch_size, loop, move_axis, rebind, to_front

__all__ = [
    "Constant",
    "DynamicTruncate",
    "PadToMatch",
    "ShapeOf",
]


@primitive
class Constant(TensorPrimitive):
    """A rank-0 literal; identified by its dtype and bytes (so 0.0 and -0.0 differ)."""

    name = "constant"
    batch_loop = "has no operands: never batched"
    dtype: np.dtype[Any]
    bits: bytes

    def infer(self) -> tuple[Meta]:
        target = as_dtype(self.dtype, self.name)
        if len(self.bits) != target.itemsize:
            raise ShapeError(self.name, f"{len(self.bits)} bytes for one {target} value")
        return (Meta((), target),)

    def impl(self) -> Any:
        return np.frombuffer(self.bits, dtype=self.dtype).reshape(())

    def lower(self, lo: Any) -> Any:
        return lo.jnp.asarray(self.impl())

    @property
    def value(self) -> Any:
        return self.impl()[()]

    def __str__(self) -> str:
        return f"constant[{self.value.item()!r}:{self.dtype}]"

    __repr__ = __str__


@primitive
class ShapeOf(TensorPrimitive):
    """The runtime extent of ``axis`` as a float64 scalar (not differentiable)."""

    name = "shape_of"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axis=self.axis + 1), [None]  # every example has one extent

    axis: int

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise ShapeError(self.name, f"axis {self.axis} must be non-negative")
        return (Meta((), float64),)

    def impl(self, x: Any) -> Any:
        return np.array(float(np.shape(x)[self.axis]))

    def lower(self, lo: Any, x: Any) -> Any:
        if self.axis in self.inputs[0].dynamic:
            raise lo.refuse(self, _DATA_DEPENDENT)
        return lo.full((), float(self.inputs[0].shape[self.axis]), float64)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


_DATA_DEPENDENT = (
    "its operand has a data-dependent extent (from a truncation by a runtime size); XLA "
    "programs have static shapes"
)


def _size(value: Any, extent: int) -> int:
    return int(min(max(int(np.rint(np.asarray(value))), 0), extent))


@primitive
class DynamicTruncate(TensorPrimitive):
    """The prefix of ``axis`` of length ``size`` (a rank-0 real tensor, rounded to the
    nearest integer and clamped to the extent). Linear in ``x``."""

    name = "dynamic_truncate"
    no_lowering = (
        "its extent depends on the data (a truncation by a runtime size, such as a "
        "tolerance-truncated SVD); XLA programs have static shapes"
    )
    batch_loop = "a batched size gives each example its own extent (the loop then raises)"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        if dims[1] is not None:
            return loop(self, xs, dims)
        size = batch_size(xs, dims)
        operands = [
            v if i == 1 else to_front(v, d, size)
            for i, (v, d) in enumerate(zip(xs, dims, strict=True))
        ]
        return rebind(self, operands, axis=self.axis + 1), [0]

    axis: int
    with_source: bool = False

    def infer(self) -> tuple[Meta]:
        x, size = self.inputs[0], self.inputs[1]
        if normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise ShapeError(self.name, f"axis {self.axis} must be non-negative")
        if size.shape != ():
            raise ShapeError(self.name, f"the size must be a scalar, got shape {size.shape}")
        check_kind(self.name, size, "if", "size")
        if self.with_source and self.inputs[2].shape != x.shape:
            raise ShapeError(self.name, "the shape source must have the operand's shape")
        dynamic = tuple(sorted({*x.dynamic, self.axis}))
        return (x._replace(dynamic=dynamic),)

    def input_count(self) -> int:
        return 3 if self.with_source else 2

    def impl(self, x: Any, size: Any, *source: Any) -> Any:
        x = np.asarray(x)
        index = [slice(None)] * x.ndim
        index[self.axis] = slice(0, _size(size, x.shape[self.axis]))
        return x[tuple(index)]

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, size = xs[0], xs[1]
        if ts[0] is None:  # only the size is active: it moves no value
            return [None]
        return [_truncate(ts[0], size, self.axis, source=x)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if not self.with_source:
            raise lax.not_linear(self, "its operand without a shape source")
        x, size = xs[2], xs[1]
        truncated = _truncate(x, size, self.axis, source=None)  # has the cotangent's extent
        return [_pad_to_match(cts[0], x, self.axis, source=truncated), None, None]


@primitive
class PadToMatch(TensorPrimitive):
    """Zero-pad the end of ``axis`` up to ``reference``'s extent there (no-op if not
    smaller). Linear in ``x``; the result's extent along ``axis`` is static again."""

    name = "pad_to_match"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        size = batch_size(xs, dims)
        operands = [to_front(v, d, size) for v, d in zip(xs, dims, strict=True)]
        return rebind(self, operands, axis=self.axis + 1), [0]

    axis: int
    with_source: bool = False

    def infer(self) -> tuple[Meta]:
        x, reference = self.inputs[0], self.inputs[1]
        if normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise ShapeError(self.name, f"axis {self.axis} must be non-negative")
        if reference.ndim != x.ndim:
            raise ShapeError(self.name, f"reference rank {reference.ndim} differs from {x.ndim}")
        if self.with_source and self.inputs[2].shape != x.shape:
            raise ShapeError(self.name, "the shape source must have the operand's shape")
        if self.axis in reference.dynamic:
            raise ShapeError(self.name, "the reference extent must be static")
        shape = list(x.shape)
        shape[self.axis] = max(x.shape[self.axis], reference.shape[self.axis])
        dynamic = tuple(a for a in x.dynamic if a != self.axis)
        return (Meta(tuple(shape), x.dtype, x.weak, dynamic),)

    def input_count(self) -> int:
        return 3 if self.with_source else 2

    def impl(self, x: Any, reference: Any, *source: Any) -> Any:
        x = np.asarray(x)
        missing = np.shape(reference)[self.axis] - x.shape[self.axis]
        if missing <= 0:
            return x
        widths = [(0, 0)] * x.ndim
        widths[self.axis] = (0, missing)
        return np.pad(x, widths)

    def lower(self, lo: Any, x: Any, reference: Any, *source: Any) -> Any:
        if self.axis in self.inputs[0].dynamic:
            raise lo.refuse(self, _DATA_DEPENDENT)
        missing = self.outputs[0].shape[self.axis] - self.inputs[0].shape[self.axis]
        if missing <= 0:
            return x
        widths = [(0, 0, 0)] * x.ndim
        widths[self.axis] = (0, missing, 0)
        return lo.lax.pad(x, lo.full((), 0, self.inputs[0].dtype), widths)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        if ts[0] is None:  # only the reference is active: its values are not read
            return [None]
        return [_pad_to_match(ts[0], xs[1], self.axis, source=xs[0])]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if not self.with_source:
            raise lax.not_linear(self, "its operand without a shape source")
        x_meta, ct = self.inputs[0], cts[0]
        assert ct is not None
        if self.axis not in x_meta.dynamic:  # the operand's extent is static: slice it back
            return [lax.slice(ct, [0] * ct.ndim, x_meta.shape), None, None]
        size = lax.shape_of(xs[2], self.axis)
        truncated = _truncate(ct, size, self.axis, source=None)
        # The runtime extent is the operand's, so its (tighter) bound applies.
        return [truncated._rewrap(truncated.meta._replace(shape=x_meta.shape)), None, None]


def _pad_to_match(x: Any, reference: Any, axis: int, source: Any) -> Any:
    return PadToMatch.bind(x, reference, source, axis=axis, with_source=True)


def _truncate(x: Any, size: Any, axis: int, source: Any) -> Any:
    if source is None:
        return DynamicTruncate.bind(x, size, axis=axis)
    return DynamicTruncate.bind(x, size, source, axis=axis, with_source=True)
