"""How a tape records a primitive: record plans, shared by every tape.

A tape records each primitive applied to tracked tensors as a node of
:mod:`tidu.eager`: the primitive as a one-operation graph over canonical input names
(``a0``, ``a1``, ...), so every invocation of one primitive shares one cached
derivative. A *plan* says, for one primitive instance and one set of tracked operands,
which recorded graph to use and which primal values to save: only those its derivative
reads (learnt once from the derivative itself; everything when a rule is missing, the
error then belongs to the backward pass). Plans depend only on structure (the instance
and the tracked positions), never on data.

Two kinds of instance share plans across shapes: an elementwise primitive whose
derivative programs consist of ufuncs and rank-0 constants is recorded as its rank-0
stand-in (:func:`shape_generic`), and a primitive that declares an extent class takes
the plan of its class's stand-in (:mod:`tenferro.eager.extents`).
"""

from __future__ import annotations

from typing import Any

from computegraph import DictCache, ValueKey
from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.eager.extents import extent_class, stand_in
from tenferro.errors import TenferroError
from tidu import ADRuleError, linear_transpose
from tidu.eager import RecordedGraph, default_derivative_cache

__all__ = ["canonical_names", "instance_plan", "shape_generic"]

_CANONICAL: list[str] = []
"""Canonical input names of recorded primitives (``a0``, ``a1``, ...), grown on demand."""


def canonical_names(count: int) -> tuple[str, ...]:
    while len(_CANONICAL) < count:
        _CANONICAL.append(f"a{len(_CANONICAL)}")
    return tuple(_CANONICAL[:count])


_SAVE_ALL = "save all"
"""Marks a recorded structure whose derivative is unknown (a rule is missing)."""

_Plan = tuple[
    Any, RecordedGraph, tuple[tuple[int, ValueKey], ...], tuple[tuple[int, ValueKey], ...], Any, Any
]
_PLANS: DictCache[tuple[int, tuple[bool, ...]], _Plan] = DictCache(4096, "tape plans")
"""How to record a primitive with some operands tracked (see :func:`_plan`); shared by
every tape (a plan depends only on the primitive instance)."""


_InstancePlan = tuple[
    RecordedGraph,
    Any,
    ValueKey | None,
    int,
    tuple[tuple[int, ValueKey], ...],
    tuple[tuple[int, ValueKey], ...],
    Any,
]


def instance_plan(op: TensorPrimitive, code: int, count: int) -> _InstancePlan:
    """The plan of ``op`` with the operands of bit mask ``code`` tracked, as
    ``EagerTensor._bind`` reads it (recorded graph, tracked positions, then what to save:
    the key and position of the one input saved when that is all, else the inputs and
    outputs to save; then its nodes' ``instance``), kept on the instance by ``code``.
    An instance of an extent class takes its stand-in's plan (a never-seen shape: one
    class lookup), any other the shared plans' (:func:`_plan`)."""
    plans = getattr(op, "_tape_plans", None)
    if plans is None:
        plans = {}
        object.__setattr__(op, "_tape_plans", plans)
    masks = _MASKS.get((code, count))
    if masks is None:
        flags = tuple([bool(code >> i & 1) for i in range(count)])
        masks = (
            flags,
            tuple(i for i, tracked in enumerate(flags) if tracked),
            canonical_names(count),
        )
        _MASKS.put((code, count), masks)
    flags, active, keys = masks
    plan: _InstancePlan
    if op.ufunc is None:  # (elementwise primitives: the rank-0 stand-in's plan, below)
        shared = extent_class(op, active, keys)
        if shared is not None:
            first = stand_in(shared)
            known = None if first is op else getattr(first, "_tape_plans", None)
            base = None if known is None else known.get(code)
            if base is not None and base[0] is shared:  # the class's own plan
                plan = (shared, active, base[2], base[3], base[4], base[5], (first, op))
                plans[code] = plan
                return plan
    # By identity: primitives are shared instances, and their __hash__ is Python code.
    found = _PLANS.get((id(op), flags))
    if found is None or found[0] is not op:
        found = _plan(op, flags)
    _, recorded, save_inputs, save_outputs, active, instance = found
    if len(save_inputs) == 1 and not save_outputs:
        ((position, key),) = save_inputs
        plan = (recorded, active, key, position, (), (), instance)
    else:
        plan = (recorded, active, None, 0, save_inputs, save_outputs, instance)
    plans[code] = plan
    return plan


_MASKS: DictCache[tuple[int, int], Any] = DictCache(256, "tape operand masks")
"""(bit mask of the tracked operands, operand count) -> (tracked flags, tracked
positions, canonical input names)."""


