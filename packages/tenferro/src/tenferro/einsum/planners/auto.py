"""The default planner: exact where affordable, refined greedy within a time budget.

* up to 4 operands: exhaustive search;
* otherwise greedy first (its cost bounds everything after), then dynamic programming
  over connected subgraphs when the network is small enough to finish within the budget;
* for larger networks, randomised greedy restarts and subtree reconfiguration of the best
  tree until the budget is spent.

The budget grows with the problem's cost (planning should never dominate execution):
``clamp(greedy flops / 2e9, 20 ms, 0.75 s)`` after the first greedy pass. The result is never worse than greedy.
"""

from __future__ import annotations

import math
import random
import time

from tenferro.einsum.planners.dp import dynamic_programming
from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import Network, Pair, path_cost
from tenferro.einsum.planners.optimal import optimal
from tenferro.einsum.planners.reconfigure import reconfigure

__all__ = ["auto", "budget_seconds"]

EXHAUSTIVE_LIMIT = 4
DP_LIMIT = 20
MIN_BUDGET, MAX_BUDGET, FLOPS_PER_SECOND = 0.02, 0.75, 2e9


def budget_seconds(flops: float) -> float:
    """The planning time allowed for a problem whose greedy path costs ``flops``."""
    return min(MAX_BUDGET, max(MIN_BUDGET, flops / FLOPS_PER_SECOND))


def auto(network: Network, *, memory_limit: int | None = None, seed: int = 0) -> list[Pair] | None:
    """The best path found within the budget (``None`` if ``memory_limit`` admits none)."""
    start = time.perf_counter()
    count = len(network.inputs)
    if count <= 2:
        return [(0, 1)] if count == 2 else []
    best = greedy(network, memory_limit=memory_limit)
    if best is None:
        return None
    best_cost = path_cost(network, best)[0]
    if count <= EXHAUSTIVE_LIMIT:
        exact = optimal(network, memory_limit=memory_limit, bound=best_cost)
        return exact if exact is not None else best
    start = time.perf_counter()
    deadline = start + budget_seconds(best_cost)
    if count <= DP_LIMIT:
        exact = dynamic_programming(
            network, bound=best_cost, memory_limit=memory_limit, deadline=deadline
        )
        if exact is not None:
            return exact
    rng = random.Random(seed)
    trials = 0
    while time.perf_counter() < deadline and trials < 4096:
        trials += 1
        costmod = math.exp(rng.uniform(math.log(0.1), math.log(4.0)))
        temperature = math.exp(rng.uniform(math.log(0.001), math.log(1.0)))
        candidate = greedy(
            network, costmod=costmod, temperature=temperature, rng=rng, memory_limit=memory_limit
        )
        if candidate is None:
            continue
        cost = path_cost(network, candidate)[0]
        if cost < best_cost:
            best, best_cost = candidate, cost
        if time.perf_counter() > start + 0.5 * (deadline - start):
            break
    if memory_limit is None:
        best = reconfigure(network, best, deadline)
    return best
