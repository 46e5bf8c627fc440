"""Materialisation: flatten a resolved view into one concrete graph, with CSE.

``materialize_merge(view, outputs)`` walks the logical DAG from the requested
outputs (depth first, post-order, inputs left to right, without recursion) and
emits every reachable definition once:

* values are merged by global key, so structurally identical operations, from
  one graph or several, become a single operation (common-subexpression
  elimination);
* inputs are ordered by first discovery in that walk; inputs unreachable from
  the outputs are left out;
* every output slot of an emitted operation becomes a value, requested or not;
* ``outputs`` is kept as requested, duplicates included.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from typing import NamedTuple, Protocol

from computegraph.errors import UnresolvedKeyError
from computegraph.gc_pause import gc_paused
from computegraph.keys import Derived, Input, OperationKey, OperationRole, ValueKey
from computegraph.protocols import GraphOperation
from computegraph.resolve import ResolvedView

__all__ = [
    "MaterializedGraph",
    "MaterializedOperation",
    "MaterializedValue",
    "materialize_merge",
]


class MaterializedValue(NamedTuple):
    """A value of a materialised graph: its key and producer ``(operation index, slot)``."""

    key: ValueKey
    producer: tuple[int, int] | None


class MaterializedOperation(NamedTuple):
    """An operation of a materialised graph; inputs and outputs are value indices."""

    operation: GraphOperation
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    role: OperationRole


class MaterializedGraph:
    """One flattened, de-duplicated, topologically ordered graph, ready for :func:`compile`.

    Storage is compact; the node views :attr:`values` and :attr:`operations` are
    built on first access.

    * ``value_keys[i]``: the key of value ``i``;
    * ``operation_keys[j]`` / ``operation_inputs[j]``: operation ``j`` (in
      topological order) and the value indices it reads; its outputs are the
      consecutive values ``operation_outputs(j)``;
    * ``inputs``: the input keys (graph inputs and boundary keys) in discovery order;
      ``outputs``: the requested keys.
    """

    __slots__ = (
        "_first_outputs",
        "_index",
        "_operations",
        "_producers",
        "_values",
        "inputs",
        "operation_inputs",
        "operation_keys",
        "outputs",
        "value_keys",
    )

    def __init__(
        self,
        value_keys: tuple[ValueKey, ...],
        producers: tuple[int, ...],
        operation_keys: tuple[OperationKey, ...],
        operation_inputs: tuple[tuple[int, ...], ...],
        first_outputs: tuple[int, ...],
        inputs: tuple[ValueKey, ...],
        outputs: tuple[ValueKey, ...],
        index: dict[ValueKey, int],
    ) -> None:
        """Internal: made by :func:`materialize_merge`."""
        self.value_keys = value_keys
        self._producers = producers
        self.operation_keys = operation_keys
        self.operation_inputs = operation_inputs
        self._first_outputs = first_outputs
        self.inputs = inputs
        self.outputs = outputs
        self._index = index
        self._values: tuple[MaterializedValue, ...] | None = None
        self._operations: tuple[MaterializedOperation, ...] | None = None

    @property
    def values(self) -> tuple[MaterializedValue, ...]:
        """Every value with its producer ``(operation index, slot)``, by value index."""
        nodes = self._values
        if nodes is None:
            nodes = tuple(
                MaterializedValue(key, None if op < 0 else (op, key.output_slot))  # type: ignore[attr-defined]
                for key, op in zip(self.value_keys, self._producers, strict=True)
            )
            self._values = nodes
        return nodes

    @property
    def operations(self) -> tuple[MaterializedOperation, ...]:
        """Every operation in topological order, with value indices."""
        nodes = self._operations
        if nodes is None:
            nodes = tuple(
                MaterializedOperation(
                    key.operation, inputs, tuple(self.operation_outputs(position)), key.role
                )
                for position, (key, inputs) in enumerate(
                    zip(self.operation_keys, self.operation_inputs, strict=True)
                )
            )
            self._operations = nodes
        return nodes

    def operation_outputs(self, position: int) -> range:
        """Value indices written by operation ``position`` (consecutive)."""
        first = self._first_outputs[position]
        return range(first, first + self.operation_keys[position].output_count)

    def input_indices(self) -> tuple[int, ...]:
        """Value indices of the inputs, in :attr:`inputs` order."""
        return tuple(position for position, op in enumerate(self._producers) if op < 0)

    def index_of(self, key: ValueKey) -> int:
        """The value index of ``key``."""
        try:
            return self._index[key]
        except KeyError:
            raise UnresolvedKeyError(
                f"key {key!r} is not a value of this materialized graph"
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __str__(self) -> str:
        from computegraph.render import format_materialized

        return format_materialized(self)

    def __repr__(self) -> str:
        return (
            f"<MaterializedGraph: {len(self.inputs)} input(s), {len(self.operation_keys)} "
            f"operation(s), {len(self.value_keys)} value(s), {len(self.outputs)} output(s)>"
        )

    def to_dot(self) -> str:
        """Graphviz DOT source of this graph."""
        from computegraph.render import materialized_to_dot

        return materialized_to_dot(self)


def materialize_merge(
    view: ResolvedView,
    outputs: Iterable[ValueKey],
    *,
    boundary: Iterable[ValueKey] = (),
    substitute: Substitutions | None = None,
) -> MaterializedGraph:
    """Flatten the part of ``view`` reachable from ``outputs`` into a :class:`MaterializedGraph`.

    Keys listed in ``boundary`` become inputs of the result even when they are
    derived values: the walk stops there and their values are supplied at
    evaluation time (to evaluate part of a graph from known intermediates). They
    need not be defined by the view.

    ``substitute`` maps input keys (raw, as given to ``Input``) to value keys: such
    an input is not an input of the result but stands for that value, which is
    computed instead (``substitute.get(input_key)`` is consulted for each reached
    input, so a lazy mapping works).

    Raises :class:`~computegraph.UnresolvedKeyError` naming the missing key and the
    requested output it was reached from when some reachable key is not defined by
    the view. Nothing is returned partially built.
    """
    if not isinstance(view, ResolvedView):
        raise TypeError(f"materialize_merge: expected a ResolvedView, got {view!r}")
    requested = tuple(outputs)
    for position, key in enumerate(requested):
        if not isinstance(key, ValueKey):
            raise TypeError(f"materialize_merge: output {position} is not a ValueKey: {key!r}")
    stops = frozenset(boundary)
    for key in stops:
        if not isinstance(key, ValueKey):
            raise TypeError(f"materialize_merge: boundary entry is not a ValueKey: {key!r}")
    with gc_paused():
        return _materialize(view.defined_keys, requested, stops, substitute)


class Substitutions(Protocol):
    """Anything with ``get(input_key)`` returning a substitute value key or ``None``."""

    def get(self, key: Hashable, /) -> ValueKey | None: ...


def _materialize(
    defined: AbstractSet[ValueKey],
    requested: tuple[ValueKey, ...],
    boundary: frozenset[ValueKey],
    substitute: Substitutions | None,
) -> MaterializedGraph:
    index: dict[ValueKey, int] = {}
    value_keys: list[ValueKey] = []
    producers: list[int] = []
    operation_keys: list[OperationKey] = []
    operation_inputs: list[tuple[int, ...]] = []
    first_outputs: list[int] = []
    inputs: list[ValueKey] = []
    lookup = index.__getitem__

    for root in requested:
        # Depth-first post-order without recursion: a derived key stays on the
        # stack until all its inputs have indices (missing ones are pushed
        # rightmost first, so the leftmost is visited first), then it is emitted.
        stack = [root]
        while stack:
            key = stack[-1]
            if key in index:
                stack.pop()
                continue
            if substitute is not None and type(key) is Input and key not in boundary:
                target = substitute.get(key.key)
                if target is not None:
                    if not isinstance(target, ValueKey):
                        raise TypeError(
                            f"materialize_merge: the substitute of {key!r} is not a "
                            f"ValueKey: {target!r}"
                        )
                    if target in index:
                        stack.pop()
                        index[key] = index[target]
                    else:
                        stack.append(target)
                    continue
            if key in boundary or type(key) is not Derived:
                if key not in defined and key not in boundary:
                    raise _unresolved(key, root)
                stack.pop()
                index[key] = len(value_keys)
                value_keys.append(key)
                producers.append(-1)
                inputs.append(key)
                continue
            if key not in defined:
                raise _unresolved(key, root)
            operation_key = key.operation_key
            missing = [k for k in operation_key.inputs if k not in index]
            if missing:
                missing.reverse()
                stack.extend(missing)
                continue
            stack.pop()
            position = len(operation_keys)
            first = len(value_keys)
            if operation_key.output_count == 1:
                index[key] = first
                value_keys.append(key)
                producers.append(position)
            else:
                for slot, output_key in enumerate(operation_key.output_keys()):
                    index[output_key] = first + slot
                    value_keys.append(output_key)
                    producers.append(position)
            operation_keys.append(operation_key)
            operation_inputs.append(tuple(map(lookup, operation_key.inputs)))
            first_outputs.append(first)
    return MaterializedGraph(
        tuple(value_keys),
        tuple(producers),
        tuple(operation_keys),
        tuple(operation_inputs),
        tuple(first_outputs),
        tuple(inputs),
        requested,
        index,
    )


def _unresolved(key: ValueKey, root: ValueKey) -> UnresolvedKeyError:
    origin = "" if key is root else f" (reached from requested output {root!r})"
    return UnresolvedKeyError(
        f"materialize_merge: key {key!r} is not defined by any graph of the resolved "
        f"view{origin}; pass the graph that defines it (e.g. the primal graph) as a root"
    )
