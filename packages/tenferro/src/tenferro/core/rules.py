"""The values AD rules compute with, and where they emit.

A primitive's ``jvp`` and ``transpose`` (see :mod:`tenferro.core.primitive`) receive
:class:`RuleValue` objects: a reference into the transform's graph, its meta, and
whether it is linear in the tangents (active). :mod:`tenferro.lax` functions applied
to rule values emit operations through the value's :class:`RuleScope` into the
transform's graph, computing each operation's active mask from its operands, so rules
never spell masks out; :meth:`RuleScope.results` checks what a rule returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from computegraph import PRIMARY, External, Linearized, Local, LocalValueId
from tenferro.meta import HasMeta, Meta
from tidu import RuleContractError

if TYPE_CHECKING:
    from tenferro.core.primitive import TensorPrimitive

__all__ = ["RuleScope", "RuleValue", "Ts", "Xs", "present", "rule_bind"]


class RuleScope:
    """Where one rule call emits: the transform's builder and the primitive being ruled."""

    __slots__ = ("builder", "primitive")

    def __init__(self, builder: Any, primitive: TensorPrimitive) -> None:
        self.builder = builder
        self.primitive = primitive

    def value(self, ref: Local | External, meta: Meta, active: bool) -> RuleValue:
        return RuleValue(ref, meta, active, self)

    def linear_input(self, meta: Meta) -> RuleValue:
        """The active operand of a linear use: a variable, not a value the rule may read."""
        return RuleValue(None, meta, True, self)

    def emit(self, op: TensorPrimitive, operands: Sequence[RuleValue]) -> tuple[RuleValue, ...]:
        refs = []
        mask = []
        for operand in operands:
            if operand.scope is not self:
                raise RuleContractError(
                    f"{self.primitive.name}: a rule mixed values of different rule calls"
                )
            if operand.ref is None:
                raise RuleContractError(
                    f"{self.primitive.name}: a transpose rule read the active (linear) operand; "
                    f"only fixed operands and cotangents are values"
                )
            refs.append(operand.ref)
            mask.append(operand.active)
        active = any(mask)
        # Computations on primal values only are primary: they merge with identical
        # computations of the primal graph (primal reuse) and are never transposed.
        ids = self.builder.add_primitive(op, refs, Linearized(mask) if active else PRIMARY)
        return tuple(
            RuleValue(Local(i), meta, active, self) for i, meta in zip(ids, op.outputs, strict=True)
        )

    def results(
        self,
        values: Sequence[RuleValue | None],
        metas: tuple[Meta, ...],
        rule: str,
        what: str,
    ) -> list[LocalValueId | None]:
        name = self.primitive.name
        values = list(values)
        if len(values) != len(metas):
            raise RuleContractError(
                f"{name}.{rule} returned {len(values)} value(s), expected one per {what} "
                f"({len(metas)})"
            )
        ids: list[LocalValueId | None] = []
        for position, (value, meta) in enumerate(zip(values, metas, strict=True)):
            if value is None:
                ids.append(None)
                continue
            if not isinstance(value, RuleValue) or value.scope is not self:
                raise RuleContractError(
                    f"{name}.{rule}: {what} {position} is not a value of this rule"
                )
            if not value.active or not isinstance(value.ref, Local):
                raise RuleContractError(
                    f"{name}.{rule}: {what} {position} does not depend on the tangents, so it is "
                    f"not linear in them; return None for a zero"
                )
            if value.meta.shape != meta.shape or value.meta.dtype != meta.dtype:
                raise RuleContractError(
                    f"{name}.{rule}: {what} {position} is {value.meta.describe()}, expected "
                    f"{meta.describe()}"
                )
            ids.append(value.ref.id)
        return ids


class RuleValue(HasMeta):
    """A value inside an AD rule: a reference, its meta, and whether it is linear (active)."""

    __slots__ = ("active", "meta", "ref", "scope")
    _priority: ClassVar[int] = 100

    def __init__(self, ref: Local | External | None, meta: Meta, active: bool, scope: RuleScope):
        self.ref = ref
        self.meta = meta
        self.active = active
        self.scope = scope

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Any], like: Any = None
    ) -> tuple[RuleValue, ...]:
        scope: RuleScope = operands[0].scope if operands else like.scope
        return scope.emit(op, operands)

    @classmethod
    def _lift(cls, value: Any) -> RuleValue:
        raise RuleContractError(
            f"an AD rule used a {type(value).__name__}; rules compute with tenferro.lax on rule "
            f"values only (use lax.full_like for constants)"
        )

    def _rewrap(self, meta: Meta) -> RuleValue:
        return RuleValue(self.ref, meta, self.active, self.scope)

    def __repr__(self) -> str:
        kind = "active" if self.active else "fixed"
        return f"<rule value {self.meta.describe()} {kind} {self.ref!r}>"


Ts = tuple[RuleValue | None, ...]
"""Tangents or cotangents in a rule (``None`` = zero)."""
Xs = tuple[RuleValue, ...]
"""Primal values in a rule."""


def rule_bind(op: TensorPrimitive, operands: Sequence[RuleValue]) -> list[RuleValue]:
    """Emit ``op`` on rule values (used by rules that re-apply their own primitive)."""
    return list(operands[0].scope.emit(op, operands))


def present(value: RuleValue | None) -> RuleValue:
    """A tangent or cotangent a rule is sure to have (that of the one input of a JVP, or of
    the one output of a transpose: tidu calls a rule only when one of them is present)."""
    if value is None:
        raise RuleContractError("a rule was called without a tangent or cotangent")
    return value
