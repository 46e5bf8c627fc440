"""Branch and bound (opt_einsum's ``BranchBound``: ``branch-all``, ``branch-2``,
``branch-1``).

Depth first over pairwise contractions, trying at each step the ``nbranch`` best
candidates by opt_einsum's heuristic (result size minus operand sizes; pairs sharing a
label first, outer products only when nothing else is left), pruning a branch once
its flops (then size) cannot beat the best complete path, or once it does
``cutoff_flops_factor`` times worse than the best path had at the same depth. With a
memory limit, a pair whose result does not fit ends its path with one step over every
remaining term.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import time

from tenferro.einsum.planners.network import Network, Step, search_flops, step_flops

__all__ = ["branch_bound"]


class _TimeoutError(Exception):
    pass


def branch_bound(
    network: Network,
    *,
    nbranch: int | None = None,
    memory_limit: int | None = None,
    cutoff_flops_factor: float = 4,
    minimize: str = "flops",
    deadline: float | None = None,
) -> list[Step] | None:
    """The best SSA path found (``None`` if the deadline, in ``time.perf_counter``
    seconds, passed before any complete path)."""
    inputs = list(network.inputs)
    output = network.output
    count = len(inputs)
    if count == 1:
        return [(0,)]
    size_cache: dict[frozenset[str], int] = {}

    def size_of(term: frozenset[str]) -> int:
        found = size_cache.get(term)
        if found is None:
            found = size_cache[term] = network.size(term)
        return found

    flops_first = minimize != "size"
    best: dict[str, object] = {"flops": math.inf, "size": math.inf, "path": None}
    progress: dict[int, float] = {}
    visits = [0]

    def better(flops: float, size: float) -> bool:
        if flops_first:
            return (flops, size) < (best["flops"], best["size"])
        return (size, flops) < (best["size"], best["flops"])

    def iterate(
        path: tuple[Step, ...],
        terms: list[frozenset[str]],
        remaining: set[int],
        flops: int,
        size: int,
    ) -> None:
        if len(remaining) == 1:
            best["flops"], best["size"], best["path"] = flops, size, list(path)
            return
        visits[0] += 1
        if deadline is not None and visits[0] % 128 == 1 and time.perf_counter() > deadline:
            raise _TimeoutError

        def assess(i: int, j: int) -> tuple[object, ...] | None:
            k1, k2 = terms[i], terms[j]
            needed = set(output)
            for other in remaining:
                if other != i and other != j:
                    needed |= terms[other]
            involved = k1 | k2
            k12 = involved & needed
            flops12 = search_flops(network, k1, k2, k12)
            size12 = size_of(k12)
            new_flops, new_size = flops + flops12, max(size, size12)
            if not better(new_flops, new_size):
                return None
            depth = len(terms)
            if new_flops < progress.get(depth, math.inf):
                progress[depth] = new_flops
            elif new_flops > cutoff_flops_factor * progress[depth]:
                return None
            if memory_limit is not None and size12 > memory_limit:
                rest = frozenset().union(*(terms[r] for r in remaining))
                total = flops + step_flops(network, rest, rest & output, len(remaining))
                if total < best["flops"]:  # type: ignore[operator]
                    best["flops"], best["path"] = total, [*path, tuple(sorted(remaining))]
                return None
            cost = size12 - size_of(k1) - size_of(k2)
            return (cost, flops12, new_flops, new_size, (i, j), k12)

        candidates: list[tuple[object, ...]] = []
        pairs = [(min(i, j), max(i, j)) for i, j in itertools.combinations(remaining, 2)]
        for i, j in pairs:
            if terms[i].isdisjoint(terms[j]):
                continue
            found = assess(i, j)
            if found is not None:
                heapq.heappush(candidates, found)
        if not candidates:
            for i, j in pairs:
                found = assess(i, j)
                if found is not None:
                    heapq.heappush(candidates, found)
        tried = 0
        while (nbranch is None or tried < nbranch) and candidates:
            _, _, new_flops, new_size, (i, j), k12 = heapq.heappop(candidates)  # type: ignore[misc]
            iterate(
                (*path, (i, j)),
                [*terms, k12],  # type: ignore[list-item]
                (remaining - {i, j}) | {len(terms)},
                new_flops,  # type: ignore[arg-type]
                new_size,  # type: ignore[arg-type]
            )
            tried += 1

    with contextlib.suppress(_TimeoutError):
        iterate((), inputs, set(range(count)), 0, 0)
    return best["path"]  # type: ignore[return-value]
