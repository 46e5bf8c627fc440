"""Three operands: the exhaustive planners' path, by comparing the three paths there are.

A network of three terms has exactly three contraction paths: contract one pair, then
the result with the third term. ``auto`` and ``optimal`` search them (greedy first, then
an exhaustive search for a strictly cheaper path) and both return, in SSA form,
``[(i, j), (k, 3)]`` with ``i < j`` (greedy's form too). When one path costs strictly
less than the other two (opt_einsum's flop count, :func:`~.network.path_cost`), that is
their answer whatever greedy chose; on a tie the answer depends on greedy's choice, so
:func:`three_operand_path` declines and the caller plans in full.
"""

from __future__ import annotations

import math

from tenferro.einsum.planners.network import Pair

__all__ = ["three_operand_path"]

_PAIRS = ((0, 1, 2), (0, 2, 1), (1, 2, 0))


def three_operand_path(
    inputs: tuple[frozenset[str], ...], output: frozenset[str], sizes: dict[str, int]
) -> list[Pair] | None:
    """The path ``auto`` and ``optimal`` pick for three terms (index sets ``inputs``,
    ``output``, each index's extent ``sizes``) without a memory limit, or ``None`` when
    two paths tie for the cheapest."""
    best, best_cost, tied = None, 0, False
    for i, j, k in _PAIRS:
        left, right, third = inputs[i], inputs[j], inputs[k]
        involved = left | right
        kept = involved & (output | third)
        cost = math.prod([sizes[x] for x in involved]) * (2 if len(kept) < len(involved) else 1)
        last = third | kept
        cost += math.prod([sizes[x] for x in last]) * (2 if len(last & output) < len(last) else 1)
        if best is None or cost < best_cost:
            best, best_cost, tied = (i, j, k), cost, False
        elif cost == best_cost:
            tied = True
    if tied or best is None:
        return None
    i, j, k = best
    return [(i, j), (k, 3)]
