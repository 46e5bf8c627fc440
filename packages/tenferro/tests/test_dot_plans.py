"""``dot_general``'s evaluation plans (``tenferro.ops.dot_plans``) against numpy.

Plans pair contracted axes in memory order, take free axes in memory order, flip a
product to fewer rows, multiply a matrix into a middle leg by a broadcast ``matmul``,
and re-plan for operands that are not in C order. None of this may change a value
beyond rounding, the output's shape or dtype, or the derivatives: random dimension
numbers over random axis orders, extents past the plans' thresholds, every BLAS dtype
and integers, and operands in C order, Fortran order, reversed axes, strided, or
broadcast, are compared with ``numpy.einsum``.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from einsum_support import data
from hypothesis import given, settings

import tenferro as tf
from tenferro import lax
from tenferro.ops import dot_plans

DTYPES = [np.float64, np.complex128, np.float32, np.complex64, np.int64]
EXTENTS = [1, 2, 3, 4, 8, 9]
LAYOUTS = ["c", "f", "reversed", "strided", "broadcast"]


@st.composite
def dot_generals(draw: Any) -> Any:
    """Extents, random axis orders of both operands and the dimension numbers."""
    batch, contracting = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    lhs_free, rhs_free = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    roles = [("b", i) for i in range(batch)] + [("c", i) for i in range(contracting)]
    lhs_order = draw(st.permutations(roles + [("f", i) for i in range(lhs_free)]))
    rhs_order = draw(st.permutations(roles + [("g", i) for i in range(rhs_free)]))
    extent = {r: draw(st.sampled_from(EXTENTS)) for r in {*lhs_order, *rhs_order}}
    numbers = (
        tuple(lhs_order.index(("c", i)) for i in range(contracting)),
        tuple(rhs_order.index(("c", i)) for i in range(contracting)),
        tuple(lhs_order.index(("b", i)) for i in range(batch)),
        tuple(rhs_order.index(("b", i)) for i in range(batch)),
    )
    shapes = tuple(extent[r] for r in lhs_order), tuple(extent[r] for r in rhs_order)
    return shapes, numbers, lhs_order, rhs_order


def _laid_out(array: np.ndarray[Any, Any], layout: str, axis: int) -> np.ndarray[Any, Any]:
    if array.ndim == 0:
        return array
    if layout == "f":
        return np.asfortranarray(array)
    if layout == "reversed":
        return np.array(array.transpose(), order="C").transpose()
    if layout == "strided":
        wide = np.zeros((*array.shape[:-1], 2 * array.shape[-1]), array.dtype)
        wide[..., ::2] = array
        return wide[..., ::2]
    if layout == "broadcast":  # constant along one axis: a zero stride
        index = [slice(None)] * array.ndim
        index[axis % array.ndim] = slice(0, 1)
        return np.broadcast_to(array[tuple(index)], array.shape)
    return np.array(array, order="C")


def _spec(lhs_order: Any, rhs_order: Any, numbers: Any) -> str:
    letters = {r: chr(ord("a") + i) for i, r in enumerate(dict.fromkeys(lhs_order + rhs_order))}
    lhs = "".join(letters[r] for r in lhs_order)
    rhs = "".join(letters[r] for r in rhs_order)
    batch = [letters[lhs_order[a]] for a in numbers[2]]
    free = [letters[r] for r in lhs_order if r[0] == "f"]
    free += [letters[r] for r in rhs_order if r[0] == "g"]
    return f"{lhs},{rhs}->{''.join(batch + free)}"


def _close(got: Any, expected: Any, dtype: Any) -> None:
    assert got.shape == expected.shape
    assert got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind in "fc":
        tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
        scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)
    else:
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=150)
@given(
    dot_generals(),
    st.sampled_from(DTYPES),
    st.sampled_from(LAYOUTS),
    st.sampled_from(LAYOUTS),
    st.integers(0, 3),
)
def test_every_layout_evaluates_to_numpys_value(
    case: Any, dtype: Any, lhs_layout: str, rhs_layout: str, axis: int
) -> None:
    (lhs_shape, rhs_shape), numbers, lhs_order, rhs_order = case
    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind == "i":
        a, b = rng.integers(-9, 10, lhs_shape), rng.integers(-9, 10, rhs_shape)
    else:
        a, b = data(lhs_shape, dtype, rng), data(rhs_shape, dtype, rng)
    op = tf.ops.DotGeneral.make(
        (tf.asarray(a).meta, tf.asarray(b).meta),
        lhs_contracting=numbers[0],
        rhs_contracting=numbers[1],
        lhs_batch=numbers[2],
        rhs_batch=numbers[3],
    )
    x, y = _laid_out(a, lhs_layout, axis), _laid_out(b, rhs_layout, axis + 1)
    expected = np.einsum(_spec(lhs_order, rhs_order, numbers), x, y)
    got = op.impl(x, y)
    _close(got, expected, dtype)
    assert got.shape == op.outputs[0].shape
    # the same instance again (its plan for this layout is kept) and in C order
    _close(op.impl(x, y), expected, dtype)
    _close(op.impl(np.array(x, order="C"), np.array(y, order="C")), expected, dtype)
    # through the surface, on tensors of this layout (tf.asarray keeps the memory order)
    _close(np.asarray(lax.dot_general(tf.asarray(x), tf.asarray(y), *numbers)), expected, dtype)


def _plan_of(lhs: Any, rhs: Any, numbers: Any) -> Any:
    op = tf.ops.DotGeneral.make(
        (tf.asarray(lhs).meta, tf.asarray(rhs).meta),
        lhs_contracting=numbers[0],
        rhs_contracting=numbers[1],
        lhs_batch=numbers[2],
        rhs_batch=numbers[3],
    )
    op.impl(lhs, rhs)
    return op, op._prepared


def test_a_matrix_into_a_middle_leg_is_a_broadcast_product_in_the_tensors_layout() -> None:
    """``E[e,f] T[g,f,i] -> [e,g,i]``: one broadcast ``matmul`` (no copy of ``T``), its
    result laid out as ``T`` with ``f`` replaced by ``e``; contracting that result with
    a tensor laid out as ``T`` over ``(e, g)`` needs no copy of either."""
    rng = np.random.default_rng(2)
    e, t, t2 = (
        data((9, 9), np.float64, rng),
        data((7, 9, 9), np.float64, rng),
        data((7, 9, 9), np.float64, rng),
    )
    op, plan = _plan_of(e, t, ((1,), (1,), (), ()))
    assert isinstance(plan, dot_plans.Broadcast)
    x = op.impl(e, t)
    np.testing.assert_allclose(x, np.einsum("ef,gfi->egi", e, t), rtol=1e-12)
    assert x.transpose(1, 0, 2).flags.c_contiguous  # laid out as [g, e, i]
    second, _ = _plan_of(x, t2, ((0, 1), (1, 0), (), ()))
    layout_plan = second._prepared.for_layout(x.strides, t2.strides)
    assert isinstance(layout_plan, dot_plans.Product)
    assert layout_plan.lhs_perm is not None  # the pairs follow x's memory order
    got = second.impl(x, t2)
    np.testing.assert_allclose(got, np.einsum("egi,geh->ih", x, t2), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_thin_products_are_flipped_to_fewer_rows_and_valued_as_numpy(dtype: Any) -> None:
    """A tall product (many rows, few columns) is computed as the transpose of the flipped
    product; its value is numpy's and its transposed layout feeds the next product."""
    rng = np.random.default_rng(3)
    a, b, c = data((40, 30), dtype, rng), data((30, 9), dtype, rng), data((20, 40), dtype, rng)
    op, plan = _plan_of(a, b, ((1,), (0,), (), ()))
    assert plan is dot_plans._nn_flipped
    ab = op.impl(a, b)
    np.testing.assert_allclose(ab, a @ b, rtol=1e-12)
    assert ab.flags.f_contiguous
    cab = _plan_of(c, ab, ((1,), (0,), (), ()))[0].impl(c, ab)
    np.testing.assert_allclose(cab, c @ a @ b, rtol=1e-12)


