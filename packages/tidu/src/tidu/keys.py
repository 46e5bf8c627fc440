"""Tangent keys and pass ids.

Every ``linearize`` call is tagged with a :data:`DiffPassId`; the tangent input of
a primal input named ``k`` is named ``tangent_key(k, pass_id)``. A key type may
choose its own tangent keys by implementing :class:`ADKey` (``tangent_of``); any
other hashable key gets a :class:`Tangent` wrapper.

Pass ids are ints chosen by the caller or objects minted by tidu. tidu's own
(:class:`FreshPass` from :func:`fresh_pass_id`, :class:`SeedPass` for transpose
seeds, :class:`CopyPass` for repeated ``wrt`` entries) never equal an int or one
another, so keys minted by different transform calls never collide.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "ADKey",
    "CopyPass",
    "DiffPassId",
    "FreshPass",
    "SeedPass",
    "Tangent",
    "fresh_pass_id",
    "tangent_key",
]

DiffPassId = Hashable
"""Identifies one ``linearize`` call: an int chosen by the caller, or a tidu-minted object."""


@runtime_checkable
class ADKey(Protocol):
    """An input key type that names its own tangent keys."""

    def tangent_of(self, pass_id: DiffPassId) -> Hashable:
        """A new key, distinct from every other, for this key's tangent in pass ``pass_id``.

        ``pass_id`` must be treated as an opaque hashable.
        """
        ...


@dataclass(frozen=True, slots=True)
class Tangent:
    """The default tangent key: the tangent of input key ``of`` in pass ``pass_id``."""

    of: Hashable
    pass_id: DiffPassId

    def tangent_of(self, pass_id: DiffPassId) -> Tangent:
        return Tangent(self, pass_id)

    def __repr__(self) -> str:
        return f"d({self.of!r})@{self.pass_id!r}"


@dataclass(frozen=True, slots=True)
class FreshPass:
    """A pass id minted by :func:`fresh_pass_id`."""

    serial: int

    def __repr__(self) -> str:
        return f"pass{self.serial}"


@dataclass(frozen=True, slots=True)
class SeedPass:
    """The pass of the ``position``-th cotangent seed of the ``transpose``-th transpose call."""

    transpose: int
    position: int

    def __repr__(self) -> str:
        return f"seed{self.transpose}.{self.position}"


@dataclass(frozen=True, slots=True)
class CopyPass:
    """The pass of the ``occurrence``-th repetition of a ``wrt`` entry in pass ``pass_id``."""

    pass_id: DiffPassId
    occurrence: int

    def __repr__(self) -> str:
        return f"{self.pass_id!r}#{self.occurrence}"


_PASS_SERIALS = itertools.count(1)


def fresh_pass_id() -> FreshPass:
    """A pass id no other call returns (thread-safe)."""
    return FreshPass(next(_PASS_SERIALS))


def tangent_key(key: Hashable, pass_id: DiffPassId) -> Hashable:
    """``key``'s tangent key in pass ``pass_id``: ``key.tangent_of`` or a :class:`Tangent`."""
    method = getattr(key, "tangent_of", None)
    if method is None:
        return Tangent(key, pass_id)
    tangent: Hashable = method(pass_id)
    if tangent == key:
        from tidu.errors import RuleContractError

        raise RuleContractError(f"{key!r}.tangent_of({pass_id!r}) returned the key itself")
    return tangent
