"""A bounded, clearable cache of compiled programs keyed by graph structure.

Compile once, evaluate many times. Keys are interned and structural, so the tuple
of requested output keys identifies the whole program: the materialised graph
reachable from those outputs (its operations, their order and the input order)
is a function of the outputs alone. A cache hit therefore skips resolve,
materialise and compile entirely.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

from computegraph.graph import Graph
from computegraph.keys import ValueKey
from computegraph.materialize import materialize_merge
from computegraph.program import CompiledProgram, compile
from computegraph.resolve import ResolvedView, resolve

__all__ = ["CacheStats", "ProgramCache", "default_program_cache"]


class CacheStats(NamedTuple):
    """Counters of a :class:`ProgramCache`."""

    hits: int
    misses: int
    evictions: int
    size: int
    maxsize: int


class ProgramCache:
    """A least-recently-used cache of :class:`~computegraph.CompiledProgram` by output keys.

    Holds at most ``maxsize`` programs (``0`` disables caching). Thread-safe.
    Entries keep their keys, and so the structures behind them, alive until
    evicted or cleared.
    """

    def __init__(self, maxsize: int = 256) -> None:
        self._check_size(maxsize)
        self._maxsize = maxsize
        self._programs: OrderedDict[tuple[ValueKey, ...], CompiledProgram] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    def get(self, outputs: Iterable[ValueKey]) -> CompiledProgram | None:
        """The cached program for ``outputs``, or ``None`` (counts as a hit or a miss)."""
        signature = tuple(outputs)
        with self._lock:
            program = self._programs.get(signature)
            if program is None:
                self._misses += 1
                return None
            self._programs.move_to_end(signature)
            self._hits += 1
            return program

    def get_or_compile(
        self, roots: Graph | Iterable[Graph] | ResolvedView, outputs: Iterable[ValueKey]
    ) -> CompiledProgram:
        """The program computing ``outputs``, compiled from ``roots`` on a miss.

        ``roots`` is a graph, graphs, or an already resolved view; it is only
        resolved on a miss.
        """
        signature = tuple(outputs)
        program = self.get(signature)
        if program is not None:
            return program
        view = roots if isinstance(roots, ResolvedView) else resolve(roots)
        program = compile(materialize_merge(view, signature))
        self.put(signature, program)
        return program

    def put(self, outputs: Iterable[ValueKey], program: CompiledProgram) -> None:
        """Store ``program`` as the program computing ``outputs``."""
        signature = tuple(outputs)
        with self._lock:
            if self._maxsize == 0:
                return
            self._programs[signature] = program
            self._programs.move_to_end(signature)
            self._evict_locked()

    def clear(self) -> None:
        """Drop every cached program and reset the counters."""
        with self._lock:
            self._programs.clear()
            self._hits = self._misses = self._evictions = 0

    @property
    def maxsize(self) -> int:
        """Capacity in programs; lowering it evicts the least recently used entries."""
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
                self._hits, self._misses, self._evictions, len(self._programs), self._maxsize
            )

    def __len__(self) -> int:
        return len(self._programs)

    def _evict_locked(self) -> None:
        while len(self._programs) > self._maxsize:
            self._programs.popitem(last=False)
            self._evictions += 1

    @staticmethod
    def _check_size(maxsize: int) -> None:
        if type(maxsize) is not int or maxsize < 0:
            raise ValueError(f"ProgramCache: maxsize must be an int >= 0, got {maxsize!r}")


default_program_cache = ProgramCache()
"""The process-wide cache used by code that does not bring its own."""