def _plan(op: TensorPrimitive, flags: tuple[bool, ...]) -> _Plan:
    """How to record ``op`` with these operands tracked: its recorded graph, which inputs
    and outputs to save (by position and recorded key: those its derivative reads), the
    tracked positions, and its node's ``instance`` (the stand-in and ``op`` when ``op``
    is recorded with another instance's graph, else ``None``)."""
    active = tuple(i for i, tracked in enumerate(flags) if tracked)
    keys = canonical_names(len(flags))
    generic = shape_generic(op, active)
    instance: tuple[TensorPrimitive, TensorPrimitive] | None = None
    if generic is not None:  # recorded as its rank-0 stand-in: that one's plan serves
        known = _GENERIC_PLANS.get((id(generic), flags))
        if known is not None and known[0] is generic:
            generic_plan: _Plan = (op, known[1], known[2], known[3], active, None)
            _PLANS.put((id(op), flags), generic_plan)
            return generic_plan
        recorded = RecordedGraph.from_primitive(generic, keys)
    else:  # one derivation per extent class, where the primitive declares it
        shared = extent_class(op, active, keys)
        if shared is None:
            recorded = RecordedGraph.from_primitive(op, keys)
        else:
            recorded = shared
            first = stand_in(shared)
            if first is not op:
                instance = (first, op)
                known = _PLANS.get((id(first), flags))
                if known is not None and known[0] is first and known[1] is recorded:
                    # the class's own plan
                    shared_plan: _Plan = (op, recorded, known[2], known[3], active, instance)
                    _PLANS.put((id(op), flags), shared_plan)
                    return shared_plan
    needed = _learn_needed(recorded, active)
    keep_all = needed is _SAVE_ALL
    plan = (
        op,  # kept alive with its plan, so its id is not reused meanwhile
        recorded,
        tuple(
            (i, key) for i, key in enumerate(recorded.input_value_keys) if keep_all or key in needed
        ),
        tuple((i, key) for i, key in enumerate(recorded.output_keys) if keep_all or key in needed),
        active,
        instance,
    )
    _PLANS.put((id(op), flags), plan)
    if generic is not None:
        _GENERIC_PLANS.put((id(generic), flags), (generic, *plan[1:4]))
    return plan


_GENERIC_PLANS: DictCache[tuple[int, tuple[bool, ...]], Any] = DictCache(
    1024, "shape-generic tape plans"
)
"""(id of a rank-0 stand-in of :func:`shape_generic`, tracked flags) -> (the stand-in,
kept alive; the recorded graph and the inputs and outputs to save): the plan every
elementwise instance it stands for shares, so a never-seen shape records without
building a graph or looking up its derivative."""


_GENERIC: DictCache[tuple[int, tuple[int, ...]], Any] = DictCache(1024, "shape-generic derivatives")
"""Rank-0 stand-ins of elementwise primitives by (stand-in id, active positions): the
stand-in (kept alive with its verdict) if its derivative programs are shape-generic, else
``None``."""


def shape_generic(op: TensorPrimitive, active: tuple[int, ...]) -> TensorPrimitive | None:
    """A rank-0 instance of the elementwise primitive ``op`` whose derivative programs
    serve every shape, or ``None``.

    An elementwise primitive whose evaluation is one numpy ufunc records the same
    structure at every shape; when the programs of its derivative (its linear map and
    that map's transpose) consist only of ufunc primitives and rank-0 constants, they
    evaluate unchanged on arrays of any shape (numpy broadcasts the constants), so a
    node of a never-seen shape reuses them instead of linearising and transposing again.
    The tape records such nodes with the rank-0 instance.
    """
    if op.ufunc is None or op.output_arity != 1:
        return None
    shape = op.outputs[0].shape
    if not shape:
        return None
    for meta in (*op.inputs, *op.outputs):
        if meta.shape != shape or meta.dynamic:
            return None
    params = {f: getattr(op, f) for f in op._field_names if f != "inputs"}
    try:
        scalar = type(op).make(tuple(m._replace(shape=()) for m in op.inputs), **params)
    except TenferroError:
        return None
    key = (id(scalar), active)
    found = _GENERIC.get(key)
    if found is None or found[0] is not scalar:
        found = (scalar, _derivative_isshape_generic(scalar, active))
        _GENERIC.put(key, found)
    return scalar if found[1] else None


def _derivative_isshape_generic(scalar: TensorPrimitive, active: tuple[int, ...]) -> bool:
    recorded = RecordedGraph.from_primitive(scalar, canonical_names(len(scalar.inputs)))
    try:
        linear = default_derivative_cache.derivative(
            recorded, tuple(range(len(recorded.output_keys))), None, active
        ).linear
        transposed = linear_transpose(linear, None)
        forward = default_derivative_cache.forward_derivative(recorded, active, None).linear
    except ADRuleError:
        return False
    for graph in (linear.graph, transposed.graph, forward.graph):
        for node in graph.operations:
            operation = node.operation
            if type(operation) is AddAny or getattr(operation, "ufunc", None) is not None:
                continue
            if (
                isinstance(operation, TensorPrimitive)
                and not operation.inputs
                and all(not m.shape for m in operation.outputs)
            ):
                continue  # a rank-0 constant: numpy broadcasts it
            return False
    return True


def _learn_needed(recorded: RecordedGraph, active: tuple[int, ...]) -> Any:
    """The primal values the derivatives of ``recorded`` with respect to its tracked
    inputs (``active``) read: only those are saved. When a rule is missing everything
    is saved; the error belongs to the backward pass."""
    try:
        slots = tuple(range(len(recorded.output_keys)))
        return default_derivative_cache.derivative(recorded, slots, None, active).needed
    except ADRuleError:
        return _SAVE_ALL
