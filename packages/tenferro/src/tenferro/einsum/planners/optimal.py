"""Exhaustive planning (opt_einsum's ``optimal``): depth-first search over every pair
(outer products included) with branch and bound on the flop count. For few operands."""

from __future__ import annotations

import math

from tenferro.einsum.planners.network import Network, Pair, pair_flops

__all__ = ["optimal"]


def optimal(
    network: Network, *, memory_limit: int | None = None, bound: float = math.inf
) -> list[Pair] | None:
    """The cheapest SSA path (or ``None`` if none fits ``memory_limit`` below ``bound``)."""
    output = network.output
    count = len(network.inputs)
    best: list[object] = [bound, None]
    seen: dict[tuple[tuple[str, ...], ...], int] = {}

    def search(
        terms: list[tuple[int, frozenset[str]]], cost: int, path: list[Pair], next_id: int
    ) -> None:
        if len(terms) == 1:
            if cost < best[0]:  # type: ignore[operator]
                best[0], best[1] = cost, list(path)
            return
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
                if memory_limit is not None and network.size(kept) > memory_limit:
                    continue
                step = cost + pair_flops(network, left, right, kept)
                if step >= best[0]:  # type: ignore[operator]
                    continue
                path.append((a, b))
                search(
                    [t for k, t in enumerate(terms) if k not in (i, j)] + [(next_id, kept)],
                    step,
                    path,
                    next_id + 1,
                )
                path.pop()

    search(list(enumerate(network.inputs)), 0, [], count)
    return best[1]  # type: ignore[return-value]
