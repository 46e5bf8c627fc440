"""Exact planning by dynamic programming over connected subgraphs (opt_einsum's
``DynamicProgramming``, after Pfeifer, Haegeman and Verstraete, PRE 90, 033315).

Labels only one operand has are summed first, in a step of that operand alone (an
operand that becomes a scalar joins at the end). Then, per connected component, the
cheapest tree of every connected set of operands (a bit mask) is built from the
cheapest trees of two disjoint parts that share a summed label (with
``search_outer``, any two parts). The search only keeps candidates whose cost stays
under a cap, starting at the size of the component's output and multiplied by its
smallest extent until the whole component is reached: cheap networks finish after
visiting few subsets. Components are joined by outer products, smallest first.

``minimize`` chooses the cost being minimised: ``"flops"`` (the sum of the pairs'
loop-nest sizes), ``"size"`` (the largest intermediate), ``"write"`` (the sum of
intermediate sizes), ``"combo"`` / ``"combo-F"`` (flops plus ``F`` times write,
``F = 64`` by default) or ``"limit"`` / ``"limit-F"`` (the sum, over pairs, of the
larger of flops and ``F`` times write).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

from tenferro.einsum.planners.network import Network, Step, linear_to_ssa
from tenferro.einsum.planners.registry import PlanningError

__all__ = ["DPTimeoutError", "dynamic_programming", "parse_minimize"]


class DPTimeoutError(Exception):
    """The planning deadline passed."""


_MINIMIZE = re.compile(r"(flops|size|write|combo|limit)-*(\d*)")
DEFAULT_COMBO_FACTOR = 64

Scorer = Callable[[int, int, int, int], int]
"""``(cost of part 1, cost of part 2, loop-nest size, result size) -> cost``."""


def parse_minimize(minimize: str) -> Scorer:
    """The scorer for ``minimize`` (see the module documentation)."""
    if minimize == "flops":
        return lambda c1, c2, f, m: c1 + c2 + f
    if minimize == "size":
        return lambda c1, c2, f, m: max(c1, c2, m)
    if minimize == "write":
        return lambda c1, c2, f, m: c1 + c2 + m
    match = _MINIMIZE.fullmatch(minimize) if isinstance(minimize, str) else None
    if match is None or match.group(1) not in ("combo", "limit"):
        raise PlanningError("einsum", f"dp cannot minimise {minimize!r}")
    factor = float(match.group(2)) if match.group(2) else DEFAULT_COMBO_FACTOR
    if match.group(1) == "combo":
        return lambda c1, c2, f, m: c1 + c2 + int(f + factor * m)
    return lambda c1, c2, f, m: c1 + c2 + int(max(f, factor * m))


def dynamic_programming(
    network: Network,
    *,
    memory_limit: int | None = None,
    minimize: str = "flops",
    search_outer: bool = False,
    cost_cap: bool | int = True,
    deadline: float | None = None,
) -> list[Step]:
    """The optimal SSA path for ``minimize`` among trees whose pairs share a summed
    label (any pairs with ``search_outer``). Raises :class:`PlanningError` when
    nothing fits ``memory_limit`` and :class:`DPTimeoutError` when the deadline
    (``time.perf_counter`` seconds) passes."""
    score = parse_minimize(minimize)
    counts: dict[str, int] = {}
    for term in (*network.inputs, network.output):
        for label in term:
            counts[label] = counts.get(label, 0) + 1
    ids = {label: k for k, label in enumerate(counts)}
    extents = [network.sizes[label] for label in counts]
    inputs_all = [frozenset(ids[c] for c in term) for term in network.inputs]
    output = frozenset(ids[c] for c in network.output)

    def size_of(labels: frozenset[int]) -> int:
        return math.prod([extents[i] for i in labels])

    single = frozenset(ids[c] for c, n in counts.items() if n == 1)
    inputs: list[frozenset[int]] = []
    done: list[Any] = []
    leaves: list[Any] = []
    for j, labels_j in enumerate(inputs_all):
        reduced = labels_j - single
        if not reduced and labels_j:
            done.append((j,))
        else:
            inputs.append(reduced)
            leaves.append((j,) if reduced != labels_j else j)
    if not inputs:
        return linear_to_ssa(_tree_to_sequence(_left_to_right(done)), len(inputs_all))

    contractions: list[Any] = list(done)
    contraction_sizes = [1] * len(done)
    if search_outer:
        subgraphs = [list(range(len(inputs)))]
    else:
        subgraphs = _subgraphs(inputs, output)
    everything = (1 << len(inputs)) - 1
    checks = 0
    for group in subgraphs:
        layers: list[dict[int, tuple[frozenset[int], int, Any]]] = [{}, {}]
        layers[1] = {1 << j: (inputs[j], 0, leaves[j]) for j in group}
        layers.extend({} for _ in range(len(group) - 1))
        group_mask = 0
        for j in group:
            group_mask |= 1 << j
        labels = frozenset().union(*(inputs[j] for j in group))
        if cost_cap is True:
            cap: float = max(1, size_of(labels & output))
        elif cost_cap is False:
            cap = math.inf
        else:
            cap = cost_cap
        increment = max(min((extents[i] for i in labels), default=2), 2)
        while not layers[-1]:
            capped = False  # whether the cap turned a candidate away in this pass
            for n in range(2, len(group) + 1):
                layer = layers[n]
                for m in range(1, n // 2 + 1):
                    for s1, (i1, cost1, tree1) in layers[m].items():
                        for s2, (i2, cost2, tree2) in layers[n - m].items():
                            if s1 & s2 or (m == n - m and s1 >= s2):
                                continue
                            checks += 1
                            if (
                                deadline is not None
                                and checks & 1023 == 1
                                and time.perf_counter() > deadline
                            ):
                                raise DPTimeoutError
                            shared = (i1 & i2) - output
                            if not shared and not search_outer:
                                continue
                            union = i1 | i2
                            s = s1 | s2
                            rest = group_mask & (everything ^ s)
                            if minimize == "flops":
                                cost = cost1 + cost2 + size_of(union)
                                if cost > cap:
                                    capped = True
                                    continue
                                if s in layer and cost >= layer[s][1]:
                                    continue
                                legs = _legs(rest, inputs, shared, union)
                                if memory_limit is not None and size_of(legs) > memory_limit:
                                    continue
                            else:
                                legs = _legs(rest, inputs, shared, union)
                                kept = size_of(legs)
                                cost = score(cost1, cost2, size_of(union), kept)
                                if cost > cap:
                                    capped = True
                                    continue
                                if s in layer and cost >= layer[s][1]:
                                    continue
                                if memory_limit is not None and kept > memory_limit:
                                    continue
                            layer[s] = (legs, cost, (tree1, tree2))
            if not capped and not layers[-1]:
                raise PlanningError(
                    "einsum",
                    f"dp found no contraction whose intermediates fit memory_limit={memory_limit}",
                )
            cap = increment * cap
        legs, _, tree = next(iter(layers[-1].values()))
        contractions.append(tree)
        contraction_sizes.append(size_of(legs))
    order = sorted(range(len(contractions)), key=contraction_sizes.__getitem__)
    tree = _left_to_right([contractions[k] for k in order])
    return linear_to_ssa(_tree_to_sequence(tree), len(inputs_all))


def _legs(
    rest: int, inputs: list[frozenset[int]], shared: frozenset[int], union: frozenset[int]
) -> frozenset[int]:
    """The labels of a merged subgraph still needed: those summed by the merge, unless
    an operand outside it (``rest``, a mask) still has them, leave."""
    if not shared:
        return union
    outside: set[int] = set()
    k = 0
    while rest:
        if rest & 1:
            outside |= inputs[k]
        rest >>= 1
        k += 1
    return union - (shared - outside)


def _subgraphs(inputs: list[frozenset[int]], output: frozenset[int]) -> list[list[int]]:
    """Operands grouped into components linked by summed labels (opt_einsum's order)."""
    summed = frozenset().union(*inputs) - output
    unused = set(range(len(inputs)))
    groups = []
    while unused:
        group: set[int] = set()
        queue = [unused.pop()]
        while queue:
            j = queue.pop()
            group.add(j)
            here = summed & inputs[j]
            linked = {k for k in unused if here & inputs[k]}
            queue.extend(linked)
            unused -= linked
        groups.append(sorted(group))
    return groups


def _left_to_right(items: list[Any]) -> Any:
    tree = items[0]
    for item in items[1:]:
        tree = (tree, item)
    return tree


def _tree_to_sequence(tree: Any) -> list[tuple[int, ...]]:
    """A nested tuple tree (ints are operands, a tuple contracts its members) as a
    shrinking-list path, in opt_einsum's order (``_tree_to_sequence``)."""
    if isinstance(tree, int):
        return []
    pending: list[Any] = [tree]
    placed: list[int] = []
    sequence: list[tuple[int, ...]] = []
    while pending:
        node = pending.pop()
        step: list[int] = []
        for leaf in sorted(x for x in node if isinstance(x, int)):
            position = sum(1 for q in placed if q < leaf)
            step.append(position)
            placed.insert(position, leaf)
        for child in (x for x in node if not isinstance(x, int)):
            step.append(len(placed) + len(pending))
            pending.append(child)
        sequence.insert(0, tuple(step))
    return sequence
