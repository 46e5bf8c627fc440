"""``linear_transpose``: reverse mode, transposing a linear graph.

The linear graph's operations are swept in reverse topological order. Each
operation whose outputs received a cotangent calls its primitive's transpose
rule; contributions to the same value (fan-out) are accumulated with the
primitive set's ``add()``, bucketed by global value key. Structurally identical
operations are transposed once (their outputs are one value), and seeds for an
output requested twice are summed, so the result is exactly the adjoint.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import Any

from computegraph import (
    Derived,
    External,
    Linearized,
    Local,
    LocalValueId,
    OperationKey,
    ValueKey,
    gc_paused,
)
from tidu.errors import RuleContractError, TransformError
from tidu.keys import SeedPass, tangent_key
from tidu.linearize import find_add_operation
from tidu.linearized import LinearizedGraph
from tidu.primitive import (
    ADD_ROLE,
    GraphPrimitiveBuilder,
    PrimitiveBuilder,
    call_transpose_rule,
)

__all__ = ["linear_transpose", "linear_transpose_with_builder"]

_TRANSPOSE_SERIALS = itertools.count(1)


def linear_transpose(
    linear: LinearizedGraph, ctx: Any = None, *, add: Any = None
) -> LinearizedGraph:
    """The transpose (VJP) of a linear graph, as a new linear graph.

    The result has one seed input per active (non-zero) tangent output of
    ``linear``, named with a key no other transform call can mint, and one tangent
    output per tangent input of ``linear`` (``None`` where nothing flows back).
    ``ctx`` is passed to every transpose rule; ``add`` supplies the accumulation
    operation when ``linear`` has no operation to ask (e.g. an identity map whose
    output is requested twice).
    """
    if not isinstance(linear, LinearizedGraph):
        raise TypeError(f"linear_transpose: expected a LinearizedGraph, got {linear!r}")
    with gc_paused():
        builder = GraphPrimitiveBuilder()
        # Rules may read values the linear graph computes (constant coefficients), so
        # the transposed graph resolves through it.
        builder.add_parent(linear.graph)
        serial = next(_TRANSPOSE_SERIALS)
        seed_inputs: list[tuple[Hashable, LocalValueId]] = []
        seeds: list[LocalValueId | None] = []
        for position, output in enumerate(linear.tangent_outputs):
            if output is None:
                seeds.append(None)
                continue
            if not linear.tangent_inputs:
                raise TransformError(
                    "linear_transpose: the linear graph has active tangent outputs but no "
                    "tangent inputs"
                )
            base = linear.tangent_inputs[min(position, len(linear.tangent_inputs) - 1)][0]
            seed_key = tangent_key(base, SeedPass(serial, position))
            local = builder.add_input(seed_key)
            seed_inputs.append((seed_key, local))
            seeds.append(local)
        add_operation = _add_for(linear, add)
        results = _sweep(linear, builder, seeds, ctx, add_operation)
        builder.set_outputs([r for r in results if r is not None])
        return LinearizedGraph(builder.build(), tuple(seed_inputs), results, add_operation)


def linear_transpose_with_builder(
    linear: LinearizedGraph,
    builder: PrimitiveBuilder,
    cotangent_seeds: Sequence[LocalValueId | None],
    ctx: Any = None,
    *,
    add: Any = None,
) -> tuple[LocalValueId | None, ...]:
    """Run the transpose sweep of ``linear``, emitting into a caller's ``builder``.

    ``cotangent_seeds[i]`` is the builder's id of the cotangent of
    ``linear.tangent_outputs[i]`` (``None``, or a missing entry, for none). Returns
    the cotangent ids aligned with ``linear.tangent_inputs``. Typical builders
    execute each operation immediately (eager backward).
    """
    if not isinstance(linear, LinearizedGraph):
        raise TypeError(
            f"linear_transpose_with_builder: expected a LinearizedGraph, got {linear!r}"
        )
    seeds = list(cotangent_seeds)[: len(linear.tangent_outputs)]
    seeds += [None] * (len(linear.tangent_outputs) - len(seeds))
    return _sweep(linear, builder, seeds, ctx, _add_for(linear, add))


def _add_for(linear: LinearizedGraph, add: Any) -> Any:
    if add is not None:
        return add
    if linear.add_operation is not None:
        return linear.add_operation
    return find_add_operation(key.operation for key in linear.graph.operation_keys)


def _sweep(
    linear: LinearizedGraph,
    builder: PrimitiveBuilder,
    seeds: Sequence[LocalValueId | None],
    ctx: Any,
    add_operation: Any,
) -> tuple[LocalValueId | None, ...]:
    graph = linear.graph
    value_keys = graph.value_keys
    cotangents: dict[ValueKey, LocalValueId] = {}

    def accumulate(key: ValueKey, contribution: LocalValueId) -> None:
        existing = cotangents.get(key)
        if existing is None:
            cotangents[key] = contribution
            return
        if add_operation is None:
            raise TransformError(
                f"linear_transpose: cotangents of {key!r} must be summed, but no operation is "
                f"known to supply add(); pass add="
            )
        (cotangents[key],) = builder.add_primitive(
            add_operation, [Local(existing), Local(contribution)], ADD_ROLE
        )

    for output, seed in zip(linear.tangent_outputs, seeds, strict=True):
        if output is not None and seed is not None:
            accumulate(value_keys[output], seed)

    operation_keys = graph.operation_keys
    first: dict[OperationKey, int] = {}
    for position, operation_key in enumerate(operation_keys):
        first.setdefault(operation_key, position)
    for position in range(len(operation_keys) - 1, -1, -1):
        operation_key = operation_keys[position]
        if first[operation_key] != position:
            continue  # a structurally identical operation: transposed once, at its first use
        if operation_key.output_count == 1:
            found = cotangents.get(Derived(operation_key, 0))
            if found is None:
                continue
            outgoing: tuple[LocalValueId | None, ...] = (found,)
        else:
            outgoing = tuple(cotangents.get(k) for k in operation_key.output_keys())
            if all(c is None for c in outgoing):
                continue
        role = operation_key.role
        if not isinstance(role, Linearized):
            raise RuleContractError(
                f"linear_transpose: {operation_key.operation!r} lies on the active path of the "
                f"linear graph but has role {role!r}; JVP rules must emit Linearized roles"
            )
        inputs = tuple(External(k) for k in operation_key.inputs)
        incoming = call_transpose_rule(
            operation_key.operation, builder, outgoing, inputs, role, ctx
        )
        for key, cotangent in zip(operation_key.inputs, incoming, strict=True):
            if cotangent is not None:
                accumulate(key, cotangent)

    results = tuple(cotangents.get(value_keys[local]) for _, local in linear.tangent_inputs)
    _check_nothing_leaks(linear, cotangents)
    return results


def _check_nothing_leaks(linear: LinearizedGraph, cotangents: dict[ValueKey, LocalValueId]) -> None:
    """Every cotangent must land on a value of the graph: an active operand defined
    elsewhere means the graph depends on a tangent it does not declare as an input."""
    local = set(linear.graph.value_keys)
    for key in cotangents:
        if key not in local:
            raise RuleContractError(
                f"linear_transpose: a cotangent flows to {key!r}, which the linear graph uses as "
                f"an active operand but neither computes nor declares as a tangent input"
            )