def test_layout_plans_are_bounded_and_cleared() -> None:
    rng = np.random.default_rng(4)
    a, b = data((3, 4, 5), np.float64, rng), data((5, 4, 2), np.float64, rng)
    op, plan = _plan_of(a, b, ((1, 2), (1, 0), (), ()))
    for k in range(3 * dot_plans._LAYOUT_LIMIT):
        wide = np.zeros((3, 4, 5 * (k + 2)))
        wide[..., :: k + 2] = a
        x = wide[..., :: k + 2]
        np.testing.assert_allclose(op.impl(x, b), np.einsum("ijk,kjl->il", a, b), rtol=1e-12)
        assert len(plan.layouts) <= dot_plans._LAYOUT_LIMIT
    tf.clear_caches()
    fresh, _ = _plan_of(a, b, ((1, 2), (1, 0), (), ()))
    assert fresh is not op  # the instance, with its plans, went with the caches


@settings(max_examples=25)
@given(dot_generals(), st.sampled_from(["c", "f", "reversed"]), st.sampled_from(["c", "f"]))
def test_derivatives_at_every_layout(case: Any, lhs_layout: str, rhs_layout: str) -> None:
    """Gradients of ``sum(w * dot_general(a, b))`` are the same contractions of ``w``:
    checked against finite differences with operands in each layout."""
    (lhs_shape, rhs_shape), numbers, _, _ = case
    rng = np.random.default_rng(5)
    a = _laid_out(data(lhs_shape, np.complex128, rng), lhs_layout, 0)
    b = _laid_out(data(rhs_shape, np.complex128, rng), rhs_layout, 0)
    tf.testing.check_grads(lambda x, y: lax.dot_general(x, y, *numbers), [a, b], order=1)


