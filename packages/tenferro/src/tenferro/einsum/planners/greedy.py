"""Greedy planning: opt_einsum's ``greedy`` (``ssa_greedy_optimize``, MIT licensed,
reimplemented here) and its randomised and re-weighted variants.

Identical terms are contracted first (Hadamard products); indices every term has are
treated as output indices. Then, repeatedly, the candidate pair (terms sharing an index;
each term proposes its best partner) minimising
``size(result) - costmod * (size(left) + size(right)) + flops_weight * flops`` is
contracted; what is left is joined by outer products, smallest first. With a
``temperature`` the choice is Boltzmann-sampled among the best few candidates (every
pair is proposed then), as in opt_einsum's ``RandomGreedy``; ``jitter`` multiplies
each score by a normal variate of that relative spread (its ``memory-removed-jitter``).
With the defaults the path is opt_einsum's greedy path.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random

from tenferro.einsum.planners.network import Network, Pair

__all__ = ["greedy"]

_BRANCHES = 8

Candidate = tuple[tuple[float, int, int], frozenset[str], frozenset[str], frozenset[str]]


def greedy(
    network: Network,
    *,
    costmod: float = 1.0,
    temperature: float = 0.0,
    rng: random.Random | None = None,
    memory_limit: int | None = None,
    flops_weight: float = 0.0,
    jitter: float = 0.0,
) -> list[Pair] | None:
    """An SSA path, or ``None`` when ``memory_limit`` admits no complete path."""
    sizes = network.sizes
    inputs = list(network.inputs)
    if len(inputs) == 1:
        return []

    def size_of(term: frozenset[str]) -> int:
        return math.prod(sizes[i] for i in term)

    output = network.output | frozenset.intersection(*inputs)
    remaining: dict[frozenset[str], int] = {}
    ids = itertools.count(len(inputs))
    path: list[Pair] = []
    for term_id, key in enumerate(inputs):
        if key in remaining:
            path.append((remaining[key], term_id))
            remaining[key] = next(ids)
        else:
            remaining[key] = term_id
    holders: dict[str, set[frozenset[str]]] = {}
    for key in remaining:
        for index in key - output:
            holders.setdefault(index, set()).add(key)
    twice = {i for i, keys in holders.items() if len(keys) >= 2}
    thrice = {i for i, keys in holders.items() if len(keys) >= 3}
    footprints = {key: size_of(key) for key in remaining}
    push_all = temperature > 0

    def candidate(k1: frozenset[str], k2: frozenset[str]) -> Candidate | None:
        either = k1 | k2
        two = k1 & k2
        k12 = (either & output) | (two & thrice) | ((either - two) & twice)
        size12 = size_of(k12)
        if memory_limit is not None and size12 > memory_limit:
            return None
        cost = size12 - costmod * (footprints[k1] + footprints[k2])
        if flops_weight:
            cost += flops_weight * size_of(either)
        if jitter:
            assert rng is not None
            cost *= rng.gauss(1.0, jitter)
        id1, id2 = remaining[k1], remaining[k2]
        if id1 > id2:
            k1, id1, k2, id2 = k2, id2, k1, id1
        return (cost, id2, id1), k1, k2, k12

    queue: list[Candidate] = []

    def push(k1: frozenset[str], partners: list[frozenset[str]]) -> None:
        found = [c for c in (candidate(k1, k2) for k2 in partners) if c is not None]
        if not found:
            return
        if push_all:
            for c in found:
                heapq.heappush(queue, c)
        else:
            heapq.heappush(queue, min(found))

    for keys in holders.values():
        ordered = sorted(keys, key=remaining.__getitem__)
        for position, k1 in enumerate(ordered[:-1]):
            push(k1, ordered[position + 1 :])

    def choose() -> Candidate | None:
        if not push_all:
            c = heapq.heappop(queue)
            return c if c[1] in remaining and c[2] in remaining else None
        choices: list[Candidate] = []
        while queue and len(choices) < _BRANCHES:
            c = heapq.heappop(queue)
            if c[1] in remaining and c[2] in remaining:
                choices.append(c)
        if not choices:
            return None
        lowest = choices[0][0][0]
        scale = temperature * max(1.0, abs(lowest))
        weights = [math.exp(-(c[0][0] - lowest) / scale) for c in choices]
        assert rng is not None
        (pick,) = rng.choices(range(len(choices)), weights=weights)
        chosen = choices.pop(pick)
        for other in choices:
            heapq.heappush(queue, other)
        return chosen

    while queue:
        chosen = choose()
        if chosen is None:
            continue
        _, k1, k2, k12 = chosen
        id1, id2 = remaining.pop(k1), remaining.pop(k2)
        for index in k1 - output:
            holders[index].discard(k1)
        for index in k2 - output:
            holders[index].discard(k2)
        path.append((id1, id2))
        if k12 in remaining:
            path.append((remaining[k12], next(ids)))
        else:
            for index in k12 - output:
                holders[index].add(k12)
        remaining[k12] = next(ids)
        for index in (k1 | k2) - output:
            count = len(holders[index])
            if count <= 1:
                twice.discard(index)
                thrice.discard(index)
            elif count == 2:
                twice.add(index)
                thrice.discard(index)
            else:
                twice.add(index)
                thrice.add(index)
        footprints[k12] = size_of(k12)
        partners = {k2 for index in k12 for k2 in holders.get(index, ())}
        partners.discard(k12)
        if partners:
            push(k12, list(partners))

    if memory_limit is not None and any(len(keys) >= 2 for keys in holders.values()):
        return None  # the cap left terms that still share an index
    final = [(size_of(key & output), term_id, key) for key, term_id in remaining.items()]
    heapq.heapify(final)
    _, id1, k1 = heapq.heappop(final)
    while final:
        _, id2, k2 = heapq.heappop(final)
        k12 = (k1 | k2) & output
        if memory_limit is not None and final and size_of(k12) > memory_limit:
            return None
        path.append((min(id1, id2), max(id1, id2)))
        _, id1, k1 = heapq.heappushpop(final, (size_of(k12), next(ids), k12))
    return path
