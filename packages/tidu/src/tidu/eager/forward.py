"""Eager forward mode: push tangents through a recorded tape.

Given tangents for some eager keys (typically tracked leaves), visit every node
reachable from the requested outputs in creation order; for a node with at least
one input tangent, take its JVP with respect to exactly those inputs (linearised
once per structure, from the same cache as reverse mode) and apply it to the
concrete tangents (``run_linear``). Composed with a recorded backward pass this
gives Hessian-vector products (forward over reverse).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from computegraph import ValueKey
from tidu.eager.backward import node_values, topological_nodes
from tidu.eager.derivatives import DerivativeCache, default_derivative_cache
from tidu.eager.tape import Trace
from tidu.errors import RuleContractError
from tidu.linearized import LinearizedGraph, PrimitiveGraph

__all__ = ["ForwardExecutor", "forward"]


@runtime_checkable
class ForwardExecutor(Protocol):
    """The downstream runtime's hooks for :func:`forward`."""

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> Mapping[ValueKey, Any]:
        """As for :class:`~tidu.eager.BackwardExecutor`: replay a recorded graph."""
        ...

    def run_linear(
        self,
        linear: LinearizedGraph,
        tangent_in: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> Sequence[Any | None]:
        """Apply ``linear`` to concrete tangents lined up with ``linear.tangent_inputs``;
        return tangents lined up with ``linear.tangent_outputs`` (``None`` for zero)."""
        ...


def forward(
    tangents: Mapping[ValueKey, Any],
    outputs: Sequence[Trace | None],
    executor: ForwardExecutor,
    ctx: Any = None,
    *,
    cache: DerivativeCache | None = None,
) -> dict[ValueKey, Any]:
    """Forward mode on the tape below the trace nodes ``outputs``.

    ``tangents`` maps eager keys to their tangents. Returns the tangent of every eager
    key that has one: the given ones and every output of a visited node that depends
    on them (keys without an entry have a zero tangent).
    """
    result: dict[ValueKey, Any] = dict(tangents)
    roots = [node for node in outputs if node is not None]
    if not roots or not result:
        return result
    derivatives = default_derivative_cache if cache is None else cache
    for node in topological_nodes(roots):
        edges = node.edges
        active: list[int] = []
        tangent_in: list[Any] = []
        for position in range(len(edges) // 3):
            tangent = result.get(edges[3 * position + 1])
            if tangent is not None:
                active.append(position)
                tangent_in.append(tangent)
        if not active:
            continue
        derivative = derivatives.forward_derivative(node.recorded, tuple(active), ctx)
        values = node_values(executor, node)
        if not derivative.needed <= values.keys():
            replayed = executor.execute_forward(PrimitiveGraph(node.recorded.graph), values)
            values = {**replayed, **values}
        tangent_out = executor.run_linear(derivative.linear, tangent_in, values, ctx)
        if len(tangent_out) != len(node.output_keys):
            raise RuleContractError(
                f"forward: run_linear returned {len(tangent_out)} tangent(s) for a node with "
                f"{len(node.output_keys)} output(s)"
            )
        for key, tangent in zip(node.output_keys, tangent_out, strict=True):
            if tangent is not None:
                result[key] = tangent
    return result
