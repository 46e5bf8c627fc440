"""A second greedy family for the ``auto`` planner's restarts (the ``greedy`` option is
opt_einsum's exact algorithm, in :mod:`.greedy`).

Every pair of terms that share an index is a candidate (no index is set aside as
output), each re-scored when the terms around it change. Contract the one minimising
``size(result) - costmod * (size(left) + size(right))``; identical terms are
contracted first (Hadamard products), and disconnected parts are joined at the end by
outer products, smallest first. With a ``temperature`` the choice is Boltzmann-sampled
among the best few candidates, as in opt_einsum's ``RandomGreedy``; ``flops_weight``
adds that multiple of the pair's loop-nest size (its flop count) to the score.
"""

from __future__ import annotations

import heapq
import math
import random
import time

from tenferro.einsum.planners.network import Network, Pair

__all__ = ["scored_greedy"]

_BRANCHES = 8


def scored_greedy(
    network: Network,
    *,
    costmod: float = 1.0,
    temperature: float = 0.0,
    rng: random.Random | None = None,
    memory_limit: int | None = None,
    flops_weight: float = 0.0,
    deadline: float | None = None,
) -> list[Pair] | None:
    """An SSA path, or ``None`` when ``memory_limit`` admits no complete path or the
    deadline (``time.perf_counter`` seconds) passes first."""
    inputs = network.inputs
    output = network.output
    sizes = network.sizes
    count = len(inputs)
    if count == 1:
        return []
    terms: dict[int, frozenset[str]] = {}
    footprint: dict[int, int] = {}
    holders: dict[str, set[int]] = {}
    path: list[Pair] = []
    next_id = count
    first_of: dict[frozenset[str], int] = {}

    def size_of(term: frozenset[str]) -> int:
        return math.prod(sizes[i] for i in term)

    def add(term_id: int, term: frozenset[str]) -> None:
        terms[term_id] = term
        footprint[term_id] = size_of(term)
        for index in term:
            holders.setdefault(index, set()).add(term_id)

    def remove(term_id: int) -> frozenset[str]:
        term = terms.pop(term_id)
        for index in term:
            holders[index].discard(term_id)
        return term

    def result_of(a: int, b: int) -> frozenset[str]:
        left, right = terms[a], terms[b]
        # An index stays if the output or a third term holds it.
        shared = left & right
        return frozenset(
            i for i in left | right if i in output or len(holders[i]) > (2 if i in shared else 1)
        )

    for term_id, term in enumerate(inputs):
        twin = first_of.get(term)
        if twin is not None and twin in terms:
            add(next_id, remove(twin))  # a Hadamard product keeps the index set
            path.append((twin, term_id))
            first_of[term] = next_id
            next_id += 1
            continue
        add(term_id, term)
        first_of[term] = term_id

    queue: list[tuple[float, int, int, frozenset[str]]] = []

    def push(a: int, b: int) -> None:
        if a > b:
            a, b = b, a
        kept = result_of(a, b)
        size = size_of(kept)
        if memory_limit is not None and size > memory_limit:
            return
        cost = size - costmod * (footprint[a] + footprint[b])
        if flops_weight:
            cost += flops_weight * size_of(terms[a] | terms[b])
        heapq.heappush(queue, (cost, a, b, kept))

    for holding in holders.values():
        members = sorted(holding)
        for position, a in enumerate(members):
            for b in members[position + 1 :]:
                push(a, b)
    seen: set[tuple[int, int]] = set()

    def pop() -> tuple[int, int, frozenset[str]] | None:
        if temperature <= 0:
            while queue:
                _, a, b, kept = heapq.heappop(queue)
                if a in terms and b in terms and (a, b) not in seen:
                    return a, b, kept
            return None
        choices: list[tuple[float, int, int, frozenset[str]]] = []
        while queue and len(choices) < _BRANCHES:
            entry = heapq.heappop(queue)
            if entry[1] in terms and entry[2] in terms and (entry[1], entry[2]) not in seen:
                choices.append(entry)
        if not choices:
            return None
        lowest = choices[0][0]
        scale = temperature * max(1.0, abs(lowest))
        weights = [math.exp(-(c[0] - lowest) / scale) for c in choices]
        assert rng is not None
        (pick,) = rng.choices(range(len(choices)), weights=weights)
        chosen = choices.pop(pick)
        for other in choices:
            heapq.heappush(queue, other)
        return chosen[1], chosen[2], chosen[3]

    steps = 0
    while True:
        steps += 1
        if deadline is not None and steps % 16 == 0 and time.perf_counter() > deadline:
            return None
        picked = pop()
        if picked is None:
            break
        a, b, _ = picked
        seen.add((a, b))
        kept = result_of(a, b)
        remove(a)
        remove(b)
        add(next_id, kept)
        path.append((a, b))
        new = next_id
        next_id += 1
        partners = set()
        for index in kept:
            partners |= holders[index]
        partners.discard(new)
        for other in partners:
            push(other, new)

    # What is left is disconnected: outer products, smallest (by output part) first.
    rest = [(size_of(terms[t] & output), t) for t in terms]
    heapq.heapify(rest)
    while len(rest) > 1:
        _, a = heapq.heappop(rest)
        _, b = heapq.heappop(rest)
        kept = result_of(a, b)
        if memory_limit is not None and size_of(kept) > memory_limit:
            return None
        remove(a)
        remove(b)
        add(next_id, kept)
        path.append((min(a, b), max(a, b)))
        heapq.heappush(rest, (size_of(kept & output), next_id))
        next_id += 1
    if memory_limit is not None and len(path) < count - 1:
        return None
    return path
