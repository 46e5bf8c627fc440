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

from tenferro.einsum.planners.tree import Tree

__all__ = ["anneal"]


def anneal(
    tree: Tree,
    *,
    deadline: float,
    seed: int = 0,
    t_start: float = 1.0,
    t_final: float = 0.02,
    sweeps: int | None = None,
) -> Tree:
    """Anneal ``tree`` in place for ``sweeps`` sweeps, or until ``deadline``
    (``time.perf_counter`` seconds) with the schedule spread over the time left;
    return the best tree met (a new tree when it is not the final state)."""
    count = tree.count
    if len(tree.left) - count < 2:
        return tree
    best_cost = tree.total()
    best = tree.copy()
    rand = random.Random(seed).random
    left, right, parent, legs, flops = tree.left, tree.right, tree.parent, tree.legs, tree.flops
    labels = tree.labels
    memo = labels.memo
    size = labels.size
    root = tree.root
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
            s1 = memo.get(u1)
            if s1 is None:
                s1 = size(u1)
            f1 = s1 if k1 == u1 else 2 * s1
            u2 = k1 | legs[b]
            s2 = memo.get(u2)
            if s2 is None:
                s2 = size(u2)
            f2 = s2 if legs[p] == u2 else 2 * s2
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
    return tree if tree.total() <= best_cost else best
