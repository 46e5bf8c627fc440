"""Derivatives shared across extents: one derivation per *extent class*, not per shape.

A primitive declared ``extent_generic`` (beside its rules, like ``ufunc``) has
derivative programs that depend on its parameters and its operands' ranks and dtypes,
never on their extents. The tape records every instance of one class (same primitive
type, parameters, operand ranks, dtypes and weak flags, same tracked positions) with
one graph: the first instance seen, marked ``RESPECIALIZABLE``. Its linear map and
transpose are derived (and compiled) once; a node of other extents runs them through
:func:`specialize`, which re-makes each instruction from its operands' actual metas
(``type(op).make(metas, **params)``, the shape rules alone) and caches the result by
extents. A never-seen shape then costs a few ``make`` calls instead of a linearisation,
a transposition and a compilation.

A class is admitted only when every instruction of its derivative programs can be
re-made that way: ``extent_generic`` or elementwise (``ufunc``) primitives with
operands, and cotangent accumulation (no constants, whose shapes nothing re-derives).
Primitives whose rules carry extents in parameters (``reshape``, ``slice``,
``reduce_sum``'s broadcast back) are not declared and stay derived per shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from computegraph import CompiledProgram, DictCache
from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.meta import Meta
from tidu import ADRuleError, linear_transpose
from tidu.eager import RESPECIALIZABLE, RecordedGraph, default_derivative_cache

__all__ = ["extent_class", "specialize"]

_CLASSES: DictCache[Any, Any] = DictCache(1024, "extent classes")
"""Extent class -> the recorded graph standing for it (its first instance), or
``False`` when its derivative programs are not extent-generic."""

_SPECIALIZED: DictCache[tuple[int, tuple[Any, ...]], Any] = DictCache(
    4096, "programs at other extents"
)
"""(id of a derivative program, operand extents) -> (the program, kept alive so its id
stays its own; the program re-instantiated at those extents)."""

_TEMPLATES: DictCache[int, Any] = DictCache(1024, "re-instantiation templates")
"""id of a derivative program -> (the program, its input metas, each instruction's
``make`` and parameters): what :func:`reinstantiate` reads, computed once."""


def extent_class(
    op: TensorPrimitive, active: tuple[int, ...], keys: tuple[str, ...]
) -> RecordedGraph | None:
    """The recorded graph every instance of ``op``'s extent class is recorded with
    (inputs named ``keys``, tracked positions ``active``), or ``None`` when ``op`` is
    not ``extent_generic``, has data-dependent extents, or its derivative programs are
    not re-instantiable."""
    if not op.extent_generic:
        return None
    inputs = op.inputs
    for meta in (*inputs, *op.outputs):
        if meta.dynamic:
            return None
    params = tuple((f, getattr(op, f)) for f in op._field_names if f != "inputs")
    key = (type(op), params, tuple((m.ndim, m.dtype, m.weak) for m in inputs), active)
    found = _CLASSES.get(key)
    if found is None:
        found = _admit(op, active, keys)
        _CLASSES.put(key, found)
    return found or None


def _admit(op: TensorPrimitive, active: tuple[int, ...], keys: tuple[str, ...]) -> Any:
    graph = RecordedGraph.from_primitive(op, keys).graph
    recorded = RecordedGraph(graph, keys, graph.output_keys(), derivative_signature=RESPECIALIZABLE)
    try:
        slots = tuple(range(len(recorded.output_keys)))
        linear = default_derivative_cache.derivative(recorded, slots, None, active).linear
        programs = (
            linear.graph,
            linear_transpose(linear, None).graph,
            default_derivative_cache.forward_derivative(recorded, active, None).linear.graph,
        )
    except ADRuleError:
        return False  # the tape saves everything; the error belongs to backward
    for program in programs:
        for node in program.operations:
            if not reinstantiable(node.operation):
                return False
    return recorded


def reinstantiable(operation: Any) -> bool:
    """Whether :func:`specialize` can re-make ``operation`` from its operands' metas."""
    if type(operation) is AddAny:
        return True
    return (
        isinstance(operation, TensorPrimitive)
        and bool(operation.inputs)
        and (operation.extent_generic or operation.ufunc is not None)
        and not any(m.dynamic for m in operation.inputs)
    )


def specialize(program: CompiledProgram, inputs: Sequence[Any]) -> CompiledProgram:
    """``program`` (a derivative program of an extent class's stand-in) for operands
    ``inputs``: itself at its own extents, else with every instruction re-made from its
    operands' metas (cached by extents)."""
    shapes = tuple([_shape(v) for v in inputs])
    key = (id(program), shapes)
    found = _SPECIALIZED.get(key)
    if found is None or found[0] is not program:
        found = (program, reinstantiate(program, inputs))
        _SPECIALIZED.put(key, found)
    specialized: CompiledProgram = found[1]
    return specialized


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def reinstantiate(program: CompiledProgram, inputs: Sequence[Any]) -> CompiledProgram:
    """``program`` with each instruction re-made (``type(op).make(metas, **params)``)
    from the metas its operands have when the program's inputs are ``inputs``
    (``program`` itself when nothing changes)."""
    found = _TEMPLATES.get(id(program))
    if found is None or found[0] is not program:
        found = (program, *_template(program))
        _TEMPLATES.put(id(program), found)
    _, given, remakes = found
    metas: list[Any] = [None] * program.n_slots
    for slot, meta, value in zip(program.input_slots, given, inputs, strict=True):
        shape = _shape(value)
        metas[slot] = (
            Meta(shape, np.asarray(value).dtype)
            if meta is None
            else Meta(shape, meta.dtype, meta.weak, meta.dynamic)
        )
    changed = False
    operations: list[Any] = []
    for instruction, remake in zip(program.instructions, remakes, strict=True):
        operation: Any = instruction.operation
        if remake is None:  # cotangent accumulation: one meta in, the same out
            metas[instruction.outputs[0]] = metas[instruction.inputs[0]]
            operations.append(operation)
            continue
        operands = tuple([metas[slot] for slot in instruction.inputs])
        if operands != operation.inputs:
            operation = remake[0](operands, **remake[1])
            changed = True
        for slot, meta in zip(instruction.outputs, operation.outputs, strict=True):
            metas[slot] = meta
        operations.append(operation)
    return program.with_operations(operations) if changed else program


def _template(program: CompiledProgram) -> tuple[tuple[Meta | None, ...], tuple[Any, ...]]:
    """The metas ``program``'s inputs were derived for (by input position; ``None`` when
    only an accumulation reads one), and per instruction its ``make`` and parameters
    (``None`` for an accumulation)."""
    if program.constants:
        raise AssertionError(
            f"a derivative program with constants is not extent-generic: {program}"
        )
    by_slot: dict[int, Meta] = {}
    remakes: list[Any] = []
    for instruction in program.instructions:
        operation: Any = instruction.operation
        if type(operation) is AddAny:
            remakes.append(None)
            continue
        for position, slot in enumerate(instruction.inputs):
            by_slot.setdefault(slot, operation.inputs[position])
        params = {f: getattr(operation, f) for f in operation._field_names if f != "inputs"}
        remakes.append((type(operation).make, params))
    return tuple(by_slot.get(slot) for slot in program.input_slots), tuple(remakes)
