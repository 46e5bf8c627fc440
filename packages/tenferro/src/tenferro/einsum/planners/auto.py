"""The default planner: exact where affordable, refined greedy within a time budget.

* up to 4 operands: exhaustive search;
* otherwise greedy first (its cost bounds everything after), then dynamic programming
  over connected subgraphs when the network is small enough to finish within the budget;
* for larger networks (or when dynamic programming runs out of its half of the budget),
  greedy with other scores (:data:`SWEEP`), randomised greedy restarts, then subtree
  reconfiguration of the few best trees with growing subtrees (8, 10, 12 leaves) until
  the budget is spent.

The budget grows with the problem's cost (planning should never dominate execution):
``clamp(greedy flops / 2e9, 20 ms, 0.65 s)`` after the first greedy pass. The result is
never worse than greedy (opt_einsum's score is the first candidate).
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
from tenferro.einsum.planners.scored_greedy import scored_greedy

__all__ = ["auto", "budget_seconds"]

EXHAUSTIVE_LIMIT = 4
DP_LIMIT = 30
SWEEP = [
    (4.0, 0.0),
    (1.0, 0.0),
    (0.0, 0.01),
    (2.0, 0.0),
    (0.5, 0.0),
    (8.0, 0.0),
    (4.0, 0.01),
    (1.0, 0.01),
]
"""Deterministic :func:`scored_greedy` variants ``(costmod, flops_weight)``, most useful
first."""
RECONFIGURED_STARTS = 3
MIN_BUDGET, MAX_BUDGET, FLOPS_PER_SECOND = 0.02, 0.65, 2e9


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
            network,
            bound=best_cost,
            memory_limit=memory_limit,
            deadline=start + 0.5 * (deadline - start),
        )
        if exact is not None:
            return exact
    candidates = {best_cost: best}
    for costmod, flops_weight in SWEEP:
        if time.perf_counter() > start + 0.2 * (deadline - start):
            break
        candidate = scored_greedy(
            network,
            costmod=costmod,
            flops_weight=flops_weight,
            memory_limit=memory_limit,
            deadline=start + 0.3 * (deadline - start),
        )
        if candidate is not None:
            candidates.setdefault(path_cost(network, candidate)[0], candidate)
    rng = random.Random(seed)
    while time.perf_counter() < start + 0.35 * (deadline - start):
        costmod = math.exp(rng.uniform(math.log(0.1), math.log(4.0)))
        temperature = math.exp(rng.uniform(math.log(0.001), math.log(1.0)))
        candidate = scored_greedy(
            network,
            costmod=costmod,
            temperature=temperature,
            rng=rng,
            memory_limit=memory_limit,
            deadline=start + 0.4 * (deadline - start),
        )
        if candidate is not None:
            candidates.setdefault(path_cost(network, candidate)[0], candidate)
    ranked = sorted(candidates.items())
    if memory_limit is not None:
        return ranked[0][1]
    # Reconfiguration from different starting trees ends in different places: refine the
    # few best starts, each in its share of the remaining time.
    starts = ranked[:RECONFIGURED_STARTS]
    results = []
    for number, (_, tree) in enumerate(starts):
        now = time.perf_counter()
        share = now + (deadline - now) / (len(starts) - number)
        for leaves in (8, 10, 12):
            tree = reconfigure(network, tree, share, leaves=leaves)
        results.append((path_cost(network, tree)[0], tree))
    return min(results, key=lambda r: r[0])[1]
