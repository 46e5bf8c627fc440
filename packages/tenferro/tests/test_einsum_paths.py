"""Every planner's path is valid and costs what an independent recount says; ``auto`` is
never worse than greedy, optimal, dp or branch and bound; paths round-trip through
opt_einsum's format; ``PathInfo`` equals opt_einsum's report of the same path."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.einsum import PlanningError
from tenferro.einsum.planners import registry
from tenferro.einsum.planners.network import linear_to_ssa, ssa_to_linear
from tenferro.einsum.planners.registry import names

HAVE_OPT_EINSUM = importlib.util.find_spec("opt_einsum") is not None

NAMES = [
    "auto",
    "greedy",
    "eager",
    "opportunistic",
    "optimal",
    "branch-all",
    "branch-2",
    "branch-1",
    "dp",
    "dynamic-programming",
    "random-greedy",
    "random-greedy-128",
    "random-greedy-5",
    "anneal",
]


@st.composite
def networks(draw: Any, most: int = 7) -> tuple[str, list[tuple[int, ...]]]:
    """2 to ``most`` operands over a pool of labels (hyperedges, scalars, repeated labels,
    labels only one operand has, outer products), an explicit or implicit output."""
    pool = "abcdefgh"
    sizes = {c: draw(st.sampled_from([1, 2, 3, 4, 5, 7])) for c in pool}
    count = draw(st.integers(2, most))
    terms = ["".join(draw(st.lists(st.sampled_from(pool), max_size=4))) for _ in range(count)]
    used = sorted(set("".join(terms)))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        subscripts += "->" + "".join(draw(st.permutations(used))[: draw(st.integers(0, 3))])
    return subscripts, [tuple(sizes[c] for c in t) for t in terms]


def recount(
    subscripts: str, shapes: list[tuple[int, ...]], path: list[tuple[int, ...]]
) -> tuple[int, int]:
    """``(flops, largest intermediate)`` of a shrinking-list path, counted from scratch
    the way opt_einsum's ``contract_path`` counts (an independent oracle)."""
    left, _, right = subscripts.partition("->")
    terms = [set(t) for t in left.split(",")]
    if "->" in subscripts:
        output = set(right)
    else:
        flat = left.replace(",", "")
        output = {c for c in flat if flat.count(c) == 1}
    size = {}
    for term, shape in zip(left.split(","), shapes, strict=True):
        for c, n in zip(term, shape, strict=True):
            size[c] = max(size.get(c, 1), n)
    flops, largest = 0, 0
    for step in path:
        chosen = [terms[p] for p in step]
        rest = [t for k, t in enumerate(terms) if k not in step]
        involved = set().union(*chosen)
        kept = involved & (output | set().union(*rest))
        loop = math.prod(size[c] for c in involved)
        flops += loop * (max(1, len(step) - 1) + (1 if involved - kept else 0))
        largest = max(largest, math.prod(size[c] for c in kept))
        terms = [*rest, kept]
    return flops, largest if path else 1


def valid(path: list[tuple[int, ...]], count: int) -> bool:
    remaining = count
    for step in path:
        if not step or len(set(step)) != len(step) or min(step) < 0 or max(step) >= remaining:
            return False
        remaining -= len(step) - 1
    return remaining == 1


@fuzz_settings(60)
@given(networks(), st.sampled_from(NAMES))
def test_every_planner_gives_a_valid_path_costed_as_recounted(net: Any, optimize: str) -> None:
    subscripts, shapes = net
    path, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=optimize)
    assert valid(path, len(shapes)), path
    flops, largest = recount(subscripts, shapes, path)
    assert info.opt_cost == flops
    assert info.largest_intermediate == largest
    xs = [np.random.default_rng(2).standard_normal(s) for s in shapes]
    np.testing.assert_allclose(
        np.asarray(tf.einsum(subscripts, *xs, optimize=optimize)),
        np.einsum(subscripts, *xs),
        rtol=1e-10,
        atol=1e-10,
    )


@fuzz_settings(80)
@given(networks(most=9))
def test_auto_is_never_worse_than_greedy_optimal_dp_or_branch(net: Any) -> None:
    subscripts, shapes = net
    _, auto = tf.einsum_path(subscripts, *shapes, shapes=True)
    others = ["greedy", "dp", "branch-2", "random-greedy"]
    if len(shapes) <= 8:  # exhaustive searches take seconds beyond
        others += ["optimal", "branch-all"]
    for other in others:
        _, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=other)
        assert auto.opt_cost <= info.opt_cost, (other, auto.path, info.path)


def test_the_reported_cases_auto_lost() -> None:
    """``auto`` was worse than greedy here, and ``dp`` never summed lone labels first."""
    for subscripts in ("ea,b,,bda,ab->daeb", "aab,fa,df,ecc->bde"):
        terms = subscripts.split("->")[0].split(",")
        sizes = {"a": 3, "b": 4, "c": 4, "d": 2, "e": 5, "f": 3}
        shapes = [tuple(sizes[c] for c in t) for t in terms]
        costs = {
            name: tf.einsum_path(subscripts, *shapes, shapes=True, optimize=name)[1].opt_cost
            for name in ("auto", "greedy", "optimal", "dp")
        }
        assert costs["auto"] == min(costs.values()), costs
    shapes = [(3, 3, 4), (3, 3), (2, 3), (5, 4, 4)]
    _, dp = tf.einsum_path("aab,fa,df,ecc->bde", *shapes, shapes=True, optimize="dp")
    assert dp.path[0] == (3,)  # the lone label c is summed in a step of its own
    assert dp.opt_cost == recount("aab,fa,df,ecc->bde", shapes, dp.path)[0]


