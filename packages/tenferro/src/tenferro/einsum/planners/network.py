"""The planners' shared vocabulary: a contraction network (index sets and extents),
opt_einsum's cost counting, and path forms (SSA and opt_einsum's shrinking list)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Network",
    "Pair",
    "linear_to_ssa",
    "pair_flops",
    "path_cost",
    "ssa_to_linear",
]

Pair = tuple[int, int]
"""One step of an SSA path: contract the values with these ids; the result gets the next id
(operands are ids ``0..n-1``)."""


@dataclass(frozen=True)
class Network:
    """A contraction problem: each operand's index set, the output's, each extent."""

    inputs: tuple[frozenset[str], ...]
    output: frozenset[str]
    sizes: dict[str, int]

    def size(self, indices: Iterable[str]) -> int:
        sizes = self.sizes
        return math.prod(sizes[i] for i in indices)


def pair_flops(
    network: Network, left: frozenset[str], right: frozenset[str], kept: frozenset[str]
) -> int:
    """opt_einsum's count for contracting two terms into ``kept``: the product of every
    involved extent, doubled when some index is summed."""
    involved = left | right
    return network.size(involved) * (2 if len(kept) < len(involved) else 1)


def path_cost(network: Network, ssa: Sequence[Pair]) -> tuple[int, int, list[frozenset[str]]]:
    """``(flops, largest intermediate, result index sets)`` of an SSA path, counted like
    ``opt_einsum.contract_path`` (an index is kept while the output or another
    remaining term has it)."""
    terms: list[frozenset[str] | None] = list(network.inputs)
    counts: dict[str, int] = {}
    for term in network.inputs:
        for index in term:
            counts[index] = counts.get(index, 0) + 1
    output = network.output
    flops, largest, results = 0, 0, []
    for a, b in ssa:
        left, right = terms[a], terms[b]
        assert left is not None
        assert right is not None
        terms[a] = terms[b] = None
        for index in left:
            counts[index] -= 1
        for index in right:
            counts[index] -= 1
        kept = frozenset(i for i in left | right if i in output or counts[i] > 0)
        for index in kept:
            counts[index] += 1
        flops += pair_flops(network, left, right, kept)
        largest = max(largest, network.size(kept))
        terms.append(kept)
        results.append(kept)
    return flops, largest, results


def ssa_to_linear(ssa: Sequence[Pair], count: int) -> list[Pair]:
    """An SSA path as opt_einsum's shrinking-list path."""
    ids = list(range(count))
    linear: list[Pair] = []
    next_id = count
    for a, b in ssa:
        i, j = ids.index(a), ids.index(b)
        linear.append((min(i, j), max(i, j)))
        for position in sorted((i, j), reverse=True):
            del ids[position]
        ids.append(next_id)
        next_id += 1
    return linear


def linear_to_ssa(linear: Sequence[Sequence[int]], count: int) -> list[Pair]:
    """A shrinking-list path (steps of two or more positions; longer steps are contracted
    left to right) as an SSA path; positions are assumed valid."""
    ids = list(range(count))
    ssa: list[Pair] = []
    next_id = count
    for step in linear:
        chosen = [ids[p] for p in step]
        for position in sorted(step, reverse=True):
            del ids[position]
        if len(chosen) == 1:
            ids.append(chosen[0])
            continue
        current = chosen[0]
        for other in chosen[1:]:
            ssa.append((current, other))
            current = next_id
            next_id += 1
        ids.append(current)
    return ssa


Tree = int | tuple["Tree", ...]
"""A contraction tree: an operand position, or a tuple of subtrees (contracted left to
right)."""


def tree_to_ssa(tree: Tree, count: int) -> list[Pair]:
    """The SSA path that contracts ``tree`` bottom-up (iteratively, any depth)."""
    path: list[Pair] = []
    next_id = count
    stack: list[tuple[Tree, bool]] = [(tree, False)]
    values: list[int] = []
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, int):
            values.append(node)
            continue
        if not expanded:
            stack.append((node, True))
            for child in reversed(node):
                stack.append((child, False))
            continue
        children = values[len(values) - len(node) :]
        del values[len(values) - len(node) :]
        current = children[0]
        for other in children[1:]:
            path.append((current, other))
            current = next_id
            next_id += 1
        values.append(current)
    return path


def ssa_to_tree(ssa: Sequence[Pair], count: int) -> Tree:
    """The binary tree of a complete SSA path."""
    nodes: list[Tree] = list(range(count))
    for a, b in ssa:
        nodes.append((nodes[a], nodes[b]))
    return nodes[-1]
