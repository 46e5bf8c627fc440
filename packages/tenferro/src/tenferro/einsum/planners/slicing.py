"""Slicing: fix some labels to one value at a time so every intermediate fits a memory
limit, and sum (or assemble) the slices.

Slicing labels ``S`` runs the same pairwise tree once per combination of their values,
with their extents as 1: each intermediate shrinks by the extents of the labels of ``S``
it holds, and the work grows by the redundancy of repeating the parts that do not hold
them. :func:`slice_to_fit` chooses ``S`` greedily: while some intermediate is larger
than the limit, slice the label of the largest one that keeps the total work (over all
slices) smallest. The final result (the output, or its share of it) is not an
intermediate.
"""

from __future__ import annotations

from collections.abc import Sequence

from tenferro.einsum.planners.network import Network, Pair
from tenferro.einsum.planners.registry import PlanningError
from tenferro.einsum.planners.tree import Labels, Tree

__all__ = ["MAX_SLICES", "STEP_OVERHEAD", "fits", "slice_to_fit", "sliced_costs", "sliced_score"]

MAX_SLICES = 1 << 16
"""The most slices a plan may have: each costs a pass of Python-level dispatch."""
STEP_OVERHEAD = 100_000
"""What one pairwise step of one slice costs beyond its flops, in flops (about 50 us
of numpy dispatch at 2 Gflop/s): slicing finer than that buys memory at a loss."""


def sliced_costs(
    network: Network, pairs: Sequence[Pair], sliced: frozenset[str]
) -> tuple[int, int]:
    """``(flops over every slice, largest intermediate of one slice)`` of contracting
    ``network`` along the binary SSA path ``pairs`` with ``sliced`` fixed per slice
    (opt_einsum's count per slice; the final result counts as an intermediate only
    when it is not the whole output)."""
    if not pairs:
        return 0, 1
    tree = Tree(Labels(network), pairs)
    mask = tree.labels.mask(sliced)
    return _costs(tree, mask)


def _costs(tree: Tree, sliced: int) -> tuple[int, int]:
    size = tree.labels.size
    keep = ~sliced
    count, left, right, legs = tree.count, tree.left, tree.right, tree.legs
    per_slice, largest = 0, 1
    for node in range(count, len(left)):
        involved = (legs[left[node]] | legs[right[node]]) & keep
        kept = legs[node] & keep
        per_slice += size(involved) * (1 if kept == involved else 2)
        if node != tree.root:
            largest = max(largest, size(kept))
    return per_slice * size(sliced), largest


def slice_to_fit(network: Network, pairs: Sequence[Pair], limit: int) -> tuple[str, ...]:
    """The labels to slice so that no intermediate of ``pairs`` holds more than
    ``limit`` elements (none when it already fits); raises :class:`PlanningError` when
    that needs more than :data:`MAX_SLICES` slices."""
    if len(pairs) < 2:
        return ()
    tree = Tree(Labels(network), pairs)
    size = tree.labels.size
    sliced = 0
    while True:
        worst, worst_size = -1, 0
        for node in range(tree.count, len(tree.left)):
            if node == tree.root:
                continue
            here = size(tree.legs[node] & ~sliced)
            if here > worst_size:
                worst, worst_size = node, here
        if worst_size <= limit:
            break
        best: tuple[int, int] | None = None
        best_label = 0
        rest = tree.legs[worst] & ~sliced
        while rest:
            bit = rest & -rest
            rest ^= bit
            cost, _ = _costs(tree, sliced | bit)
            score = (cost + size(sliced | bit) * len(pairs) * STEP_OVERHEAD, -size(bit))
            if best is None or score < best:
                best, best_label = score, bit
        sliced |= best_label
        if size(sliced) > MAX_SLICES:
            labels = sorted(tree.labels.labels(sliced))
            raise PlanningError(
                "einsum",
                f"memory_limit={limit} would need more than {MAX_SLICES} slices "
                f"(over labels {''.join(labels)!r}); the largest intermediate of this "
                f"path without slicing holds {tree.largest()} elements: raise the limit",
            )
    return tuple(sorted(tree.labels.labels(sliced)))


def sliced_score(network: Network, pairs: Sequence[Pair], sliced: frozenset[str]) -> int:
    """The work of a sliced plan: its flops over every slice plus each slice's
    dispatch (:data:`STEP_OVERHEAD` per pairwise step)."""
    cost, _ = sliced_costs(network, pairs, sliced)
    return cost + network.size(sliced) * len(pairs) * STEP_OVERHEAD


def fits(network: Network, pairs: Sequence[Pair], limit: int) -> bool:
    """Whether every intermediate of ``pairs`` (the final result aside) fits ``limit``."""
    if len(pairs) < 2:
        return True
    tree = Tree(Labels(network), pairs)
    size = tree.labels.size
    return all(
        size(tree.legs[node]) <= limit
        for node in range(tree.count, len(tree.left))
        if node != tree.root
    )
