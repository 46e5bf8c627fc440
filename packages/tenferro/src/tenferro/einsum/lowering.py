"""Lowering a planned einsum to a straight-line program of existing primitives.

Per operand: squeeze broadcast size-1 ellipsis axes, take diagonals of repeated labels
(``extract_diag``), sum labels no other term needs (``reduce_sum``). Per pairwise step:
``mul`` when nothing is summed (Hadamard products after a ``transpose``, row and column
scalings after ``broadcast_in_dim``), else ``dot_general`` with batch (shared, kept),
contracted (shared, not kept) and free labels -- outer and batched outer products too,
with no contracted label, when the product's label order allows (it then writes them
laid out as the output wants). Finally ``transpose``
to the output order and ``embed_diag`` for repeated output labels. The primitive
instances are made once from the operands' metas, so running a cached program only
binds them (no planning, no validation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tenferro.concrete import borrowed_roots, owned_array
from tenferro.core import kinds
from tenferro.core.bind import bind1
from tenferro.core.primitive import TensorPrimitive
from tenferro.einsum import layouts
from tenferro.einsum.parse import Equation
from tenferro.einsum.planners.network import Pair
from tenferro.errors import AllocationError
from tenferro.ieee import quiet, restore
from tenferro.meta import Meta
from tenferro.ops.contraction import DotGeneral
from tenferro.ops.elementwise import Mul
from tenferro.ops.reduction import ReduceSum
from tenferro.ops.structural import BroadcastInDim, EmbedDiag, ExtractDiag, Reshape, Transpose

__all__ = ["Builder", "Program", "finish", "lower", "prepare_operands"]

Instruction = tuple[TensorPrimitive, tuple[int, ...], tuple[int, ...]]
"""``(primitive, argument slots, slots to free afterwards)``; the result takes the next slot."""


class Program:
    """A lowered einsum: run it on operands whose metas match those it was lowered for."""

    __slots__ = ("_kernels", "instructions", "result")

    def __init__(self, instructions: tuple[Instruction, ...], result: int) -> None:
        self.instructions = instructions
        self.result = result
        self._kernels: tuple[tuple[Any, tuple[int, ...], tuple[int, ...]], ...] | None = None

    def run(self, operands: Sequence[Any]) -> Any:
        """The result for ``operands`` (tensors of one kind, as :func:`einsum` passes
        them): each primitive bound in turn, or, for concrete tensors, which record
        nothing, evaluated on their arrays in one loop (what binding each would do)."""
        kind = type(operands[0])
        if kind is kinds._concrete or kind is kinds._borrowed:
            return self._evaluate(operands)
        values: list[Any] = list(operands)
        for op, args, free in self.instructions:
            values.append(bind1(op, [values[a] for a in args]))
            for slot in free:
                values[slot] = None
        return values[self.result]

    def _evaluate(self, operands: Sequence[Any]) -> Any:
        """The concrete result: the primitives' evaluations on the operands' arrays,
        floating-point warnings silenced once around all of them (as around each)."""
        arrays = [o._value for o in operands]
        token = quiet()
        try:
            result = self.evaluate(arrays)
        finally:
            restore(token)
        if getattr(result, "base", None) is not None:  # a view: never of a caller's array
            result = owned_array(result, borrowed_roots(operands))
        return kinds._concrete._wrap(result, self.instructions[-1][0].outputs[0].weak)

    def evaluate(self, arrays: Sequence[Any]) -> Any:
        """The result array for operand arrays (each instruction's kernel in turn,
        intermediates freed after their last use)."""
        kernels = self._kernels
        values = list(arrays)
        try:
            if kernels is None:  # each result laid out for the step reading it
                self._kernels = layouts.run(self.instructions, values, _kernel)
            else:
                for kernel, args, free in kernels:
                    values.append(kernel(*[values[a] for a in args]))
                    for slot in free:
                        values[slot] = None
        except MemoryError as error:
            op = self.instructions[len(values) - len(arrays)][0]
            raise AllocationError(op.name, str(error)) from None
        return values[self.result]


def _kernel(op: TensorPrimitive) -> Any:
    """``op``'s evaluation as a function of its input arrays."""
    return op.impl if op.direct_impl else _evaluation(op)


def _evaluation(op: TensorPrimitive) -> Any:
    """``op``'s first output as a function of its input arrays."""

    def evaluate(*arrays: Any) -> Any:
        return op.eval(arrays, None)[0]

    return evaluate


