"""Exhaustive planning (opt_einsum's ``optimal``): depth-first search over every pair
(outer products included) with branch and bound on the flop count, states already
reached more cheaply pruned. With a memory limit, a pair whose result does not fit ends
its path with one step over every remaining term (opt_einsum's behaviour).

The search is exponential: :data:`OPERAND_LIMIT` operands at most (the caller's
check), and a deadline, past which :class:`OptimalTimeoutError` is raised."""

from __future__ import annotations

import math
import time

from tenferro.einsum.planners.network import Network, Step, search_flops, step_flops

__all__ = ["OPERAND_LIMIT", "OptimalTimeoutError", "optimal"]

OPERAND_LIMIT = 12


class OptimalTimeoutError(Exception):
    """The deadline passed before the search finished."""


def optimal(
    network: Network,
    *,
    memory_limit: int | None = None,
    bound: float = math.inf,
    deadline: float | None = None,
) -> list[Step] | None:
    """The cheapest SSA path (``None`` if none is cheaper than ``bound``); raises
    :class:`OptimalTimeoutError` when the deadline (``time.perf_counter`` seconds)
    passes first."""
    output = network.output
    count = len(network.inputs)
    if count == 1:
        return [(0,)]
    best_cost: list[float] = [bound]
    best_path: list[list[Step] | None] = [None]
    seen: dict[tuple[tuple[str, ...], ...], int] = {}
    visits = [0]

    def search(
        terms: list[tuple[int, frozenset[str]]], cost: int, path: list[Step], next_id: int
    ) -> None:
        if len(terms) == 1:
            if cost < best_cost[0]:
                best_cost[0], best_path[0] = cost, list(path)
            return
        visits[0] += 1
        if deadline is not None and visits[0] % 256 == 1 and time.perf_counter() > deadline:
            raise OptimalTimeoutError
        state = tuple(sorted(tuple(sorted(t)) for _, t in terms))
        if seen.get(state, math.inf) <= cost:
            return
        seen[state] = cost
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                (a, left), (b, right) = terms[i], terms[j]
                others = [t for k, t in enumerate(terms) if k not in (i, j)]
                needed = output.union(*(t for _, t in others)) if others else output
                kept = (left | right) & needed
                step = cost + search_flops(network, left, right, kept)
                if step >= best_cost[0]:
                    continue
                if memory_limit is not None and network.size(kept) > memory_limit:
                    _oversize(terms, cost, path)
                    continue
                path.append((a, b))
                search([*others, (next_id, kept)], step, path, next_id + 1)
                path.pop()

    def _oversize(terms: list[tuple[int, frozenset[str]]], cost: int, path: list[Step]) -> None:
        involved = frozenset().union(*(t for _, t in terms))
        total = cost + step_flops(network, involved, involved & output, len(terms))
        if total < best_cost[0]:
            best_cost[0], best_path[0] = total, [*path, tuple(a for a, _ in terms)]

    search(list(enumerate(network.inputs)), 0, [], count)
    return best_path[0]
