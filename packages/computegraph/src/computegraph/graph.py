"""Graphs: local nodes plus references to values defined elsewhere.

A :class:`Graph` owns its local values and operations and may refer to values of
other graphs through :class:`External` references (by global key). ``parents``
are the graphs :func:`computegraph.resolve` walks to find such definitions.
Local ids (:data:`LocalValueId`, :data:`LocalOperationId`) are indices inside one
graph and mean nothing outside it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple, NoReturn

from computegraph.errors import GraphBuildError
from computegraph.keys import PRIMARY, Derived, Input, OperationKey, OperationRole, ValueKey
from computegraph.protocols import GraphOperation

__all__ = [
    "External",
    "Graph",
    "GraphBuilder",
    "Local",
    "LocalOperationId",
    "LocalValueId",
    "OperationNode",
    "ValueNode",
    "ValueRef",
]

LocalValueId = int
"""Index of a value inside one graph."""

LocalOperationId = int
"""Index of an operation inside one graph."""


class Local:
    """Reference to a value of the graph being built, by local id."""

    __slots__ = ("id",)
    __match_args__ = ("id",)
    id: LocalValueId

    def __init__(self, id: LocalValueId) -> None:  # noqa: A002 - the public field name
        if type(id) is not int:
            raise TypeError(f"Local: a local value id must be an int, got {id!r}")
        object.__setattr__(self, "id", id)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Local is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is Local and other.id == self.id

    def __hash__(self) -> int:
        return hash((Local, self.id))

    def __repr__(self) -> str:
        return f"Local({self.id})"


class External:
    """Reference to a value known only by its global key, defined in any resolvable graph."""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    key: ValueKey

    def __init__(self, key: ValueKey) -> None:
        if not isinstance(key, ValueKey):
            raise TypeError(f"External: expected a ValueKey, got {key!r}")
        object.__setattr__(self, "key", key)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("External is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is External and other.key is self.key

    def __hash__(self) -> int:
        return hash((External, self.key))

    def __repr__(self) -> str:
        return f"External({self.key!r})"


ValueRef = Local | External
"""How an operation refers to one of its inputs."""


class ValueNode(NamedTuple):
    """A value of a graph: its global key and, unless it is an input, its producer."""

    key: ValueKey
    producer: tuple[LocalOperationId, int] | None
    """``(operation id, output slot)``, or ``None`` for a graph input."""


class OperationNode(NamedTuple):
    """An operation of a graph with its input references and local output ids."""

    operation: GraphOperation
    inputs: tuple[ValueRef, ...]
    outputs: tuple[LocalValueId, ...]
    role: OperationRole
    key: OperationKey
    """The operation's global identity (operation, global input keys, role)."""


