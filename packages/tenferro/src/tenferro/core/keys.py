"""Input keys of tenferro's traced values.

Most keys are compared by identity (each leaf, placeholder or alias is its own
input); :class:`ArgKey` is compared by value, so retracing a function with
arguments of the same shapes and dtypes gives the same structure and hits the
program caches.

The ``Slot*`` keys are compared by value too: they replace identity leaves
(data, placeholders, checkpoints, aliases) in the *structure* of a computation
(see :mod:`tenferro.traced.structure`), so caches keyed by structure hold no
user data and a retraced computation that reads new data finds its program.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from computegraph import ValueKey
from tenferro.meta import Meta

__all__ = [
    "AliasKey",
    "ArgKey",
    "CheckpointKey",
    "LeafKey",
    "PlaceholderKey",
    "SlotAliasKey",
    "SlotCheckpointKey",
    "SlotKey",
]


class LeafKey:
    """A traced leaf holding concrete data (a constant of the computation)."""

    __slots__ = ("__weakref__", "data", "label", "meta")

    def __init__(self, meta: Meta, data: Any, label: str = "leaf") -> None:
        self.meta = meta
        self.data = data
        self.label = label

    def __repr__(self) -> str:
        return f"{self.label}:{self.meta.describe()}#{id(self) & 0xFFFF:04x}"


class PlaceholderKey:
    """A traced input without data: bound when the computation is evaluated."""

    __slots__ = ("__weakref__", "meta", "name")

    def __init__(self, meta: Meta, name: str | None) -> None:
        self.meta = meta
        self.name = name

    def __repr__(self) -> str:
        return f"{self.name or 'placeholder'}:{self.meta.describe()}"


@dataclass(frozen=True, slots=True)
class ArgKey:
    """Positional argument ``position`` of a traced function (bound per call)."""

    position: int
    meta: Meta

    def __repr__(self) -> str:
        return f"arg{self.position}:{self.meta.describe()}"


class CheckpointKey:
    """A checkpointed value: its data is stored, and derivatives flow through ``origin``."""

    __slots__ = ("__weakref__", "data", "meta", "origin")

    def __init__(self, meta: Meta, data: Any, origin: ValueKey) -> None:
        self.meta = meta
        self.data = data
        self.origin = origin

    def __repr__(self) -> str:
        return f"checkpoint:{self.meta.describe()}#{id(self) & 0xFFFF:04x}"


_ALIAS_SERIALS = itertools.count()


def alias_serial() -> int:
    """A serial number below that of every :class:`AliasKey` made from now on."""
    return next(_ALIAS_SERIALS)


class AliasKey:
    """An input that stands for another traced value (``origin``).

    Transforms applied inside a trace differentiate with respect to fresh aliases
    of their arguments; evaluation substitutes the origin, and outer derivatives
    flow through it.
    """

    __slots__ = ("__weakref__", "meta", "origin", "serial")

    def __init__(self, meta: Meta, origin: ValueKey) -> None:
        self.meta = meta
        self.origin = origin
        self.serial = next(_ALIAS_SERIALS)
        """Creation order: ``vmap`` tells the aliases made inside its trace (whose
        derivatives are explicit there) from those of enclosing transforms."""

    def __repr__(self) -> str:
        return f"alias:{self.meta.describe()}#{id(self) & 0xFFFF:04x}"


@dataclass(frozen=True, slots=True)
class SlotKey:
    """Input slot ``index`` of a computation's structure: a leaf's data or a placeholder's
    binding, supplied when the program runs."""

    index: int
    meta: Meta

    def __repr__(self) -> str:
        return f"slot{self.index}:{self.meta.describe()}"


@dataclass(frozen=True, slots=True)
class SlotCheckpointKey:
    """A checkpoint in a computation's structure: its stored value is supplied in slot
    ``index``; derivatives flow through ``origin`` (a structural key)."""

    index: int
    meta: Meta
    origin: ValueKey

    def __repr__(self) -> str:
        return f"checkpoint{self.index}:{self.meta.describe()}"


@dataclass(frozen=True, slots=True)
class SlotAliasKey:
    """An alias in a computation's structure (``index`` tells distinct aliases of one
    origin apart)."""

    index: int
    meta: Meta
    origin: ValueKey

    def __repr__(self) -> str:
        return f"alias{self.index}:{self.meta.describe()}"
