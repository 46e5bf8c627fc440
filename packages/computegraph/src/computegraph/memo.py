"""Memos: what a frontend remembers about an interned value key.

Keys are interned, so a frontend that retraces a computation meets the very key
objects it made before. A *memo* is a small dictionary a frontend attaches to a key
to remember what applying something to that value gave the last time (its own
tokens -> its own entries): a retrace then finds the result key with one lookup,
without rebuilding operation keys or hashing operations. computegraph never reads
memos; they change no key's identity, equality or pickled form.

What an entry may hold: structure only (no user data), and never a strong reference
to another key -- a weak reference instead (a key that kept the keys made from it
alive would keep whole graphs, and their leaves' data, alive as long as itself, and
two keys remembering each other would make a cycle only the cyclic collector frees).

Reading: ``key.memo`` is ``None`` until a memo is made (and raises ``AttributeError``
on keys made without interning, such as ``Input.unique`` ones, that never had one).
Writing: :func:`memo_put`.

Bounded: a key's memo holds at most :data:`MEMO_ENTRIES` entries (it is emptied when
full), and after :data:`MEMO_KEYS` memos were made every memo is dropped. Registered
as the cache ``"key memos"``: :func:`~computegraph.clear_caches` drops every memo (a
walk over the live interned keys: memos cost nothing to register).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from typing import Any

from computegraph.cache import CacheStats, register_cache
from computegraph.keys import _INPUT_KEYS, _OPERATION_KEYS, ValueKey

__all__ = ["MEMO_ENTRIES", "MEMO_KEYS", "memo_put", "memos"]

MEMO_ENTRIES = 32
"""Entries per key before its memo is emptied (a value is rarely used in more ways)."""

MEMO_KEYS = 1 << 18
"""Memos made before every memo is dropped (a 100,000-operation trace fits)."""

_set_memo = ValueKey.__dict__["memo"].__set__


class _Memos:
    """Counts the memos made (an upper bound of the live ones) and drops them all."""

    name = "key memos"

    def __init__(self) -> None:
        self._made = 0
        self._evictions = 0
        self._loose: list[weakref.ref[ValueKey]] = []
        """Keys not in the intern tables that hold a memo (the walk would miss them)."""
        self._lock = threading.Lock()
        register_cache(self)

    def put(self, key: ValueKey, token: Hashable, entry: Any) -> None:
        """Remember ``entry`` under ``token`` in ``key``'s memo (made on first use)."""
        try:
            memo = key.memo
        except AttributeError:  # a key made without interning: registered apart
            memo = None
            with self._lock:
                self._loose.append(weakref.ref(key))
        if memo is None:
            if self._made >= MEMO_KEYS:
                self._evictions += self._made
                self.clear()
            self._made += 1
            memo = {}
            _set_memo(key, memo)
        elif len(memo) >= MEMO_ENTRIES and token not in memo:
            memo.clear()
        memo[token] = entry

    def clear(self) -> None:
        """Drop every memo (of every live interned key, and of the loose ones)."""
        with self._lock:
            self._made = 0
            loose, self._loose = self._loose, []
            for ref in loose:
                _drop(ref())
            for ref in list(_INPUT_KEYS.values()):
                _drop(ref())
            for ref in list(_OPERATION_KEYS.values()):
                operation = ref()
                if operation is not None:
                    for output in list(operation._outputs):
                        if output is not None:
                            _drop(output())

    def stats(self) -> CacheStats:
        """Memos made since they were last dropped (an upper bound of the live ones)."""
        return CacheStats(0, 0, self._evictions, self._made, MEMO_KEYS)


def _drop(key: ValueKey | None) -> None:
    if key is not None:
        _set_memo(key, None)


memos = _Memos()
"""The process-wide memo registry."""

memo_put = memos.put
"""``memo_put(key, token, entry)``: remember ``entry`` under ``token`` in ``key``'s memo."""
