"""``dot_general``'s evaluation plans (``tenferro.ops.dot_plans``) against numpy.

Plans pair contracted axes in memory order, take free axes in memory order, flip a
product to fewer rows, multiply a matrix into a middle leg by a broadcast ``matmul``,
and re-plan for operands that are not in C order. None of this may change a value
beyond rounding, the output's shape or dtype, or the derivatives: random dimension
numbers over random axis orders, extents past the plans' thresholds, every BLAS dtype
and integers, and operands in C order, Fortran order, reversed axes, strided, or
broadcast, are compared with ``numpy.einsum``.

Differentially, on random dimension numbers with operands of odd layouts (Fortran
order, transposed views, negative strides, strided slices, extents 0 and 1, several
dtypes): the same instance met again with another layout (its per-layout plans),
results fed into further operations, inputs edited in place after the call (a result
never aliases a caller's buffer), einsum's programs, jit over changing extents (the
extent-generic kernel), and gradients in every mode against central differences.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from einsum_support import data
from fuzz_support import fuzz_settings
from hypothesis import given
from transform_routes import fd_gradient, gradients_in_every_mode, numpy_loss, values

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


@fuzz_settings(150)
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


LAYOUT_DTYPES = [np.float64, np.complex128, np.float32]


@fuzz_settings(100)
@given(
    dot_generals(),
    st.sampled_from(LAYOUT_DTYPES),
    st.sampled_from(["c", "f", "reversed", "dense"]),
    st.sampled_from(["c", "f", "reversed", "dense"]),
    st.permutations(range(6)),
    st.booleans(),
)
def test_every_plan_a_reader_may_choose_is_numpys_value_in_its_stated_layout(
    case: Any, dtype: Any, lhs_layout: str, rhs_layout: str, order: Any, small: bool
) -> None:
    """Every plan :func:`dot_plans.plan` weighs for a result's reader (each product,
    also with its factors swapped; each broadcast product, also transposed, of the
    ``[P, C, Q]`` and ``[P, Q, C]`` kinds) evaluates to numpy's value, and its result
    has the strides ``result_strides`` states: what a program following layouts
    relies on. ``small``: the broadcast thresholds lowered to reach small extents."""
    (lhs_shape, rhs_shape), numbers, lhs_order, rhs_order = case
    rng = np.random.default_rng(2)
    a, b = data(lhs_shape, dtype, rng), data(rhs_shape, dtype, rng)

    def dense(x: Any, layout: str) -> Any:  # a C-ordered array of another axis order
        if layout != "dense" or x.ndim < 2:
            return _laid_out(x, layout, 0)
        axes = [i for i in order if i < x.ndim]
        return np.array(x.transpose(axes), order="C").transpose(np.argsort(axes))

    x, y = dense(a, lhs_layout), dense(b, rhs_layout)
    expected = np.einsum(_spec(lhs_order, rhs_order, numbers), x, y)
    problem = dot_plans.Problem(numbers, x.shape, x.strides, y.shape, y.strides, x.itemsize, True)
    with pytest.MonkeyPatch.context() as patch:
        if small:
            patch.setattr(dot_plans, "_MIN_COLUMNS", 1)
            patch.setattr(dot_plans, "_MIN_MATRIX", 1)
        alone = dot_plans.plan(problem)
        if not isinstance(alone, dot_plans.Planned):
            return  # two matrices or stacks of them: one plan, whatever reads it
        options = dot_plans._options(dot_plans._layout(problem), problem)
        # a reader copying nothing of the result leaves the plan chosen alone
        assert type(dot_plans.plan(problem, consumer=lambda strides: 0)) is type(alone)
    for option in [alone, *options]:
        got = option(x, y)
        _close(got, expected, dtype)
        stated = option.result_strides()
        for extent, actual, want in zip(got.shape, got.strides, stated, strict=True):
            assert extent <= 1 or actual == want, (option, got.strides, stated)
        assert option.copies >= 0


def test_a_result_is_laid_out_as_its_reader_wants() -> None:
    """An environment multiplied into a site tensor ``[d, c, f]`` along ``f``, read by
    a contraction with another site ``[d, b, e]`` over ``d`` and the environment's
    free axis ``e``: alone, the product is written ``[d, c, e]``, which the reader
    copies as well as the other site; for the reader it is written ``[e, d, c]`` by
    the product with its factors swapped (no copy), which the reader views as a
    matrix, copying the other site only. (A broadcast product writing ``[d, e, c]``
    copies as few, but runs a stack of small matrix products: the later option.)"""
    d, c = 40, 12
    site = np.ones((d, c, c))
    env = np.ones((c, c))
    problem = dot_plans.Problem(
        ((2,), (0,), (), ()), site.shape, site.strides, env.shape, env.strides, 8, True
    )
    reader_numbers = ((0, 2), (0, 2), (), ())

    def reader_copies(strides: Any) -> int:
        return dot_plans.copies(
            dot_plans.Problem(reader_numbers, (d, c, c), strides, site.shape, site.strides, 8, True)
        )

    alone = dot_plans.plan(problem)
    chosen = dot_plans.plan(problem, consumer=reader_copies)
    assert alone.copies == 0
    assert reader_copies(alone.result_strides()) == 2 * site.size
    assert chosen.copies == 0
    assert reader_copies(chosen.result_strides()) == site.size
    assert isinstance(chosen, dot_plans.Product)
    assert np.argsort(chosen.result_strides())[::-1].tolist() == [2, 0, 1]  # [e, d, c]
    np.testing.assert_array_equal(chosen(site, env), alone(site, env))


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


@fuzz_settings(25)
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


# ---------------------------------------------------------------------- odd layouts, differentially


_DTYPES = ("float64", "float32", "complex128", "int64")
_LAYOUTS = ("C", "F", "transposed", "flipped", "strided")


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    if dtype == "int64":
        return rng.integers(-4, 5, shape).astype(dtype)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _odd(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, layout: str) -> Any:
    """(numpy value, a tensor holding it in ``layout``)."""
    nd = len(shape)
    if layout == "C" or nd == 0:
        a = _random(rng, shape, dtype)
        return a, tf.Tensor(a)
    if layout == "F":
        a = np.asfortranarray(_random(rng, shape, dtype))
        return a, tf.Tensor(a)
    if layout == "transposed":
        perm = tuple(int(p) for p in rng.permutation(nd))
        base_shape = [0] * nd
        for i, p in enumerate(perm):
            base_shape[p] = shape[i]
        base = _random(rng, tuple(base_shape), dtype)
        return base.transpose(perm), tf.transpose(tf.Tensor(base), perm)
    axis = int(rng.integers(0, nd))
    if layout == "flipped":
        a = _random(rng, shape, dtype)
        return np.flip(a, axis), tf.flip(tf.Tensor(a), axis=axis)
    big = list(shape)
    big[axis] *= 2
    a = _random(rng, tuple(big), dtype)
    index = tuple(slice(None, None, 2) if i == axis else slice(None) for i in range(nd))
    return a[index], tf.Tensor(a)[index]


def _reference(a: Any, b: Any, numbers: Any) -> Any:
    lc, rc, lb, rb = numbers
    left = list("abcdefgh"[: a.ndim])
    right = list("ijklmnop"[: b.ndim])
    for x, y in zip(lc + lb, rc + rb, strict=True):
        right[y] = left[x]
    out = [left[x] for x in lb]
    out += [left[i] for i in range(a.ndim) if i not in lb + lc]
    out += [right[i] for i in range(b.ndim) if i not in rb + rc]
    wide = {"f": np.float64, "c": np.complex128, "i": np.int64}[a.dtype.kind]
    subscripts = f"{''.join(left)},{''.join(right)}->{''.join(out)}"
    return np.einsum(subscripts, a.astype(wide), b.astype(wide))


def _problem(rng: np.random.Generator) -> Any:
    """Random shapes and dimension numbers (extents 0 to 5, up to 2 axes per group)."""
    groups = [int(rng.integers(0, 3)) for _ in range(4)]  # batch, contracted, lhs, rhs free
    extent = lambda: int(rng.choice([0, 1, 2, 3, 5], p=[0.05, 0.2, 0.3, 0.25, 0.2]))  # noqa: E731
    batch = [extent() for _ in range(groups[0])]
    inner = [extent() for _ in range(groups[1])]
    nb, nc = groups[0], groups[1]
    ln, rn = nb + nc + groups[2], nb + nc + groups[3]
    lpos, rpos = rng.permutation(ln), rng.permutation(rn)
    lb, lc = tuple(int(x) for x in lpos[:nb]), tuple(int(x) for x in lpos[nb : nb + nc])
    rb, rc = tuple(int(x) for x in rpos[:nb]), tuple(int(x) for x in rpos[nb : nb + nc])
    lshape, rshape = [extent() for _ in range(ln)], [extent() for _ in range(rn)]
    for axes, extents, shape in ((lb, batch, lshape), (lc, inner, lshape)):
        for a, n in zip(axes, extents, strict=True):
            shape[a] = n
    for axes, extents, shape in ((rb, batch, rshape), (rc, inner, rshape)):
        for a, n in zip(axes, extents, strict=True):
            shape[a] = n
    return tuple(lshape), tuple(rshape), (lc, rc, lb, rb)


def _agrees(got: Any, want: Any, dtype: str) -> bool:
    tol = 1e-4 if dtype == "float32" else 1e-10
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    return got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol * scale)


@fuzz_settings(60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(_DTYPES))
def test_dot_general_of_odd_layouts_is_numpys(seed: int, dtype: str) -> None:
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    layouts = [str(rng.choice(_LAYOUTS)) for _ in range(4)]
    a, ta = _odd(rng, lshape, dtype, layouts[0])
    b, tb = _odd(rng, rshape, dtype, layouts[1])
    result = tf.lax.dot_general(ta, tb, *numbers)
    got = np.array(result)
    want = _reference(a, b, numbers)
    assert _agrees(got, want, dtype), (lshape, rshape, numbers, layouts[:2])
    # the instance met again with other layouts (its per-layout plans)
    a2, ta2 = _odd(rng, lshape, dtype, layouts[2])
    b2, tb2 = _odd(rng, rshape, dtype, layouts[3])
    again = np.asarray(tf.lax.dot_general(ta2, tb2, *numbers))
    assert _agrees(again, _reference(a2, b2, numbers), dtype), (numbers, layouts[2:])
    # the first result is unchanged and feeds further operations as its value
    assert np.array_equal(np.asarray(result), got)
    if got.size and dtype != "int64":
        total = np.asarray(tf.sum(result * result))
        assert np.allclose(total, np.sum(want * want), rtol=1e-3 if dtype == "float32" else 1e-9)


@fuzz_settings(30)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("float64", "float32", "complex128")))
def test_broadcast_plan_of_a_middle_leg_is_numpys(seed: int, dtype: str) -> None:
    """One operand ``[P, C, Q]`` in memory (its contracted axes one block between free
    axes, its axes in any logical order): the plan that multiplies the other operand
    into each slice and keeps the big operand's layout."""
    rng = np.random.default_rng(seed)
    outer, inner, rest = (int(rng.integers(1, 3)) for _ in range(3))
    memory = [int(rng.integers(2, 6)) for _ in range(outer + inner + rest)]
    base = _random(rng, tuple(memory), dtype)
    perm = tuple(int(p) for p in rng.permutation(len(memory)))
    big, tbig = base.transpose(perm), tf.transpose(tf.Tensor(base), perm)
    contracted = [perm.index(m) for m in range(outer, outer + inner)]
    rng.shuffle(contracted)
    free = [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 3)))]
    small = _random(rng, (*free, *(big.shape[a] for a in contracted)), dtype)
    small_axes = tuple(range(len(free), small.ndim))
    if rng.random() < 0.5:
        numbers: Any = (tuple(contracted), small_axes, (), ())
        a, b, ta, tb = big, small, tbig, tf.Tensor(small)
    else:
        numbers = (small_axes, tuple(contracted), (), ())
        a, b, ta, tb = small, big, tf.Tensor(small), tbig
    got = np.asarray(tf.lax.dot_general(ta, tb, *numbers))
    assert _agrees(got, _reference(a, b, numbers), dtype), (memory, perm, numbers)


