"""``dp`` finds the optimum of the cost it minimises among the trees it searches.

The search (cost caps raised pass by pass, partners found through an index of summed
labels or by the array filter, subgraphs dropped once their cost plus their open size
exceeds the cap) is
checked against a plain subset dynamic programme with none of those devices, written
here from the definition: every connected set of operands, every split of it into two
parts that share a summed label (any two parts with ``search_outer``)."""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fuzz_support import fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st

from tenferro.einsum.planners import PlanningError
from tenferro.einsum.planners.dp import DPTimeoutError, dynamic_programming, parse_minimize
from tenferro.einsum.planners.network import Network

dp_module = sys.modules["tenferro.einsum.planners.dp"]

MINIMIZE = ["flops", "size", "write", "combo", "combo-16", "limit", "limit-4"]


@st.composite
def connected_networks(draw: Any) -> Network:
    """3 to 8 operands over bonds of a random graph (some labels held by three operands,
    some by one, some kept in the output; now and then an empty extent)."""
    count = draw(st.integers(3, 8))
    pool = "abcdefghijklmn"
    sizes = {c: draw(st.sampled_from([1, 2, 3, 4, 5, 7])) for c in pool}
    if draw(st.integers(0, 9)) == 0:  # an empty extent somewhere
        sizes[draw(st.sampled_from(pool))] = 0
    terms: list[set[str]] = [set() for _ in range(count)]
    for label in pool:
        holders = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=3, unique=True))
        for j in holders:
            terms[j].add(label)
    used = set().union(*terms)
    output = {c for c in used if draw(st.integers(0, 5)) == 0}
    return Network(
        inputs=tuple(frozenset(t) for t in terms),
        output=frozenset(output),
        sizes={c: sizes[c] for c in used},
    )


def _reduced(network: Network) -> list[frozenset[str]]:
    """Each operand without the labels only it has (``dp`` sums those first, for free)."""
    counts: dict[str, int] = {}
    for term in (*network.inputs, network.output):
        for c in term:
            counts[c] = counts.get(c, 0) + 1
    return [frozenset(c for c in term if counts[c] > 1) for term in network.inputs]


def _connected(terms: list[frozenset[str]], output: frozenset[str]) -> bool:
    reached, queue = {0}, [0]
    while queue:
        j = queue.pop()
        for k, term in enumerate(terms):
            if k not in reached and (terms[j] & term) - output:
                reached.add(k)
                queue.append(k)
    return len(reached) == len(terms)


def reference(
    network: Network, minimize: str, search_outer: bool, memory_limit: int | None
) -> float:
    """The least cost of a tree over the reduced operands (``inf`` if none fits)."""
    score = parse_minimize(minimize)
    terms = _reduced(network)
    count = len(terms)

    def size(labels: frozenset[str]) -> int:
        return math.prod(network.sizes[c] for c in labels)

    def legs(subset: int) -> frozenset[str]:
        inside = frozenset().union(*(terms[j] for j in range(count) if subset >> j & 1))
        outside = frozenset().union(*(terms[j] for j in range(count) if not subset >> j & 1))
        return inside & (network.output | outside)

    best: dict[int, float] = {1 << j: 0 for j in range(count)}
    for subset in sorted(range(1, 1 << count), key=lambda s: bin(s).count("1")):
        if subset in best:
            continue
        kept = size(legs(subset))
        if memory_limit is not None and kept > memory_limit:
            continue
        found = math.inf
        part = (subset - 1) & subset
        while part:
            other = subset ^ part
            if part < other and part in best and other in best:
                left, right = legs(part), legs(other)
                if search_outer or (left & right) - network.output:
                    found = min(found, score(best[part], best[other], size(left | right), kept))
            part = (part - 1) & subset
        if found < math.inf:
            best[subset] = found
    return best.get((1 << count) - 1, math.inf)


def replayed_cost(network: Network, path: list[tuple[int, ...]], minimize: str) -> float:
    """The cost ``minimize`` gives an SSA path, counted by replaying it."""
    score = parse_minimize(minimize)
    live: dict[int, tuple[frozenset[str], float]] = {
        j: (term, 0) for j, term in enumerate(network.inputs)
    }
    next_id = len(network.inputs)
    cost: float = 0
    for step in path:
        parts = [live.pop(j) for j in step]
        rest = frozenset().union(*(labels for labels, _ in live.values()))
        union = frozenset().union(*(labels for labels, _ in parts))
        kept = union & (network.output | rest)
        if len(step) == 1:  # a lone operand's own labels, summed for free
            cost = parts[0][1]
        else:
            (a, ca), (b, cb) = parts
            cost = score(
                ca,
                cb,
                math.prod(network.sizes[c] for c in a | b),
                math.prod(network.sizes[c] for c in kept),
            )
        live[next_id] = (kept, cost)
        next_id += 1
    return cost


def widened(network: Network) -> Network:
    """The same network with each label split into six parallel ones (five of extent
    1): the costs are unchanged, and the labels no longer fit one 64-bit word."""

    def split(labels: frozenset[str]) -> frozenset[str]:
        return frozenset(f"{c}{k}" for c in labels for k in range(6))

    return Network(
        inputs=tuple(split(term) for term in network.inputs),
        output=split(network.output),
        sizes={f"{c}{k}": n if k == 0 else 1 for c, n in network.sizes.items() for k in range(6)},
    )


@contextlib.contextmanager
def pairs_on_arrays(always: bool) -> Iterator[None]:
    """Every block of pairs judged by the array filter (or by the loops, as usual for
    networks this small)."""
    saved = dp_module._ARRAY_PAIRS
    dp_module._ARRAY_PAIRS = 0 if always else saved
    try:
        yield
    finally:
        dp_module._ARRAY_PAIRS = saved


@fuzz_settings(150)
@given(
    connected_networks(),
    st.sampled_from(MINIMIZE),
    st.booleans(),
    st.sampled_from([None, 16, 64, 400]),
    st.booleans(),
    st.booleans(),
)
def test_dp_is_optimal_for_what_it_minimises(
    network: Network,
    minimize: str,
    search_outer: bool,
    memory_limit: int | None,
    on_arrays: bool,
    wide: bool,
) -> None:
    terms = _reduced(network)
    assume(all(terms) and _connected(terms, network.output))
    expected = reference(network, minimize, search_outer, memory_limit)
    if wide:
        network = widened(network)
    options: dict[str, Any] = {
        "minimize": minimize,
        "search_outer": search_outer,
        "memory_limit": memory_limit,
    }
    with pairs_on_arrays(on_arrays):
        if expected == math.inf:
            with pytest.raises(PlanningError, match="memory_limit"):
                dynamic_programming(network, **options)
            return
        path = dynamic_programming(network, **options)
    assert replayed_cost(network, path, minimize) == expected


def test_dp_stops_at_its_deadline_in_the_partner_search() -> None:
    """A deadline already past stops the search at once, wherever it spends its time."""
    side = 5
    right = {(r, c): f"r{r}{c}" for r in range(side) for c in range(side - 1)}
    down = {(r, c): f"d{r}{c}" for r in range(side - 1) for c in range(side)}
    inputs = []
    for r in range(side):
        for c in range(side):
            legs = [
                right.get((r, c)),
                right.get((r, c - 1)),
                down.get((r, c)),
                down.get((r - 1, c)),
            ]
            inputs.append(frozenset(leg for leg in legs if leg))
    labels = frozenset().union(*inputs)
    network = Network(inputs=tuple(inputs), output=frozenset(), sizes=dict.fromkeys(labels, 3))
    with pytest.raises(DPTimeoutError):
        dynamic_programming(network, deadline=0.0)
