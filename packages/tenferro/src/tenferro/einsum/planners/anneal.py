"""Simulated annealing over contraction trees (TreeSA: Kalachev, Panteleev and Yung,
arXiv:2108.05665, as in OMEinsumContractionOrders.jl and cotengra).

A sweep visits every internal node top-down and proposes one random rotation there
(:mod:`.tree`): a child ``x = (a, b)`` of ``p`` trades ``b`` (or ``a``) for ``p``'s
other child. The proposal is priced locally -- the two nodes it changes -- and
accepted with Metropolis' rule at the current temperature on the log of their summed
cost (TreeSA's local score): a move from cost ``old`` to ``new`` passes when
``new <= old`` or with probability ``(old / new) ** (1 / T)``. The temperature falls
geometrically from ``t_start`` to ``t_final`` over the run; the best tree met is kept.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from tenferro.einsum.planners.tree import Tree

__all__ = ["anneal"]


def anneal(
    tree: Tree,
    *,
    deadline: float,
    seed: int = 0,
    t_start: float = 1.0,
    t_final: float = 0.005,
    sweeps: int | None = None,
    target: int = 0,
) -> Tree:
    """Anneal ``tree`` in place for ``sweeps`` sweeps, or until ``deadline``
    (``time.perf_counter`` seconds) with the schedule spread over the time left;
    return the best tree met (a new tree when it is not the final state). With a
    ``target`` size, a move is priced as if each intermediate above it cost that many
    times more (TreeSA's space penalty), which steers towards trees that need few
    slices to fit ``target``; the best tree is then the cheapest by that price."""
    count = tree.count
    if len(tree.left) - count < 2:
        return tree
    rand = random.Random(seed).random
    left, right, parent, legs, flops = tree.left, tree.right, tree.parent, tree.legs, tree.flops
    size = tree.labels.size
    root = tree.root

    def weight(node: int, mask: int) -> float:
        kept = size(mask)
        return kept / target if kept > target and node != root else 1.0

    best_cost = _priced(tree, weight) if target else tree.total()
    best = tree.copy()
    start = time.perf_counter()
    span = max(deadline - start, 1e-9)
    ratio = t_final / t_start
    total = best_cost
    done = 0
    while True:
        now = time.perf_counter()
        progress = done / sweeps if sweeps is not None else (now - start) / span
        if progress >= 1.0 or now > deadline:
            break
        temperature = t_start * ratio**progress
        stack = [root]
        pop, push = stack.pop, stack.append
        while stack:
            p = pop()
            pl, pr = left[p], right[p]
            if pl >= count:
                if pr >= count and rand() < 0.5:
                    x, c, x_left = pr, pl, False
                else:
                    x, c, x_left = pl, pr, True
            elif pr >= count:
                x, c, x_left = pr, pl, False
            else:
                continue
            a, b = left[x], right[x]
            if rand() < 0.5:
                a, b = b, a
            u1 = legs[a] | legs[c]
            k1 = u1 & (legs[b] | legs[p])
            s1 = size(u1)
            f1 = s1 if k1 == u1 else 2 * s1
            u2 = k1 | legs[b]
            s2 = size(u2)
            f2 = s2 if legs[p] == u2 else 2 * s2
            if target:
                scale = weight(p, legs[p])
                old = flops[p] * scale + flops[x] * weight(x, legs[x])
                new = f2 * scale + f1 * weight(x, k1)
            else:
                old = flops[p] + flops[x]
                new = f1 + f2
            if new <= old or new * rand() ** temperature < old:
                left[x], right[x] = a, c
                parent[c] = x
                if x_left:
                    right[p] = b
                else:
                    left[p] = b
                parent[b] = p
                legs[x] = k1
                flops[x] = f1
                flops[p] = f2
                total += new - old
                if b >= count:
                    push(b)
            elif c >= count:
                push(c)
            push(x)
        done += 1
        if total < best_cost:
            best_cost = total
            best = tree.copy()
    final = _priced(tree, weight) if target else tree.total()
    return tree if final <= best_cost else best


def _priced(tree: Tree, weight: Callable[[int, int], float]) -> float:
    """The tree's cost with each intermediate's flops weighted by ``weight``."""
    legs, flops = tree.legs, tree.flops
    return sum(flops[node] * weight(node, legs[node]) for node in range(tree.count, len(tree.left)))
