"""``RecordedGraph``: one eager invocation (a primitive, or a composite graph) as a tape node."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from computegraph import Graph, GraphOperation, Input, Local, ValueKey, resolve
from tidu.errors import TransformError

__all__ = ["EAGER_PASS", "RecordedGraph"]


class _EagerPass:
    """The pass id eager backward linearises recorded graphs with."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "eager"

    def __reduce__(self) -> str:
        return "EAGER_PASS"


EAGER_PASS = _EagerPass()

_FROM_PRIMITIVE_LIMIT = 4096
_from_primitive: dict[tuple[Any, tuple[Hashable, ...]], RecordedGraph] = {}
_from_primitive_lock = threading.Lock()


class RecordedGraph:
    """A graph recorded as one tape node: its inputs (by input key) and outputs (by value key).

    Two recorded graphs are equal when their input keys, output keys and
    ``derivative_signature`` are equal; eager backward caches derivative programs by
    that identity, so a frontend that reuses input keys (as :meth:`from_primitive`
    does for a given operation and keys) pays for linearise and transpose once per
    structure. ``derivative_signature`` is any hashable the frontend wants to add to
    that identity (e.g. facts its rules read from the context).
    """

    __slots__ = (
        "_hash",
        "_view",
        "derivative_signature",
        "graph",
        "input_keys",
        "input_value_keys",
        "output_keys",
    )

    def __init__(
        self,
        graph: Graph,
        input_keys: Sequence[Hashable],
        output_keys: Sequence[ValueKey],
        *,
        derivative_signature: Hashable = None,
    ) -> None:
        inputs = tuple(input_keys)
        outputs = tuple(output_keys)
        if len(inputs) != len(graph.inputs):
            raise TransformError(
                f"RecordedGraph: {len(inputs)} input key(s) for a graph with "
                f"{len(graph.inputs)} input(s)"
            )
        if len(outputs) != len(graph.outputs):
            raise TransformError(
                f"RecordedGraph: {len(outputs)} output key(s) for a graph with "
                f"{len(graph.outputs)} output(s)"
            )
        input_value_keys: tuple[ValueKey, ...] = tuple(Input(k) for k in inputs)
        for position, (declared, key) in enumerate(
            zip(graph.input_keys(), input_value_keys, strict=True)
        ):
            if declared != key:
                raise TransformError(
                    f"RecordedGraph: graph input {position} is {declared!r}, not {key!r}"
                )
        for position, (declared, key) in enumerate(zip(graph.output_keys(), outputs, strict=True)):
            if declared != key:
                raise TransformError(
                    f"RecordedGraph: graph output {position} is {declared!r}, not {key!r}"
                )
        self.graph = graph
        self.input_keys = inputs
        self.output_keys = outputs
        self.derivative_signature = derivative_signature
        self.input_value_keys = input_value_keys
        self._hash = hash((inputs, outputs, derivative_signature))
        self._view: Any = None

    @classmethod
    def from_primitive(
        cls, operation: GraphOperation, input_keys: Iterable[Hashable]
    ) -> RecordedGraph:
        """A one-operation graph: ``operation`` applied to inputs named ``input_keys``.

        Memoised (bounded): the same operation and keys give the same object.
        """
        keys = tuple(input_keys)
        memo_key = (operation, keys)
        found = _from_primitive.get(memo_key)
        if found is not None:
            return found
        from tidu.primitive import GraphPrimitiveBuilder

        builder = GraphPrimitiveBuilder()
        locals_ = [Local(builder.add_input(key)) for key in keys]
        outputs = builder.add_operation(operation, locals_)
        builder.set_outputs(outputs)
        graph = builder.build()
        recorded = cls(graph, keys, graph.output_keys())
        with _from_primitive_lock:
            if len(_from_primitive) >= _FROM_PRIMITIVE_LIMIT:
                _from_primitive.clear()
            return _from_primitive.setdefault(memo_key, recorded)

    def as_graph(self) -> Graph:
        """The recorded graph."""
        return self.graph

    def view(self) -> Any:
        """The resolved view of the recorded graph (computed once)."""
        if self._view is None:
            self._view = resolve(self.graph)
        return self._view

    def __eq__(self, other: object) -> bool:
        return self is other or (
            type(other) is RecordedGraph
            and self._hash == other._hash
            and self.input_keys == other.input_keys
            and self.output_keys == other.output_keys
            and self.derivative_signature == other.derivative_signature
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (
            f"<RecordedGraph: {len(self.input_keys)} input(s), "
            f"{len(self.graph.operation_keys)} operation(s), {len(self.output_keys)} output(s)>"
        )
