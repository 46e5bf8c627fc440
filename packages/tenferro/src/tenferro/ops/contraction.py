"""``dot_general``: StableHLO / ``jax.lax.dot_general`` semantics.

Contract ``lhs_contracting[i]`` with ``rhs_contracting[i]``, pair the batch axes;
the output is batch axes (in ``lhs_batch`` order), then the lhs free axes, then
the rhs free axes (each in ascending order). No conjugation: complex products are
plain. Evaluation is one batched ``matmul`` after moving axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from computegraph import DictCache
from tenferro import algebra, lax
from tenferro.core.primitive import RuleValue, TensorPrimitive, Ts, Xs, check_kind, primitive
from tenferro.errors import AxisError, DTypeError, ShapeError
from tenferro.meta import Meta
from tenferro.ops import dot_plans
from tenferro.ops.batching import move_axis, rebind

__all__ = ["DotGeneral"]


class _Sentinel:
    """A named evaluation strategy (never mistaken for an outer product's plan)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_PLANNED = _Sentinel("planned from the operands' layout")
_GENERAL = _Sentinel("general: data-dependent extents")
_FUNCTION = dot_plans.Function
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # numpy.einsum's

_STRATEGIES: DictCache[Any, Any] = DictCache(4096, "dot_general evaluation strategies")
"""(dimension numbers, operand ranks) -> the extent-free part of an instance's evaluation
plan (``DotGeneral._strategy``): a never-seen shape only collects its extents."""

_STRUCTURES: DictCache[Any, Any] = DictCache(4096, "dot_general structures")
"""(dimension numbers, operand ranks) -> the validated axis structure ``infer`` reads, so
an instance of a never-seen shape only checks and collects extents."""


def _free(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> tuple[int, ...]:
    used = set(contracting) | set(batch)
    return tuple(a for a in range(ndim) if a not in used)


def _ranges_like(*groups: Sequence[int]) -> list[tuple[int, ...]]:
    """Consecutive index ranges with the lengths of ``groups``."""
    start, out = 0, []
    for group in groups:
        out.append(tuple(range(start, start + len(group))))
        start += len(group)
    return out


@primitive
class DotGeneral(TensorPrimitive):
    name = "dot_general"
    extent_generic = True  # the rules read ranks and dimension numbers only

    def extent_facts(self) -> Any:
        return ()  # its derivative programs hold no extent

    def any_extent_kernel(self) -> Any:
        """The evaluation plan itself when it reads no extent (a ``dot`` of two matrices
        or of transposed views, a ``matmul`` of stacks: run as planned, without looking
        at the layout), ``impl`` for an outer product, else ``impl``'s batched matmul
        with the extents read from the arrays."""
        plan = self._prepared
        if plan is None:
            plan = self._plan()
            object.__setattr__(self, "_prepared", plan)
        if type(plan) is dot_plans.Function:
            return plan
        if not isinstance(plan, dot_plans.Planned):
            return self.impl
        lhs, rhs = self.inputs
        lhs_free = _free(lhs.ndim, self.lhs_contracting, self.lhs_batch)
        rhs_free = _free(rhs.ndim, self.rhs_contracting, self.rhs_batch)
        lhs_perm = (*self.lhs_batch, *lhs_free, *self.lhs_contracting)
        rhs_perm = (*self.rhs_batch, *self.rhs_contracting, *rhs_free)
        lhs_keep = lhs_perm == tuple(range(lhs.ndim))
        rhs_keep = rhs_perm == tuple(range(rhs.ndim))
        batch, contracting = self.lhs_batch, self.lhs_contracting
        prod, matmul = math.prod, np.matmul

        def run(a: Any, b: Any) -> Any:
            ls, rs = a.shape, b.shape
            lf, rf = [ls[i] for i in lhs_free], [rs[i] for i in rhs_free]
            n = [ls[i] for i in batch]
            size, k = prod(n), prod([ls[i] for i in contracting])
            a = (a if lhs_keep else a.transpose(lhs_perm)).reshape(size, prod(lf), k)
            b = (b if rhs_keep else b.transpose(rhs_perm)).reshape(size, k, prod(rf))
            return matmul(a, b).reshape((*n, *lf, *rf))

        return run

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
        lhs_free = _free(lhs.ndim, self.lhs_contracting, self.lhs_batch)
        rhs_free = _free(rhs.ndim, self.rhs_contracting, self.rhs_batch)
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
        if plan is None:
            plan = self._plan()
            object.__setattr__(self, "_prepared", plan)
        if type(plan) is _FUNCTION:  # two matrices, or two stacks of them
            return plan(lhs, rhs)
        if type(plan) is str:  # no contracted axis, batch axes: a batched outer product
            return np.einsum(plan, lhs, rhs)
        if type(plan) is int:  # no contracted or batch axis: an outer product
            return np.multiply(lhs.reshape(lhs.shape + (1,) * plan), rhs)
        if plan is _GENERAL:
            return self._general(lhs, rhs)
        lhs_strides, rhs_strides = lhs.strides, rhs.strides
        if lhs_strides != plan.lhs_strides or rhs_strides != plan.rhs_strides:
            last = plan.last  # the plan of the layout met last (most often the only other)
            if last is not None and lhs_strides == last[0] and rhs_strides == last[1]:
                plan = last[2]
            else:
                plan = plan.for_layout(lhs_strides, rhs_strides)
        return plan(lhs, rhs)

    def _plan(self) -> Any:
        """How to evaluate, from the static metas: a :mod:`~tenferro.ops.dot_plans`
        plan for operands in C order (the product of two matrices or stacks of them,
        one product of views, or a broadcast product; re-planned per layout for other
        operands), or ``_GENERAL`` for data-dependent extents. Without contracted axes
        (outer products, which a matmul would run as a product over an axis of extent
        1, several times slower): the rhs rank (one broadcast multiply) when there are
        no batch axes either, else ``numpy.einsum``'s subscripts (its two-operand loops
        are the fastest numpy has for a batched outer product, and ``opt_einsum`` runs
        them too)."""
        lhs, rhs = self.inputs
        if lhs.dynamic or rhs.dynamic:
            return _GENERAL
        key = (self._numbers(), lhs.ndim, rhs.ndim)
        strategy = _STRATEGIES.get(key)
        if strategy is None:  # decided once per dimension numbers and ranks
            strategy = self._strategy()
            _STRATEGIES.put(key, strategy)
        if strategy is not _PLANNED:
            return strategy
        itemsize = lhs.dtype.itemsize
        return dot_plans.plan(
            dot_plans.Problem(
                self._numbers(),
                lhs.shape,
                dot_plans.c_strides(lhs.shape, itemsize),
                rhs.shape,
                dot_plans.c_strides(rhs.shape, itemsize),
                itemsize,
                lhs.dtype.kind in "fc",
            ),
            c_order=True,
        )

    def _strategy(self) -> Any:
        """The extent-free part of :meth:`_plan`: an outer product's plan, else
        ``_PLANNED``."""
        lhs, rhs = self.inputs
        if not self.lhs_contracting and lhs.ndim + rhs.ndim <= len(_LETTERS):
            return self._outer_plan()
        return _PLANNED

    def _outer_plan(self) -> int | str:
        lhs, rhs = self.inputs
        if not self.lhs_batch:
            return rhs.ndim
        letters = iter(_LETTERS)
        left = [next(letters) for _ in range(lhs.ndim)]
        right = [next(letters) for _ in range(rhs.ndim)]
        for a, b in zip(self.lhs_batch, self.rhs_batch, strict=True):
            right[b] = left[a]
        batch = [left[a] for a in self.lhs_batch]
        lhs_free = [left[a] for a in _free(lhs.ndim, (), self.lhs_batch)]
        rhs_free = [right[a] for a in _free(rhs.ndim, (), self.rhs_batch)]
        out = "".join(batch + lhs_free + rhs_free)
        return f"{''.join(left)},{''.join(right)}->{out}"

    def _general(self, lhs: Any, rhs: Any) -> Any:
        """Evaluation from the arrays' actual shapes (data-dependent extents)."""
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
        lhs_free = _free(lhs.ndim, self.lhs_contracting, self.lhs_batch)
        rhs_free = _free(rhs.ndim, self.rhs_contracting, self.rhs_batch)
        batch_shape = tuple(lhs.shape[a] for a in self.lhs_batch)
        lhs_free_shape = tuple(lhs.shape[a] for a in lhs_free)
        rhs_free_shape = tuple(rhs.shape[a] for a in rhs_free)
        k = math.prod(lhs.shape[a] for a in self.lhs_contracting)
        a = np.transpose(lhs, (*self.lhs_batch, *lhs_free, *self.lhs_contracting)).reshape(
            (math.prod(batch_shape), math.prod(lhs_free_shape), k)
        )
        b = np.transpose(rhs, (*self.rhs_batch, *self.rhs_contracting, *rhs_free)).reshape(
            (math.prod(batch_shape), k, math.prod(rhs_free_shape))
        )
        return np.matmul(a, b).reshape(batch_shape + lhs_free_shape + rhs_free_shape)

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
    lhs_kept = _free(lhs_ndim, op.lhs_contracting, op.lhs_batch)
    rhs_kept = _free(rhs_ndim, op.rhs_contracting, op.rhs_batch)
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
    kept = _free(ndim, contracting, batch)
    other_kept = _free(other_ndim, other_contracting, other_batch)
    ct_batch, _, ct_other = _ranges_like(batch, kept, other_kept)
    contracting_by_other = [contracting[i] for i in np.argsort(other_contracting)]
    order = [*batch, *kept, *contracting_by_other]
    if order != sorted(order) and [*batch, *contracting_by_other, *kept] == sorted(order):
        return lax.dot_general(other, ct, other_kept, ct_other, other_batch, ct_batch)
    product = lax.dot_general(ct, other, ct_other, other_kept, ct_batch, other_batch)
    return lax.transpose(product, tuple(int(a) for a in np.argsort(order)))
