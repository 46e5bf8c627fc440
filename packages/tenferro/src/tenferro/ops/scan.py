"""Scans along one axis: cumulative sums and products (``reverse`` scans from the end).

``cumsum`` is linear; its transpose is the cumulative sum in the other direction.
``cumprod``'s JVP is the scan of (product, tangent) pairs under
``(p, t) . (q, s) = (p q, t q + p s)`` in log2(n) doubling steps: multiplications
only, so it is exact with any number of zeros (no division by the input) and is
differentiable again to every order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.checks import check_kind, check_static
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.errors import AxisError
from tenferro.meta import Meta, normalize_axis
from tenferro.ops.batching import move_axis, rebind

__all__ = ["Cumprod", "Cumsum"]


class Scan(TensorPrimitive):
    __slots__ = ()
    kinds: ClassVar[str] = "ifc"
    axis: int
    reverse: bool

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axis=self.axis + 1), [0]

    def infer(self) -> tuple[Meta]:
        (x,) = self.inputs
        check_static(self.name, x)
        check_kind(self.name, x, self.kinds)
        if x.ndim == 0 or normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise AxisError(self.name, f"axis {self.axis} must be an axis of {x.describe()}")
        if not isinstance(self.reverse, bool):
            raise AxisError(self.name, f"reverse must be a bool, got {self.reverse!r}")
        return (x._replace(weak=False),)

    def scan(self, function: Any, x: Any) -> Any:
        dtype = self.inputs[0].dtype
        if not self.reverse:
            return function(x, axis=self.axis, dtype=dtype)
        flipped = np.flip(x, self.axis)
        return np.flip(function(flipped, axis=self.axis, dtype=dtype), self.axis)


@primitive
class Cumsum(Scan):
    """Inclusive cumulative sum along ``axis``."""

    name = "cumsum"
    linear = True

    def impl(self, x: Any) -> Any:
        return self.scan(np.cumsum, x)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.cumsum(x, self.axis, reverse=self.reverse)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.cumsum(present(cts[0]), self.axis, reverse=not self.reverse)]


@primitive
class Cumprod(Scan):
    """Inclusive cumulative product along ``axis``."""

    name = "cumprod"

    def impl(self, x: Any) -> Any:
        return self.scan(np.cumprod, x)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.cumprod(x, self.axis, reverse=self.reverse)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (dx,) = xs, ts
        assert dx is not None
        n = x.shape[self.axis]
        products, tangents = x, dx
        distance = 1
        while distance < n:
            earlier_products = _shifted(products, distance, self.axis, self.reverse, 1)
            earlier_tangents = _shifted(tangents, distance, self.axis, self.reverse, 0)
            tangents = lax.add(
                lax.mul(earlier_tangents, products), lax.mul(earlier_products, tangents)
            )
            products = lax.mul(earlier_products, products)
            distance *= 2
        return [tangents]


def _shifted(x: RuleValue, distance: int, axis: int, reverse: bool, fill: int) -> RuleValue:
    """``x`` moved ``distance`` places along ``axis`` in the scan's direction, ``fill``
    (the scan's identity) filling in."""
    n = x.shape[axis]
    if distance >= n:
        return lax.full_like(x, fill)
    gap = lax.full(x.meta._replace(shape=_with(x.shape, axis, distance)), fill, x)
    starts = [0] * x.ndim
    limits = list(x.shape)
    if reverse:
        starts[axis] = distance
        return lax.concatenate([lax.slice(x, starts, limits), gap], axis)
    limits[axis] = n - distance
    return lax.concatenate([gap, lax.slice(x, starts, limits)], axis)


def _with(shape: tuple[int, ...], axis: int, extent: int) -> tuple[int, ...]:
    return (*shape[:axis], extent, *shape[axis + 1 :])
