"""Ordering along one axis: sort, argsort, argmax, argmin, and apply_permutation.

Sorting is stable (equal elements keep their order; ``descending`` too, as in
``jnp.argsort(..., descending=True)`` and torch's stable sort); NaNs sort last
ascending and first descending (numpy's order, reversed). The index outputs are
int64 and carry no tangent. ``sort``'s derivative moves the tangent with the
values: ``d sort(x) = apply_permutation(dx, argsort(x))``, whose transpose applies
the inverse permutation, so the gradient is the cotangent permuted back (at ties
each element keeps the slot the stable order gives it, like JAX and PyTorch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.checks import check_kind, check_static
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.dtypes import int64
from tenferro.errors import AxisError, DTypeError, ParameterError, ShapeError
from tenferro.meta import Meta, normalize_axis
from tenferro.ops.batching import batch_size, loop, move_axis, rebind, to_front

__all__ = ["ApplyPermutation", "ArgMax", "ArgMin", "Argsort", "SearchSorted", "Sort"]


class _AlongAxis(TensorPrimitive):
    __slots__ = ()
    kinds: ClassVar[str] = "bif"
    axis: int

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        x = move_axis(xs[0], dims[0], 0)  # type: ignore[arg-type]
        return rebind(self, [x], axis=self.axis + 1), [0] * len(self.outputs)

    def operand(self) -> Meta:
        x = self.inputs[0]
        check_static(self.name, x)
        check_kind(self.name, x, self.kinds)
        if x.ndim == 0 or normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise AxisError(self.name, f"axis {self.axis} must be an axis of {x.describe()}")
        return x


class _Sorting(_AlongAxis):
    __slots__ = ()
    kinds = "bifc"
    descending: bool

    def operand(self) -> Meta:
        if not isinstance(self.descending, bool):
            raise AxisError(self.name, f"descending must be a bool, got {self.descending!r}")
        return super().operand()

    def order(self, x: Any) -> Any:
        """The stable sorting permutation along the axis."""
        if not self.descending:
            return np.argsort(x, axis=self.axis, kind="stable")
        n = x.shape[self.axis]
        reversed_order = np.argsort(np.flip(x, self.axis), axis=self.axis, kind="stable")
        return np.flip(n - 1 - reversed_order, self.axis)

    def lowered_order(self, lo: Any, x: Any) -> Any:
        """:meth:`order` in JAX (int64)."""
        axis = self.axis
        if not self.descending:
            return lo.jnp.argsort(x, axis=axis, stable=True).astype("int64")
        n = x.shape[axis]
        reversed_order = lo.jnp.argsort(lo.lax.rev(x, (axis,)), axis=axis, stable=True)
        return lo.lax.rev(n - 1 - reversed_order.astype("int64"), (axis,))


@primitive
class Sort(_Sorting):
    """The values sorted along ``axis`` (stable; ascending unless ``descending``)."""

    name = "sort"

    def infer(self) -> tuple[Meta]:
        return (self.operand()._replace(weak=False),)

    def impl(self, x: Any) -> Any:
        if not self.descending:
            return np.sort(x, axis=self.axis, kind="stable")
        return np.flip(np.sort(np.flip(x, self.axis), axis=self.axis, kind="stable"), self.axis)

    def lower(self, lo: Any, x: Any) -> Any:
        axis = self.axis
        if not self.descending:
            return lo.lax.sort(x, dimension=axis, is_stable=True)
        flipped = lo.lax.rev(x, (axis,))
        return lo.lax.rev(lo.lax.sort(flipped, dimension=axis, is_stable=True), (axis,))

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), dx = xs, present(*ts)
        order = lax.argsort(x, self.axis, descending=self.descending)
        return [lax.apply_permutation(dx, order, self.axis)]


@primitive
class Argsort(_Sorting):
    """The int64 indices that sort ``axis`` (stable; ascending unless ``descending``)."""

    name = "argsort"

    def infer(self) -> tuple[Meta]:
        return (self.operand()._replace(dtype=int64, weak=False),)

    def impl(self, x: Any) -> Any:
        return self.order(x).astype(np.int64, copy=False)

    def lower(self, lo: Any, x: Any) -> Any:
        return self.lowered_order(lo, x)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


class _ArgExtremum(_AlongAxis):
    __slots__ = ()

    kinds = "bifc"  # complex values in numpy's (lexicographic) order

    def infer(self) -> tuple[Meta]:
        x = self.operand()
        if x.shape[self.axis] == 0:
            raise ShapeError(self.name, f"axis {self.axis} of {x.describe()} is empty")
        shape = x.shape[: self.axis] + x.shape[self.axis + 1 :]
        return (Meta(shape, int64),)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


@primitive
class ArgMax(_ArgExtremum):
    """The int64 index of the first maximum along ``axis`` (of the first NaN, if any)."""

    name = "argmax"

    def impl(self, x: Any) -> Any:
        return np.argmax(x, axis=self.axis).astype(np.int64, copy=False)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.argmax(x, axis=self.axis).astype("int64")


@primitive
class ArgMin(_ArgExtremum):
    """The int64 index of the first minimum along ``axis`` (of the first NaN, if any)."""

    name = "argmin"

    def impl(self, x: Any) -> Any:
        return np.argmin(x, axis=self.axis).astype(np.int64, copy=False)

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.argmin(x, axis=self.axis).astype("int64")


@primitive
class ApplyPermutation(TensorPrimitive):
    """``take_along_axis(x, permutation, axis)`` where ``permutation`` (integers, ``x``'s
    shape) holds a permutation of ``range(n)`` along ``axis`` for every other index, as
    ``argsort`` produces. Linear in ``x``; its transpose applies the inverse permutation.
    Other index arrays are outside the contract (the transpose would be wrong)."""

    name = "apply_permutation"
    axis: int

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        size = batch_size(xs, dims)
        fronted = [to_front(v, d, size) for v, d in zip(xs, dims, strict=True)]
        return rebind(self, fronted, axis=self.axis + 1), [0]

    def infer(self) -> tuple[Meta]:
        x, permutation = self.inputs
        check_static(self.name, x)
        check_kind(self.name, permutation, "i", "permutation")
        if permutation.shape != x.shape:
            raise ShapeError(
                self.name,
                f"the permutation {permutation.describe()} must have the shape of {x.describe()}",
            )
        if x.ndim == 0 or normalize_axis(self.axis, x.ndim, self.name) != self.axis:
            raise AxisError(self.name, f"axis {self.axis} must be an axis of {x.describe()}")
        return (x._replace(weak=False),)

    def impl(self, x: Any, permutation: Any) -> Any:
        return np.take_along_axis(x, permutation, axis=self.axis)

    def lower(self, lo: Any, x: Any, permutation: Any) -> Any:
        return lo.jnp.take_along_axis(x, permutation, axis=self.axis, mode="clip")

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        dx = ts[0]
        if dx is None:
            return [None]
        return [lax.apply_permutation(dx, xs[1], self.axis)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        if active[1]:
            raise lax.not_linear(self, "the permutation")
        if ct is None:
            return [None, None]
        inverse = lax.argsort(xs[1], self.axis)
        return [lax.apply_permutation(ct, inverse, self.axis), None]


@primitive
class SearchSorted(TensorPrimitive):
    """The int64 positions at which ``values`` would be inserted into the sorted 1-D
    ``sorted_values`` to keep it sorted: before equal entries (``side="left"``) or after
    them (``"right"``); NaNs sort last, as in numpy. Integer output: no derivative."""

    name = "searchsorted"
    side: str

    def infer(self) -> tuple[Meta]:
        sorted_values, values = self.inputs
        for meta, what in ((sorted_values, "sorted operand"), (values, "values")):
            check_static(self.name, meta)
            check_kind(self.name, meta, "bif", what)
        if self.side not in ("left", "right"):
            raise ParameterError(self.name, f"side must be 'left' or 'right', got {self.side!r}")
        if sorted_values.ndim != 1:
            raise ShapeError(
                self.name, f"the sorted operand must be 1-D, got shape {sorted_values.shape}"
            )
        if sorted_values.dtype != values.dtype:
            raise DTypeError(
                self.name,
                f"operands must share a dtype, got {sorted_values.dtype} and {values.dtype}",
            )
        return (Meta(values.shape, int64),)

    def lower(self, lo: Any, sorted_values: Any, values: Any) -> Any:
        positions = lo.jnp.searchsorted(sorted_values, values, side=self.side)
        return positions.astype("int64")

    def impl(self, sorted_values: Any, values: Any) -> Any:
        positions = np.searchsorted(sorted_values, values, side=self.side)  # type: ignore[call-overload]
        return np.asarray(positions, dtype=np.int64)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        if dims[0] is None:  # one sorted operand: the batch is more values
            return rebind(self, list(xs)), [dims[1]]
        return loop(self, xs, dims)
