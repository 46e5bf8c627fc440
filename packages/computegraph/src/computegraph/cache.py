"""Bounded caches, their registry, and the cache of compiled programs keyed by structure.

:class:`BoundedCache` is a small thread-safe LRU map with counters; :class:`DictCache`
is a plain dictionary with a bound, for hot paths where an LRU's bookkeeping costs
too much. Every cache of the stack (compiled programs here, derivative programs in
tidu, traced programs, plans and instances in tenferro) is one of the two, and each
registers itself on creation: :func:`cache_stats` reports them all by name and
:func:`clear_caches` empties them all.

:class:`ProgramCache`: compile once, evaluate many times. Keys are interned and
structural, so the tuple of requested output keys identifies the whole program:
the materialised graph reachable from those outputs (its operations, their order
and the input order) is a function of the outputs alone. A hit therefore skips
resolve, materialise and compile entirely.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from computegraph.graph import Graph
from computegraph.keys import ValueKey
from computegraph.materialize import materialize_merge
from computegraph.program import CompiledProgram, compile
from computegraph.resolve import ResolvedView, resolve

__all__ = [
    "BoundedCache",
    "CacheStats",
    "DictCache",
    "ProgramCache",
    "RegisteredCache",
    "cache_stats",
    "clear_caches",
    "default_program_cache",
    "register_cache",
    "registered_caches",
]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class CacheStats(NamedTuple):
    """Counters of a :class:`BoundedCache`."""

    hits: int
    misses: int
    evictions: int
    size: int
    maxsize: int


class RegisteredCache(Protocol):
    """What the registry needs of a cache."""

    name: str

    def clear(self) -> None: ...

    def stats(self) -> CacheStats: ...


_registry: weakref.WeakSet[Any] = weakref.WeakSet()
_registry_lock = threading.Lock()


def register_cache(cache: RegisteredCache) -> None:
    """Make ``cache`` reported by :func:`cache_stats` and emptied by :func:`clear_caches`
    (held weakly: a cache that is garbage collected leaves the registry)."""
    with _registry_lock:
        _registry.add(cache)


def registered_caches() -> list[RegisteredCache]:
    """Every live registered cache."""
    with _registry_lock:
        return list(_registry)


def cache_stats() -> dict[str, CacheStats]:
    """The counters of every live cache, summed over the caches that share a name."""
    totals: dict[str, CacheStats] = {}
    for cache in registered_caches():
        stats = cache.stats()
        before = totals.get(cache.name)
        if before is not None:
            stats = CacheStats(*(a + b for a, b in zip(before, stats, strict=True)))
        totals[cache.name] = stats
    return dict(sorted(totals.items()))


def clear_caches() -> None:
    """Empty every live registered cache."""
    for cache in registered_caches():
        cache.clear()


class BoundedCache(Generic[K, V]):
    """A least-recently-used map holding at most ``maxsize`` entries (``0``: keep nothing).

    Thread-safe. Lookups take no lock; ``get_or_create`` computes a missing value
    outside the lock, so a slow creation blocks nobody (two threads may create the
    same value; the later one is kept).
    """

    def __init__(self, maxsize: int = 256, name: str = "cache") -> None:
        self._check_size(maxsize)
        self.name = name
        self._maxsize = maxsize
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        register_cache(self)

    def get(self, key: K) -> V | None:
        """The value for ``key`` (made most recently used), or ``None``; counts a hit or miss.

        Lock-free: each dictionary operation is atomic; under concurrent use the
        counters are approximate.
        """
        entries = self._entries
        value = entries.get(key)
        if value is None:
            self._misses += 1
            return None
        try:  # noqa: SIM105 - a zero-cost try beats contextlib.suppress on this hot path
            entries.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile
            pass
        self._hits += 1
        return value

    def get_or_create(self, key: K, create: Callable[[], V]) -> V:
        """The value for ``key``, made by ``create()`` and stored on a miss."""
        value = self.get(key)
        if value is None:
            value = create()
            self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key`` as the most recently used entry."""
        with self._lock:
            if self._maxsize == 0:
                return
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._evict_locked()

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._evictions = 0

    @property
    def maxsize(self) -> int:
        """Capacity; lowering it evicts the least recently used entries."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value: int) -> None:
        self._check_size(value)
        with self._lock:
            self._maxsize = value
            self._evict_locked()

    def stats(self) -> CacheStats:
        """Current counters."""
        with self._lock:
            return CacheStats(
                self._hits, self._misses, self._evictions, len(self._entries), self._maxsize
            )

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.stats()}>"

    def _evict_locked(self) -> None:
        while len(self._entries) > self._maxsize:
            self._entries.popitem(last=False)
            self._evictions += 1

    def _check_size(self, maxsize: int) -> None:
        if type(maxsize) is not int or maxsize < 0:
            raise ValueError(f"{type(self).__name__}: maxsize must be an int >= 0, got {maxsize!r}")


class DictCache(dict[K, V]):
    """A dictionary holding at most ``maxsize`` entries, emptied whole when full.

    For the hottest lookups (a plain ``dict.get``, no bookkeeping); registered like
    :class:`BoundedCache`. Store with :meth:`put` so the bound holds.
    """

    def __init__(self, maxsize: int, name: str) -> None:
        super().__init__()
        if type(maxsize) is not int or maxsize < 1:
            raise ValueError(f"DictCache: maxsize must be an int >= 1, got {maxsize!r}")
        self.name = name
        self.maxsize = maxsize
        self._lock = threading.Lock()
        self._evictions = 0
        register_cache(self)

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key``, emptying the cache first when it is full."""
        with self._lock:
            if len(self) >= self.maxsize and key not in self:
                self._evictions += len(self)
                super().clear()
            self[key] = value

    def stats(self) -> CacheStats:
        """Size, bound and evictions (hits and misses are not counted on this path)."""
        return CacheStats(0, 0, self._evictions, len(self), self.maxsize)

    __hash__ = object.__hash__  # type: ignore[assignment]  # identity, for the registry

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        return f"<DictCache {self.name!r}: {self.stats()}>"


class ProgramCache(BoundedCache[tuple[ValueKey, ...], CompiledProgram]):
    """Compiled programs by the tuple of output keys they compute."""

    def __init__(self, maxsize: int = 256) -> None:
        super().__init__(maxsize, "programs")

    def get_or_compile(
        self, roots: Graph | Iterable[Graph] | ResolvedView, outputs: Iterable[ValueKey]
    ) -> CompiledProgram:
        """The program computing ``outputs``, compiled from ``roots`` on a miss.

        ``roots`` is a graph, graphs, or an already resolved view; it is only
        resolved on a miss.
        """
        signature = tuple(outputs)

        def build() -> CompiledProgram:
            view = roots if isinstance(roots, ResolvedView) else resolve(roots)
            return compile(materialize_merge(view, signature))

        return self.get_or_create(signature, build)


default_program_cache = ProgramCache()
"""The process-wide cache used by code that does not bring its own."""
