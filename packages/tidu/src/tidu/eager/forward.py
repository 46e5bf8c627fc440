"""Eager forward mode: push tangents through a recorded tape.

Given tangents for some eager keys (typically tracked leaves), visit every node
reachable from the requested outputs in creation order; for a node with at least
one input tangent, take its JVP with respect to exactly those inputs (linearised
once per structure, from the same cache as reverse mode) and apply it to the
concrete tangents (``run_linear``). Composed with a recorded backward pass this
gives Hessian-vector products (forward over reverse).

An output whose tangent has no rule (a rule raised :class:`~tidu.ADRuleError` for
it) does not stop the pass: its tangent is marked undefined, and the error is
raised only if that tangent is used, by a later node or as a requested result.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from computegraph import ValueKey
from tidu.eager.backward import node_values, topological_nodes
from tidu.eager.derivatives import NODE_INSTANCE, DerivativeCache, default_derivative_cache
from tidu.eager.tape import Trace
from tidu.errors import ADRuleError, RuleContractError
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


class _Undefined:
    """The tangent of an output whose rule raised: the error, raised on use."""

    __slots__ = ("error",)

    def __init__(self, error: ADRuleError) -> None:
        self.error = error


def forward(
    tangents: Mapping[ValueKey, Any],
    outputs: Sequence[Trace | None],
    executor: ForwardExecutor,
    ctx: Any = None,
    *,
    cache: DerivativeCache | None = None,
    wanted: Collection[ValueKey] | None = None,
) -> dict[ValueKey, Any]:
    """Forward mode on the tape below the trace nodes ``outputs``.

    ``tangents`` maps eager keys to their tangents. Returns the tangent of every eager
    key that has one: the given ones and every output of a visited node that depends
    on them (keys without an entry have a zero tangent). A tangent that has no rule
    raises :class:`~tidu.ADRuleError` when a later node uses it or when its key is in
    ``wanted`` (all keys when ``wanted`` is None); otherwise it is left out.
    """
    result: dict[ValueKey, Any] = dict(tangents)
    roots = [node for node in outputs if node is not None]
    if not roots or not result:
        return result
    derivatives = default_derivative_cache if cache is None else cache
    # Nodes of one structure share a derivative: one shared-cache lookup per structure.
    local: dict[tuple[Any, ...], Any] = {}
    for node in topological_nodes(roots):
        edges = node.edges
        active: list[int] = []
        tangent_in: list[Any] = []
        for position in range(len(edges) // 3):
            tangent = result.get(edges[3 * position + 1])
            if tangent is not None:
                if type(tangent) is _Undefined:
                    raise tangent.error
                active.append(position)
                tangent_in.append(tangent)
        if not active:
            continue
        try:
            tangent_out = _push(
                derivatives, executor, node, tuple(active), None, tangent_in, ctx, local
            )
        except ADRuleError:
            tangent_out = [
                _push_one(derivatives, executor, node, tuple(active), slot, tangent_in, ctx, local)
                for slot in range(len(node.output_keys))
            ]
        for key, tangent in zip(node.output_keys, tangent_out, strict=True):
            if tangent is not None:
                result[key] = tangent
    undefined = [
        key
        for key, tangent in result.items()
        if type(tangent) is _Undefined and (wanted is None or key in wanted)
    ]
    if undefined:
        raise result[undefined[0]].error
    return {key: t for key, t in result.items() if type(t) is not _Undefined}


def _push(
    derivatives: DerivativeCache,
    executor: ForwardExecutor,
    node: Trace,
    active: tuple[int, ...],
    slot: int | None,
    tangent_in: list[Any],
    ctx: Any,
    local: dict[tuple[Any, ...], Any],
) -> Sequence[Any | None]:
    """The tangents of the node's outputs (only of output ``slot`` when given)."""
    memo_key = (id(node.recorded), active, slot)  # recorded graphs live through the call
    derivative = local.get(memo_key)
    if derivative is None:
        derivative = local[memo_key] = derivatives.forward_derivative(
            node.recorded, active, ctx, slot
        )
    values = node_values(executor, node)
    if not derivative.needed <= values.keys():
        replayed = executor.execute_forward(PrimitiveGraph(node.recorded.graph), values)
        values = {**replayed, **values}
    if node.instance is not None:
        values = {**values, NODE_INSTANCE: node.instance}
    tangent_out = executor.run_linear(derivative.linear, tangent_in, values, ctx)
    expected = len(node.output_keys) if slot is None else 1
    if len(tangent_out) != expected:
        raise RuleContractError(
            f"forward: run_linear returned {len(tangent_out)} tangent(s) for {expected} "
            f"output(s) of a node"
        )
    return tangent_out


def _push_one(
    derivatives: DerivativeCache,
    executor: ForwardExecutor,
    node: Trace,
    active: tuple[int, ...],
    slot: int,
    tangent_in: list[Any],
    ctx: Any,
    local: dict[tuple[Any, ...], Any],
) -> Any:
    try:
        (tangent,) = _push(derivatives, executor, node, active, slot, tangent_in, ctx, local)
    except ADRuleError as error:
        return _Undefined(error)
    return tangent