class Builder:
    def __init__(self, metas: Sequence[Meta], sizes: dict[str, int]) -> None:
        self.metas: list[Meta] = list(metas)
        self.code: list[tuple[TensorPrimitive, tuple[int, ...]]] = []
        self.sizes = sizes

    def extent(self, label: str) -> int:
        return self.sizes[label]

    def emit(self, cls: Any, args: tuple[int, ...], **params: Any) -> int:
        op = cls.make(tuple(self.metas[a] for a in args), **params)
        self.code.append((op, args))
        self.metas.append(op.outputs[0])
        return len(self.metas) - 1

    def finish(self, result: int, keep: int) -> Program:
        last_use: dict[int, int] = {}
        for position, (_, args) in enumerate(self.code):
            for a in args:
                last_use[a] = position
        instructions = []
        for position, (op, args) in enumerate(self.code):
            free = tuple(
                sorted({a for a in args if last_use[a] == position and a != result and a >= keep})
            )
            instructions.append((op, args, free))
        return Program(tuple(instructions), result)


def lower(equation: Equation, metas: Sequence[Meta], ssa: Sequence[Pair]) -> Program:
    """The program computing ``equation`` for operands of ``metas`` along the binary SSA
    path ``ssa``."""
    builder, slots, terms, needed = prepare_operands(equation, metas)
    output = equation.output
    for step, (a, b) in enumerate(ssa):
        left, right = terms[a], terms[b]
        for label in set(left):
            needed[label] -= 1
        for label in set(right):
            needed[label] -= 1
        last = step == len(ssa) - 1
        slot, labels = _pair(builder, slots[a], left, slots[b], right, needed, output, last)
        for label in set(labels):
            needed[label] = needed.get(label, 0) + 1
        slots.append(slot)
        terms.append(labels)
    return finish(builder, slots[-1], terms[-1], output, needed, len(metas))


def prepare_operands(
    equation: Equation, metas: Sequence[Meta]
) -> tuple[Builder, list[int], list[str], dict[str, int]]:
    """A builder holding each operand's own reductions (broadcast size-1 axes squeezed,
    diagonals taken, labels no other term needs summed): the builder, each operand's
    slot and labels after them, and how many terms (the output counted) need each label."""
    builder = Builder(metas, equation.sizes)
    output = equation.output
    needed: dict[str, int] = {}
    for labels in equation.inputs:
        for label in set(labels):
            needed[label] = needed.get(label, 0) + 1
    slots: list[int] = []
    terms: list[str] = []
    for i, labels in enumerate(equation.inputs):
        slot, labels = _single(builder, i, labels, equation.broadcast[i], needed, output)
        slots.append(slot)
        terms.append(labels)
    return builder, slots, terms, needed


def finish(
    builder: Builder, slot: int, labels: str, output: str, needed: dict[str, int], count: int
) -> Program:
    """The program whose result is ``slot`` (of ``labels``) arranged as ``output``."""
    return builder.finish(_finish(builder, slot, labels, output, needed), count)


def _single(
    builder: Builder,
    slot: int,
    labels: str,
    broadcast: frozenset[int],
    needed: dict[str, int],
    output: str,
) -> tuple[int, str]:
    if broadcast:
        meta = builder.metas[slot]
        shape = tuple(n for axis, n in enumerate(meta.shape) if axis not in broadcast)
        slot = builder.emit(Reshape, (slot,), shape=shape)
        for label in {labels[axis] for axis in broadcast}:
            needed[label] -= 1
        labels = "".join(c for axis, c in enumerate(labels) if axis not in broadcast)
    while len(set(labels)) != len(labels):
        seen: dict[str, int] = {}
        for axis, label in enumerate(labels):
            if label in seen:
                slot = builder.emit(ExtractDiag, (slot,), axis_a=seen[label], axis_b=axis)
                labels = labels[:axis] + labels[axis + 1 :]
                break
            seen[label] = axis
    alone = tuple(axis for axis, c in enumerate(labels) if needed[c] == 1 and c not in output)
    if alone:
        slot = builder.emit(ReduceSum, (slot,), axes=alone)
        for axis in alone:
            needed[labels[axis]] -= 1
        labels = "".join(c for axis, c in enumerate(labels) if axis not in alone)
    return slot, labels


def _pair(
    builder: Builder,
    a: int,
    left: str,
    b: int,
    right: str,
    needed: dict[str, int],
    output: str,
    last: bool,
) -> tuple[int, str]:
    def kept(label: str) -> bool:
        return label in output or needed[label] > 0

    # Labels only one side has and nobody needs are summed first (rare after preprocessing).
    a, left = _sum_unneeded(builder, a, left, right, kept)
    b, right = _sum_unneeded(builder, b, right, left, kept)
    if _swapped(left, right, kept, output, last):
        a, left, b, right = b, right, a, left
    shared = [c for c in left if c in right]
    batch = [c for c in shared if kept(c)]
    contracted = [c for c in shared if not kept(c)]
    if not contracted:  # Hadamard, outer and batched outer products: a broadcast mul
        if set(left) == set(right):
            labels = left
        else:  # the output's order, so the product is written once, already laid out
            union = dict.fromkeys(left + right)
            labels = "".join(c for c in dict.fromkeys(output) if c in union)
            labels += "".join(c for c in union if c not in labels)
        outer = _outer(builder, a, left, b, right, labels)
        if outer is not None:
            return outer, labels
        a = _arrange(builder, a, left, labels)
        b = _arrange(builder, b, right, labels)
        return builder.emit(Mul, (a, b)), labels
    slot = builder.emit(
        DotGeneral,
        (a, b),
        lhs_contracting=tuple(left.index(c) for c in contracted),
        rhs_contracting=tuple(right.index(c) for c in contracted),
        lhs_batch=tuple(left.index(c) for c in batch),
        rhs_batch=tuple(right.index(c) for c in batch),
    )
    labels = (
        "".join(batch)
        + "".join(c for c in left if c not in shared)
        + "".join(c for c in right if c not in shared)
    )
    return slot, labels