@pytest.mark.parametrize(
    ("lhs_shape", "rhs_shape", "numbers"),
    [
        ((3, 2, 4), (3, 2, 5), ((0, 1), (0, 1), (), ())),  # contracted axes lead: x^T y
        ((3, 4), (5, 4), ((1,), (1,), (), ())),  # a transposed rhs: x y^T
        ((6, 3, 4), (6, 4, 5), ((2,), (1,), (0,), (0,))),  # stacked matrices
        ((4, 3), (4, 5), ((0,), (0,), (), ())),  # a transposed lhs: x^T y
    ],
)
def test_cotangents_come_out_in_each_operands_axis_order(lhs_shape, rhs_shape, numbers) -> None:
    """The transpose rule writes each operand's cotangent with one ``dot_general`` in
    that operand's axis order (no transpose view for the next product to copy), and its
    values are the contractions numpy computes."""
    x, w = tf.placeholder(lhs_shape), tf.placeholder(rhs_shape)
    y = lax.dot_general(x, w, *numbers)
    c = tf.placeholder(y.meta.shape)
    loss = tf.sum(y * c)
    rng = np.random.default_rng(6)
    values = {x: data(lhs_shape, np.float64, rng), w: data(rhs_shape, np.float64, rng)}
    values[c] = data(y.meta.shape, np.float64, rng)
    for wrt in (x, w):
        grad = loss.grad(wrt)
        assert "transpose" not in tf.format_graph(grad)
        step = 1e-6
        direction = data(wrt.meta.shape, np.float64, rng)
        ends = []
        for shift in (step, -step):
            moved = dict(values)
            moved[wrt] = values[wrt] + shift * direction
            ends.append(float(np.asarray(loss.eval(moved))))
        numeric = (ends[0] - ends[1]) / (2 * step)
        analytic = float(np.sum(np.asarray(grad.eval(values)) * direction))
        assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric))
