"""Resolution: a logical lookup view over one or more graphs.

``resolve(roots)`` walks the roots and, transitively, their parents, and records
which value keys those graphs define. It copies no nodes. A key referenced through
:class:`~computegraph.External` resolves only when some walked graph defines it;
external references themselves are never followed.

Because keys are structural and interned, every definition of a key is the same
definition: ``Derived(OperationKey(op, inputs, role), slot)`` is produced by
``op`` applied to ``inputs`` in ``role``, whichever graph holds it. The view
therefore stores only the set of defined keys and answers
:meth:`ResolvedView.resolve_value` from the key's own structure.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple, Protocol

from computegraph.graph import Graph
from computegraph.keys import Derived, Input, OperationRole, ValueKey
from computegraph.protocols import GraphOperation

__all__ = ["InputDef", "ProducedDef", "ResolvedView", "Resolver", "ValueDef", "resolve"]


class InputDef(NamedTuple):
    """The value is a graph input named ``key``."""

    key: Hashable


class ProducedDef(NamedTuple):
    """The value is output ``output_slot`` of ``operation`` applied to ``input_keys``."""

    operation: GraphOperation
    input_keys: tuple[ValueKey, ...]
    role: OperationRole
    output_slot: int


ValueDef = InputDef | ProducedDef
"""The definition of a value: an input or an operation output."""


class Resolver(Protocol):
    """Anything that can look up the definition of a value key."""

    def resolve_value(self, key: ValueKey) -> ValueDef | None:
        """The definition of ``key``, or ``None`` when it is not defined."""
        ...


class ResolvedView:
    """A logical view over ``roots`` and all their ancestors (through ``parents``).

    ``graphs`` lists every walked graph once, parents before children.
    """

    __slots__ = ("_defined", "graphs", "roots")

    def __init__(self, roots: tuple[Graph, ...], graphs: tuple[Graph, ...], defined: set[ValueKey]):
        self.roots = roots
        self.graphs = graphs
        self._defined = defined

    @property
    def defined_keys(self) -> AbstractSet[ValueKey]:
        """Every key defined by the walked graphs (read-only)."""
        return self._defined

    def defines(self, key: ValueKey) -> bool:
        """Whether some walked graph defines ``key``."""
        return key in self._defined

    __contains__ = defines

    def resolve_value(self, key: ValueKey) -> ValueDef | None:
        """The definition of ``key``, or ``None`` if no walked graph defines it."""
        if key not in self._defined:
            return None
        if type(key) is Input:
            return InputDef(key.key)
        assert type(key) is Derived
        operation_key = key.operation_key
        return ProducedDef(
            operation_key.operation, operation_key.inputs, operation_key.role, key.output_slot
        )

    def __len__(self) -> int:
        return len(self._defined)

    def __repr__(self) -> str:
        return (
            f"<ResolvedView: {len(self.roots)} root(s), {len(self.graphs)} graph(s), "
            f"{len(self._defined)} defined key(s)>"
        )


def resolve(roots: Graph | Iterable[Graph]) -> ResolvedView:
    """Build a :class:`ResolvedView` over ``roots`` (a graph or an iterable of graphs).

    Each graph is walked once (by identity), its parents first, depth first and
    without recursion, so arbitrarily long parent chains are fine.
    """
    root_tuple = (roots,) if isinstance(roots, Graph) else tuple(roots)
    for position, root in enumerate(root_tuple):
        if not isinstance(root, Graph):
            raise TypeError(f"resolve: root {position} is not a Graph: {root!r}")
    walked: list[Graph] = []
    seen: set[int] = set()
    defined: set[ValueKey] = set()
    for root in root_tuple:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack: list[tuple[Graph, int]] = [(root, 0)]
        while stack:
            graph, next_parent = stack[-1]
            parents = graph.parents
            while next_parent < len(parents) and id(parents[next_parent]) in seen:
                next_parent += 1
            if next_parent < len(parents):
                parent = parents[next_parent]
                stack[-1] = (graph, next_parent + 1)
                seen.add(id(parent))
                stack.append((parent, 0))
                continue
            stack.pop()
            walked.append(graph)
            defined.update(graph.value_keys)
    return ResolvedView(root_tuple, tuple(walked), defined)


class _EveryKey(AbstractSet[ValueKey]):
    """The set of all value keys: membership is always true; it cannot be listed."""

    def __contains__(self, key: object) -> bool:
        return isinstance(key, ValueKey)

    def __iter__(self) -> Any:
        raise TypeError("a structural view defines every key; its keys cannot be listed")

    def __len__(self) -> int:
        raise TypeError("a structural view defines every key; it has no length")


class StructuralView(ResolvedView):
    """A view in which every key is defined by its own structure.

    A derived key is output ``slot`` of its operation key applied to that key's
    inputs; an input key is a graph input. No graph is walked. Frontends that
    identify lazily built values by their keys alone (no graph objects) use it.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__((), (), _EVERY_KEY)  # type: ignore[arg-type]

    def __len__(self) -> int:
        raise TypeError("a structural view defines every key; it has no length")

    def __repr__(self) -> str:
        return "<StructuralView: every key is defined by its structure>"


_EVERY_KEY = _EveryKey()
_STRUCTURAL = StructuralView()


def structural_view() -> StructuralView:
    """The (shared) :class:`StructuralView`."""
    return _STRUCTURAL
