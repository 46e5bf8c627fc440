"""Randomised greedy (opt_einsum's ``RandomGreedy``: ``random-greedy``,
``random-greedy-128``, and ``random-greedy-N`` for any count).

Trial 0 is the plain greedy path; every further trial re-runs greedy with its choice
Boltzmann-sampled among the best eight candidates (temperature 1, relative to the best
score) and each score jittered by 1 %. Trial ``r`` draws from a generator seeded with
``r``, so the result is reproducible. The cheapest path (then the smallest largest
intermediate) wins.
"""

from __future__ import annotations

import random
import time

from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import Network, Pair, path_cost

__all__ = ["random_greedy"]


def random_greedy(
    network: Network,
    *,
    repeats: int = 32,
    memory_limit: int | None = None,
    temperature: float = 1.0,
    deadline: float | None = None,
) -> list[Pair] | None:
    """The best of ``repeats`` greedy trials (``None`` when none fits ``memory_limit``);
    trials stop early at the deadline (``time.perf_counter`` seconds)."""
    best: tuple[int, int] | None = None
    best_path = None
    for trial in range(repeats):
        if trial and deadline is not None and time.perf_counter() > deadline:
            break
        if trial == 0:
            path = greedy(network, memory_limit=memory_limit)
        else:
            path = greedy(
                network,
                temperature=temperature,
                jitter=0.01,
                rng=random.Random(trial),
                memory_limit=memory_limit,
            )
        if path is None:
            continue
        flops, size, _ = path_cost(network, path)
        if best is None or (flops, size) < best:
            best, best_path = (flops, size), path
    return best_path
