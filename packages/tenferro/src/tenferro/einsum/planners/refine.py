"""The time-budgeted search for large networks, shared by ``auto`` and ``auto-hq``.

Cold (no known path):

1. Small terms are absorbed into the terms holding all their labels
   (:mod:`.simplify`); the search runs on what is left.
2. *Seeds*: opt_einsum's greedy path, greedy under other scores (:data:`SWEEP`) and
   randomised greedy restarts; the best is *reconfigured* (exact re-planning of its
   costliest subtrees, :mod:`.reconfigure`), which alone repairs most of greedy's worst
   choices.
3. *Annealing* (:mod:`.anneal`) from the best tree so far, in runs of about
   :data:`RUN_SWEEPS` sweeps (fewer, longer runs find the deeper minima), each keeping
   the better tree.

Warm (paths known for the same subscripts at other extents, ``seeds``): the best of
greedy and the seeds, reconfigured, then annealed from a low temperature -- a short
polish of a known order rather than a new search.

Either way a last reconfiguration of the whole tree follows. Every stage only ever
replaces the best tree by a cheaper one, so the result is never worse than any seed.
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
from tenferro.einsum.planners.simplify import absorbed, expand
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

RUN_SWEEPS = 20000
"""How many sweeps one annealing run makes when the budget allows several (fewer,
longer runs find the deeper minima; runs are timed by a short calibration run)."""
CALIBRATION_SWEEPS = 16
MIN_RUN_SECONDS = 0.004


def refine(
    network: Network,
    deadline: float,
    *,
    seeds: Sequence[Sequence[Pair]] = (),
    seed: int = 0,
    warm: bool = False,
) -> list[Pair]:
    """The best binary SSA path found by ``deadline`` (``time.perf_counter`` seconds);
    ``warm``: polish the ``seeds`` rather than search afresh (see the module
    documentation)."""
    start = time.perf_counter()
    span = max(deadline - start, 0.0)
    count = len(network.inputs)
    labels = Labels(network)
    first = greedy(network)
    assert first is not None
    known = [Tree(labels, first)] + [Tree(labels, s) for s in seeds]
    best = min(known, key=Tree.total)
    if warm:
        reconfigure(best, start + 0.3 * span, leaves=8)
        found = anneal(best.copy(), deadline=start + 0.85 * span, seed=seed, t_start=0.1)
        if found.total() < best.total():
            best = found
    else:
        steps, ids, rest = absorbed(network)
        if len(rest.inputs) >= 3:
            found = _search(rest, start + 0.9 * span, seed, seeds if not steps else ())
            whole = Tree(labels, expand(steps, ids, found.ssa(), count))
        elif len(rest.inputs) == 2:
            whole = Tree(labels, expand(steps, ids, [(0, 1)], count))
        else:
            whole = Tree(labels, list(steps))
        if whole.total() < best.total():
            best = whole
    reconfigure(best, deadline, leaves=8)
    return best.ssa()


def _search(network: Network, deadline: float, seed: int, seeds: Sequence[Sequence[Pair]]) -> Tree:
    start = time.perf_counter()
    span = max(deadline - start, 0.0)
    labels = Labels(network)
    first = greedy(network)
    assert first is not None
    candidates = [Tree(labels, first)] + [Tree(labels, s) for s in seeds]
    for costmod, flops_weight in SWEEP:
        if time.perf_counter() > start + 0.05 * span:
            break
        path = scored_greedy(
            network, costmod=costmod, flops_weight=flops_weight, deadline=start + 0.08 * span
        )
        if path is not None:
            candidates.append(Tree(labels, path))
    rng = random.Random(seed)
    while time.perf_counter() < start + 0.08 * span:
        path = scored_greedy(
            network,
            costmod=math.exp(rng.uniform(math.log(0.1), math.log(4.0))),
            temperature=math.exp(rng.uniform(math.log(0.001), math.log(1.0))),
            rng=rng,
            deadline=start + 0.1 * span,
        )
        if path is not None:
            candidates.append(Tree(labels, path))
    best = min(candidates, key=Tree.total)
    reconfigure(best, min(deadline, time.perf_counter() + 0.05 * span), leaves=8)
    started = time.perf_counter()
    probe = anneal(
        best.copy(), deadline=deadline, sweeps=CALIBRATION_SWEEPS, seed=seed, t_start=0.05
    )
    if probe.total() < best.total():
        best = probe
    sweep_seconds = max((time.perf_counter() - started) / CALIBRATION_SWEEPS, 1e-7)
    run = 1
    while True:
        left = deadline - time.perf_counter()
        if left < MIN_RUN_SECONDS:
            break
        runs = max(1, int(left / (RUN_SWEEPS * sweep_seconds)))
        found = anneal(best.copy(), deadline=time.perf_counter() + left / runs, seed=seed + run)
        if found.total() < best.total():
            best = found
        run += 1
    return best