class Graph:
    """An immutable graph produced by :meth:`GraphBuilder.build`.

    Storage is compact (parallel tuples of keys and ints); the node views
    :attr:`values` and :attr:`operations` are built on first access.

    * ``value_keys[i]``: the global key of local value ``i``;
    * ``operation_keys[j]``: the global identity of operation ``j`` (operation,
      global input keys, role); operations are in insertion order, which is
      topological;
    * ``inputs`` / ``outputs``: local value ids (duplicates allowed);
    * ``parents``: graphs that :func:`computegraph.resolve` walks.
    """

    __slots__ = (
        "_first_outputs",
        "_local_inputs",
        "_operations",
        "_producers",
        "_values",
        "inputs",
        "operation_keys",
        "outputs",
        "parents",
        "value_keys",
    )
    value_keys: tuple[ValueKey, ...]
    operation_keys: tuple[OperationKey, ...]
    inputs: tuple[LocalValueId, ...]
    outputs: tuple[LocalValueId, ...]
    parents: tuple[Graph, ...]
    _producers: tuple[LocalOperationId, ...]
    _local_inputs: tuple[tuple[LocalValueId, ...], ...]
    _first_outputs: tuple[LocalValueId, ...]
    _values: tuple[ValueNode, ...] | None
    _operations: tuple[OperationNode, ...] | None

    def __init__(
        self,
        value_keys: tuple[ValueKey, ...],
        producers: tuple[LocalOperationId, ...],
        operation_keys: tuple[OperationKey, ...],
        local_inputs: tuple[tuple[LocalValueId, ...], ...],
        first_outputs: tuple[LocalValueId, ...],
        inputs: tuple[LocalValueId, ...],
        outputs: tuple[LocalValueId, ...],
        parents: tuple[Graph, ...],
    ) -> None:
        """Internal: graphs are made by :meth:`GraphBuilder.build`."""
        set_ = object.__setattr__
        set_(self, "value_keys", value_keys)
        set_(self, "_producers", producers)
        set_(self, "operation_keys", operation_keys)
        set_(self, "_local_inputs", local_inputs)
        set_(self, "_first_outputs", first_outputs)
        set_(self, "inputs", inputs)
        set_(self, "outputs", outputs)
        set_(self, "parents", parents)
        set_(self, "_values", None)
        set_(self, "_operations", None)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Graph is immutable; build a new one with GraphBuilder")

    @property
    def values(self) -> tuple[ValueNode, ...]:
        """Every local value (key and producer), indexed by local value id."""
        nodes = self._values
        if nodes is None:
            nodes = tuple(
                ValueNode(key, None if op_id < 0 else (op_id, key.output_slot))  # type: ignore[attr-defined]
                for key, op_id in zip(self.value_keys, self._producers, strict=True)
            )
            object.__setattr__(self, "_values", nodes)
        return nodes

    @property
    def operations(self) -> tuple[OperationNode, ...]:
        """Every operation with its input references and output ids, in insertion order."""
        nodes = self._operations
        if nodes is None:
            nodes = tuple(self._operation_node(op_id) for op_id in range(len(self.operation_keys)))
            object.__setattr__(self, "_operations", nodes)
        return nodes

    def operation_inputs(self, op_id: LocalOperationId) -> tuple[ValueRef, ...]:
        """The input references of operation ``op_id`` as they were given to the builder."""
        keys = self.operation_keys[op_id].inputs
        return tuple(
            External(key) if local < 0 else Local(local)
            for key, local in zip(keys, self._local_inputs[op_id], strict=True)
        )

    def operation_outputs(self, op_id: LocalOperationId) -> range:
        """The local value ids of operation ``op_id``'s outputs (consecutive)."""
        first = self._first_outputs[op_id]
        return range(first, first + self.operation_keys[op_id].output_count)

    def producer(self, local_id: LocalValueId) -> tuple[LocalOperationId, int] | None:
        """``(operation id, output slot)`` of a local value, or ``None`` for an input."""
        key = self.key_of(local_id)
        op_id = self._producers[local_id]
        return None if op_id < 0 else (op_id, key.output_slot)  # type: ignore[attr-defined]

    def _operation_node(self, op_id: LocalOperationId) -> OperationNode:
        key = self.operation_keys[op_id]
        return OperationNode(
            key.operation,
            self.operation_inputs(op_id),
            tuple(self.operation_outputs(op_id)),
            key.role,
            key,
        )

    def key_of(self, local_id: LocalValueId) -> ValueKey:
        """Global key of a local value."""
        if type(local_id) is not int or not 0 <= local_id < len(self.value_keys):
            raise GraphBuildError(
                f"Graph: unknown local value id {local_id!r} "
                f"(the graph has {len(self.value_keys)} values)"
            )
        return self.value_keys[local_id]

    def input_keys(self) -> tuple[ValueKey, ...]:
        """Global keys of the graph inputs, in declaration order."""
        keys = self.value_keys
        return tuple(keys[i] for i in self.inputs)

    def output_keys(self) -> tuple[ValueKey, ...]:
        """Global keys of the graph outputs, in order (duplicates kept)."""
        keys = self.value_keys
        return tuple(keys[i] for i in self.outputs)

    def __str__(self) -> str:
        from computegraph.render import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        return (
            f"<Graph: {len(self.inputs)} input(s), {len(self.operation_keys)} operation(s), "
            f"{len(self.outputs)} output(s), {len(self.parents)} parent(s)>"
        )

    def to_dot(self) -> str:
        """Graphviz DOT source of this graph (external references drawn dashed)."""
        from computegraph.render import graph_to_dot

        return graph_to_dot(self)


