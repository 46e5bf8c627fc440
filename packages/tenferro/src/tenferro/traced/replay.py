"""Emitting a traced computation into the graph of a running AD rule.

A rule that is written as a traced function (a user's ``custom_jvp`` rule, the JVP of
a function an iterative solver applies) is traced once per structure, over input keys
standing for the rule's values; :func:`replay` then emits its operations into the
rule's scope, the rule's values in place of those inputs. Each operation's role
(primal or linear, and in which operands) follows from the values it is applied to.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import cast

from computegraph import After, Derived, Input, OperationKey, ValueKey, fold
from tenferro import lax
from tenferro.core.keys import AliasKey
from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.core.rules import RuleValue
from tenferro.errors import TenferroError

__all__ = ["replay"]


def replay(
    name: str,
    values: Sequence[RuleValue],
    outputs: Sequence[ValueKey],
    like: RuleValue,
    position: Callable[[Hashable], int | None],
) -> list[RuleValue]:
    """The traced computation of ``outputs`` emitted into the scope of ``like`` (an
    iterative walk: any depth). An input whose name ``position`` maps to ``i`` stands
    for ``values[i]``; an alias (a transform applied inside the traced function)
    stands for its origin; any other input is an error naming ``name``."""
    scope = like.scope

    def emit(operation: OperationKey, operands: list[RuleValue]) -> tuple[RuleValue, ...]:
        primitive = cast(TensorPrimitive, operation.operation)
        if type(primitive) is AddAny:  # an accumulation of a traced derivative: no metas
            return (lax.add(operands[0], operands[1]),)
        return scope.emit(primitive, operands)

    def argument(key: ValueKey) -> RuleValue | After[RuleValue]:
        input_name = key.key if type(key) is Input else None
        if input_name is not None:
            found = position(input_name)
            if found is not None:
                return values[found]
        if type(input_name) is AliasKey:
            return After(input_name.origin, _itself)
        raise TenferroError(
            name,
            f"a rule read {input_name!r}, a value that is not one of its arguments (an "
            f"array or traced value captured from outside the rule); pass it as an "
            f"argument of the function instead",
        )

    return fold(outputs, emit, _output, argument)


def _output(results: tuple[RuleValue, ...], key: Derived) -> RuleValue:
    return results[key.output_slot]


def _itself(value: RuleValue) -> RuleValue:
    return value
