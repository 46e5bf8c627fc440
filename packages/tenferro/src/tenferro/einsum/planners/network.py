"""The planners' shared vocabulary: a contraction network (index sets and extents),
opt_einsum's cost counting, and path forms (SSA and opt_einsum's shrinking list).

A path step contracts one or more terms. Planners search binary trees (pairs); a step
of one term sums the labels no other term needs (opt_einsum's ``dp`` emits these), and
a step of three or more terms is one loop nest (opt_einsum's ``optimize=False``, or
its planners' last step when nothing fits a memory limit). Costs are counted as
``opt_einsum.contract_path`` counts them: a step over terms whose labels' extents
multiply to ``S`` costs ``S * max(1, terms - 1)``, plus ``S`` when it sums a label.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Network",
    "Pair",
    "Step",
    "binarize",
    "linear_to_ssa",
    "pair_flops",
    "path_cost",
    "search_flops",
    "ssa_to_linear",
    "step_flops",
]

Pair = tuple[int, int]
"""One pairwise step of an SSA path: contract the values with these ids; the result gets
the next id (operands are ids ``0..n-1``)."""

Step = tuple[int, ...]
"""One step of an SSA path: the ids of the terms it contracts (one or more)."""


@dataclass(frozen=True)
class Network:
    """A contraction problem: each operand's index set, the output's, each extent."""

    inputs: tuple[frozenset[str], ...]
    output: frozenset[str]
    sizes: dict[str, int]

    def size(self, indices: Iterable[str]) -> int:
        sizes = self.sizes
        return math.prod(sizes[i] for i in indices)


def step_flops(network: Network, involved: frozenset[str], kept: frozenset[str], terms: int) -> int:
    """opt_einsum's count for one step over ``terms`` terms with these labels."""
    factor = max(1, terms - 1) + (1 if len(kept) < len(involved) else 0)
    return network.size(involved) * factor


def pair_flops(
    network: Network, left: frozenset[str], right: frozenset[str], kept: frozenset[str]
) -> int:
    """opt_einsum's count for contracting two terms into ``kept``: the product of every
    involved extent, doubled when some index is summed."""
    involved = left | right
    return network.size(involved) * (2 if len(kept) < len(involved) else 1)


def search_flops(
    network: Network, left: frozenset[str], right: frozenset[str], kept: frozenset[str]
) -> int:
    """opt_einsum's planners' estimate for a pair (``calc_k12_flops``): doubled only when
    a label both terms have is summed (a path's reported cost also doubles for a label
    only one term has, see :func:`pair_flops`)."""
    return network.size(left | right) * (2 if (left & right) - kept else 1)


def path_cost(
    network: Network, ssa: Sequence[Sequence[int]]
) -> tuple[int, int, list[frozenset[str]]]:
    """``(flops, largest intermediate, result index sets)`` of an SSA path, counted like
    ``opt_einsum.contract_path`` (an index is kept while the output or another
    remaining term has it; the largest intermediate of a path without steps is 1)."""
    terms: list[frozenset[str] | None] = list(network.inputs)
    counts: dict[str, int] = {}
    for term in network.inputs:
        for index in term:
            counts[index] = counts.get(index, 0) + 1
    output = network.output
    flops, largest, results = 0, 0 if ssa else 1, []
    for step in ssa:
        involved: frozenset[str] = frozenset()
        for t in step:
            taken = terms[t]
            assert taken is not None
            terms[t] = None
            for index in taken:
                counts[index] -= 1
            involved = involved | taken
        kept = frozenset(i for i in involved if i in output or counts[i] > 0)
        for index in kept:
            counts[index] += 1
        flops += step_flops(network, involved, kept, len(step))
        largest = max(largest, network.size(kept))
        terms.append(kept)
        results.append(kept)
    return flops, largest, results


def ssa_to_linear(ssa: Sequence[Sequence[int]], count: int) -> list[Step]:
    """An SSA path as opt_einsum's shrinking-list path (each step's positions sorted)."""
    ids = list(range(count))
    linear: list[Step] = []
    next_id = count
    for step in ssa:
        positions = sorted(ids.index(s) for s in step)
        linear.append(tuple(positions))
        for position in reversed(positions):
            del ids[position]
        ids.append(next_id)
        next_id += 1
    return linear


def linear_to_ssa(linear: Sequence[Sequence[int]], count: int) -> list[Step]:
    """A shrinking-list path as an SSA path (positions are assumed valid)."""
    ids = list(range(count))
    ssa: list[Step] = []
    next_id = count
    for step in linear:
        chosen = tuple(ids[p] for p in step)
        for position in sorted(step, reverse=True):
            del ids[position]
        ssa.append(chosen)
        ids.append(next_id)
        next_id += 1
    return ssa


def binarize(ssa: Sequence[Sequence[int]], count: int) -> list[Pair]:
    """The pairwise SSA path that executes ``ssa``: a one-term step is a renaming (the
    labels it sums are summed when its operand is prepared), a longer step contracts
    its terms left to right."""
    names = list(range(count))
    pairs: list[Pair] = []
    for step in ssa:
        current = names[step[0]]
        for other in step[1:]:
            pairs.append((current, names[other]))
            current = count + len(pairs) - 1
        names.append(current)
    return pairs


def is_binary(ssa: Sequence[Sequence[int]]) -> bool:
    return all(len(step) == 2 for step in ssa)


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
