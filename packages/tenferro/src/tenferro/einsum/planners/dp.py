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

from tenferro.einsum.planners.dp_blocks import GROUP_LIMIT, LayerArrays, PairFilter
from tenferro.einsum.planners.network import Network, Step, linear_to_ssa
from tenferro.einsum.planners.registry import PlanningError

__all__ = ["DPTimeoutError", "dynamic_programming", "parse_minimize"]


class DPTimeoutError(Exception):
    """The planning deadline passed."""


_MINIMIZE = re.compile(r"(flops|size|write|combo|limit)-*(\d*)")
DEFAULT_COMBO_FACTOR = 64
_ARRAY_PAIRS = 4096
"""Pairs of two layers from which the array filter is worth its set-up."""

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
    bit = {label: 1 << k for k, label in enumerate(counts)}
    extents = {bit[label]: network.sizes[label] for label in counts}
    inputs_all = [_mask(term, bit) for term in network.inputs]
    output = _mask(network.output, bit)
    single = _mask((c for c, n in counts.items() if n == 1), bit)
    inputs: list[int] = []
    done: list[Any] = []
    leaves: list[Any] = []
    for j, labels_j in enumerate(inputs_all):
        reduced = labels_j & ~single
        if not reduced and labels_j:
            done.append((j,))
        else:
            inputs.append(reduced)
            leaves.append((j,) if reduced != labels_j else j)
    if not inputs:
        return linear_to_ssa(_tree_to_sequence(_left_to_right(done)), len(inputs_all))

    if search_outer:
        subgraphs = [list(range(len(inputs)))]
    else:
        subgraphs = _subgraphs(inputs, output)
    # each component's operands numbered consecutively, so a component's subgraph masks
    # shifted by its first number fit in a machine word when it is small
    order = [j for group in subgraphs for j in group]
    inputs = [inputs[j] for j in order]
    leaves = [leaves[j] for j in order]
    groups, first = [], 0
    for group in subgraphs:
        groups.append(list(range(first, first + len(group))))
        first += len(group)
    search = _Search(
        inputs,
        leaves,
        output,
        _Sizes(extents),
        memory_limit=memory_limit,
        score=None if minimize == "flops" else score,
        search_outer=search_outer,
        deadline=deadline,
    )
    contractions: list[Any] = list(done)
    contraction_sizes = [1] * len(done)
    for group in groups:
        labels = 0
        for j in group:
            labels |= inputs[j]
        if cost_cap is True:
            cap: float = max(1, search.size(labels & output))
        elif cost_cap is False:
            cap = math.inf
        else:
            cap = cost_cap
        increment = max(min((extents[b] for b in _bits(labels)), default=2), 2)
        legs, tree = search.best_tree(group, cap, increment)
        contractions.append(tree)
        contraction_sizes.append(search.size(legs))
    order = sorted(range(len(contractions)), key=contraction_sizes.__getitem__)
    tree = _left_to_right([contractions[k] for k in order])
    return linear_to_ssa(_tree_to_sequence(tree), len(inputs_all))


def _mask(labels: Any, bit: dict[str, int]) -> int:
    mask = 0
    for label in labels:
        mask |= bit[label]
    return mask


def _bits(mask: int) -> list[int]:
    """The set bits of ``mask``, each as a power of two."""
    found = []
    while mask:
        low = mask & -mask
        found.append(low)
        mask ^= low
    return found


class _Sizes:
    """Products of extents over label masks, remembered for the search's lifetime."""

    def __init__(self, extents: dict[int, int]) -> None:
        self.extents = extents
        self.known: dict[int, int] = {0: 1}

    def __call__(self, mask: int) -> int:
        size = self.known.get(mask)
        if size is None:
            size = 1
            for low in _bits(mask):
                size *= self.extents[low]
            self.known[mask] = size
        return size


_Entry = tuple[int, int, Any, int]
"""A subgraph's best tree so far: (its open labels, its cost, the tree, the open
labels' size)."""


