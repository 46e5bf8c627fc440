"""The contract between tidu and a primitive set.

A :class:`Primitive` is a computegraph operation that also supplies

* ``add()``: the binary operation tidu emits to accumulate cotangents;
* ``jvp_rule(builder, primal_inputs, primal_outputs, tangent_inputs, ctx)``: emit, through
  ``builder``, operations computing the output tangents from the input tangents
  (``None`` is a symbolic zero). Called only when some input tangent is present.
  Primal values are referenced as ``External(key)``; emitted operations carry a
  :class:`~computegraph.Linearized` role whose mask marks the tangent operands;
* ``transpose_rule(builder, cotangent_outputs, inputs, role, ctx)``: for an operation
  used linearly (``role`` says which inputs are active), emit the cotangents of the
  active inputs from the cotangents of the outputs.

Rules must only emit primitives (closure) and must be linear in tangents. A rule
that cannot differentiate raises :class:`~tidu.ADRuleError`; a primitive without a
rule method is treated the same way, never as a zero derivative.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from computegraph import (
    External,
    GraphBuilder,
    GraphOperation,
    Linearized,
    Local,
    LocalValueId,
    OperationRole,
    ValueKey,
)
from tidu.errors import ADRuleError, RuleContractError

__all__ = [
    "ADD_ROLE",
    "GraphPrimitiveBuilder",
    "Primitive",
    "PrimitiveBuilder",
    "PrimitiveValue",
    "call_jvp_rule",
    "call_transpose_rule",
]

PrimitiveValue = Local | External
"""A rule's operand: ``Local(id)`` made earlier in this transform, or ``External(key)``."""

ADD_ROLE = Linearized((True, True))
"""The role of every accumulation ``add`` tidu emits."""


@runtime_checkable
class PrimitiveBuilder(Protocol):
    """Where rules emit operations: a graph builder, or an executing builder."""

    def add_primitive(
        self, operation: Any, inputs: Sequence[PrimitiveValue], role: OperationRole
    ) -> tuple[LocalValueId, ...]:
        """Add ``operation`` on ``inputs``; return one local id per output."""
        ...


@runtime_checkable
class Primitive(GraphOperation, Protocol):
    """A graph operation with AD rules (see the module documentation)."""

    def add(self) -> Primitive:
        """The binary addition of this primitive set, used to accumulate cotangents."""
        ...

    def jvp_rule(
        self,
        builder: PrimitiveBuilder,
        primal_inputs: tuple[ValueKey, ...],
        primal_outputs: tuple[ValueKey, ...],
        tangent_inputs: tuple[LocalValueId | None, ...],
        ctx: Any,
    ) -> Sequence[LocalValueId | None]:
        """One tangent (local id) or ``None`` per output."""
        ...

    def transpose_rule(
        self,
        builder: PrimitiveBuilder,
        cotangent_outputs: tuple[LocalValueId | None, ...],
        inputs: tuple[External, ...],
        role: Linearized,
        ctx: Any,
    ) -> Sequence[LocalValueId | None]:
        """One cotangent (local id) or ``None`` per input; only active inputs may get one."""
        ...


class GraphPrimitiveBuilder(GraphBuilder):
    """A :class:`~computegraph.GraphBuilder` that rules emit into."""

    __slots__ = ()

    add_primitive = GraphBuilder.add_operation


def call_jvp_rule(
    operation: Any,
    builder: PrimitiveBuilder,
    primal_inputs: tuple[ValueKey, ...],
    primal_outputs: tuple[ValueKey, ...],
    tangents: tuple[LocalValueId | None, ...],
    ctx: Any,
) -> tuple[LocalValueId | None, ...]:
    """Call ``operation``'s JVP rule and check what it returns."""
    rule = getattr(operation, "jvp_rule", None)
    if rule is None:
        raise ADRuleError(operation, "jvp", "the operation has no jvp_rule")
    result = rule(builder, primal_inputs, primal_outputs, tangents, ctx)
    return _checked(operation, "jvp_rule", result, len(primal_outputs), "output", builder)


def call_transpose_rule(
    operation: Any,
    builder: PrimitiveBuilder,
    cotangents: tuple[LocalValueId | None, ...],
    inputs: tuple[External, ...],
    role: Linearized,
    ctx: Any,
) -> tuple[LocalValueId | None, ...]:
    """Call ``operation``'s transpose rule and check what it returns."""
    rule = getattr(operation, "transpose_rule", None)
    if rule is None:
        raise ADRuleError(operation, "transpose", "the operation has no transpose_rule")
    result = rule(builder, cotangents, inputs, role, ctx)
    checked = _checked(operation, "transpose_rule", result, len(inputs), "input", builder)
    mask = role.active_mask
    for position, cotangent in enumerate(checked):
        if cotangent is not None and not mask[position]:
            raise RuleContractError(
                f"{operation!r}.transpose_rule returned a cotangent for input {position}, "
                f"which is not active in {role!r}"
            )
    return checked


def _checked(
    operation: Any,
    rule: str,
    result: Any,
    expected: int,
    what: str,
    builder: PrimitiveBuilder,
) -> tuple[LocalValueId | None, ...]:
    try:
        values = tuple(result)
    except TypeError:
        raise RuleContractError(
            f"{operation!r}.{rule} must return a sequence of local ids or None, got {result!r}"
        ) from None
    if len(values) != expected:
        raise RuleContractError(
            f"{operation!r}.{rule} returned {len(values)} value(s); expected one per {what} "
            f"({expected})"
        )
    limit = getattr(builder, "value_count", None)
    for position, value in enumerate(values):
        if value is None:
            continue
        if type(value) is not int or value < 0 or (limit is not None and value >= limit):
            raise RuleContractError(
                f"{operation!r}.{rule} returned {value!r} for {what} {position}: expected a "
                f"local id made by this builder, or None"
            )
    return values
