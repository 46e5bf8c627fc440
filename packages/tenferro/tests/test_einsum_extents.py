"""Einsum programs re-made at never-seen extents equal fresh ones.

An einsum without an ellipsis re-makes, at new extents, the primitives of the program
lowered for its labels, ranks, dtypes and path (one or two operands: not even parsed or
planned). For random
subscripts (repeated labels, implicit and explicit outputs, summed labels) and extents
(size 1 and empty included), the re-made program equals, instruction by instruction, a
program planned and lowered afresh, and its values equal numpy's.
"""

from __future__ import annotations

import sys
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given

import tenferro as tf
from tenferro.einsum.planners import Network, greedy, path_cost, plan
from tenferro.einsum.planners.three import three_operand_path

api = sys.modules["tenferro.einsum.api"]
lowering = sys.modules["tenferro.einsum.lowering"]


@st.composite
def calls(draw: Any) -> tuple[str, list[list[tuple[int, ...]]]]:
    """Subscripts of one to three operands and three sets of operand shapes for them."""
    count = draw(st.integers(1, 3))
    terms = [
        "".join(draw(st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)))
        for _ in range(count)
    ]
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
        subscripts = ",".join(terms) + "->" + output
    else:
        subscripts = ",".join(terms)

    def shapes() -> list[tuple[int, ...]]:
        sizes = {label: draw(st.sampled_from([0, 1, 2, 3, 5])) for label in used}
        return [tuple(sizes[c] for c in term) for term in terms]

    return subscripts, [shapes() for _ in range(3)]


def _structure(program: Any) -> list[Any]:
    return [(op, args, free) for op, args, free in program.instructions] + [program.result]


@fuzz_settings(60)
@given(calls(), st.sampled_from([np.float64, np.complex128]))
def test_programs_re_made_at_new_extents_equal_fresh_ones(case: Any, dtype: Any) -> None:
    subscripts, shape_sets = case
    tf.clear_caches()
    rng = np.random.default_rng(0)
    for shapes in shape_sets:
        operands = [rng.standard_normal(s).astype(dtype) for s in shapes]
        got = tf.einsum(subscripts, *[tf.asarray(o) for o in operands])
        np.testing.assert_allclose(
            np.asarray(got), np.einsum(subscripts, *operands), rtol=1e-12, atol=1e-12
        )
        metas = tuple(tf.asarray(o).meta for o in operands)
        equation, _, ssa = api._plan(subscripts, list(shapes), "auto", None)
        fresh = lowering.lower(equation, metas, ssa)
        used = api._programs.get((subscripts, metas, "auto", None))
        assert used is not None
        assert _structure(used) == _structure(fresh)


def test_a_new_extent_reuses_the_program_of_its_ranks() -> None:
    tf.clear_caches()
    for n in (2, 3, 5):
        tf.einsum("ij,jk->ik", np.ones((n, 4)), np.ones((4, n + 1)))
    assert len(api._structures) == 1
    assert len(api._plans) == 1  # planned once, re-made at the other extents


def test_mismatched_extents_at_a_known_structure_still_raise() -> None:
    tf.clear_caches()
    tf.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)))
    with pytest.raises(tf.ShapeError, match="label 'j' has extent 3 in operand 0 and 2"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((2, 4)))


def test_a_broadcast_product_is_re_made_through_its_label_extents() -> None:
    """``k,ktc->ktc`` broadcasts ``k`` to the product's shape (a primitive with extents in
    its parameters): re-made from the label extents its program was lowered for."""
    tf.clear_caches()
    rng = np.random.default_rng(0)
    for k, c in [(3, 4), (5, 7), (6, 6), (1, 3), (0, 2)]:
        s, v = rng.standard_normal(k), rng.standard_normal((k, 2, c))
        got = tf.einsum("k,ktc->ktc", tf.asarray(s), tf.asarray(v))
        np.testing.assert_allclose(np.asarray(got), np.einsum("k,ktc->ktc", s, v), rtol=1e-14)
    assert len(api._plans) == 1  # lowered once, re-made at the other extents


@st.composite
def three_term_networks(draw: Any) -> Any:
    """Three index sets over ``abcde`` (empty and shared sets included), an output and
    extents (ties between paths are common with these extents)."""
    terms = [frozenset(draw(st.sets(st.sampled_from("abcde"), max_size=4))) for _ in range(3)]
    used = sorted(frozenset().union(*terms))
    output = frozenset(draw(st.sets(st.sampled_from(used)))) if used else frozenset()
    sizes = {label: draw(st.sampled_from([0, 1, 2, 3, 4, 7, 12])) for label in used}
    return Network(tuple(terms), output, sizes)


@pytest.mark.slow
@fuzz_settings(300)
@given(three_term_networks())
def test_the_three_operand_path_is_the_exhaustive_planners_choice(network: Any) -> None:
    """Where it answers, it picks the path ``auto`` and ``optimal`` pick, in their SSA
    form; it declines exactly when two paths tie for the cheapest."""
    got = three_operand_path(network.inputs, network.output, network.sizes)
    costs = sorted(path_cost(network, [(i, j), (k, 3)])[0] for i, j, k in _ORDERS)
    assert (got is None) == (costs[0] == costs[1])
    if got is not None:

        def fail(message: str) -> Exception:
            return AssertionError(message)

        assert got == plan(network, "auto", None, fail) == plan(network, "optimal", None, fail)
        greedy_path = greedy(network)
        assert greedy_path is not None
        assert path_cost(network, got)[0] <= path_cost(network, greedy_path)[0]


_ORDERS = ((0, 1, 2), (0, 2, 1), (1, 2, 0))


def test_a_three_operand_call_at_new_extents_is_neither_parsed_nor_planned(
    monkeypatch: Any,
) -> None:
    """Once its ranks are known, a three-operand call whose cheapest path is unique
    compares the three paths' costs at its extents; its program is the one planned and
    lowered afresh for them."""
    tf.clear_caches()
    rng = np.random.default_rng(0)
    subscripts = "bc,btd,ctd->"
    tf.einsum(subscripts, *[rng.standard_normal(s) for s in [(2, 3), (2, 4, 5), (3, 4, 5)]])
    planned: list[Any] = []
    original = api._plan
    monkeypatch.setattr(api, "_plan", lambda *a: planned.append(a) or original(*a))
    seen = {((1, 2), (0, 3))}  # the first call's path
    # each case's cheapest path is unique; (4, 7, 3, 2) and (9, 3, 2, 2) meet new ones
    for b, c, t, d in [(3, 5, 2, 4), (4, 7, 3, 2), (9, 3, 2, 2), (7, 2, 4, 3), (5, 8, 3, 2)]:
        shapes = [(b, c), (b, t, d), (c, t, d)]
        operands = [rng.standard_normal(s) for s in shapes]
        before = len(planned)
        got = tf.einsum(subscripts, *operands)
        np.testing.assert_allclose(np.asarray(got), np.einsum(subscripts, *operands), rtol=1e-12)
        metas = tuple(tf.asarray(o).meta for o in operands)
        equation, _, ssa = original(subscripts, shapes, "auto", None)
        used = api._programs.get((subscripts, metas, "auto", None))
        assert _structure(used) == _structure(lowering.lower(equation, metas, ssa))
        path = tuple(tuple(pair) for pair in ssa)
        assert (len(planned) > before) == (path not in seen)  # lowered once per path
        seen.add(path)
    assert len(seen) == 3
