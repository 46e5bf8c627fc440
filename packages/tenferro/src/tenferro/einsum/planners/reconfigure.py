"""Subtree reconfiguration (as in cotengra): cut a small subtree out of a contraction tree
where it costs most, re-plan its leaves exactly, and splice the cheaper order back."""

from __future__ import annotations

import time

from tenferro.einsum.planners.dp import dynamic_programming
from tenferro.einsum.planners.network import Network, Pair, pair_flops, path_cost

__all__ = ["reconfigure"]


def reconfigure(network: Network, ssa: list[Pair], deadline: float, leaves: int = 7) -> list[Pair]:
    """``ssa`` improved by exact re-planning of subtrees of up to ``leaves`` leaves, until
    no subtree improves or the deadline (``time.perf_counter`` seconds) passes."""
    count = len(network.inputs)
    if len(ssa) < 2:
        return ssa
    tried: set[tuple[int, ...]] = set()
    while time.perf_counter() < deadline:
        _, _, results = path_cost(network, ssa)
        indices: dict[int, frozenset[str]] = dict(enumerate(network.inputs))
        children: dict[int, Pair] = {}
        flops: dict[int, int] = {}
        for step, ((a, b), kept) in enumerate(zip(ssa, results, strict=True)):
            node = count + step
            indices[node] = kept
            children[node] = (a, b)
            flops[node] = pair_flops(network, indices[a], indices[b], kept)
        improved = False
        for node in sorted(children, key=flops.__getitem__, reverse=True):
            if time.perf_counter() > deadline:
                break
            frontier, inner = [node], []
            while len(frontier) < leaves:
                expandable = [f for f in frontier if f in children]
                if not expandable:
                    break
                chosen = max(expandable, key=flops.__getitem__)
                frontier.remove(chosen)
                frontier.extend(children[chosen])
                inner.append(chosen)
            if len(frontier) < 3:
                continue
            signature = (node, *sorted(frontier))
            if signature in tried:
                continue
            tried.add(signature)
            old = sum(flops[x] for x in inner)
            sub = Network(tuple(indices[f] for f in frontier), indices[node], network.sizes)
            better = dynamic_programming(sub, bound=old - 1, deadline=deadline)
            if better is None or path_cost(sub, better)[0] >= old:
                continue
            ssa = _splice(ssa, count, node, frontier, better)
            improved = True
            break
        if not improved:
            break
    return ssa


def _splice(
    ssa: list[Pair], count: int, node: int, frontier: list[int], sub: list[Pair]
) -> list[Pair]:
    """``ssa`` with the subtree at ``node`` (leaves ``frontier``) contracted by ``sub``."""
    children = {count + s: pair for s, pair in enumerate(ssa)}
    fresh = count + len(ssa) + 1_000_000
    names = list(frontier)
    for step, (a, b) in enumerate(sub):
        name = node if step == len(sub) - 1 else fresh + step
        children[name] = (names[a], names[b])
        names.append(name)
    # Re-number bottom-up from the root (iteratively).
    root = count + len(ssa) - 1
    order: list[int] = []
    stack = [(root, False)]
    while stack:
        current, done = stack.pop()
        if current < count:
            continue
        if done:
            order.append(current)
            continue
        stack.append((current, True))
        a, b = children[current]
        stack.append((b, False))
        stack.append((a, False))
    ids = {i: i for i in range(count)}
    path: list[Pair] = []
    for current in order:
        a, b = children[current]
        path.append((ids[a], ids[b]))
        ids[current] = count + len(path) - 1
    return path
