"""Reductions over listed axes (unique, in range; the reduced axes are dropped).

reduce_sum is linear; reduce_sum_squares is real-only; reduce_prod's derivative is
built from multiplications only (exact at zeros, to every order); reduce_max and
reduce_min share the derivative equally among tied extremal entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.checks import check_kind, check_static
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.errors import AxisError, ShapeError
from tenferro.meta import Meta, normalize_axes
from tenferro.ops.batching import move_axis, rebind

_add_reduce = np.add.reduce

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
        if any(a in self.axes for a in x.dynamic) or (x.dynamic and self.name != "reduce_sum"):
            check_static(self.name, x)
        check_kind(self.name, x, self.kinds)
        normalized = normalize_axes(self.axes, x.ndim, self.name)
        if normalized != self.axes or list(normalized) != sorted(normalized):
            raise AxisError(self.name, f"axes {self.axes} must be sorted and non-negative")
        shape = tuple(n for i, n in enumerate(x.shape) if i not in self.axes)
        kept = [i for i in range(x.ndim) if i not in self.axes]
        dynamic = tuple(kept.index(a) for a in x.dynamic)  # sums over static axes only
        return (Meta(shape, x.dtype, x.weak, dynamic),)

    def kept(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.inputs[0].ndim) if i not in self.axes)

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axes=tuple(a + 1 for a in self.axes)), [0]

    def broadcast_back(self, value: RuleValue) -> RuleValue:
        """A reduced-shape value broadcast back to the input shape."""
        return lax.broadcast_in_dim(value, self.inputs[0].shape, self.kept())


@primitive
class ReduceSum(Reduction):
    conj_commutes = True
    name = "reduce_sum"
    linear = True
    extent_generic = True  # its transpose broadcasts back to its operand's metas
    reads_extent_coincidences = False  # (see tenferro.eager.extents)

    def any_extent_kernel(self) -> Any:
        return self.impl  # a sum over axes (its plan reads the rank only)

    def impl(self, x: Any) -> Any:
        plan = self._prepared  # (axis argument, dtype): numpy's cheapest spelling of both
        if plan is None:
            (meta,) = self.inputs
            whole = len(self.axes) == meta.ndim > 0  # every axis: numpy's axis=None
            # Inexact dtypes of 32 bits and more accumulate in themselves already: no
            # dtype argument (numpy's cheaper call); the others are named.
            dtype = meta.dtype if meta.dtype.kind not in "fc" or meta.dtype.itemsize < 4 else None
            plan = (None if whole else self.axes, dtype)
            object.__setattr__(self, "_prepared", plan)
        return _add_reduce(x, plan[0], plan[1])  # np.sum, unwrapped, positional

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.sum(x, axis=self.axes, dtype=self.inputs[0].dtype)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [self.broadcast_back(cts[0])]  # type: ignore[arg-type]


@primitive
class ReduceSumSquares(Reduction):
    """Sum of squares of real values."""

    name = "reduce_sum_squares"
    kinds = "f"

    def impl(self, x: Any) -> Any:
        return np.sum(np.square(x), axis=self.axes, dtype=self.inputs[0].dtype)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.sum(lo.lax.mul(x, x), axis=self.axes, dtype=self.inputs[0].dtype)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), dx = xs, present(*ts)
        return [lax.reduce_sum(lax.mul(lax.add(x, x), dx), self.axes)]


@primitive
class ReduceProd(Reduction):
    name = "reduce_prod"

    def impl(self, x: Any) -> Any:
        return np.prod(x, axis=self.axes, dtype=self.inputs[0].dtype)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.prod(x, axis=self.axes, dtype=self.inputs[0].dtype)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (dx,) = xs, ts
        assert dx is not None
        kept = self.kept()
        flat = (*(x.shape[i] for i in kept), int(np.prod([x.shape[a] for a in self.axes])))
        x_flat = lax.reshape(lax.transpose(x, (*kept, *self.axes)), flat)
        dx_flat = lax.reshape(lax.transpose(dx, (*kept, *self.axes)), flat)
        last = len(flat) - 1
        # The product of the other entries, from multiplications only: exact at zeros
        # (any number of them) and differentiable again to every order.
        before = _exclusive_products(x_flat)
        after = lax.rev(_exclusive_products(lax.rev(x_flat, (last,))), (last,))
        return [lax.reduce_sum(lax.mul(dx_flat, lax.mul(before, after)), (last,))]


def _exclusive_products(x: RuleValue) -> RuleValue:
    """Along the last axis, the product of the entries before each entry (1 for the first):
    a Hillis-Steele scan, log2(n) shifted multiplications."""
    n = x.shape[-1]
    inclusive, distance = x, 1
    while distance < n:
        inclusive = lax.mul(inclusive, _shifted(inclusive, distance))
        distance *= 2
    return _shifted(inclusive, 1)


def _shifted(x: RuleValue, distance: int) -> RuleValue:
    """``x`` moved ``distance`` places along the last axis, ones filling in."""
    n, lead = x.shape[-1], x.shape[:-1]
    if distance >= n:
        return lax.full_like(x, 1)
    ones = lax.full(x.meta._replace(shape=(*lead, distance)), 1, x)
    kept = lax.slice(x, [0] * x.ndim, (*lead, n - distance))
    return lax.concatenate([ones, kept], x.ndim - 1)


class _Extremum(Reduction):
    """The largest or smallest value; complex values in numpy's (lexicographic) order,
    real part first. Ties split the derivative equally."""

    __slots__ = ()
    kinds = "bifc"

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        if any(x.shape[a] == 0 for a in self.axes if 0 <= a < x.ndim):
            raise ShapeError(self.name, f"cannot reduce zero-size axes {self.axes} of {x.shape}")
        return super().infer()

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (y,), dx = xs, ys, present(*ts)
        hits = lax.convert_element_type(lax.compare(x, self.broadcast_back(y), "eq"), x.dtype)
        weights = lax.div(hits, self.broadcast_back(lax.reduce_sum(hits, self.axes)))
        return [lax.reduce_sum(lax.mul(dx, weights), self.axes)]


@primitive
class ReduceMax(_Extremum):
    name = "reduce_max"

    def impl(self, x: Any) -> Any:
        return np.max(x, axis=self.axes) if self.axes else x

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.max(x, axis=self.axes) if self.axes else x


@primitive
class ReduceMin(_Extremum):
    name = "reduce_min"

    def impl(self, x: Any) -> Any:
        return np.min(x, axis=self.axes) if self.axes else x

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.min(x, axis=self.axes) if self.axes else x
