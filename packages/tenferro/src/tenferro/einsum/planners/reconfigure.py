"""Subtree reconfiguration (as in cotengra): cut a small subtree out of a contraction tree
where it costs most, re-plan it exactly, and splice the cheaper order back in place.

The subtree under a node ``v`` is grown by opening its costliest internal frontier node
until it has ``leaves`` frontier terms; those terms and ``v``'s legs form a small
network that dynamic programming over every split of every subset solves exactly (outer
products included), in opt_einsum's count. Nodes are visited costliest first, passes
repeat while they improve, until the deadline.
"""

from __future__ import annotations

import time

from tenferro.einsum.planners.tree import Tree

__all__ = ["reconfigure"]


def reconfigure(tree: Tree, deadline: float, leaves: int = 8) -> bool:
    """Improve ``tree`` in place; ``True`` if its cost fell."""
    count = tree.count
    if len(tree.left) - count < 2:
        return False
    improved_any = False
    tried: set[tuple[int, int]] = set()
    while time.perf_counter() < deadline:
        improved = False
        order = sorted(range(count, len(tree.left)), key=tree.flops.__getitem__, reverse=True)
        for node in order:
            if time.perf_counter() > deadline:
                break
            frontier, inner = _subtree(tree, node, leaves)
            if len(frontier) < 3:
                continue
            key = (node, sum(1 << (f % 62) for f in frontier))
            if key in tried:
                continue
            tried.add(key)
            if _replan(tree, node, frontier, inner):
                improved = improved_any = True
        if not improved:
            break
    return improved_any


def _subtree(tree: Tree, node: int, leaves: int) -> tuple[list[int], list[int]]:
    """The frontier (up to ``leaves`` terms) and inner nodes of the subtree under
    ``node``, opened costliest first."""
    count, left, right, flops = tree.count, tree.left, tree.right, tree.flops
    frontier, inner = [left[node], right[node]], [node]
    while len(frontier) < leaves:
        chosen = -1
        for f in frontier:
            if f >= count and (chosen < 0 or flops[f] > flops[chosen]):
                chosen = f
        if chosen < 0:
            break
        frontier.remove(chosen)
        frontier.append(left[chosen])
        frontier.append(right[chosen])
        inner.append(chosen)
    return frontier, inner


def _replan(tree: Tree, node: int, frontier: list[int], inner: list[int]) -> bool:
    """Re-plan the subtree exactly; splice it in (reusing the inner node ids, ``node``
    as its root) when cheaper."""
    legs, flops = tree.legs, tree.flops
    size = tree.labels.size
    k = len(frontier)
    full = (1 << k) - 1
    masks = [legs[f] for f in frontier]
    union = [0] * (full + 1)
    for mask in range(1, full + 1):
        low = mask & -mask
        union[mask] = union[mask ^ low] | masks[low.bit_length() - 1]
    top = legs[node]
    kept = [0] * (full + 1)
    for mask in range(1, full + 1):
        kept[mask] = union[mask] & (union[full ^ mask] | top)
    for i, term in enumerate(masks):  # a term enters whole (a leaf may hold alone labels)
        kept[1 << i] = term
    best_cost = [0] * (full + 1)
    best_split = [0] * (full + 1)
    old = sum(flops[x] for x in inner)
    by_count: list[list[int]] = [[] for _ in range(k + 1)]
    for mask in range(1, full + 1):
        by_count[mask.bit_count()].append(mask)
    for n in range(2, k + 1):
        for mask in by_count[n]:
            result = kept[mask]
            low = mask & -mask
            rest = mask ^ low
            found = -1
            split = 0
            sub = rest
            while True:
                first = sub | low
                second = mask ^ first
                if second:
                    involved = kept[first] | kept[second]
                    cost = best_cost[first] + best_cost[second]
                    cost += size(involved) if involved == result else 2 * size(involved)
                    if found < 0 or cost < found:
                        found, split = cost, first
                if not sub:
                    break
                sub = (sub - 1) & rest
            best_cost[mask], best_split[mask] = found, split
    if best_cost[full] >= old:
        return False
    # Splice: inner node ids are reused, ``node`` stays the subtree's root.
    spare = [x for x in inner if x != node]
    left, right, parent = tree.left, tree.right, tree.parent
    stack = [(full, node)]
    while stack:
        mask, target = stack.pop()
        first = best_split[mask]
        second = mask ^ first
        children = []
        for part in (first, second):
            if part & (part - 1):
                child = spare.pop()
                stack.append((part, child))
            else:
                child = frontier[part.bit_length() - 1]
            children.append(child)
            parent[child] = target
        left[target], right[target] = children
        involved = kept[first] | kept[second]
        legs[target] = kept[mask]
        flops[target] = size(involved) if involved == kept[mask] else 2 * size(involved)
    return True
