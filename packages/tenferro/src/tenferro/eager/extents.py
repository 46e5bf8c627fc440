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

Primitives with extents in their parameters (a reshape's target shape, a slice's
limits, a broadcast's shape) declare them (``extent_params``) and re-derive them from
their output metas (``remake``); their classes keep the extent pattern
(``extent_facts``: which extents are equal, which are 0 or 1), so the map from the
stand-in's extents to a node's is a function. An instruction of that kind gets its
output metas through that map, which the admission checks it can take: each of its
output extents is one of the stand-in's own (or 0 or 1). The tape saves each such
node's (stand-in, instance) pair as its ``instance``, which the passes hand to
:func:`specialize` among the node's values.

The map needs only the stand-in's equal extents to be equal at the node; a primitive
whose rules compare extents with 0 and 1 only, never with each other (reshape,
broadcast_in_dim, reduce_sum, slice, pad, svd_truncate declare
``reads_extent_coincidences = False``), derives the same programs, mapped, at extents
that coincide more. An instance of a never-seen pattern of such a primitive joins a
known class of its other facts whose stand-in's pattern separates at least as much
(:func:`_class_of_coincidences`) instead of founding one: a changing-shape sweep
derives each such class once, not once per way its extents happen to coincide.

Evaluation alone (a backward or forward pass that records nothing) goes further
(:func:`specialize_evaluation`): a program whose instructions all have an
``any_extent_kernel`` (``dot_general`` reading its extents from the arrays,
``transpose``, ``reduce_sum``, the diagonal ops, the spectral helpers, ufuncs) or, with
``extent_params``, an ``extent_kernel`` (reshape, broadcast_in_dim, slice, pad: given
the node's output extents, mapped from the stand-in's) runs without re-made instances
for an instance met fewer than :data:`REMAKE_AFTER` times, so a never-seen shape makes
no instance at all (the SVD backward, 33 instructions, included); an instance met more
often gets the re-made program, whose exact instances evaluate faster.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from computegraph import CompiledProgram, DictCache
from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.meta import Meta
from tidu import ADRuleError, linear_transpose
from tidu.eager import NODE_INSTANCE, RESPECIALIZABLE, RecordedGraph, default_derivative_cache

__all__ = ["extent_class", "specialize", "specialize_evaluation", "stand_in"]


_CLASSES: DictCache[Any, Any] = DictCache(1024, "extent classes")
"""Extent class -> the recorded graph standing for it (its first instance), or
``False`` when its derivative programs are not extent-generic."""

_SPECIALIZED: DictCache[tuple[int, int], Any] = DictCache(4096, "programs at other extents")
"""(id of a derivative program, id of an instance) -> (the program and the (stand-in,
instance) pair, kept alive so their ids stay theirs; the program re-instantiated)."""

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
    inputs, outputs = op.inputs, op.outputs
    if any(map(_DYNAMIC, inputs)) or any(map(_DYNAMIC, outputs)):
        return None
    facts = op.extent_facts()
    if facts is None:
        return None
    kind = type(op)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _fields(kind)
    key = (
        kind,
        fields(op),
        tuple(map(len, map(_SHAPE, inputs))),
        tuple(map(_DTYPE, inputs)),
        tuple(map(_WEAK, inputs)),
        active,
        facts,
    )
    found = _CLASSES.get(key)
    if found is None:
        found = _class_of_coincidences(op, key, active, keys)
        _CLASSES.put(key, found)
    return found or None


def _class_of_coincidences(
    op: TensorPrimitive, key: tuple[Any, ...], active: tuple[int, ...], keys: tuple[str, ...]
) -> Any:
    """The class of a never-seen extent pattern (``key``'s last entry). A primitive whose
    rules read no coincidence of extents (``reads_extent_coincidences = False``) joins a
    class of its extents' other patterns whose stand-in's extents coincide only where
    ``op``'s do (its programs map to ``op``'s extents, and are the ones derived at them),
    if one is known; otherwise ``op`` founds the class (:func:`_admit`)."""
    facts = key[-1]
    if not facts or op.reads_extent_coincidences:
        return _admit(op, active, keys)
    coarse = (*key[:-1], tuple([tuple([max(n, -1) for n in shape]) for shape in facts]))
    known = _COINCIDENCES.get(coarse)
    if known is None:
        known = []
        _COINCIDENCES.put(coarse, known)
    for pattern, recorded in known:
        if _separates(pattern, facts):
            return recorded
    found = _admit(op, active, keys)
    if found and len(known) < _PATTERNS_PER_CLASS:
        known.append((facts, found))
    return found


def _separates(pattern: Any, facts: Any) -> bool:
    """Whether extents equal in the extent ``pattern`` (of a class's stand-in) are equal
    in ``facts`` (an instance's pattern, of the same 0 and 1 entries): then the stand-in's
    extents map to the instance's."""
    image: dict[int, int] = {}
    for given, wanted in zip(pattern, facts, strict=True):
        for code, other in zip(given, wanted, strict=True):
            if code < 0 and image.setdefault(code, other) != other:
                return False
    return True


_COINCIDENCES: DictCache[Any, Any] = DictCache(1024, "extent classes by coincidences")
"""An extent class's key with its pattern reduced to which extents are 0, 1 or larger
-> [(extent pattern, recorded graph)] of the classes founded for it (a primitive whose
rules read no coincidence of extents: see :func:`_class_of_coincidences`)."""

_PATTERNS_PER_CLASS = 16
"""How many classes (patterns of coincidences) :data:`_COINCIDENCES` keeps per key."""


_DYNAMIC, _SHAPE, _DTYPE, _WEAK = (
    operator.attrgetter(name) for name in ("dynamic", "shape", "dtype", "weak")
)

_FIELDS: DictCache[Any, Any] = DictCache(256, "extent class parameters")
"""Primitive class -> the function from an instance to the parameters its extent class
keeps (all but the operands and the :attr:`~TensorPrimitive.extent_params`)."""


def _fields(kind: type[TensorPrimitive]) -> Any:
    names = tuple(f for f in kind._field_names if f != "inputs" and f not in kind.extent_params)
    getter = operator.attrgetter(*names) if names else (lambda op: ())
    fields = getter if len(names) != 1 else (lambda op: (getter(op),))
    _FIELDS.put(kind, fields)
    return fields


def stand_in(recorded: RecordedGraph) -> TensorPrimitive:
    """The primitive an extent class's recorded graph holds (its first instance)."""
    operation: TensorPrimitive = recorded.graph.operations[0].operation  # type: ignore[assignment]
    return operation


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
    own = {0, 1}
    for meta in (*op.inputs, *op.outputs):
        own.update(meta.shape)
    keyed = op.extent_facts() != ()
    fixed: set[Any] = set()
    for field in op._field_names:
        value = getattr(op, field)
        if field != "inputs" and type(value) is tuple and all(type(v) is int for v in value):
            fixed.update((value, tuple(-v for v in value)))  # a pad's transpose negates
    for program in programs:
        for node in program.operations:
            operation: Any = node.operation
            if not reinstantiable(operation):
                return False
            if getattr(operation, "extent_params", ()) and not (
                keyed and all(n in own for m in operation.outputs for n in m.shape)
            ):
                return False  # extents the class's own cannot give
            for field in getattr(operation, "extent_offsets", ()):
                offsets = getattr(operation, field)
                if any(offsets) and offsets not in fixed:
                    return False  # positions that may follow from extents
    return recorded


def reinstantiable(operation: Any) -> bool:
    """Whether :func:`specialize` can re-make ``operation`` from its operands' metas (or
    keep it: a rank-0 constant holds no extent)."""
    if type(operation) is AddAny:
        return True
    if not isinstance(operation, TensorPrimitive):
        return False
    if not operation.inputs:
        return all(not m.shape for m in operation.outputs)
    return (operation.extent_generic or operation.ufunc is not None) and not any(
        m.dynamic for m in operation.inputs
    )


def specialize(
    program: CompiledProgram, inputs: Sequence[Any], values: Mapping[Any, Any] | None = None
) -> CompiledProgram:
    """``program`` (a derivative program of an extent class's stand-in) for a node whose
    program inputs are ``inputs`` and whose values are ``values``: itself at its own
    extents, else with every instruction re-made for the node (cached)."""
    pair = None if values is None else values.get(NODE_INSTANCE)
    if pair is None:  # the stand-in's own node
        return program
    key = (id(program), id(pair[1]))
    found = _SPECIALIZED.get(key)
    if found is None or found[0] is not program:
        found = (program, pair, reinstantiate(program, inputs, pair))
        _SPECIALIZED.put(key, found)
    specialized: CompiledProgram = found[2]
    return specialized


def specialize_evaluation(
    program: CompiledProgram, inputs: Sequence[Any], values: Mapping[Any, Any] | None = None
) -> CompiledProgram:
    """:func:`specialize` for evaluation alone (nothing records the instructions). A
    program whose every instruction has an :meth:`~TensorPrimitive.any_extent_kernel`
    (or accumulates cotangents, or has :attr:`~TensorPrimitive.extent_params` and an
    :meth:`~TensorPrimitive.extent_kernel`) runs, for an instance met fewer than
    :data:`REMAKE_AFTER` times, with those kernels: the any-extent ones shared by every
    extent, the others given the node's output extents (mapped from the stand-in's), so
    a never-seen shape makes no instance at all. From then on, as :func:`specialize`
    re-makes it (exact instances evaluate faster, and a repeated shape pays that once)."""
    pair = None if values is None else values.get(NODE_INSTANCE)
    if pair is None:  # the stand-in's own node
        return program
    key = (id(program), id(pair[1]))
    seen = _SEEN.get(key)
    if seen is not None and seen[0] is program:
        remade: CompiledProgram | None = seen[3]
        if remade is not None:  # a repeated shape's steady state: one lookup
            return remade
        seen[2] += 1
    else:
        seen = [program, pair, 1, None]
        _SEEN.put(key, seen)
    found = _AT_ANY_EXTENTS.get(id(program))
    if found is None or found[0] is not program:
        found = (program, *_at_any_extents(program, pair[0]))
        _AT_ANY_EXTENTS.put(id(program), found)
    at_any: CompiledProgram | None = found[1]
    if at_any is None or seen[2] >= REMAKE_AFTER:  # it repeats: exact instances pay off
        remade = seen[3] = specialize(program, inputs, values)
        return remade
    if not found[2]:  # no instruction needs the node's extents
        return at_any
    return _AtNode(at_any, _flat_extents(pair[1]), found[3])  # type: ignore[return-value]


REMAKE_AFTER = 8
"""The run of a derivative program at one instance's extents from which
:func:`specialize_evaluation` re-makes its instructions for them (before it, the program
runs with extent-reading kernels): re-making costs about as much as a dozen runs save,
and shapes met a few times only (the sub-shapes of changing-shape sweeps) never repay
it."""

_AT_ANY_EXTENTS: DictCache[int, Any] = DictCache(1024, "programs at any extents")
"""id of a derivative program -> (the program; the same program running each
instruction's any-extent kernel, or ``None`` when some instruction has none; the
positions and operations of the instructions whose kernel each node's extents give; the
one such instruction when it is the whole program): see :func:`_at_any_extents`."""

_SEEN: DictCache[tuple[int, int], Any] = DictCache(4096, "instances seen")
"""(id of a derivative program, id of an instance) -> [both, kept alive; how many runs
at that instance's extents :func:`specialize_evaluation` has served; the program
re-made for them once it is, else ``None``]."""


class _AnyExtents:
    """An instruction running its primitive's any-extent kernel (evaluation only)."""

    __slots__ = ("operation", "run")

    def __init__(self, operation: TensorPrimitive, run: Any) -> None:
        self.operation = operation
        self.run = run

    def eval(self, inputs: Sequence[Any], ctx: Any) -> tuple[Any]:
        return (self.run(*inputs),)

    def kernel(self) -> Any:
        return self.run

    def input_count(self) -> int:
        return len(self.operation.inputs)

    def output_count(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"{self.operation} (at any extents)"


class _AtNodeExtents:
    """An instruction running its primitive's :meth:`~TensorPrimitive.extent_kernel` for
    the output extents of the node it runs for, which it reads from the evaluation
    context: the node's :func:`_flat_extents` (see :class:`_AtNode`), at positions
    ``picks``. It has no ``kernel()``: generated code calls its ``eval`` with that
    context."""

    __slots__ = ("operation", "picks", "shape_of")

    def __init__(self, operation: TensorPrimitive, picks: tuple[int, ...]) -> None:
        self.operation = operation
        self.picks = picks
        self.shape_of = _getter(picks)

    def eval(self, inputs: Sequence[Any], ctx: Any) -> tuple[Any]:
        if type(ctx) is not list:
            raise AssertionError(f"{self!r} runs only for a node's extents")
        return (self.operation.extent_kernel(self.shape_of(ctx))(*inputs),)

    def input_count(self) -> int:
        return len(self.operation.inputs)

    def output_count(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"{self.operation} (at a node's extents)"


def _getter(picks: tuple[int, ...]) -> Any:
    """The function from a node's :func:`_flat_extents` to the tuple of its entries at
    ``picks`` (``operator.itemgetter``, a tuple for every count of picks)."""
    if len(picks) > 1:
        return operator.itemgetter(*picks)
    if picks:
        (pick,) = picks
        return lambda extents: (extents[pick],)
    return lambda extents: ()


class _AtNode:
    """A program of :func:`_at_any_extents` bound to one node's extents: it evaluates as
    that program with the node's :func:`_flat_extents` as the evaluation context, which
    its :class:`_AtNodeExtents` instructions read (the shared program is not copied, and
    generates its straight-line code once for every node)."""

    __slots__ = ("extents", "program", "single")

    def __init__(self, program: CompiledProgram, extents: list[int], single: Any) -> None:
        self.program = program
        self.extents = extents
        self.single = single

    def eval(self, inputs: Sequence[Any], ctx: Any = None, *, apply: Any = None) -> list[Any]:
        return self.program.eval(inputs, self.extents, apply=apply)

    def only_kernel(self) -> Any:
        """The function the program amounts to when it is one instruction reading its
        inputs in order (the executor's one-kernel lane), else ``None``."""
        single = self.single
        if single is None:
            return None
        return single.operation.extent_kernel(single.shape_of(self.extents))


def _at_any_extents(
    program: CompiledProgram, stand_in: TensorPrimitive
) -> tuple[CompiledProgram | None, tuple[tuple[int, Any, tuple[int, ...]], ...], Any]:
    """``program`` (a derivative program of ``stand_in``'s class) running any-extent
    kernels (``None`` when some instruction has none); the instructions whose kernels
    need a node's extents: (position, operation, where each of its output extents is
    among the node's :func:`_flat_extents`, one of 0 or 1 among the entries that list
    ends with), which run as :class:`_AtNodeExtents` reading those from the evaluation
    context; and the one such instruction when it is the whole program (else ``None``)."""
    operations: list[Any] = []
    mapped: list[tuple[int, Any, tuple[int, ...]]] = []
    position_of: dict[int, int] = {}
    flat = _flat_extents(stand_in)
    for p, n in enumerate(flat):
        position_of.setdefault(n, p)
    constant = len(flat) - len(_CONSTANT_EXTENTS)
    position_of.update({n: constant + n for n in _CONSTANT_EXTENTS})
    for position, instruction in enumerate(program.instructions):
        operation: Any = instruction.operation
        if type(operation) is AddAny:
            operations.append(operation)
            continue
        if not isinstance(operation, TensorPrimitive) or not operation.inputs:
            return None, (), None
        if operation.extent_params:
            if len(operation.outputs) != 1:
                return None, (), None
            (out,) = operation.outputs
            if operation.extent_kernel(out.shape) is None:
                return None, (), None
            picks = tuple([position_of[n] for n in out.shape])
            mapped.append((position, operation, picks))
            operations.append(_AtNodeExtents(operation, picks))
            continue
        run = operation.any_extent_kernel()
        if run is None:
            return None, (), None
        operations.append(_AnyExtents(operation, run))
    single = None
    if len(operations) == 1 and mapped and not program.constants:
        (instruction,) = program.instructions
        if (
            instruction.inputs == program.input_slots
            and instruction.outputs == program.output_slots
        ):
            single = operations[0]
    return program.with_operations(operations), tuple(mapped), single


def _flat_extents(op: TensorPrimitive) -> list[int]:
    """Every extent of ``op``'s operands and outputs, in order, then the extents 0 and 1
    (an extent of 0 or 1 in a derivative program is the same at every instance of the
    class, which keeps which extents are 0 or 1: it is read from those last entries)."""
    flat = [n for meta in (*op.inputs, *op.outputs) for n in meta.shape]
    flat += _CONSTANT_EXTENTS
    return flat


_CONSTANT_EXTENTS = (0, 1)


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def _dtype(value: Any) -> Any:
    """The dtype of an array, a number or a tensor (read from its meta: a tracked tensor
    refuses numpy conversion)."""
    meta = getattr(value, "meta", None)
    return meta.dtype if meta is not None else np.asarray(value).dtype


def reinstantiate(
    program: CompiledProgram,
    inputs: Sequence[Any],
    pair: tuple[TensorPrimitive, TensorPrimitive] | None = None,
) -> CompiledProgram:
    """``program`` with each instruction re-made from the metas its operands have when
    the program's inputs are ``inputs`` (``type(op).make(metas, **params)``), or, for a
    primitive with ``extent_params``, from those and its output metas mapped from the
    stand-in's extents to the instance's (``pair``: the stand-in and the instance);
    ``program`` itself when nothing changes."""
    found = _TEMPLATES.get(id(program))
    if found is None or found[0] is not program:
        found = (program, *_template(program))
        _TEMPLATES.put(id(program), found)
    _, given, steps = found
    metas: list[Any] = [None] * program.n_slots
    for slot, meta, value in zip(program.input_slots, given, inputs, strict=True):
        shape = value.shape if type(value) is np.ndarray else _shape(value)
        metas[slot] = (
            Meta(shape, _dtype(value))
            if meta is None
            else Meta(shape, meta.dtype, meta.weak, meta.dynamic)
        )
    mapping: dict[int, int] | None = None
    changed = False
    operations: list[Any] = []
    append = operations.append
    for operation, kind, slots_in, slots_out, cls, params, items in steps:
        if kind is _ADD:  # cotangent accumulation: one meta in, the same out
            metas[slots_out[0]] = metas[slots_in[0]]
        elif kind is _KEEP:  # a rank-0 constant
            metas[slots_out[0]] = operation.outputs[0]
        else:
            operands = tuple([metas[slot] for slot in slots_in])
            if kind is _MAPPED:
                if mapping is None:
                    mapping = _extent_map(pair, operation)
                outputs = tuple(
                    [
                        Meta(tuple([mapping[n] for n in m.shape]), m.dtype, m.weak, m.dynamic)
                        for m in operation.outputs
                    ]
                )
                if operands != operation.inputs or outputs != operation.outputs:
                    operation = cls.remake(operands, outputs, params)
                    changed = True
            elif operands != operation.inputs:
                # TensorPrimitive.make, its cache key spelled out once per template
                operation = cls._make_shared(operands, (cls, operands, *items), params)
                changed = True
            if len(slots_out) == 1:
                metas[slots_out[0]] = operation.outputs[0]
            else:
                for slot, meta in zip(slots_out, operation.outputs, strict=True):
                    metas[slot] = meta
        append(operation)
    return program.with_operations(operations) if changed else program


def _extent_map(pair: Any, operation: Any) -> dict[int, int]:
    """The stand-in's extents -> the instance's (0 and 1 stay: the class keeps them)."""
    if pair is None:
        raise AssertionError(f"re-making {operation} needs the node's instance")
    mapping = {0: 0, 1: 1}
    given, actual = pair
    for a, b in zip(
        (*given.inputs, *given.outputs), (*actual.inputs, *actual.outputs), strict=True
    ):
        for m, n in zip(a.shape, b.shape, strict=True):
            mapping[m] = n
    return mapping


_ADD, _KEEP, _MAPPED, _MADE = "accumulate", "keep", "mapped", "made"
"""How :func:`reinstantiate` re-makes an instruction: a cotangent accumulation and a
rank-0 constant stay; a primitive with ``extent_params`` is re-made from its operand
metas and its mapped output metas; any other from its operand metas."""


def _template(program: CompiledProgram) -> tuple[tuple[Meta | None, ...], tuple[Any, ...]]:
    """The metas ``program``'s inputs were derived for (by input position; ``None`` when
    only an accumulation reads one), and per instruction its operation, how it is
    re-made, its slots, class, parameters and the parameters' part of its cache key."""
    if any(np.ndim(value) for value in program.constants.values()):
        raise AssertionError(
            f"a derivative program with constants of rank > 0 is not extent-generic: {program}"
        )
    by_slot: dict[int, Meta] = {}
    steps: list[Any] = []
    for instruction in program.instructions:
        operation: Any = instruction.operation
        slots = (instruction.inputs, instruction.outputs)
        if type(operation) is AddAny:
            steps.append((operation, _ADD, *slots, None, None, None))
            continue
        if not operation.inputs:
            steps.append((operation, _KEEP, *slots, None, None, None))
            continue
        for position, slot in enumerate(instruction.inputs):
            by_slot.setdefault(slot, operation.inputs[position])
        params = {f: getattr(operation, f) for f in operation._field_names if f != "inputs"}
        kind = _MAPPED if operation.extent_params else _MADE
        steps.append((operation, kind, *slots, type(operation), params, tuple(params.items())))
    return tuple(by_slot.get(slot) for slot in program.input_slots), tuple(steps)