class GraphBuilder:
    """Builds a :class:`Graph` one input and operation at a time.

    Every method validates its arguments before changing anything, so a call that
    raises leaves the builder as it was. :meth:`build` snapshots the current state;
    the builder may keep being used afterwards without affecting built graphs.
    """

    __slots__ = (
        "_first_outputs",
        "_inputs",
        "_keys",
        "_local_inputs",
        "_operation_keys",
        "_outputs",
        "_parents",
        "_producers",
    )

    def __init__(self) -> None:
        self._keys: list[ValueKey] = []
        self._producers: list[LocalOperationId] = []
        self._operation_keys: list[OperationKey] = []
        self._local_inputs: list[tuple[LocalValueId, ...]] = []
        self._first_outputs: list[LocalValueId] = []
        self._inputs: list[LocalValueId] = []
        self._outputs: list[LocalValueId] = []
        self._parents: list[Graph] = []

    def add_input(self, key: Hashable) -> LocalValueId:
        """Add a graph input with global key ``Input(key)``; return its local id.

        Duplicate input keys are allowed and give two local values with one key.
        """
        value_key = Input(key)
        local_id = len(self._keys)
        self._keys.append(value_key)
        self._producers.append(-1)
        self._inputs.append(local_id)
        return local_id

    def add_operation(
        self,
        operation: GraphOperation,
        inputs: Sequence[ValueRef],
        role: OperationRole = PRIMARY,
    ) -> tuple[LocalValueId, ...]:
        """Add ``operation`` applied to ``inputs``; return the local ids of its outputs.

        Structurally identical operations added twice get two local nodes with equal
        keys; nothing is de-duplicated at build time (``materialize_merge`` does CSE).
        """
        keys = self._keys
        count = len(keys)
        input_keys: list[ValueKey] = []
        local_ids: list[LocalValueId] = []
        for position, ref in enumerate(inputs):
            if type(ref) is Local:
                local_id = ref.id
                if not 0 <= local_id < count:
                    raise GraphBuildError(
                        f"add_operation({operation!r}): input {position} refers to unknown "
                        f"local value id {local_id} (the graph has {count} values)"
                    )
                input_keys.append(keys[local_id])
                local_ids.append(local_id)
            elif type(ref) is External:
                input_keys.append(ref.key)
                local_ids.append(-1)
            else:
                raise TypeError(
                    f"add_operation({operation!r}): input {position} must be Local(id) or "
                    f"External(key), got {ref!r}"
                )
        operation_key = OperationKey(operation, tuple(input_keys), role)
        operation_id = len(self._operation_keys)
        output_count = operation_key.output_count
        keys.extend([Derived(operation_key, slot) for slot in range(output_count)])
        self._producers.extend([operation_id] * output_count)
        self._operation_keys.append(operation_key)
        self._local_inputs.append(tuple(local_ids))
        self._first_outputs.append(count)
        return tuple(range(count, count + output_count))

    def set_outputs(self, outputs: Iterable[LocalValueId]) -> None:
        """Replace the graph outputs (duplicates and input ids allowed)."""
        ids = tuple(outputs)
        count = len(self._keys)
        for local_id in ids:
            if type(local_id) is not int or not 0 <= local_id < count:
                raise GraphBuildError(
                    f"set_outputs: unknown local value id {local_id!r} "
                    f"(the graph has {count} values)"
                )
        self._outputs = list(ids)

    def add_parent(self, parent: Graph) -> None:
        """Add a graph that :func:`computegraph.resolve` walks to find external definitions."""
        if not isinstance(parent, Graph):
            raise TypeError(f"add_parent: expected a Graph, got {parent!r}")
        self._parents.append(parent)

    def global_key(self, local_id: LocalValueId) -> ValueKey:
        """Global key of a value added to this builder."""
        if type(local_id) is not int or not 0 <= local_id < len(self._keys):
            raise GraphBuildError(
                f"global_key: unknown local value id {local_id!r} "
                f"(the graph has {len(self._keys)} values)"
            )
        return self._keys[local_id]

    @property
    def value_count(self) -> int:
        """Number of values added so far."""
        return len(self._keys)

    @property
    def operation_count(self) -> int:
        """Number of operations added so far."""
        return len(self._operation_keys)

    def build(self) -> Graph:
        """Snapshot the builder's state as an immutable :class:`Graph`."""
        return Graph(
            tuple(self._keys),
            tuple(self._producers),
            tuple(self._operation_keys),
            tuple(self._local_inputs),
            tuple(self._first_outputs),
            tuple(self._inputs),
            tuple(self._outputs),
            tuple(self._parents),
        )
