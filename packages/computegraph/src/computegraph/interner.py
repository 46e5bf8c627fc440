"""Dense integer ids for value keys (a standalone utility)."""

from __future__ import annotations

from typing import NewType

from computegraph.keys import ValueKey

__all__ = ["ValueKeyId", "ValueKeyInterner"]

ValueKeyId = NewType("ValueKeyId", int)
"""A dense id handed out by a :class:`ValueKeyInterner`."""


class ValueKeyInterner:
    """Maps value keys to dense ids 0, 1, 2, ... in first-seen order, and back.

    Holds the keys it has seen (strongly).
    """

    __slots__ = ("_ids", "_keys")

    def __init__(self) -> None:
        self._ids: dict[ValueKey, ValueKeyId] = {}
        self._keys: list[ValueKey] = []

    def intern(self, key: ValueKey) -> ValueKeyId:
        """The id of ``key``, assigning the next id if it is new."""
        found = self._ids.get(key)
        if found is not None:
            return found
        if not isinstance(key, ValueKey):
            raise TypeError(f"ValueKeyInterner.intern: expected a ValueKey, got {key!r}")
        new_id = ValueKeyId(len(self._keys))
        self._ids[key] = new_id
        self._keys.append(key)
        return new_id

    def get(self, key: ValueKey) -> ValueKeyId | None:
        """The id of ``key`` if it was interned, without adding it."""
        return self._ids.get(key)

    def resolve(self, key_id: ValueKeyId) -> ValueKey:
        """The key with id ``key_id``."""
        if type(key_id) is not int or not 0 <= key_id < len(self._keys):
            raise LookupError(
                f"ValueKeyInterner.resolve: unknown id {key_id!r} "
                f"({len(self._keys)} key(s) interned)"
            )
        return self._keys[key_id]

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._ids
