"""Results of the transforms: :class:`LinearizedGraph` and the :class:`PrimitiveGraph` view."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from computegraph import Graph, LocalValueId, ValueKey

__all__ = ["LinearizedGraph", "PrimitiveGraph", "external_keys"]


class LinearizedGraph:
    """A linear graph made by :func:`~tidu.linearize` or :func:`~tidu.linear_transpose`.

    * ``graph``: the linear graph. Its inputs are exactly the tangent (or seed)
      inputs; primal values appear inside as ``External`` keys (never copies). Its
      ``parents`` are the graphs it was derived from (a linearisation's view roots,
      a transpose's linear graph), so ``resolve(graph)`` finds every definition.
    * ``tangent_inputs``: ``(key, local id)`` pairs. From ``linearize``: one per
      ``wrt`` entry, ``key`` being the primal input key. From ``linear_transpose``:
      one per active output of the source graph, ``key`` being the seed's input key.
    * ``tangent_outputs``: a local id or ``None`` (zero) per output. From
      ``linearize``: aligned with the requested outputs. From ``linear_transpose``:
      aligned with the source's ``tangent_inputs``.
    * ``add_operation``: the accumulation operation of the primitive set, if known.
    """

    __slots__ = ("add_operation", "graph", "memo", "tangent_inputs", "tangent_outputs")

    def __init__(
        self,
        graph: Graph,
        tangent_inputs: tuple[tuple[Hashable, LocalValueId], ...],
        tangent_outputs: tuple[LocalValueId | None, ...],
        add_operation: Any = None,
    ) -> None:
        self.graph = graph
        self.tangent_inputs = tangent_inputs
        self.tangent_outputs = tangent_outputs
        self.add_operation = add_operation
        self.memo: dict[Hashable, Any] = {}
        """Artifacts derived from this (immutable) graph, e.g. compiled programs, by name."""

    def as_graph(self) -> Graph:
        """The linear graph."""
        return self.graph

    def tangent_input_keys(self) -> tuple[ValueKey, ...]:
        """Global keys of the tangent (or seed) inputs, in ``tangent_inputs`` order."""
        keys = self.graph.value_keys
        return tuple(keys[local] for _, local in self.tangent_inputs)

    def tangent_output_keys(self) -> tuple[ValueKey | None, ...]:
        """Global keys of the tangent outputs (``None`` for zero outputs)."""
        keys = self.graph.value_keys
        return tuple(None if local is None else keys[local] for local in self.tangent_outputs)

    def __str__(self) -> str:
        names = ", ".join(f"{key!r}: %{local}" for key, local in self.tangent_inputs)
        outputs = ", ".join(
            "zero" if local is None else f"%{local}" for local in self.tangent_outputs
        )
        return f"{self.graph}\n  tangent inputs: [{names}]\n  tangent outputs: [{outputs}]"

    def __repr__(self) -> str:
        return (
            f"<LinearizedGraph: {len(self.tangent_inputs)} tangent input(s), "
            f"{len(self.graph.operation_keys)} operation(s), {len(self.tangent_outputs)} "
            f"tangent output(s)>"
        )


class PrimitiveGraph:
    """A read-only view of a graph handed to a backward executor's ``execute_forward``."""

    __slots__ = ("graph",)

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def as_graph(self) -> Graph:
        """The underlying :class:`computegraph.Graph`."""
        return self.graph

    def __repr__(self) -> str:
        return f"PrimitiveGraph({self.graph!r})"


def external_keys(graph: Graph) -> frozenset[ValueKey]:
    """Keys that ``graph``'s operations read but that are not values of ``graph``."""
    local = set(graph.value_keys)
    return frozenset(
        key
        for operation_key in graph.operation_keys
        for key in operation_key.inputs
        if key not in local
    )
