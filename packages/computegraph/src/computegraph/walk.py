"""Post-order walks over the computation behind value keys.

A value key (:class:`Derived`) names its whole computation: its operation key, that
key's inputs, and so on down to :class:`Input` leaves. :func:`fold` evaluates such a
computation bottom-up with caller-supplied meanings for operations and leaves, and
:func:`rewrite` uses it to substitute leaves while keeping every unchanged part's
keys (keys are interned, so a rewrite of equal computations gives identical keys).

Both are iterative (a 100,000-operation chain needs no recursion), visit each
operation once however many of its outputs are used, and visit inputs in order, so
the order of a leaf function's side effects is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from computegraph.keys import Derived, OperationKey, ValueKey

__all__ = ["After", "fold", "rewrite"]

V = TypeVar("V")
R = TypeVar("R")


class After(Generic[V]):
    """What a leaf function returns when its value needs another key's value first
    (an alias of an origin computation): ``then(origin_value)`` is called once
    ``key`` has been walked. The leaf function must have no side effect before it
    returns an ``After``: it is called again if ``key`` was not walked yet."""

    __slots__ = ("key", "then")

    def __init__(self, key: ValueKey, then: Callable[[Any], V]) -> None:
        self.key = key
        self.then = then


_MISSING: Any = object()


def fold(
    roots: Sequence[ValueKey],
    operation: Callable[[OperationKey, list[V]], R],
    output: Callable[[R, Derived], V],
    leaf: Callable[[ValueKey], V | After[V]],
) -> list[V]:
    """The values of ``roots``: ``leaf(key)`` for each non-derived key (or an
    :class:`After`), ``operation(operation_key, input_values)`` once per operation,
    and ``output(result, derived_key)`` for each of its outputs that is used."""
    values: dict[int, Any] = {}
    results: dict[int, Any] = {}
    stack: list[ValueKey] = list(reversed(roots))
    while stack:
        key = stack[-1]
        if id(key) in values:
            stack.pop()
            continue
        if type(key) is Derived:
            operation_key = key.operation_key
            result = results.get(id(operation_key), _MISSING)
            if result is _MISSING:
                pending = [k for k in operation_key.inputs if id(k) not in values]
                if pending:
                    stack.extend(reversed(pending))
                    continue
                result = operation(operation_key, [values[id(k)] for k in operation_key.inputs])
                results[id(operation_key)] = result
            values[id(key)] = output(result, key)
        else:
            value = leaf(key)
            if type(value) is After:
                origin = values.get(id(value.key), _MISSING)
                if origin is _MISSING:
                    stack.append(value.key)
                    continue
                value = value.then(origin)
            values[id(key)] = value
        stack.pop()
    return [values[id(k)] for k in roots]


def _rebuild(operation_key: OperationKey, inputs: list[ValueKey]) -> OperationKey:
    if all(a is b for a, b in zip(inputs, operation_key.inputs, strict=True)):
        return operation_key
    return OperationKey(operation_key.operation, tuple(inputs), operation_key.role)


def _output(operation_key: OperationKey, key: Derived) -> ValueKey:
    return key if operation_key is key.operation_key else Derived(operation_key, key.output_slot)


def rewrite(
    roots: Sequence[ValueKey], leaf: Callable[[ValueKey], ValueKey | After[ValueKey]]
) -> list[ValueKey]:
    """``roots`` with every non-derived key replaced by ``leaf(key)`` (which may return
    the key itself, or an :class:`After`); operations whose inputs are all unchanged
    keep their keys, so an unchanged computation is returned as is."""
    return fold(roots, _rebuild, _output, leaf)
