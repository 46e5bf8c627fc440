"""The default planners: ``auto`` and ``auto-hq``.

* Up to :data:`~.exact.EXACT_LIMIT` operands: the exact optimum in opt_einsum's count
  (:mod:`.exact`), which no other planner can beat.
* Larger networks: opt_einsum's greedy path first; ``dp`` when the network is small
  enough (exact among trees without outer products, given a share of the budget); up
  to :data:`~.optimal.OPERAND_LIMIT` operands, ``optimal`` bounded by the best cost so
  far (its answer ends the search when it finishes in half the budget); else the
  refinement tiers of :mod:`.refine` (absorption of small terms, greedy seeds, subtree
  reconfiguration, tree annealing) on the network without its alone labels. Each
  operand's alone labels are then summed in a step of their own where that is cheaper
  (:mod:`.singles`). The cheapest candidate wins, so ``auto`` is never worse than
  greedy, nor than ``dp`` or ``optimal`` where it runs them.

``auto``'s budget grows with the problem's cost (planning should never dominate
execution): ``clamp(greedy flops / 2e9, 20 ms, 0.65 s)``. ``auto-hq``'s grows with the
network's size (:func:`hq_budget_seconds`, at most 10 s), for networks worth planning
hard. Both are wall-clock budgets: large networks may get different (never worse than
greedy) paths on machines of different speed. Paths known for the same subscripts at
other extents (``seeds``) shrink the budget to a quarter: the search polishes them
(``dp`` and ``optimal`` are not run then).

With a memory limit, a path whose intermediates fit competes with the best path
sliced to fit (and with that path annealed towards small intermediates, sliced), by
the work each does in all (:func:`~.slicing.sliced_score`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence

from tenferro.einsum.planners.anneal import anneal
from tenferro.einsum.planners.dp import DPTimeoutError, dynamic_programming
from tenferro.einsum.planners.exact import EXACT_LIMIT, exact
from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import Network, Pair, Step, binarize, path_cost
from tenferro.einsum.planners.optimal import OPERAND_LIMIT, OptimalTimeoutError, optimal
from tenferro.einsum.planners.refine import SWEEP, refine
from tenferro.einsum.planners.registry import PlanningError
from tenferro.einsum.planners.scored_greedy import scored_greedy
from tenferro.einsum.planners.singles import reduced, with_singles
from tenferro.einsum.planners.slicing import fits, slice_to_fit, sliced_score
from tenferro.einsum.planners.tree import Labels, Tree

__all__ = ["auto", "auto_hq", "budget_seconds", "hq_budget_seconds"]

DP_LIMIT = 40
DP_SECONDS, DP_FLOOR_LIMIT = 0.25, 16
"""Up to ``DP_FLOOR_LIMIT`` operands ``dp`` gets at least ``DP_SECONDS`` (it usually
needs milliseconds there), so that ``auto`` matches it whatever the budget."""
MIN_BUDGET, MAX_BUDGET, FLOPS_PER_SECOND = 0.02, 0.65, 2e9
HQ_MIN_BUDGET, HQ_MAX_BUDGET, HQ_SECONDS_PER_OPERAND = 1.0, 10.0, 0.0625
WARM_FRACTION = 0.25
"""The share of the budget a search gets when paths of the same subscripts at other
extents are known (a sweep over bond dimensions)."""


def budget_seconds(flops: float) -> float:
    """``auto``'s planning time for a problem whose greedy path costs ``flops``."""
    return min(MAX_BUDGET, max(MIN_BUDGET, flops / FLOPS_PER_SECOND))


def hq_budget_seconds(count: int) -> float:
    """``auto-hq``'s planning time for a network of ``count`` operands."""
    return min(HQ_MAX_BUDGET, max(HQ_MIN_BUDGET, HQ_SECONDS_PER_OPERAND * count))


def auto(
    network: Network,
    memory_limit: int | None = None,
    *,
    seeds: Sequence[Sequence[Pair]] = (),
    budget: float | None = None,
    seed: int = 0,
) -> list[Step]:
    """``auto``'s path (see the module documentation). With ``memory_limit``: a path
    whose intermediates (the output aside) fit, or a better path that fits once sliced
    (:mod:`.slicing`), whichever does less work in all."""
    return _plan(network, memory_limit, seeds, budget, seed, high_quality=False)


def auto_hq(
    network: Network,
    memory_limit: int | None = None,
    *,
    seeds: Sequence[Sequence[Pair]] = (),
    budget: float | None = None,
    seed: int = 0,
) -> list[Step]:
    """``auto-hq``'s path: ``auto`` with a budget that grows with the network's size
    (``budget`` seconds instead when given; ``seed`` varies its random choices)."""
    return _plan(network, memory_limit, seeds, budget, seed, high_quality=True)


