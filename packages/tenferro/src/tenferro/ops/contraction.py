"""``dot_general``: StableHLO / ``jax.lax.dot_general`` semantics.

Contract ``lhs_contracting[i]`` with ``rhs_contracting[i]``, pair the batch axes;
the output is batch axes (in ``lhs_batch`` order), then the lhs free axes, then
the rhs free axes (each in ascending order). No conjugation: complex products are
plain. Evaluation is one (batched) matrix product of views of the operands, planned
once per instance by :mod:`tenferro.ops.dot_plans`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import algebra, lax
from tenferro.core.checks import check_kind
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.errors import AxisError, DTypeError, ShapeError
from tenferro.meta import Meta
from tenferro.ops import dot_plans
from tenferro.ops.batching import move_axis, rebind
from tenferro.ops.dot_plans import free_axes

__all__ = ["DotGeneral"]

_FUNCTION = dot_plans.Function
_GENERAL = dot_plans.GENERAL

_STRUCTURES: DictCache[Any, Any] = DictCache(4096, "dot_general structures")
"""(dimension numbers, operand ranks) -> the validated axis structure ``infer`` reads, so
an instance of a never-seen shape only checks and collects extents."""


def _ranges_like(*groups: Sequence[int]) -> list[tuple[int, ...]]:
    """Consecutive index ranges with the lengths of ``groups``."""
    start, out = 0, []
    for group in groups:
        out.append(tuple(range(start, start + len(group))))
        start += len(group)
    return out


@primitive
class DotGeneral(TensorPrimitive):
    conj_commutes = True
    name = "dot_general"
    extent_generic = True  # the rules read ranks and dimension numbers only

    def extent_facts(self) -> Any:
        return ()  # its derivative programs hold no extent

    def any_extent_kernel(self) -> Any:
        """The evaluation plan itself when it reads no extent (a ``dot`` of two matrices
        or of transposed views, a ``matmul`` of stacks: run as planned, without looking
        at the layout), ``impl`` for an outer product, else ``impl``'s batched matmul
        with the extents read from the arrays (:func:`~tenferro.ops.dot_plans.any_extent`)."""
        plan = self._prepared
        if plan is None:
            plan = dot_plans.for_operands(self._numbers(), *self.inputs)
            object.__setattr__(self, "_prepared", plan)
        kernel = dot_plans.any_extent(
            plan, self._numbers(), self.inputs[0].ndim, self.inputs[1].ndim
        )
        return self.impl if kernel is None else kernel

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        (lhs, rhs), (dl, dr) = xs, dims
        nb = len(self.lhs_batch)

        def shifted(axes: tuple[int, ...], by: int) -> tuple[int, ...]:
            return tuple(a + by for a in axes)

        lc, rc, lb, rb = self.lhs_contracting, self.rhs_contracting, self.lhs_batch, self.rhs_batch
        if dl is not None:
            lhs, lc, lb = move_axis(lhs, dl, 0), shifted(lc, 1), shifted(lb, 1)
        if dr is not None:
            rhs, rc, rb = move_axis(rhs, dr, 0), shifted(rc, 1), shifted(rb, 1)
        if dl is not None and dr is not None:
            # The batch axis pairs up as one more batch dimension (output axis 0).
            (out,) = rebind(
                self,
                [lhs, rhs],
                lhs_contracting=lc,
                rhs_contracting=rc,
                lhs_batch=(0, *lb),
                rhs_batch=(0, *rb),
            )
            return [out], [0]
        (out,) = rebind(
            self, [lhs, rhs], lhs_contracting=lc, rhs_contracting=rc, lhs_batch=lb, rhs_batch=rb
        )
        if dl is not None:
            return [out], [nb]  # lhs's first free axis
        lhs_free = self.inputs[0].ndim - len(self.lhs_contracting) - nb
        return [out], [nb + lhs_free]  # rhs's first free axis

    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()

    def infer(self) -> tuple[Meta]:
        lhs, rhs = self.inputs
        name = self.name
        if lhs.dtype != rhs.dtype:
            raise DTypeError(name, f"operands must have one dtype, got {lhs.dtype} and {rhs.dtype}")
        check_kind(name, lhs, "ifc")
        key = (self._numbers(), lhs.ndim, rhs.ndim)
        structure = _STRUCTURES.get(key)
        if structure is None:  # validated once per dimension numbers and ranks
            structure = self._structure()
            _STRUCTURES.put(key, structure)
        pairs, source = structure
        for kind, a, b in pairs:
            if lhs.shape[a] != rhs.shape[b] or (
                (lhs.dynamic or rhs.dynamic) and (a in lhs.dynamic) != (b in rhs.dynamic)
            ):
                if (a in lhs.dynamic) != (b in rhs.dynamic):
                    raise ShapeError(
                        name, f"{kind} axes {a} and {b}: only one has a data-dependent extent"
                    )
                raise ShapeError(
                    name,
                    f"{kind} axis {a} of lhs {lhs.shape} (extent {lhs.shape[a]}) does not "
                    f"match axis {b} of rhs {rhs.shape} (extent {rhs.shape[b]})",
                )
        lhs_shape, rhs_shape = lhs.shape, rhs.shape
        shape = tuple([lhs_shape[a] if side == 0 else rhs_shape[a] for side, a in source])
        dynamic: tuple[int, ...] = ()
        if lhs.dynamic or rhs.dynamic:
            dynamic = tuple(
                i
                for i, (side, a) in enumerate(source)
                if a in (lhs.dynamic if side == 0 else rhs.dynamic)
            )
        return (Meta(shape, lhs.dtype, lhs.weak and rhs.weak, dynamic),)

    def _structure(self) -> tuple[tuple[tuple[str, int, int], ...], tuple[tuple[int, int], ...]]:
        """The validated axis structure (extent-free): the paired (kind, lhs axis, rhs axis)
        and, per output axis, its (side, axis) source (side 0 = lhs, 1 = rhs)."""
        lhs, rhs = self.inputs
        name = self.name
        for side, meta, contracting, batch in (
            ("lhs", lhs, self.lhs_contracting, self.lhs_batch),
            ("rhs", rhs, self.rhs_contracting, self.rhs_batch),
        ):
            axes = (*contracting, *batch)
            if any(not 0 <= a < meta.ndim for a in axes):
                raise AxisError(name, f"{side} axes {axes} out of range for rank {meta.ndim}")
            if len(set(axes)) != len(axes):
                raise AxisError(
                    name, f"{side} contracting {contracting} and batch {batch} axes repeat an axis"
                )
        if len(self.lhs_contracting) != len(self.rhs_contracting):
            raise AxisError(
                name,
                f"contracting axes {self.lhs_contracting} and {self.rhs_contracting} differ "
                f"in number",
            )
        if len(self.lhs_batch) != len(self.rhs_batch):
            raise AxisError(
                name, f"batch axes {self.lhs_batch} and {self.rhs_batch} differ in number"
            )
        pairs = tuple(
            (kind, a, b)
            for kind, left, right in (
                ("contracting", self.lhs_contracting, self.rhs_contracting),
                ("batch", self.lhs_batch, self.rhs_batch),
            )
            for a, b in zip(left, right, strict=True)
        )
        lhs_free = free_axes(lhs.ndim, self.lhs_contracting, self.lhs_batch)
        rhs_free = free_axes(rhs.ndim, self.rhs_contracting, self.rhs_batch)
        source = (
            tuple((0, a) for a in self.lhs_batch)
            + tuple((0, a) for a in lhs_free)
            + tuple((1, a) for a in rhs_free)
        )
        return pairs, source

    def lower(self, lo: Any, lhs: Any, rhs: Any) -> Any:
        numbers = ((self.lhs_contracting, self.rhs_contracting), (self.lhs_batch, self.rhs_batch))
        # HIGHEST: full-precision products on every device (numpy's), never TF32/bf16 passes
        return lo.lax.dot_general(lhs, rhs, numbers, precision=lo.lax.Precision.HIGHEST)

    def impl(self, lhs: Any, rhs: Any) -> Any:
        plan = self._prepared
        if plan is None:  # how to evaluate: see tenferro.ops.dot_plans.for_operands
            plan = dot_plans.for_operands(self._numbers(), *self.inputs)
            object.__setattr__(self, "_prepared", plan)
        if type(plan) is _FUNCTION:  # two matrices, or two stacks of them
            return plan(lhs, rhs)
        if type(plan) is str:  # no contracted axis, batch axes: a batched outer product
            return np.einsum(plan, lhs, rhs)
        if type(plan) is int:  # no contracted or batch axis: an outer product
            return np.multiply(lhs.reshape(lhs.shape + (1,) * plan), rhs)
        if plan is _GENERAL:
            return dot_plans.general(self._numbers(), lhs, rhs)
        lhs_strides, rhs_strides = lhs.strides, rhs.strides
        if lhs_strides != plan.lhs_strides or rhs_strides != plan.rhs_strides:
            last = plan.last  # the plan of the layout met last (most often the only other)
            if last is not None and lhs_strides == last[0] and rhs_strides == last[1]:
                plan = last[2]
            else:
                plan = plan.for_layout(lhs_strides, rhs_strides)
        return plan(lhs, rhs)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (lhs, rhs), (dlhs, drhs) = xs, ts
        numbers = self._numbers()

        def product(a: Any, b: Any) -> Any:
            return lax.dot_general(a, b, *numbers)

        return [algebra.bilinear(product, lhs, rhs, dlhs, drhs)]

    def _numbers(self) -> tuple[tuple[int, ...], ...]:
        return (self.lhs_contracting, self.rhs_contracting, self.lhs_batch, self.rhs_batch)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        lhs, rhs = xs
        if active[0] and active[1]:
            raise lax.not_linear(self, "both operands")
        lhs_meta, rhs_meta = self.inputs
        if active[0]:
            return [
                _transpose_lhs(ct, lax.conj(rhs), lhs_meta.ndim, rhs_meta.ndim, *self._numbers()),
                None,
            ]
        return [None, _transpose_rhs(ct, lax.conj(lhs), lhs_meta.ndim, rhs_meta.ndim, self)]


def _transpose_rhs(
    ct: RuleValue, lhs: RuleValue, lhs_ndim: int, rhs_ndim: int, op: DotGeneral
) -> RuleValue:
    """The cotangent of the rhs given the output cotangent and the (conjugated) lhs:
    ``dot_general(lhs, ct)`` (axes: the rhs's batch, contracting in the lhs's order,
    free) or ``dot_general(ct, lhs)`` (batch, free, contracting), whichever comes out in
    the rhs's axis order, so no transpose follows (a matrix product's ``lhs^H @ ct``, or
    ``ct^T @ lhs^*`` for a transposed rhs); else the first, transposed."""
    lhs_kept = free_axes(lhs_ndim, op.lhs_contracting, op.lhs_batch)
    rhs_kept = free_axes(rhs_ndim, op.rhs_contracting, op.rhs_batch)
    ct_batch, ct_lhs, _ = _ranges_like(op.lhs_batch, lhs_kept, rhs_kept)
    contracting_by_lhs = [op.rhs_contracting[i] for i in np.argsort(op.lhs_contracting)]
    order = [*op.rhs_batch, *contracting_by_lhs, *rhs_kept]
    if order != sorted(order) and [*op.rhs_batch, *rhs_kept, *contracting_by_lhs] == sorted(order):
        return lax.dot_general(ct, lhs, ct_lhs, lhs_kept, ct_batch, op.lhs_batch)
    product = lax.dot_general(lhs, ct, lhs_kept, ct_lhs, op.lhs_batch, ct_batch)
    return lax.transpose(product, tuple(int(a) for a in np.argsort(order)))


def _transpose_lhs(
    ct: RuleValue,
    other: RuleValue,
    ndim: int,
    other_ndim: int,
    contracting: tuple[int, ...],
    other_contracting: tuple[int, ...],
    batch: tuple[int, ...],
    other_batch: tuple[int, ...],
) -> RuleValue:
    """The cotangent of the lhs given the output cotangent and the (conjugated) rhs:
    ``dot_general(ct, other)`` (axes: the lhs's batch, free, contracting in the rhs's
    order; JAX's ``_dot_general_transpose_lhs``) or ``dot_general(other, ct)`` (batch,
    contracting, free), whichever comes out in the lhs's axis order, so no transpose
    follows; else the first, transposed."""
    kept = free_axes(ndim, contracting, batch)
    other_kept = free_axes(other_ndim, other_contracting, other_batch)
    ct_batch, _, ct_other = _ranges_like(batch, kept, other_kept)
    contracting_by_other = [contracting[i] for i in np.argsort(other_contracting)]
    order = [*batch, *kept, *contracting_by_other]
    if order != sorted(order) and [*batch, *contracting_by_other, *kept] == sorted(order):
        return lax.dot_general(other, ct, other_kept, ct_other, other_batch, ct_batch)
    product = lax.dot_general(ct, other, ct_other, other_kept, ct_batch, other_batch)
    return lax.transpose(product, tuple(int(a) for a in np.argsort(order)))
