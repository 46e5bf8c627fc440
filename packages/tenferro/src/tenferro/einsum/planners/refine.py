"""The time-budgeted search for large networks, shared by ``auto`` and ``auto-hq``.

1. *Seeds*: opt_einsum's greedy path, greedy under other scores
   (:data:`SWEEP`), randomised greedy restarts, and any paths the caller knows (a plan
   of the same subscripts at other extents).
2. *Reconfiguration* of the best seed: exact re-planning of its costliest subtrees
   (:mod:`.reconfigure`), which alone repairs most of greedy's worst choices.
3. *Annealing* (:mod:`.anneal`) from the best tree so far, in as many runs as the budget
   allows for the network's size, each keeping the better tree.
4. A last reconfiguration of the best tree.

Every stage only ever replaces the best tree by a cheaper one, so the result is never
worse than any seed.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence

from tenferro.einsum.planners.anneal import anneal
from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import Network, Pair
from tenferro.einsum.planners.reconfigure import reconfigure
from tenferro.einsum.planners.scored_greedy import scored_greedy
from tenferro.einsum.planners.tree import Labels, Tree

__all__ = ["SWEEP", "refine"]

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

SWEEP_COST = 2.0e-6
"""Seconds per node and sweep of an annealing run (a CPython estimate, used to size runs)."""
RUN_SWEEPS = 20000
"""The length of one annealing run, in sweeps, when the budget allows."""
MIN_SWEEPS = 150


def refine(
    network: Network,
    deadline: float,
    *,
    seeds: Sequence[Sequence[Pair]] = (),
    seed: int = 0,
) -> list[Pair]:
    """The best binary SSA path found by ``deadline`` (``time.perf_counter`` seconds)."""
    start = time.perf_counter()
    span = max(deadline - start, 0.0)
    labels = Labels(network)
    candidates: list[Tree] = []
    first = greedy(network)
    assert first is not None
    candidates.append(Tree(labels, first))
    for known in seeds:
        candidates.append(Tree(labels, known))
    for costmod, flops_weight in SWEEP:
        if time.perf_counter() > start + 0.08 * span:
            break
        path = scored_greedy(
            network,
            costmod=costmod,
            flops_weight=flops_weight,
            deadline=start + 0.12 * span,
        )
        if path is not None:
            candidates.append(Tree(labels, path))
    rng = random.Random(seed)
    while time.perf_counter() < start + 0.12 * span:
        path = scored_greedy(
            network,
            costmod=math.exp(rng.uniform(math.log(0.1), math.log(4.0))),
            temperature=math.exp(rng.uniform(math.log(0.001), math.log(1.0))),
            rng=rng,
            deadline=start + 0.15 * span,
        )
        if path is not None:
            candidates.append(Tree(labels, path))
    candidates.sort(key=Tree.total)
    best = candidates[0]
    reconfigure(best, min(deadline, time.perf_counter() + 0.1 * span), leaves=8)
    final = deadline - 0.1 * span
    nodes = len(network.inputs)
    run = 0
    while True:
        now = time.perf_counter()
        left = final - now
        sweeps = int(left / (SWEEP_COST * nodes))
        if sweeps < MIN_SWEEPS:
            break
        runs = max(1, sweeps // RUN_SWEEPS)
        length = now + left / runs
        found = anneal(best.copy(), deadline=length, seed=seed + run)
        if found.total() < best.total():
            best = found
        run += 1
    reconfigure(best, deadline, leaves=8)
    return best.ssa()