def _plan(
    network: Network,
    memory_limit: int | None,
    seeds: Sequence[Sequence[Pair]],
    budget: float | None,
    seed: int,
    high_quality: bool,
) -> list[Step]:
    count = len(network.inputs)
    if count == 1:
        return [(0,)]
    if memory_limit is None:
        return _unlimited(network, seeds, budget, seed, high_quality)
    # The output is not an intermediate. A path that fits, or the best path sliced to fit,
    # whichever does less work in all.
    limit = max(memory_limit, network.size(network.output))
    work = reduced(network)
    if count <= EXACT_LIMIT:
        fitting = exact(network, memory_limit=limit)
    else:
        fitting = _within_limit(network, limit)
    start = time.perf_counter()
    free = _unlimited(network, seeds, budget, seed, high_quality)
    free_pairs = binarize(free, count)
    if fits(work, free_pairs, limit):
        return free
    options: list[tuple[float, list[Step]]] = []
    if fitting is not None:
        options.append((sliced_score(work, binarize(fitting, count), frozenset()), fitting))
    for pairs, path in _toward(work, free_pairs, limit, time.perf_counter() - start, seed, network):
        try:
            cut = frozenset(slice_to_fit(work, pairs, limit))
        except PlanningError:
            continue  # too many slices along this tree: another one may do
        options.append((sliced_score(work, pairs, cut), path))
    if not options:  # say why along the best tree
        slice_to_fit(work, free_pairs, limit)
    return min(options, key=lambda option: option[0])[1]


def _toward(
    work: Network, free: list[Pair], limit: int, spent: float, seed: int, network: Network
) -> list[tuple[list[Pair], list[Step]]]:
    """The unlimited best tree, and the same tree annealed for as long again with
    intermediates above ``limit`` penalised (it needs fewer slices), each as its binary
    pairs and its path with one-term steps."""
    found = [(free, with_singles(network, free))]
    if len(free) > 2:
        steered = anneal(
            Tree(Labels(work), free),
            deadline=time.perf_counter() + max(spent, 0.01),
            seed=seed,
            target=limit,
        ).ssa()
        found.append((steered, with_singles(network, steered)))
    return found


def _unlimited(
    network: Network,
    seeds: Sequence[Sequence[Pair]],
    budget: float | None,
    seed: int,
    high_quality: bool,
) -> list[Step]:
    start = time.perf_counter()
    count = len(network.inputs)
    if count <= EXACT_LIMIT:
        found = exact(network)
        assert found is not None
        return found
    first = greedy(network)
    assert first is not None
    best: list[Step] = list(first)
    best_cost = path_cost(network, best)[0]

    def offer(path: Sequence[Step] | None) -> None:
        nonlocal best, best_cost
        if path is None:
            return
        cost = path_cost(network, path)[0]
        if cost < best_cost:
            best, best_cost = list(path), cost

    if budget is None:
        budget = hq_budget_seconds(count) if high_quality else budget_seconds(best_cost)
        if seeds:  # a known order (other extents) is polished, not searched afresh
            budget *= WARM_FRACTION
    deadline = start + budget
    for known in seeds:
        offer(with_singles(network, known))
    if count <= DP_LIMIT and not seeds:  # known paths: polish them instead
        with contextlib.suppress(DPTimeoutError):
            floor = DP_SECONDS if count <= DP_FLOOR_LIMIT else 0.0
            offer(dynamic_programming(network, deadline=start + max(0.4 * budget, floor)))
    if count <= OPERAND_LIMIT and not seeds:
        try:
            offer(optimal(network, bound=best_cost, deadline=start + 0.5 * budget))
        except OptimalTimeoutError:
            pass
        else:  # the exhaustive search finished; refinement would rarely improve on it
            return best
    refined = refine(reduced(network), deadline, seeds=seeds, seed=seed, warm=bool(seeds))
    offer(with_singles(network, refined))
    return best


def _within_limit(network: Network, memory_limit: int) -> list[Step] | None:
    """The cheapest of greedy's scores that keep every intermediate within the limit
    (``None`` when none does)."""
    best: list[Step] | None = None
    best_cost = math.inf
    candidates = [greedy(network, memory_limit=memory_limit)]
    for costmod, flops_weight in SWEEP:
        candidates.append(
            scored_greedy(
                network, costmod=costmod, flops_weight=flops_weight, memory_limit=memory_limit
            )
        )
    for path in candidates:
        if path is None:
            continue
        cost = path_cost(network, path)[0]
        if cost < best_cost:
            best, best_cost = list(path), cost
    return best
