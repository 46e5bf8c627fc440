"""Memory layouts of an einsum program's intermediates, chosen for the step reading them.

A ``dot_general`` plans its product from its own operands' layout: which views of them
are matrices without a copy. Its result's layout is a free choice (the values and the
axis order are the same), and it decides what the next contraction of a tensor network
copies: an MPS environment multiplied into a site tensor can be written ``[d, c, e]``,
which the contraction with the conjugate site (over ``d`` and ``e``) must copy, or
``[e, d, c]``, which it reads as a matrix as it is (copying the other site only).
:func:`run` evaluates a lowered program once, planning each ``dot_general`` that one
other ``dot_general`` reads (whose other operand exists by then) for the fewest
elements copied by the two together (:func:`tenferro.ops.dot_plans.for_reader`), from
the strides it meets.

The kernels it returns for later runs check the strides they were planned for and fall
back to the primitive's own evaluation (planned per layout) for operands of any other
layout: layouts change speed, never values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro.ops import dot_plans
from tenferro.ops.contraction import DotGeneral

__all__ = ["run"]

Strides = tuple[int, ...]


class _Checked:
    """A ``dot_general`` plan run on operands of the strides it was chosen for; the
    primitive's own evaluation for any others."""

    __slots__ = ("fallback", "lhs_strides", "plan", "rhs_strides")

    def __init__(self, plan: Any, strides: tuple[Strides, Strides], fallback: Any) -> None:
        self.plan, self.fallback = plan, fallback
        self.lhs_strides, self.rhs_strides = strides

    def __call__(self, lhs: Any, rhs: Any) -> Any:
        if lhs.strides == self.lhs_strides and rhs.strides == self.rhs_strides:
            return self.plan(lhs, rhs)
        return self.fallback(lhs, rhs)


def run(
    instructions: Sequence[tuple[Any, tuple[int, ...], tuple[int, ...]]],
    values: list[Any],
    default: Any,
) -> tuple[tuple[Any, tuple[int, ...], tuple[int, ...]], ...]:
    """Evaluate a program on the operand arrays ``values`` (results appended, freed
    slots emptied, as a program runs) and return ``(kernel, argument slots, slots to
    free)`` per instruction for later runs: ``default(op)`` (the primitive's
    evaluation), except for a ``dot_general`` whose result's layout a following
    ``dot_general`` reads with fewer copies (see the module docstring)."""
    readers: dict[int, list[tuple[int, int]]] = {}
    for step, (_, args, _) in enumerate(instructions):
        for position, a in enumerate(args):
            readers.setdefault(a, []).append((step, position))
    strides: list[Strides | None] = [getattr(v, "strides", None) for v in values]
    found = []
    for op, args, free in instructions:
        kernel = default(op)
        arrays = [values[a] for a in args]
        if type(op) is DotGeneral and all(type(a) is np.ndarray for a in arrays):
            reader = _consumer(instructions, readers.get(len(values), ()), strides, op)
            if reader is not None:
                known = (arrays[0].strides, arrays[1].strides)
                chosen = _planned(op, known, reader)
                if chosen is not None:
                    kernel = _Checked(chosen, known, kernel)
        result = kernel(*arrays)
        values.append(result)
        strides.append(getattr(result, "strides", None))
        for slot in free:
            values[slot] = None
        found.append((kernel, args, free))
    return tuple(found)


def _planned(op: DotGeneral, known: tuple[Strides, Strides], reader: Any) -> Any:
    """The plan of ``op`` for operands of strides ``known`` and its ``reader``; ``None``
    when that is the plan ``op`` chooses alone, or ``op`` evaluates otherwise (an outer
    product, data-dependent extents)."""
    lhs, rhs = op.inputs
    strategy = dot_plans.for_operands(op._numbers(), lhs, rhs)
    if strategy is dot_plans.GENERAL or type(strategy) in (int, str):
        return None
    return dot_plans.for_reader(_problem(op, *known), reader)


def _problem(op: DotGeneral, lhs_strides: Any, rhs_strides: Any) -> dot_plans.Problem:
    lhs, rhs = op.inputs
    return dot_plans.Problem(
        op._numbers(),
        lhs.shape,
        lhs_strides,
        rhs.shape,
        rhs_strides,
        lhs.dtype.itemsize,
        lhs.dtype.kind in "fc",
    )


def _consumer(
    instructions: Sequence[tuple[Any, tuple[int, ...], tuple[int, ...]]],
    readers: Sequence[tuple[int, int]],
    strides: list[Strides | None],
    op: DotGeneral,
) -> Any:
    """The elements the one ``dot_general`` reading ``op``'s result copies, as a function
    of that result's strides; ``None`` when another number of steps read it, the reader
    is not a ``dot_general``, or its other operand's layout is not known yet."""
    if len(readers) != 1:
        return None
    step, position = readers[0]
    reader, args, _ = instructions[step]
    if type(reader) is not DotGeneral or args[0] == args[1]:
        return None
    strategy = dot_plans.for_operands(reader._numbers(), *reader.inputs)
    if strategy is dot_plans.GENERAL or type(strategy) in (int, str):
        return None  # an outer product: no matrices to view
    other = args[1 - position]
    if other >= len(strides) or strides[other] is None:
        return None  # written later, and planned then for this result's layout
    other_strides = strides[other]
    meta = op.outputs[0]
    if meta.dtype != reader.inputs[position].dtype:
        return None

    def copies(result: Strides) -> int:
        pair = (result, other_strides) if position == 0 else (other_strides, result)
        return dot_plans.copies(_problem(reader, *pair))

    return copies