class _Search:
    """The subset dynamic programme of one network's reduced operands.

    Without ``search_outer`` a subgraph is only joined with subgraphs that share one
    of its summed labels; these are found through an index from each summed label to
    the subgraphs of a layer holding it, so a pass costs the number of connected
    pairs rather than the product of the layers' sizes."""

    def __init__(
        self,
        inputs: list[int],
        leaves: list[Any],
        output: int,
        size: _Sizes,
        *,
        memory_limit: int | None,
        score: Scorer | None,
        search_outer: bool,
        deadline: float | None,
    ) -> None:
        self.inputs = inputs
        self.leaves = leaves
        self.output = output
        self.size = size
        self.memory_limit = memory_limit
        self.score = score
        self.search_outer = search_outer
        self.deadline = deadline
        holders: dict[int, int] = {}
        for j, labels in enumerate(inputs):
            for low in _bits(labels & ~output):
                holders[low] = holders.get(low, 0) | (1 << j)
        self.holders = holders
        self.checks = 0
        summed = 0
        for labels in inputs:
            summed |= labels & ~output
        # the array filter prices in logarithms: empty extents (size 0) stay in the loops
        arrays = score is None and min(size.extents.values(), default=1) > 0
        self.filter = (
            PairFilter(size.extents, summed, search_outer=search_outer) if arrays else None
        )

    def best_tree(self, group: list[int], cap: float, increment: int) -> tuple[int, Any]:
        """The open labels and tree of the cheapest contraction of ``group``, raising
        the cost cap by ``increment`` until some tree fits under it."""
        layers: list[dict[int, _Entry]] = [{} for _ in range(len(group) + 1)]
        self.whole = sum(1 << j for j in group)
        layers[1] = {
            1 << j: (self.inputs[j], 0, self.leaves[j], self.size(self.inputs[j])) for j in group
        }
        offset = group[0]
        pair_filter = self.filter if len(group) <= GROUP_LIMIT else None
        while not layers[-1]:
            capped = False
            indexes: dict[int, dict[int, list[tuple[int, _Entry]]]] = {}
            arrays: dict[int, LayerArrays] = {}
            for n in range(2, len(group) + 1):
                layer = layers[n]
                for m in range(1, n // 2 + 1):
                    small, large = layers[m], layers[n - m]
                    if pair_filter is not None and len(small) * len(large) >= _ARRAY_PAIRS:
                        for k in (m, n - m):
                            if k not in arrays:
                                arrays[k] = pair_filter.arrays(list(layers[k].items()), offset)
                        refused = self._join_arrays(
                            arrays[m], arrays[n - m], layer, 2 * m == n, cap
                        )
                    else:
                        if n - m not in indexes and not self.search_outer:
                            indexes[n - m] = self._index(large)
                        refused = self._join(
                            small, large, indexes.get(n - m), layer, 2 * m == n, cap
                        )
                    capped = capped or refused
            if not capped and not layers[-1]:
                raise PlanningError(
                    "einsum",
                    "dp found no contraction whose intermediates fit "
                    f"memory_limit={self.memory_limit}",
                )
            cap = increment * cap
        legs, _, tree, _ = next(iter(layers[-1].values()))
        return legs, tree

    def _index(self, layer: dict[int, _Entry]) -> dict[int, list[tuple[int, _Entry]]]:
        """The subgraphs of ``layer`` by each summed label they leave open."""
        index: dict[int, list[tuple[int, _Entry]]] = {}
        output = self.output
        for item in layer.items():
            for low in _bits(item[1][0] & ~output):
                index.setdefault(low, []).append(item)
        return index

    def _join(
        self,
        small: dict[int, _Entry],
        large: dict[int, _Entry],
        index: dict[int, list[tuple[int, _Entry]]] | None,
        layer: dict[int, _Entry],
        same: bool,
        cap: float,
    ) -> bool:
        """Offer every pair of a subgraph of ``small`` and a disjoint one of ``large``
        sharing a summed label (found through ``index``; any pair without one) to
        ``layer``; whether the cap refused one. ``same``: the two are one layer."""
        output = self.output
        offer = self._offer
        capped = False
        for s1, entry1 in small.items():
            self._tick(255)
            if index is None:
                partners: Any = large.items()
            else:
                found: dict[int, _Entry] = {}
                for low in _bits(entry1[0] & ~output):
                    for s2, entry in index.get(low, ()):
                        if not s1 & s2:
                            found[s2] = entry
                partners = found.items()
            for s2, entry2 in partners:
                if s1 & s2 or (same and s1 >= s2):
                    continue
                self._tick(1023)
                if offer(s1, entry1, s2, entry2, layer, cap):
                    capped = True
        return capped

    def _join_arrays(
        self,
        small: LayerArrays,
        large: LayerArrays,
        layer: dict[int, _Entry],
        same: bool,
        cap: float,
    ) -> bool:
        """:meth:`_join` with the pairs chosen by the array filter."""
        assert self.filter is not None
        offer = self._offer
        capped = False
        check = self._deadline_check
        for rows, columns, refused in self.filter.pairs(small, large, same, cap, check):
            capped = capped or refused
            for i, j in zip(rows, columns, strict=True):
                s1, entry1 = small.items[i]
                s2, entry2 = large.items[j]
                if offer(s1, entry1, s2, entry2, layer, cap):
                    capped = True
        return capped

    def _offer(
        self, s1: int, entry1: _Entry, s2: int, entry2: _Entry, layer: dict[int, _Entry], cap: float
    ) -> bool:
        """Price joining two disjoint subgraphs and keep the result if it is the best
        tree of their union so far; whether the cap refused it."""
        i1, cost1, tree1, size1 = entry1
        i2, cost2, tree2, size2 = entry2
        common = i1 & i2
        shared = common & ~self.output
        if not shared and not self.search_outer:
            return False
        size = self.size
        overlap = size(common)
        joined = size1 * size2 // overlap if overlap else size(i1 | i2)  # 0: an empty extent
        s = s1 | s2
        memory_limit = self.memory_limit
        if self.score is None:
            cost = cost1 + cost2 + joined
            if cost > cap:
                return True
            if s in layer and cost >= layer[s][1]:
                return False
            legs = _open(i1 | i2, shared, s, self.holders)
            kept = size(legs)
            # joined to anything, s pays at least its open size once more
            if cost + kept > cap and s != self.whole:
                return True
        else:
            legs = _open(i1 | i2, shared, s, self.holders)
            kept = size(legs)
            cost = self.score(cost1, cost2, joined, kept)
            if cost > cap:
                return True
            if s in layer and cost >= layer[s][1]:
                return False
        if memory_limit is None or kept <= memory_limit:
            layer[s] = (legs, cost, (tree1, tree2), kept)
        return False

    def _tick(self, every: int) -> None:
        self.checks += 1
        if self.deadline is not None and self.checks & every == 1:
            self._deadline_check()

    def _deadline_check(self) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise DPTimeoutError


def _open(union: int, shared: int, subgraph: int, holders: dict[int, int]) -> int:
    """The labels of a merged subgraph still needed: a shared summed label leaves
    once every operand holding it is inside the subgraph."""
    for low in _bits(shared):
        if not holders[low] & ~subgraph:
            union &= ~low
    return union


def _subgraphs(inputs: list[int], output: int) -> list[list[int]]:
    """Operands grouped into components linked by summed labels (opt_einsum's order)."""
    summed = 0
    for labels in inputs:
        summed |= labels
    summed &= ~output
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
