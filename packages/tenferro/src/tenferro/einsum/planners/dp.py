"""Exact planning by dynamic programming over connected subgraphs (opt_einsum's
``DynamicProgramming``, after Pfeifer, Haegeman and Verstraete, PRE 90, 033315).

For every connected set of operands (a bit mask), the cheapest tree contracting it is
built from the cheapest trees of two disjoint connected parts that share an index;
candidates whose cost exceeds ``bound`` (a known complete path's cost) are pruned.
Disconnected components are planned separately and joined by outer products. Outer
products inside a component are not considered, as in opt_einsum's default.
"""

from __future__ import annotations

import math
import time

from tenferro.einsum.planners.network import Network, Pair, Tree, tree_to_ssa

__all__ = ["dynamic_programming"]


class PlanningTimeoutError(Exception):
    """The planning deadline passed."""


def _components(network: Network) -> list[list[int]]:
    parent = list(range(len(network.inputs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, term in enumerate(network.inputs):
        for index in term:
            if index in first:
                parent[find(i)] = find(first[index])
            else:
                first[index] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(parent)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def dynamic_programming(
    network: Network,
    *,
    bound: float = math.inf,
    memory_limit: int | None = None,
    deadline: float | None = None,
) -> list[Pair] | None:
    """An optimal SSA path (among trees without inner outer products), or ``None`` when
    nothing beats ``bound`` or the deadline passes (``time.perf_counter`` seconds)."""
    inputs = network.inputs
    sizes = network.sizes
    output = network.output
    holders: dict[str, int] = {}
    for i, term in enumerate(inputs):
        for index in term:
            holders[index] = holders.get(index, 0) | (1 << i)
    # Per component: mask -> (cost, indices, tree); a tree is an int or (tree, tree).
    results: list[tuple[int, frozenset[str], Tree]] = []
    try:
        for component in _components(network):
            best = _component(
                component, inputs, output, sizes, holders, bound, memory_limit, deadline
            )
            if best is None:
                return None
            results.append(best)
    except PlanningTimeoutError:
        return None
    # Join components by outer products, smallest first.
    results.sort(key=lambda r: math.prod(sizes[i] for i in r[1]))
    tree: Tree = results[0][2]
    for _, _, other in results[1:]:
        tree = (tree, other)
    return tree_to_ssa(tree, len(inputs))


def _component(
    component: list[int],
    inputs: tuple[frozenset[str], ...],
    output: frozenset[str],
    sizes: dict[str, int],
    holders: dict[str, int],
    bound: float,
    memory_limit: int | None,
    deadline: float | None,
) -> tuple[int, frozenset[str], Tree] | None:
    layers: list[dict[int, tuple[int, frozenset[str], Tree]]] = [{}]
    layers.append({1 << i: (0, inputs[i], i) for i in component})
    n = len(component)
    full = 0
    for i in component:
        full |= 1 << i
    checks = 0
    # Per layer, the subsets having each open index: a subset's partners are found through
    # its own open indices instead of scanning the whole layer.
    by_index: list[dict[str, list[int]]] = [{}]
    by_index.append(_index_subsets(layers[1]))
    for m in range(2, n + 1):
        layer: dict[int, tuple[int, frozenset[str], Tree]] = {}
        for k in range(1, m // 2 + 1):
            other_layer, other_index = layers[m - k], by_index[m - k]
            for mask_a, (cost_a, idx_a, tree_a) in layers[k].items():
                partners: set[int] = set()
                for label in idx_a:
                    partners.update(other_index.get(label, ()))
                for mask_b in partners:
                    if mask_a & mask_b or (k == m - k and mask_a > mask_b):
                        continue
                    checks += 1
                    if (
                        deadline is not None
                        and checks % 256 == 0
                        and time.perf_counter() > deadline
                    ):
                        raise PlanningTimeoutError
                    cost_b, idx_b, tree_b = other_layer[mask_b]
                    union = mask_a | mask_b
                    involved = idx_a | idx_b
                    kept = frozenset(i for i in involved if i in output or holders[i] & ~union)
                    size = 1
                    for label in involved:
                        size *= sizes[label]
                    cost = cost_a + cost_b + (size if len(kept) == len(involved) else 2 * size)
                    if cost > bound:
                        continue
                    if (
                        memory_limit is not None
                        and math.prod(sizes[i] for i in kept) > memory_limit
                    ):
                        continue
                    previous = layer.get(union)
                    if previous is None or cost < previous[0]:
                        layer[union] = (cost, kept, (tree_a, tree_b))
        layers.append(layer)
        by_index.append(_index_subsets(layer))
    return layers[n].get(full) if n > 1 else layers[1][full]


def _index_subsets(layer: dict[int, tuple[int, frozenset[str], Tree]]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for mask, (_, indices, _) in layer.items():
        for label in indices:
            found.setdefault(label, []).append(mask)
    return found