def _swapped(left: str, right: str, kept: Any, output: str, last: bool) -> bool:
    """Whether the last contraction takes ``right`` as its lhs: when that writes the
    product in the output's order and the other way does not (no transpose follows).
    Decided on labels alone, so a program lowered at some extents serves all; the
    product's orientation in memory is ``dot_general``'s own choice at its extents."""
    if not last or not any(c in right and not kept(c) for c in left):
        return False
    unique = "".join(dict.fromkeys(output))
    straight = _product_labels(left, right, kept) == unique
    return not straight and _product_labels(right, left, kept) == unique


def _product_labels(left: str, right: str, kept: Any) -> str:
    """The labels of ``dot_general(left, right)`` (batch, lhs free, rhs free)."""
    batch = "".join(c for c in left if c in right and kept(c))
    return (
        batch
        + "".join(c for c in left if c not in right)
        + "".join(c for c in right if c not in left)
    )


def _outer(builder: Builder, a: int, left: str, b: int, right: str, labels: str) -> int | None:
    """An outer product (each side has labels the other lacks; shared ones are batch
    labels) as a ``dot_general`` without contracted axes writing ``labels`` in order:
    its kernels beat a broadcast multiply (see ``DotGeneral._plan``). ``None`` when
    ``labels`` does not read batch, one side's, then the other side's labels (a
    ``dot_general``'s output order), or the operands are not of one float or complex
    dtype: the caller multiplies broadcast views instead."""
    first, second = builder.metas[a], builder.metas[b]
    if first.dtype != second.dtype or first.dtype.kind not in "fc":
        return None
    batch = "".join(c for c in labels if c in left and c in right)
    only_left = "".join(c for c in labels if c not in right)
    only_right = "".join(c for c in labels if c not in left)
    if not only_left or not only_right:
        return None  # a row or column scaling: the multiply is as fast, with less overhead
    if labels == batch + only_right + only_left:
        a, left, b, right, only_left, only_right = b, right, a, left, only_right, only_left
    elif labels != batch + only_left + only_right:
        return None
    a = _arrange(builder, a, left, batch + only_left)
    b = _arrange(builder, b, right, batch + only_right)
    nb = tuple(range(len(batch)))
    return builder.emit(
        DotGeneral, (a, b), lhs_contracting=(), rhs_contracting=(), lhs_batch=nb, rhs_batch=nb
    )


def _arrange(builder: Builder, slot: int, labels: str, target: str) -> int:
    """``slot`` (axes ``labels``) laid out as ``target``: a transpose when it has every
    label, else a ``broadcast_in_dim`` to the full shape."""
    if labels == target:
        return slot
    if len(labels) == len(target):
        return builder.emit(Transpose, (slot,), permutation=tuple(labels.index(c) for c in target))
    shape = tuple(builder.extent(c) for c in target)
    return builder.emit(
        BroadcastInDim, (slot,), shape=shape, dims=tuple(target.index(c) for c in labels)
    )


def _sum_unneeded(
    builder: Builder, slot: int, labels: str, other: str, kept: Any
) -> tuple[int, str]:
    axes = tuple(axis for axis, c in enumerate(labels) if c not in other and not kept(c))
    if not axes:
        return slot, labels
    slot = builder.emit(ReduceSum, (slot,), axes=axes)
    return slot, "".join(c for axis, c in enumerate(labels) if axis not in axes)


def _finish(builder: Builder, slot: int, labels: str, output: str, needed: dict[str, int]) -> int:
    unique = "".join(dict.fromkeys(output))
    extra = tuple(axis for axis, c in enumerate(labels) if c not in unique)
    if extra:
        slot = builder.emit(ReduceSum, (slot,), axes=extra)
        labels = "".join(c for c in labels if c in unique)
    if labels != unique:
        slot = builder.emit(Transpose, (slot,), permutation=tuple(labels.index(c) for c in unique))
    current = list(unique)
    for position, label in enumerate(output):
        if position < len(current) and current[position] == label:
            continue
        first = output.index(label)
        slot = builder.emit(EmbedDiag, (slot,), axis_a=first, axis_b=position)
        current.insert(position, label)
    return slot
