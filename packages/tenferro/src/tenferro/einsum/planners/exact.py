"""The cheapest path of a small network, exactly, in the count paths are reported in.

Dynamic programming over every subset of operands (outer products included: every
split of a subset into two is tried, ``3^n`` splits in all), each operand entering its
first pair either whole or with its alone labels summed first (:mod:`.singles`), so
the result is never worse than ``optimal``'s, ``dp``'s or greedy's path under
opt_einsum's count. For a handful of operands; ``auto`` uses it up to
:data:`EXACT_LIMIT`.
"""

from __future__ import annotations

from tenferro.einsum.planners.network import Network, Pair, Step
from tenferro.einsum.planners.singles import alone_labels, with_singles
from tenferro.einsum.planners.tree import Labels

__all__ = ["EXACT_LIMIT", "exact"]

EXACT_LIMIT = 8


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
    # best[mask] = (cost, left mask, right mask); leaves cost nothing here, their single
    # step is priced in the pair that takes them.
    best: dict[int, tuple[int, int, int]] = {}
    leaf_variants: list[list[tuple[int, int]]] = []
    for t in range(count):
        options = [(raw[t], 0)]
        if alone[t]:
            options.append((raw[t] & ~alone[t], 2 * size(raw[t])))
        leaf_variants.append(options)
        best[1 << t] = (0, 0, 0)
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
            found: tuple[int, int, int] | None = None
            sub = rest
            while True:
                first = sub | low  # contains the lowest member: each split once
                second = mask ^ first
                if second and first in best and second in best:
                    cost = best[first][0] + best[second][0]
                    cost += _pair(first, second, kept, legs, leaf_variants, size)
                    if found is None or cost < found[0]:
                        found = (cost, first, second)
                if not sub:
                    break
                sub = (sub - 1) & rest
            if found is not None:
                best[mask] = found
    if full not in best:
        return None
    pairs: list[Pair] = []
    ids: dict[int, int] = {1 << t: t for t in range(count)}
    stack = [(full, False)]
    while stack:
        mask, done = stack.pop()
        if mask in ids:
            continue
        _, first, second = best[mask]
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
    legs: list[int],
    variants: list[list[tuple[int, int]]],
    size: object,
) -> int:
    """The cheapest cost of contracting the two parts into ``kept`` (an operand alone
    enters whole or reduced, whichever is cheaper)."""
    sides = []
    for part in (first, second):
        if part & (part - 1):
            sides.append([(legs[part], 0)])
        else:
            sides.append(variants[part.bit_length() - 1])
    best = -1
    for left, extra_left in sides[0]:
        for right, extra_right in sides[1]:
            involved = left | right
            cost = size(involved) * (1 if involved == kept else 2)  # type: ignore[operator]
            cost += extra_left + extra_right
            if best < 0 or cost < best:
                best = cost
    return best
