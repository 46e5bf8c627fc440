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

from computegraph import After, BoundedCache, Input, ValueKey, gc_paused, rewrite
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
    slots: list[Hashable] = []

    def slot(key: ValueKey) -> ValueKey | After[ValueKey]:
        if type(key) is not Input:
            return key
        name: Any = key.key
        kind = type(name)
        if kind is LeafKey or kind is PlaceholderKey:
            slots.append(name)
            return Input(SlotKey(len(slots) - 1, name.meta))
        if kind is AliasKey or kind is CheckpointKey:
            return After(name.origin, lambda origin: _origin_slot(name, origin, slots))
        if kind in _SLOTTED:
            raise BindingError(
                "evaluate",
                f"{name!r} belongs to a derivative program's structure, not to a traced "
                f"computation; it cannot be evaluated on its own",
                "bind",
            )
        return key

    keys = rewrite(outputs, slot)
    return Structure(tuple(keys), tuple(slots))


def _origin_slot(name: Any, origin: ValueKey, slots: list[Hashable]) -> ValueKey:
    """An alias or checkpoint, slotted after its origin computation."""
    slots.append(name)
    index = len(slots) - 1
    if type(name) is AliasKey:
        return Input(SlotAliasKey(index, name.meta, origin))
    return Input(SlotCheckpointKey(index, name.meta, origin))


def clear_caches() -> None:
    """Forget the computations known to have no identity leaves."""
    _PURE.clear()
