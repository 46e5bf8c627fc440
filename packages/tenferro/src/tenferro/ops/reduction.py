"""Reductions over listed axes (unique, in range; the reduced axes are dropped).

reduce_sum is linear; reduce_sum_squares is real-only; reduce_prod's derivative is
zero-safe (one zero: the product of the others; two or more: 0); reduce_max and
reduce_min share the derivative equally among tied extremal entries.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.primitive import (
    RuleValue,
    TensorPrimitive,
    Ts,
    Xs,
    check_kind,
    check_static,
    primitive,
)
from tenferro.errors import AxisError, ShapeError
from tenferro.meta import Meta, normalize_axes

__all__ = [
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquares",
]


class Reduction(TensorPrimitive):
    __slots__ = ()
    kinds: ClassVar[str] = "ifc"
    axes: tuple[int, ...]

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        check_static(self.name, x)
        check_kind(self.name, x, self.kinds)
        normalized = normalize_axes(self.axes, x.ndim, self.name)
        if normalized != self.axes or list(normalized) != sorted(normalized):
            raise AxisError(self.name, f"axes {self.axes} must be sorted and non-negative")
        shape = tuple(n for i, n in enumerate(x.shape) if i not in self.axes)
        return (Meta(shape, x.dtype, x.weak),)

    def kept(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.inputs[0].ndim) if i not in self.axes)

    def broadcast_back(self, value: RuleValue) -> RuleValue:
        """A reduced-shape value broadcast back to the input shape."""
        return lax.broadcast_in_dim(value, self.inputs[0].shape, self.kept())


@primitive
class ReduceSum(Reduction):
    name = "reduce_sum"
    linear = True

    def impl(self, x: Any) -> Any:
        return np.sum(x, axis=self.axes, dtype=self.inputs[0].dtype)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [self.broadcast_back(cts[0])]  # type: ignore[arg-type]


@primitive
class ReduceSumSquares(Reduction):
    """Sum of squares of real values."""

    name = "reduce_sum_squares"
    kinds = "f"

    def impl(self, x: Any) -> Any:
        return np.sum(np.square(x), axis=self.axes, dtype=self.inputs[0].dtype)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (dx,) = xs, ts
        return [lax.reduce_sum(lax.mul(lax.add(x, x), dx), self.axes)]


@primitive
class ReduceProd(Reduction):
    name = "reduce_prod"

    def impl(self, x: Any) -> Any:
        return np.prod(x, axis=self.axes, dtype=self.inputs[0].dtype)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (y,), (dx,) = xs, ys, ts
        zero, one = lax.zeros_like(x), lax.full_like(x, 1)
        is_zero = lax.compare(x, zero, "eq")
        zeros = lax.reduce_sum(lax.convert_element_type(is_zero, x.dtype), self.axes)
        # Division only by non-zeros, so no inf/nan appears even in unused lanes.
        without_zeros = lax.reduce_prod(lax.select(is_zero, one, x), self.axes)
        none_zero = lax.compare(zeros, lax.zeros_like(zeros), "eq")
        one_zero = lax.compare(zeros, lax.full_like(zeros, 1), "eq")
        others = lax.select(
            self.broadcast_back(none_zero),
            lax.div(self.broadcast_back(y), lax.select(is_zero, one, x)),
            lax.select(
                lax.logical_and(self.broadcast_back(one_zero), is_zero),
                self.broadcast_back(without_zeros),
                zero,
            ),
        )
        return [lax.reduce_sum(lax.mul(dx, others), self.axes)]


class _Extremum(Reduction):
    __slots__ = ()
    kinds = "if"

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(x.shape[a] == 0 for a in self.axes if 0 <= a < x.ndim):
            raise ShapeError(self.name, f"cannot reduce zero-size axes {self.axes} of {x.shape}")
        return super().infer()

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (y,), (dx,) = xs, ys, ts
        hits = lax.convert_element_type(lax.compare(x, self.broadcast_back(y), "eq"), x.dtype)
        weights = lax.div(hits, self.broadcast_back(lax.reduce_sum(hits, self.axes)))
        return [lax.reduce_sum(lax.mul(dx, weights), self.axes)]


@primitive
class ReduceMax(_Extremum):
    name = "reduce_max"

    def impl(self, x: Any) -> Any:
        return np.max(x, axis=self.axes) if self.axes else x


@primitive
class ReduceMin(_Extremum):
    name = "reduce_min"

    def impl(self, x: Any) -> Any:
        return np.min(x, axis=self.axes) if self.axes else x