def test_the_broadcast_plan_is_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator above covers the broadcast plan (it is the one chosen for a
    matrix applied to the middle leg of a C-ordered tensor, the tensor first)."""
    called = []
    original = dot_plans.Broadcast.__call__

    def spy(self: Any, lhs: Any, rhs: Any) -> Any:
        called.append(True)
        return original(self, lhs, rhs)

    rng = np.random.default_rng(0)
    t, m = rng.standard_normal((6, 5, 7)), rng.standard_normal((4, 5))
    monkeypatch.setattr(dot_plans.Broadcast, "__call__", spy)
    got = np.asarray(tf.lax.dot_general(tf.Tensor(t), tf.Tensor(m), (1,), (1,)))
    monkeypatch.undo()
    assert called
    np.testing.assert_allclose(got, np.einsum("pcq,mc->pqm", t, m), rtol=1e-12)


@fuzz_settings(40)
@given(st.integers(0, 2**32 - 1))
def test_einsum_of_odd_layouts_is_numpys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = "abcde"[: int(rng.integers(1, 6))]
    extents = {c: int(rng.choice([0, 1, 2, 3, 4], p=[0.03, 0.17, 0.3, 0.3, 0.2])) for c in labels}
    terms = [
        "".join(rng.choice(list(labels), int(rng.integers(0, 4))))
        for _ in range(int(rng.integers(1, 5)))
    ]
    used = sorted(set("".join(terms)))
    out = [c for c in used if rng.random() < 0.5]
    rng.shuffle(out)
    subscripts = ",".join(terms) + "->" + "".join(out)
    dtypes = [str(rng.choice(_DTYPES)) for _ in terms]
    pairs = [
        _odd(rng, tuple(extents[c] for c in t), d, str(rng.choice(_LAYOUTS)))
        for t, d in zip(terms, dtypes, strict=True)
    ]
    optimize = ["auto", "greedy", "optimal", False][int(rng.integers(0, 4))]
    got = np.asarray(tf.einsum(subscripts, *[p[1] for p in pairs], optimize=optimize))
    want = np.einsum(subscripts, *[p[0] for p in pairs])
    assert got.dtype == want.dtype, (subscripts, dtypes)
    assert _agrees(got, want, "float32" if "float32" in dtypes else "float64"), (subscripts, dtypes)


def test_results_never_alias_the_callers_arrays() -> None:
    """numpy inputs edited in place after the call leave every result as it was."""
    rng = np.random.default_rng(1)
    calls = [
        lambda x, y: tf.lax.dot_general(x, y, (1,), (0,)),
        lambda x, y: tf.einsum("ij,jk->ki", x, y),
        lambda x, y: tf.einsum("ij->ji", x),
        lambda x, y: tf.einsum("ij", x),
        lambda x, y: tf.matmul(x, y),
        lambda x, y: tf.tensordot(x, y, 1),
    ]
    for call in calls:
        x, y = np.asfortranarray(rng.standard_normal((3, 4))), rng.standard_normal((4, 5))[:, ::-1]
        result = call(x, y)
        before = np.array(result)
        x[...] = 7.0
        y[...] = -3.0
        assert np.array_equal(np.asarray(result), before)
        assert not np.asarray(result).flags.writeable


@fuzz_settings(25)
@given(st.integers(0, 2**32 - 1))
def test_jit_over_changing_extents_and_layouts_is_numpys(seed: int) -> None:
    """One jitted function met at several extents (the extent-generic kernel) with
    operands transposed and flipped inside it."""
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    nl, nr = len(lshape), len(rshape)
    pl = tuple(int(p) for p in rng.permutation(nl))
    pr = tuple(int(p) for p in rng.permutation(nr))
    flip = int(rng.integers(0, nl)) if nl else None

    def f(x: Any, y: Any) -> Any:
        x = tf.transpose(x, pl)
        if flip is not None:
            x = tf.flip(x, axis=flip)
        return tf.lax.dot_general(x, tf.transpose(y, pr), *numbers) * 2.0

    jitted = tf.jit(f)
    lc, rc, lb, rb = numbers
    for step in range(3):
        lcur = [int(rng.integers(0, 5)) for _ in range(nl)] if step else list(lshape)
        rcur = [int(rng.integers(0, 5)) for _ in range(nr)] if step else list(rshape)
        for a, b in zip(lc + lb, rc + rb, strict=True):
            rcur[b] = lcur[a]
        xs, ys = [0] * nl, [0] * nr
        for i, p in enumerate(pl):
            xs[p] = lcur[i]
        for i, p in enumerate(pr):
            ys[p] = rcur[i]
        dtype = "complex128" if step == 1 else "float64"
        x, y = _random(rng, tuple(xs), dtype), _random(rng, tuple(ys), dtype)
        xa = x.transpose(pl)
        if flip is not None:
            xa = np.flip(xa, flip)
        want = 2.0 * _reference(xa, y.transpose(pr), numbers)
        assert _agrees(np.asarray(jitted(x, y)), want, dtype), (lcur, rcur, numbers)


@fuzz_settings(15)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("float64", "complex128")))
def test_dot_general_gradients_of_odd_layouts(seed: int, dtype: str) -> None:
    """tf.grad, jit(grad) and the tape of ``dot_general`` (either operand order) of a
    permuted and flipped argument and an odd-layout constant, against central
    differences."""
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    while np.prod(lshape) > 24 or np.prod(rshape) > 40:
        lshape, rshape, numbers = _problem(rng)
    _, constant = _odd(rng, rshape, dtype, str(rng.choice(_LAYOUTS)))
    nd = len(lshape)
    perm = tuple(int(p) for p in rng.permutation(nd))
    inverse = tuple(int(i) for i in np.argsort(perm))
    flip = int(rng.integers(0, nd)) if nd else None
    swap = bool(rng.integers(0, 2))
    lc, rc, lb, rb = numbers

    def f(x: Any) -> Any:
        y = tf.transpose(x, inverse)
        if flip is not None:
            y = tf.flip(y, axis=flip)
        if swap:
            return tf.lax.dot_general(constant, y, rc, lc, rb, lb)
        return tf.lax.dot_general(y, constant, *numbers)

    x = np.array(_random(rng, lshape, dtype).transpose(perm), order="C")
    out = values(f(tf.Tensor(x)))
    w = _random(rng, out.shape, dtype)
    want = fd_gradient(numpy_loss(f, [w]), x)
    for mode, got in gradients_in_every_mode(f, x, [w]).items():
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=mode)