@fuzz_settings(60)
@given(networks(), st.sampled_from(["auto", "greedy", "dp", "branch-2"]))
def test_paths_round_trip_through_opt_einsums_format(net: Any, optimize: str) -> None:
    subscripts, shapes = net
    path, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=optimize)
    again, info_again = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=path)
    assert again == path
    assert info_again.opt_cost == info.opt_cost
    numpy_form = ["einsum_path", *path]  # numpy.einsum_path's form
    assert tf.einsum_path(subscripts, *shapes, shapes=True, optimize=numpy_form)[0] == path
    count = len(shapes)
    assert ssa_to_linear(linear_to_ssa(path, count), count) == path


@pytest.mark.skipif(not HAVE_OPT_EINSUM, reason="opt_einsum is not installed")
@fuzz_settings(120)
@given(networks(), st.data())
def test_path_info_is_opt_einsums_report(net: Any, data: Any) -> None:
    import opt_einsum as oe

    subscripts, shapes = net
    count = len(shapes)
    path: list[tuple[int, ...]] = []
    remaining = count
    while remaining > 1:
        if data.draw(st.integers(0, 4)) == 0:  # a one-term step
            path.append((data.draw(st.integers(0, remaining - 1)),))
        width = data.draw(st.integers(2, min(3, remaining)))
        positions = st.integers(0, remaining - 1)
        step = data.draw(st.lists(positions, min_size=width, max_size=width, unique=True))
        path.append(tuple(sorted(step)))
        remaining -= width - 1
    ours, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=path)
    theirs, report = oe.contract_path(subscripts, *shapes, shapes=True, optimize=path)
    assert ours == [tuple(s) for s in theirs] == path
    assert info.opt_cost == report.opt_cost
    assert info.naive_cost == report.naive_cost
    assert info.largest_intermediate == report.largest_intermediate
    assert info.scale_list == list(report.scale_list)
    assert info.size_list == list(report.size_list)
    assert info.eq == report.eq
    assert info.size_dict == report.size_dict
    assert info.indices == frozenset(report.indices)
    assert info.shapes == report.shapes
    assert [c[:2] + c[2:] for c in info.contraction_list] == [
        (tuple(c[0]), frozenset(c[1]), c[2], c[3], c[4]) for c in report.contraction_list
    ]
    assert repr(info) == repr(report)


@pytest.mark.skipif(not HAVE_OPT_EINSUM, reason="opt_einsum is not installed")
@fuzz_settings(60)
@given(networks(most=6), st.sampled_from(["greedy", "optimal", "dp", "branch-2", "branch-all"]))
def test_named_planners_cost_what_opt_einsums_do(net: Any, optimize: str) -> None:
    import opt_einsum as oe

    subscripts, shapes = net
    _, ours = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=optimize)
    _, theirs = oe.contract_path(subscripts, *shapes, shapes=True, optimize=optimize)
    if optimize == "greedy":  # a port of the same algorithm: the same path
        assert ours.path == [tuple(step) for step in theirs.path]
    else:  # the same search; ties (opt_einsum breaks them by set order) may differ,
        # never by more than the factor 2 its planners' estimate can be off by
        assert ours.opt_cost <= 2 * int(theirs.opt_cost), (ours.path, theirs.path)


def test_a_scalar_contraction_reports_one_element() -> None:
    path, info = tf.einsum_path("->", (), shapes=True)
    assert path == [(0,)]
    assert info.largest_intermediate == 1
    assert info.opt_cost == 1


def test_every_registered_name_plans() -> None:
    shapes = [(2, 3), (3, 4), (4, 5), (5, 2)]
    for name in names():
        name = name.replace("-N", "-3")
        path, _ = tf.einsum_path("ab,bc,cd,da->", *shapes, shapes=True, optimize=name)
        assert valid(path, 4)


def test_a_registered_planner_is_used_by_name() -> None:
    def reversed_chain(network: Any, memory_limit: Any) -> list[tuple[int, ...]]:
        count = len(network.inputs)
        return [(count - 1, count - 2)] + [(count + k, count - 3 - k) for k in range(count - 2)]

    registry.register("test-reversed", reversed_chain)
    try:
        path, _ = tf.einsum_path(
            "ab,bc,cd,de->ae", *[(2, 2)] * 4, shapes=True, optimize="TEST-reversed"
        )
        assert path == [(2, 3), (1, 2), (0, 1)]
        with pytest.raises(PlanningError, match="already registered"):
            registry.register("test-reversed", reversed_chain)
    finally:
        registry._PLANNERS.pop("test-reversed", None)
