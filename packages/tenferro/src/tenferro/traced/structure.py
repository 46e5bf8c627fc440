"""The structure of a traced computation, without its data.

A traced value's key describes its whole computation, but its leaves with data,
placeholders, checkpoints and aliases are compared by identity: a computation
retraced after its data changed has new keys, and a cache keyed by them would
keep the data alive. :func:`structure` rewrites a computation with those leaves
replaced by value-compared slot keys (:class:`~tenferro.core.keys.SlotKey` and
friends, numbered in a deterministic walk order) and lists what each slot stands
for. Equal structures compile to the same program; the slots supply each run's
data. Caches keyed by structure therefore hold no user data.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from computegraph import BoundedCache, Derived, Input, OperationKey, ValueKey, gc_paused
from tenferro.core.keys import (
    AliasKey,
    CheckpointKey,
    LeafKey,
    PlaceholderKey,
    SlotAliasKey,
    SlotCheckpointKey,
    SlotKey,
)
from tenferro.errors import BindingError

__all__ = ["Structure", "clear_caches", "structure"]

_SLOTTED = (SlotKey, SlotAliasKey, SlotCheckpointKey)


class Structure:
    """A computation's outputs rewritten over slots (``keys``) and, per slot, the input
    it stands for in the original computation (``slots``: a ``LeafKey``,
    ``CheckpointKey``, ``PlaceholderKey`` or ``AliasKey``)."""

    __slots__ = ("keys", "slots")

    def __init__(self, keys: tuple[ValueKey, ...], slots: tuple[Hashable, ...]) -> None:
        self.keys = keys
        self.slots = slots


_PURE: BoundedCache[tuple[ValueKey, ...], Structure] = BoundedCache(256, "pure structures")
"""Computations found to have no identity leaves (their keys are their structure; keys
are interned, so retracing such a computation gives the same key objects): no walk."""


def structure(outputs: Sequence[ValueKey]) -> Structure:
    """The structure of the computation of ``outputs`` (an iterative walk: any depth).

    Parts of the computation without identity leaves keep their keys (keys are
    interned, so rewriting the rest gives identical keys for identical structures).
    """
    roots = tuple(outputs)
    known = _PURE.get(roots)
    if known is not None:
        return known
    with gc_paused():
        found = _walk(roots)
    if not found.slots:
        _PURE.put(roots, found)
    return found


def _walk(outputs: tuple[ValueKey, ...]) -> Structure:
    canonical: dict[int, ValueKey] = {}
    operations: dict[int, OperationKey] = {}
    slots: list[Hashable] = []
    stack: list[ValueKey] = list(reversed(outputs))
    while stack:
        key = stack[-1]
        if id(key) in canonical:
            stack.pop()
            continue
        if type(key) is Derived:
            operation = key.operation_key
            rewritten = operations.get(id(operation))
            if rewritten is None:
                pending = [k for k in operation.inputs if id(k) not in canonical]
                if pending:
                    stack.extend(reversed(pending))
                    continue
                inputs = tuple([canonical[id(k)] for k in operation.inputs])
                unchanged = all(a is b for a, b in zip(inputs, operation.inputs, strict=True))
                rewritten = (
                    operation
                    if unchanged
                    else OperationKey(operation.operation, inputs, operation.role)
                )
                operations[id(operation)] = rewritten
            canonical[id(key)] = (
                key if rewritten is operation else Derived(rewritten, key.output_slot)
            )
            stack.pop()
            continue
        if type(key) is Input:
            replaced = _input(key, canonical, slots, stack)
            if replaced is None:
                continue  # an origin to visit first
            canonical[id(key)] = replaced
        else:
            canonical[id(key)] = key
        stack.pop()
    return Structure(tuple([canonical[id(k)] for k in outputs]), tuple(slots))


def _input(
    key: Input, canonical: dict[int, ValueKey], slots: list[Hashable], stack: list[ValueKey]
) -> ValueKey | None:
    name: Any = key.key
    kind = type(name)
    if kind is LeafKey or kind is PlaceholderKey:
        slots.append(name)
        return Input(SlotKey(len(slots) - 1, name.meta))
    if kind is AliasKey or kind is CheckpointKey:
        origin = canonical.get(id(name.origin))
        if origin is None:
            stack.append(name.origin)
            return None
        slots.append(name)
        index = len(slots) - 1
        if kind is AliasKey:
            return Input(SlotAliasKey(index, name.meta, origin))
        return Input(SlotCheckpointKey(index, name.meta, origin))
    if kind in _SLOTTED:
        raise BindingError(
            "evaluate",
            f"{name!r} belongs to a derivative program's structure, not to a traced "
            f"computation; it cannot be evaluated on its own",
            "bind",
        )
    return key


def clear_caches() -> None:
    """Forget the computations known to have no identity leaves."""
    _PURE.clear()
