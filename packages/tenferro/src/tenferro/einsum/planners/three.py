"""Three operands: ``auto``'s path, by comparing the three paths there are.

A network of three terms has exactly three binary trees: contract one pair, then the
result with the third term. ``auto`` searches them exactly (:mod:`.exact`, each
operand's alone labels summed first where that is cheaper) and returns, in SSA form,
``[(0, 2), (3, 1)]``, ``[(0, 1), (3, 2)]`` or ``[(1, 2), (0, 3)]`` once the one-term
steps are set aside (:func:`~.network.binarize`). When one tree costs strictly less than
the other two, that is its answer; on a tie :func:`three_operand_path` declines and
the caller plans in full.
"""

from __future__ import annotations

import math

from tenferro.einsum.planners.network import Pair

__all__ = ["three_operand_path"]

_TREES = (
    ((0, 2, 1), [(0, 2), (3, 1)]),
    ((0, 1, 2), [(0, 1), (3, 2)]),
    ((1, 2, 0), [(1, 2), (0, 3)]),
)


def three_operand_path(
    inputs: tuple[frozenset[str], ...], output: frozenset[str], sizes: dict[str, int]
) -> list[Pair] | None:
    """The pairs ``auto`` contracts three terms by (index sets ``inputs``, ``output``,
    each index's extent ``sizes``) without a memory limit, or ``None`` when two trees
    tie for the cheapest."""

    def size(labels: frozenset[str]) -> int:
        return math.prod([sizes[x] for x in labels])

    alone = []
    for k, term in enumerate(inputs):
        others = output.union(*(t for j, t in enumerate(inputs) if j != k))
        alone.append(term - others)
    best, best_cost, tied = None, 0.0, False
    for (i, j, k), pairs in _TREES:
        left, right, third = inputs[i], inputs[j], inputs[k]
        kept = (left | right) & (output | third)
        cost = math.inf
        for single_i in (False, True) if alone[i] else (False,):
            for single_j in (False, True) if alone[j] else (False,):
                a = left - alone[i] if single_i else left
                b = right - alone[j] if single_j else right
                involved = a | b
                here = size(involved) * (2 if len(kept) < len(involved) else 1)
                here += 2 * size(left) if single_i else 0
                here += 2 * size(right) if single_j else 0
                cost = min(cost, here)
        second = math.inf
        for single_k in (False, True) if alone[k] else (False,):
            c = third - alone[k] if single_k else third
            involved = kept | c
            here = size(involved) * (2 if len(involved & output) < len(involved) else 1)
            second = min(second, here + (2 * size(third) if single_k else 0))
        last = cost + second
        if best is None or last < best_cost:
            best, best_cost, tied = pairs, last, False
        elif last == best_cost:
            tied = True
    if tied or best is None:
        return None
    return list(best)
