"""The cheapest path of a small network, exactly, in the count paths are reported in.

Dynamic programming over every subset of operands (outer products included: every
split of a subset into two is tried, ``3^n`` splits in all), each operand entering its
first pair either whole or with its alone labels summed first (:mod:`.singles`), so
the result is never worse than ``optimal``'s, ``dp``'s or greedy's path under
opt_einsum's count. For a handful of operands; ``auto`` uses it up to
:data:`EXACT_LIMIT`.
"""

from __future__ import annotations

from collections.abc import Callable

from tenferro.einsum.planners.network import Network, Pair, Step
from tenferro.einsum.planners.singles import alone_labels, with_singles
from tenferro.einsum.planners.tree import Labels

__all__ = ["EXACT_LIMIT", "exact"]

EXACT_LIMIT = 9


def exact(network: Network, *, memory_limit: int | None = None) -> list[Step] | None:
    """The cheapest SSA path (``None`` when no path keeps every intermediate within
    ``memory_limit``; the result of the last step is the output, never limited)."""
    count = len(network.inputs)
    if count == 1:
        return [(0,)]
    labels = Labels(network)
    size = labels.size
    alone = [labels.mask(a) for a in alone_labels(network)]
    raw = labels.inputs
    full = (1 << count) - 1
    union = [0] * (full + 1)
    for mask in range(1, full + 1):
        low = mask & -mask
        union[mask] = union[mask ^ low] | raw[low.bit_length() - 1]
    output = labels.output
    legs = [0] * (full + 1)
    for mask in range(1, full + 1):
        legs[mask] = union[mask] & (union[full ^ mask] | output) & ~_alone_of(mask, alone)
    # cost[mask] (-1: unreachable within the limit) and the split reaching it; leaves
    # cost nothing here, their one-term step is priced in the pair that takes them.
    cost = [-1] * (full + 1)
    split = [0] * (full + 1)
    enter = list(legs)  # the labels a part brings to a pair
    variants: dict[int, list[tuple[int, int]]] = {}  # operands with alone labels
    for t in range(count):
        cost[1 << t] = 0
        enter[1 << t] = raw[t]
        if alone[t]:
            variants[1 << t] = [(raw[t], 0), (raw[t] & ~alone[t], 2 * size(raw[t]))]
    by_count: list[list[int]] = [[] for _ in range(count + 1)]
    for mask in range(1, full + 1):
        by_count[mask.bit_count()].append(mask)
    for k in range(2, count + 1):
        for mask in by_count[k]:
            kept = legs[mask]
            if memory_limit is not None and mask != full and size(kept) > memory_limit:
                continue
            low = mask & -mask
            rest = mask ^ low
            found, chosen = -1, 0
            sub = rest
            while True:
                first = sub | low  # contains the lowest member: each split once
                second = mask ^ first
                if second:
                    c1, c2 = cost[first], cost[second]
                    if c1 >= 0 and c2 >= 0:
                        if first in variants or second in variants:
                            here = _pair(first, second, kept, enter, variants, size)
                        else:
                            involved = enter[first] | enter[second]
                            here = size(involved) if involved == kept else 2 * size(involved)
                        here += c1 + c2
                        if found < 0 or here < found:
                            found, chosen = here, first
                if not sub:
                    break
                sub = (sub - 1) & rest
            cost[mask], split[mask] = found, chosen
    if cost[full] < 0:
        return None
    pairs: list[Pair] = []
    ids: dict[int, int] = {1 << t: t for t in range(count)}
    stack = [(full, False)]
    while stack:
        mask, done = stack.pop()
        if mask in ids:
            continue
        first = split[mask]
        second = mask ^ first
        if done:
            pairs.append((ids[first], ids[second]))
            ids[mask] = count + len(pairs) - 1
            continue
        stack.append((mask, True))
        stack.append((second, False))
        stack.append((first, False))
    return with_singles(network, pairs)


def _alone_of(mask: int, alone: list[int]) -> int:
    found = 0
    t = 0
    while mask:
        if mask & 1:
            found |= alone[t]
        mask >>= 1
        t += 1
    return found


def _pair(
    first: int,
    second: int,
    kept: int,
    enter: list[int],
    variants: dict[int, list[tuple[int, int]]],
    size: Callable[[int], int],
) -> int:
    """The cheapest cost of contracting the two parts into ``kept`` (an operand with
    alone labels enters whole or reduced, whichever is cheaper)."""
    best = -1
    for left, extra_left in variants.get(first, [(enter[first], 0)]):
        for right, extra_right in variants.get(second, [(enter[second], 0)]):
            involved = left | right
            here = size(involved) * (1 if involved == kept else 2) + extra_left + extra_right
            if best < 0 or here < best:
                best = here
    return best
