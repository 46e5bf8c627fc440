"""The eager fast paths agree with the general ones.

* the dispatch cache (:mod:`tenferro.surface.dispatch`): a cached call replays the
  primitives the uncached function applies, on every concrete kind, tracked or not;
  it is bounded, registered, emptied by ``tf.clear_caches()``, holds structure only,
  and bad arguments raise at every call;
* ``dot_general``'s precomputed evaluation (direct ``matmul`` layout, or permutations
  and shapes planned once) equals the evaluation from the arrays' shapes;
* the tape's recording plans and the backward pass's bound transposes give the
  gradients of the general path.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given

import computegraph
import tenferro as tf
from tenferro import lax
from tenferro.ops import dot_plans
from tenferro.surface import dispatch
from tenferro.surface.contraction import matmul
from tenferro.surface.indexing import getitem
from tenferro.surface.reductions import mean, sum
from tenferro.surface.shapes import reshape, transpose
from tidu import eager as tidu_eager

DTYPES = [np.float64, np.float32, np.complex128, np.int64]


def _array(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape) * 3
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


def _agree(got: Any, expected: Any) -> None:
    """Equal values: exactly for integers, to a few units of rounding for floats (numpy's
    products round differently by memory layout and summation order)."""
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if got.dtype.kind in "fc":
        tol = 50 * np.finfo(got.dtype).eps
        np.testing.assert_allclose(
            got, expected, rtol=tol, atol=tol * max(1.0, np.abs(expected).max(initial=0))
        )
    else:
        np.testing.assert_array_equal(got, expected)


def _uncached(function: Any) -> Any:
    return function.__wrapped__


def _same(cached: Any, reference: Any) -> None:
    assert type(cached) is type(reference)
    assert cached.meta == reference.meta
    np.testing.assert_array_equal(np.asarray(cached), np.asarray(reference))


# ---------------------------------------------------------------------- strategies


@st.composite
def basic_indices(draw: Any, shape: tuple[int, ...]) -> Any:
    """Integers, slices (any step sign), None and one Ellipsis, fitting ``shape``."""
    items: list[Any] = []
    for extent in shape:
        kind = draw(st.sampled_from(["int", "slice", "full", "none"]))
        if kind == "int" and extent:
            items.append(draw(st.integers(-extent, extent - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-extent - 2, extent + 2)
            step = draw(st.none() | st.integers(-3, 3).filter(lambda s: s != 0))
            items.append(slice(draw(bound), draw(bound), step))
        elif kind == "none":
            items.extend([None, slice(None)])
        else:
            items.append(slice(None))
    if items and draw(st.booleans()):
        cut = draw(st.integers(0, len(items) - 1))
        items = [*items[:cut], Ellipsis]
    return items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@st.composite
def indexed(draw: Any) -> tuple[tuple[int, ...], Any]:
    shape = draw(shapes)
    return shape, draw(basic_indices(shape))


# ---------------------------------------------------------------------- agreement


@fuzz_settings(60)
@given(indexed(), st.sampled_from(DTYPES), st.sampled_from(["tensor", "eager", "tracked"]))
def test_cached_basic_indexing_agrees_with_the_uncached_function(
    case: Any, dtype: Any, kind: str
) -> None:
    shape, index = case
    data = _array(shape, dtype, 0)
    x = _operand(data, kind)
    expected = data[index]
    for _ in range(2):  # the miss records, the hit replays
        got = x[index]
        _same(got, _uncached(getitem)(x, index))
        np.testing.assert_array_equal(np.asarray(got), expected)


def _operand(data: np.ndarray[Any, Any], kind: str) -> Any:
    if kind == "tensor":
        return tf.Tensor(data)
    if kind == "eager" or data.dtype.kind not in "fc":
        return tf.EagerTensor(data)
    return tf.Tape().track(data)


@st.composite
def matmul_operands(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.lists(st.integers(1, 3), max_size=2).map(tuple))
    left: tuple[int, ...] = (*batch, m, k)
    right: tuple[int, ...] = (k, n) if draw(st.booleans()) else (*batch, k, n)
    if draw(st.booleans()):
        left = (k,)
    elif draw(st.booleans()):
        right = (k,)
    return left, right


@fuzz_settings(60)
@given(matmul_operands(), st.sampled_from(DTYPES), st.sampled_from(["tensor", "tracked"]))
def test_cached_matmul_agrees_with_numpy_and_the_uncached_function(
    operands: Any, dtype: Any, kind: str
) -> None:
    left, right = operands
    a, b = _array(left, dtype, 1), _array(right, dtype, 2)
    if kind == "tracked" and np.dtype(dtype).kind in "fc":
        tape = tf.Tape()
        x, y = tape.track(a), tape.track(b)
    else:
        x, y = tf.Tensor(a), tf.Tensor(b)
    for _ in range(2):
        got = x @ y
        _same(got, _uncached(matmul)(x, y))
        np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-5, atol=1e-5)


@fuzz_settings(40)
@given(
    shapes.filter(lambda s: len(s) > 0),
    st.sampled_from(DTYPES),
    st.data(),
)
def test_cached_reductions_reshapes_and_transposes_agree(
    shape: tuple[int, ...], dtype: Any, data: Any
) -> None:
    array = _array(shape, dtype, 3)
    x = tf.EagerTensor(array)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    keepdims = data.draw(st.booleans())
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    for _ in range(2):
        _same(tf.sum(x, axis, keepdims), _uncached(sum)(x, axis, keepdims))
        if array.dtype.kind in "fc":
            _same(tf.mean(x, axis=axis), _uncached(mean)(x, axis=axis))
        _same(tf.reshape(x, (-1,)), _uncached(reshape)(x, (-1,)))
        _same(tf.transpose(x, perm), _uncached(transpose)(x, perm))
        np.testing.assert_allclose(
            np.asarray(tf.sum(x, axis, keepdims)), array.sum(axis, keepdims=keepdims), rtol=1e-5
        )


def test_gradients_through_cached_calls_equal_those_of_the_general_path() -> None:
    data = _array((3, 4), np.float64, 4)
    other = _array((4, 2), np.float64, 5)

    def loss(f_matmul: Any, f_getitem: Any, f_sum: Any, f_reshape: Any, x: Any) -> Any:
        y = f_matmul(x, tf.asarray(other))
        return f_sum(
            tf.sin(f_reshape(f_getitem(y, (slice(1, None), slice(None, None, -1))), (-1,)))
        )

    grads = []
    for functions in (
        (matmul, getitem, sum, reshape),
        (matmul, getitem, sum, reshape),  # cached
        tuple(_uncached(f) for f in (matmul, getitem, sum, reshape)),
    ):
        tape = tf.Tape()
        x = tape.track(data)
        grads.append(np.asarray(tape.grad(loss(*functions, x), x)))
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], grads[2])
    expected = tf.grad(lambda v: loss(matmul, getitem, sum, reshape, v))(data)
    np.testing.assert_allclose(grads[0], expected, rtol=1e-12)


def test_no_grad_and_composites_see_cached_calls_like_uncached_ones() -> None:
    tape = tf.Tape()
    x = tape.track(np.arange(6.0).reshape(2, 3))
    x[0]  # warm the cache
    with tf.no_grad():
        assert not x[0].requires_grad
    assert x[0].requires_grad
    s = tf.composite(lambda v: tf.sum(v[1:] @ v.T))(x)
    expected = tf.grad(lambda v: tf.sum(v[1:] @ v.T))(np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(np.asarray(tape.grad(s, x)), expected)


# ---------------------------------------------------------------------- errors and contents


def test_bad_arguments_raise_at_every_call() -> None:
    x = tf.EagerTensor(np.ones((2, 3)))
    for _ in range(2):
        with pytest.raises(tf.ShapeError, match="reshape"):
            tf.reshape(x, (5,))
        with pytest.raises(tf.IndexingError, match="out of bounds"):
            x[7]
        with pytest.raises(tf.ShapeError, match="matmul"):
            x @ x
        with pytest.raises(tf.ShapeError, match="reshape"):
            tf.reshape(x, (6.0,))  # a float extent is not the int 6


def test_equal_but_differently_typed_static_arguments_are_different_keys() -> None:
    assert dispatch.static_key((1,)) != dispatch.static_key((True,))
    assert dispatch.static_key(slice(1, 2)) != dispatch.static_key(slice(1, 2, 1))
    with pytest.raises(dispatch.UnkeyableError):
        dispatch.static_key(1.5)
    with pytest.raises(dispatch.UnkeyableError):
        dispatch.static_key(np.arange(3))


_ATOM = st.one_of(st.integers(-3, 3), st.booleans(), st.none())
_STATIC = st.recursive(
    st.one_of(_ATOM, st.builds(slice, _ATOM, _ATOM, _ATOM)),
    lambda inner: st.one_of(
        st.tuples(inner, inner), st.lists(inner, max_size=3).map(tuple), st.lists(inner, max_size=3)
    ),
    max_leaves=6,
)


def _identical(a: object, b: object) -> bool:
    """Equal with the same types all the way down (what a static key must tell apart)."""
    if type(a) is not type(b):
        return False
    if type(a) is slice:
        return all(_identical(getattr(a, f), getattr(b, f)) for f in ("start", "stop", "step"))
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(map(_identical, a, b))  # type: ignore[arg-type]
    return a == b


def _retyped(value: Any, flips: Any) -> Any:
    """``value`` with some 0/1 ints and bools swapped for their equal other-typed twin."""
    if type(value) is slice:
        return slice(*(_retyped(getattr(value, f), flips) for f in ("start", "stop", "step")))
    if type(value) in (tuple, list):
        return type(value)(_retyped(item, flips) for item in value)
    if type(value) in (int, bool) and value in (0, 1) and next(flips):
        return bool(value) if type(value) is int else int(value)
    return value


@fuzz_settings(150)
@given(_STATIC, _STATIC, st.lists(st.booleans(), min_size=12, max_size=12))
def test_static_keys_are_equal_exactly_for_identical_arguments(
    a: object, b: object, flips: list[bool]
) -> None:
    twin = _retyped(a, iter(flips * 4))
    for other in (b, twin, copy.deepcopy(a)):
        assert (dispatch.static_key(a) == dispatch.static_key(other)) == _identical(a, other)


def test_calls_that_read_data_are_not_cached_and_still_work() -> None:
    x = tf.EagerTensor(np.arange(12.0).reshape(3, 4))
    for _ in range(2):  # an index list is data (a gather of constant indices)
        np.testing.assert_array_equal(np.asarray(x[[0, 2]]), np.arange(12.0).reshape(3, 4)[[0, 2]])
    programs = list(dispatch._PROGRAMS.values())
    assert all(p is dispatch._UNCACHEABLE or isinstance(p, dispatch._Program) for p in programs)


def _holds_no_data(value: Any) -> bool:
    if isinstance(value, np.ndarray | tf.Tensor):
        return False
    if isinstance(value, tuple):
        return all(_holds_no_data(v) for v in value)
    return True


def test_the_dispatch_cache_is_bounded_registered_cleared_and_holds_structure() -> None:
    x = tf.Tape().track(np.ones((3, 4)))
    x[1:, ::2] @ tf.reshape(x, (4, 3))[:2]
    tf.sum(x, axis=0)
    cache = dispatch._PROGRAMS
    assert cache in computegraph.registered_caches()
    assert "dispatch programs" in tf.cache_stats()
    assert 0 < len(cache) <= cache.maxsize
    for program in cache.values():
        if program is dispatch._UNCACHEABLE:
            continue
        for op, refs in program.steps:
            assert isinstance(op, tf.ops.TensorPrimitive | dispatch._Rewrap)
            assert all(type(r) is int for r in refs)
            if isinstance(op, tf.ops.TensorPrimitive):
                params = [getattr(op, f) for f in op._field_names]
                assert all(_holds_no_data(p) for p in params)
    tf.clear_caches()
    assert len(cache) == 0
    assert tf.cache_stats()["dispatch programs"].size == 0


# ---------------------------------------------------------------------- dot_general kernels


@st.composite
def dot_general_cases(draw: Any) -> Any:
    """Random dimension numbers over random axis orders of both operands."""
    batch = draw(st.integers(0, 2))
    contracting = draw(st.integers(0, 2))
    lhs_free, rhs_free = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    extents = draw(
        st.lists(st.integers(1, 3), min_size=batch + contracting, max_size=batch + contracting)
    )
    lhs_roles = [("b", i) for i in range(batch)] + [("c", i) for i in range(contracting)]
    rhs_roles = list(lhs_roles)
    lhs_roles += [("f", i) for i in range(lhs_free)]
    rhs_roles += [("g", i) for i in range(rhs_free)]
    lhs_order = draw(st.permutations(lhs_roles))
    rhs_order = draw(st.permutations(rhs_roles))
    free_extents = draw(st.lists(st.integers(1, 3), min_size=4, max_size=4))

    def extent(role: tuple[str, int]) -> int:
        kind, i = role
        if kind == "b":
            return extents[i]
        if kind == "c":
            return extents[batch + i]
        return free_extents[i + (2 if kind == "g" else 0)]

    numbers = (
        tuple(lhs_order.index(("c", i)) for i in range(contracting)),
        tuple(rhs_order.index(("c", i)) for i in range(contracting)),
        tuple(lhs_order.index(("b", i)) for i in range(batch)),
        tuple(rhs_order.index(("b", i)) for i in range(batch)),
    )
    return tuple(extent(r) for r in lhs_order), tuple(extent(r) for r in rhs_order), numbers


@fuzz_settings(80)
@given(dot_general_cases(), st.sampled_from([np.float64, np.complex64, np.int32]))
def test_dot_general_planned_evaluation_equals_the_general_one(case: Any, dtype: Any) -> None:
    left, right, numbers = case
    a, b = _array(left, dtype, 6), _array(right, dtype, 7)
    out = lax.dot_general(tf.Tensor(a), tf.Tensor(b), *numbers)
    op = tf.ops.DotGeneral.make(
        (tf.Tensor(a).meta, tf.Tensor(b).meta),
        lhs_contracting=numbers[0],
        rhs_contracting=numbers[1],
        lhs_batch=numbers[2],
        rhs_batch=numbers[3],
    )
    general = dot_plans.general(op._numbers(), a, b)
    # the plan may pair contracted axes in another order (rounding only)
    _agree(np.asarray(out), general)
    assert np.asarray(out).shape == op.outputs[0].shape
    lhs_c, rhs_c, lhs_b, rhs_b = numbers
    letters = iter("abcdefghijkl")
    lhs_labels = [next(letters) for _ in left]
    rhs_labels = [next(letters) for _ in right]
    for i, j in zip(lhs_c + lhs_b, rhs_c + rhs_b, strict=True):
        rhs_labels[j] = lhs_labels[i]
    lhs_free = [lhs_labels[i] for i in range(len(left)) if i not in lhs_c + lhs_b]
    rhs_free = [rhs_labels[i] for i in range(len(right)) if i not in rhs_c + rhs_b]
    output = [lhs_labels[i] for i in lhs_b] + lhs_free + rhs_free
    spec = f"{''.join(lhs_labels)},{''.join(rhs_labels)}->{''.join(output)}"
    np.testing.assert_allclose(np.asarray(out), np.einsum(spec, a, b), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- tape plans and backward


def test_tape_plans_are_shared_bounded_and_cleared() -> None:
    from tenferro.eager import record_plans

    for _ in range(2):
        tape = tf.Tape()
        x = tape.track(np.linspace(0.1, 1.0, 5))
        tape.grad(tf.sum(tf.sin(x) * x), x)
    plans = record_plans._PLANS
    assert 0 < len(plans) <= plans.maxsize
    for op, _recorded, inputs, outputs, _active, _instance in plans.values():
        assert isinstance(op, tf.ops.TensorPrimitive)
        assert all(type(i) is int for i, _ in (*inputs, *outputs))
    tf.clear_caches()
    assert len(plans) == 0


@fuzz_settings(30)
@given(
    st.lists(
        st.sampled_from(["sin", "mul", "add_const", "square", "slice"]), min_size=1, max_size=8
    )
)
def test_eager_gradients_of_random_chains_equal_traced_ones(steps: list[str]) -> None:
    def program(v: Any) -> Any:
        for step in steps:
            if step == "sin":
                v = tf.sin(v)
            elif step == "mul":
                v = v * v
            elif step == "add_const":
                v = v + 0.5
            elif step == "square":
                v = v**2
            else:
                v = tf.concatenate([v[1:], v[:1]])
        return tf.sum(v)

    data = np.linspace(0.1, 0.7, 4)
    tape = tf.Tape()
    x = tape.track(data)
    got = np.asarray(tape.grad(program(x), x))
    np.testing.assert_allclose(got, tf.grad(program)(data), rtol=1e-12)


# ---------------------------------------------------------------------- shape-generic derivatives

_ELEMENTWISE = {
    "sin": tf.sin,
    "tanh": tf.tanh,
    "exp": tf.exp,
    "mul": lambda v: v * v,
    "add": lambda v: v + v,
    "scale": lambda v: v * 0.75,
    "sub": lambda v: 1.0 - v,
    "abs": tf.abs,
    "real": lambda v: tf.real(v * v),
    "conj": lambda v: tf.real(tf.conj(v) * v),
}


@fuzz_settings(40)
@given(
    st.lists(st.sampled_from(sorted(_ELEMENTWISE)), min_size=1, max_size=5),
    st.lists(
        st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), min_size=2, max_size=3
    ),
    st.sampled_from([np.float64, np.complex128]),
)
def test_shape_generic_derivatives_agree_at_every_shape(
    names: list[str], shapes_: list[tuple[int, ...]], dtype: Any
) -> None:
    """Elementwise nodes of any shape share one rank-0 derivative: gradients, forward-mode
    tangents and Hessian-vector products (create_graph) equal traced mode's at each shape."""

    def program(v: Any) -> Any:
        for name in names:
            v = _ELEMENTWISE[name](v)
        return tf.sum(tf.real(v * tf.conj(v)))

    for shape in shapes_:
        data = _array(shape, dtype, 8) * 0.3
        tape = tf.Tape()
        x = tape.track(data)
        got = np.asarray(tape.grad(program(x), x))
        np.testing.assert_allclose(got, tf.grad(program)(data), rtol=1e-10, atol=1e-12)
        direction = _array(shape, dtype, 9)
        _, tangent = tf.Tape().jvp(program, [data], [direction])
        _, expected_tangent = tf.jvp(program, (data,), (direction,))
        np.testing.assert_allclose(np.asarray(tangent), expected_tangent, rtol=1e-10, atol=1e-12)
        if dtype == np.float64:
            hvp = tf.Tape().hvp(program, [data], [direction])
            expected = tf.hvp(program, (data,), (direction,))
            np.testing.assert_allclose(np.asarray(hvp), expected, rtol=1e-9, atol=1e-12)


def test_elementwise_nodes_of_new_shapes_reuse_one_derivative() -> None:
    from tenferro.eager import record_plans

    tf.clear_caches()
    for n in range(2, 7):
        tape = tf.Tape()
        x = tape.track(np.linspace(0.1, 1.0, n))
        y = tf.tanh(tf.sin(x) * x)
        assert y.node.recorded.graph.operations[0].operation.inputs[0].shape == ()
        tape.grad(tf.sum(y), x)
    verdicts = list(record_plans._GENERIC.values())
    assert all(generic for _, generic in verdicts)
    # sin, mul (both tracked) and tanh: one rank-0 structure each, whatever the shape
    assert len(verdicts) == 3
    tf.clear_caches()
    assert len(record_plans._GENERIC) == 0


# ---------------------------------------------------------------------- tensor and scalar


_NUMBERS = st.one_of(
    st.integers(-(2**40), 2**40),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 2**1100]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324]),
    st.booleans(),
)


@fuzz_settings(120)
@given(
    st.sampled_from(
        [np.float64, np.float32, np.complex64, np.complex128, np.int32, np.int64, np.bool_]
    ),
    _NUMBERS,
    _NUMBERS,
    st.booleans(),
    st.sampled_from(["add", "multiply"]),
    st.sampled_from(["tensor", "eager", "tracked", "weak"]),
)
def test_cached_tensor_scalar_arithmetic_agrees_with_preparing(
    dtype: Any, primer: Any, scalar: Any, scalar_first: bool, name: str, kind: str
) -> None:
    """The cache learns a structure from a first number (``primer``); a later call with
    another number of any kind (zero, -0.0, nan, inf, an int out of range, a bool) must
    give exactly what preparing the operands gives, or the same error."""
    from tenferro.surface.convert import prepare

    data = _array((2, 3), dtype, 10)
    if kind == "weak":
        x: Any = tf.asarray(2.5)  # a weakly typed tensor promotes like a Python scalar
    elif kind == "tracked" and data.dtype.kind in "fc":
        x = tf.Tape().track(data)
    else:
        x = tf.EagerTensor(data) if kind != "tensor" else tf.Tensor(data)
    function = getattr(tf, name)

    def call(number: Any) -> Any:
        return function(*((number, x) if scalar_first else (x, number)))

    def reference(number: Any) -> Any:
        operands = (number, x) if scalar_first else (x, number)
        a, b = prepare(name, operands, kinds="bifc")
        if a.meta.dtype.kind == "b":
            return (lax.logical_or if name == "add" else lax.logical_and)(a, b)
        return (lax.add if name == "add" else lax.mul)(a, b)

    with contextlib.suppress(tf.TenferroError):
        call(primer)  # teaches the cache this structure (or fails like the reference)
    try:
        expected = reference(scalar)
    except tf.TenferroError as error:
        for _ in range(2):
            with pytest.raises(type(error)):
                call(scalar)
        return
    for _ in range(2):  # a hit after another number's miss, then a hit after its own
        got = call(scalar)
        assert type(got) is type(expected)
        assert got.meta == expected.meta
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        assert np.asarray(got).shape == np.asarray(expected).shape
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        assert getattr(got, "requires_grad", False) == getattr(x, "requires_grad", False)


def test_the_tensor_scalar_cache_holds_no_numbers() -> None:
    """Caches hold structure: after ``x * c`` and ``x + c`` for many ``c``, the cache has
    one entry per structure and no cached object holds any of the numbers."""
    from tenferro.surface import math as math_module

    tf.clear_caches()
    x = tf.Tape().track(np.linspace(0.1, 0.9, 6))
    numbers = [0.1 * i + 0.123456789 for i in range(50)]
    for c in numbers:
        x = tf.sin(x) * c + c
    assert len(math_module._TENSOR_AND_SCALAR) == 2
    seen: list[Any] = []
    for entry in math_module._TENSOR_AND_SCALAR.values():
        seen.extend(entry if isinstance(entry, tuple) else [entry])
    for item in seen:
        for c in numbers:
            assert not (isinstance(item, (float, np.ndarray, tf.Tensor)) and np.any(item == c))
        if isinstance(item, tf.Tensor):
            raise AssertionError(f"a tensor is cached: {item!r}")


def test_gradients_through_tensor_scalar_calls_use_each_calls_number() -> None:
    """One structure, different numbers: each node's derivative reads its own number."""
    for dtype in (np.float64, np.float32, np.complex128):
        data = np.linspace(0.2, 0.8, 5).astype(dtype)
        tape = tf.Tape()
        x = tape.track(data)
        y = x
        factors = [0.5, 3.0, -2.0, 0.0, 1.25]
        for f in factors:
            y = y * f + f
        seed = np.ones(5, dtype)
        got = np.asarray(tape.vjp(y, x, tf.EagerTensor(seed)))
        expected = np.full(5, np.prod(factors), dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        assert got.dtype == np.dtype(dtype)


def test_gradients_through_cached_tensor_scalar_calls() -> None:
    data = np.linspace(0.2, 0.8, 5)
    for _ in range(2):
        tape = tf.Tape()
        x = tape.track(data)
        y = 0.5 * (x * 3.0 + 2.0) * x + 1.5
        np.testing.assert_allclose(np.asarray(tape.grad(tf.sum(y), x)), 3.0 * data + 1.0)
        with tf.no_grad():
            assert not (x * 3.0).requires_grad


@fuzz_settings(40)
@given(
    st.sampled_from([np.float64, np.complex128, np.int32, np.bool_]),
    st.sampled_from(["add", "multiply"]),
    st.sampled_from(["tensor", "eager", "tracked", "weak", "one tracked"]),
)
def test_two_tensors_of_one_meta_agree_with_preparing(dtype: Any, name: str, kind: str) -> None:
    from tenferro.surface.convert import prepare

    a, b = _array((3,), dtype, 11), _array((3,), dtype, 12)
    if kind == "weak":
        x, y = tf.asarray(1.5), tf.asarray(-2.0)
    elif kind in ("tracked", "one tracked") and a.dtype.kind in "fc":
        tape = tf.Tape()
        x = tape.track(a)
        y = tape.track(b) if kind == "tracked" else tf.EagerTensor(b)
    else:
        x, y = (
            (tf.EagerTensor(a), tf.EagerTensor(b))
            if kind != "tensor"
            else (tf.Tensor(a), tf.Tensor(b))
        )
    p, q = prepare(name, (x, y), kinds="bifc")
    if p.meta.dtype.kind == "b":
        expected = (lax.logical_or if name == "add" else lax.logical_and)(p, q)
    else:
        expected = (lax.add if name == "add" else lax.mul)(p, q)
    for _ in range(2):  # the miss, then the hit of the same-meta instance cache
        got = getattr(tf, name)(x, y)
        assert type(got) is type(expected)
        assert got.meta == expected.meta
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        assert getattr(got, "requires_grad", False) == getattr(expected, "requires_grad", False)


def test_the_same_meta_instance_cache_is_registered_cleared_and_holds_instances() -> None:
    from tenferro.surface import math as math_module

    tf.clear_caches()
    x, y = tf.EagerTensor(np.ones((2, 3))), tf.EagerTensor(np.arange(6.0).reshape(2, 3))
    x + y, x * y, x + y
    cache = math_module._SAME_META
    assert cache in computegraph.registered_caches()
    assert len(cache) == 2
    for (cls, meta), instance in cache.items():
        assert type(instance) is cls
        assert instance.inputs == (meta, meta)
    tf.clear_caches()
    assert len(cache) == 0


def test_concrete_kinds_call_impl_directly_only_where_eval_is_impl() -> None:
    from tenferro.core.primitive import TensorPrimitive

    classes, stack = set(), [TensorPrimitive]
    while stack:
        for sub in stack.pop().__subclasses__():
            classes.add(sub)
            stack.append(sub)
    assert len(classes) > 50
    for cls in classes:
        plain = cls.output_arity == 1 and cls.eval is TensorPrimitive.eval
        assert cls.direct_impl == plain, cls.__name__


_LOOKALIKE_INDICES = [
    1,
    True,
    slice(1, 3),
    slice(True, 3),
    slice(1, 3, 1),
    slice(1, 3, True),
    slice(-3, None),
    slice(None, -1, -1),
    slice(1.0, 3),
    slice(None, None, None),
    slice(-3, None, True),
    slice(None, 3, 2),
]
_LOOKALIKE_SHAPES = [
    (16,),
    (4, 4),
    (2, 8),
    (2, True, 8),
    (2, 1, 8),
    (True, 16),
    (-1,),
    (4, -1),
    (16.0,),
    (4.0, 4),
    (8, 2),
    (1, 16),
]


def _outcome(function: Any, *args: Any) -> Any:
    try:
        result = function(*args)
    except Exception as error:  # the error kind is the outcome compared
        return type(error)
    return (np.asarray(result).shape, np.asarray(result).tolist())


@fuzz_settings(40)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, len(_LOOKALIKE_INDICES) - 1)),
        min_size=2,
        max_size=8,
    )
)
def test_inline_static_keys_never_confuse_equal_arguments_of_other_types(
    calls: list[tuple[bool, int]],
) -> None:
    tf.clear_caches()
    x = tf.Tape().track(np.arange(16.0).reshape(4, 4))
    refused = set()
    for is_reshape, choice in calls:
        if is_reshape:
            shape = _LOOKALIKE_SHAPES[choice]
            outcome = _outcome(reshape, x, shape)
            assert outcome == _outcome(_uncached(reshape), x, shape)
        else:
            index = _LOOKALIKE_INDICES[choice]
            outcome = _outcome(getitem, x, index)
            assert outcome == _outcome(_uncached(getitem), x, index)
        if isinstance(outcome, type):  # bad arguments raise and leave no program
            refused.add((is_reshape, choice))
    classes = {
        repr((r, _classes_key((_LOOKALIKE_SHAPES if r else _LOOKALIKE_INDICES)[c])))
        for r, c in calls
        if _keyable((_LOOKALIKE_SHAPES if r else _LOOKALIKE_INDICES)[c]) and (r, c) not in refused
    }
    entries = [k for k in dispatch._PROGRAMS if k[0] in (reshape, getitem)]
    assert len(entries) == len(classes)  # one program per identically typed argument


def _keyable(value: Any) -> bool:
    """Whether the dispatch cache keys ``value`` (floats are not keys: such calls run
    uncached and leave no entry)."""
    try:
        dispatch.static_key(value)
    except dispatch.UnkeyableError:
        return False
    return True


def _classes_key(value: Any) -> Any:
    """A key equal exactly for identical values (``_identical``), for counting them."""
    if type(value) is slice:
        return (slice, *(_classes_key(getattr(value, f)) for f in ("start", "stop", "step")))
    if type(value) in (tuple, list):
        return (type(value), *(_classes_key(v) for v in value))
    return (type(value), value)


def test_recorded_nodes_hold_what_the_trace_constructor_would() -> None:
    from tidu.eager import Trace

    tape = tf.Tape()
    x = tape.track(np.linspace(0.1, 0.9, 6).reshape(2, 3))
    y = tf.sin(x)
    z = reshape(y * x, (3, 2))
    for node in (y.node, z.node):
        reference = Trace(node.recorded, node.output_keys, node.saved_data, node.edges)
        for slot in ("recorded", "output_keys", "saved_data", "edges", "active"):
            assert getattr(node, slot) == getattr(reference, slot), slot
    assert y.node.serial < z.node.serial < reference.serial


@fuzz_settings(40)
@given(
    st.sampled_from(["exp", "log", "sin", "cos", "tanh", "sqrt"]),
    st.sampled_from([np.float64, np.float32, np.complex128, np.int32]),
    st.sampled_from(["eager", "tracked", "weak", "tensor"]),
    shapes,
)
def test_analytic_functions_on_concrete_tensors_agree_with_lax(
    name: str, dtype: Any, kind: str, shape: tuple[int, ...]
) -> None:
    data = np.abs(_array(shape, dtype, 5)) + 1
    if kind == "weak":
        x: Any = tf.asarray(1.5)
    elif kind == "tracked" and data.dtype.kind in "fc":
        x = tf.Tape().track(data)
    else:
        x = tf.EagerTensor(data) if kind != "tensor" else tf.Tensor(data)
    prepared = x if x.meta.dtype.kind in "fc" else tf.asarray(x, dtype=np.float64)
    expected = getattr(lax, name)(prepared)
    for _ in range(2):  # the first call makes the instance, the second binds it directly
        got = getattr(tf, name)(x)
        assert type(got) is type(expected)
        assert got.meta == expected.meta
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        assert getattr(got, "requires_grad", False) == getattr(x, "requires_grad", False)
    if kind == "tracked" and data.dtype.kind == "f":
        first = x.tape.grad(tf.sum(getattr(tf, name)(x)), x)
        second = x.tape.grad(tf.sum(getattr(lax, name)(x)), x)
        np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


# ---------------------------------------------------------------------- direct evaluations


@fuzz_settings(40)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from([np.float64, np.float32, np.complex128, np.int32, np.int64]),
    st.sampled_from(["c", "f", "transposed", "broadcast", "sliced"]),
)
def test_two_matrix_dot_general_equals_matmul_in_every_layout(
    m: int, k: int, n: int, dtype: Any, layout: str
) -> None:
    """``dot_general`` of two matrices in matmul layout evaluates as ``ndarray.dot``: the
    value of ``np.matmul`` for every memory layout and dtype."""

    def laid_out(shape: tuple[int, int], seed: int) -> Any:
        base = _array(shape, dtype, seed)
        if layout == "f":
            return np.asfortranarray(base)
        if layout == "transposed":
            return np.ascontiguousarray(base.T).T
        if layout == "broadcast":
            return np.broadcast_to(base[:1], shape)
        if layout == "sliced":
            return np.concatenate([base, base], axis=1)[:, ::2]
        return base

    a, b = laid_out((m, k), 3), laid_out((k, n), 4)
    op = tf.ops.DotGeneral.make(
        (tf.Tensor(a).meta, tf.Tensor(b).meta),
        lhs_contracting=(1,),
        rhs_contracting=(0,),
        lhs_batch=(),
        rhs_batch=(),
    )
    got = op.impl(a, b)
    expected = np.matmul(a, b)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if np.dtype(dtype).kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)
    traced = lax.dot_general(tf.Tensor(a), tf.Tensor(b), (1,), (0,), (), ())
    _agree(np.asarray(traced), got)  # a copy may be laid out otherwise (rounding only)


def test_data_moving_primitives_need_no_silencing_and_agree_with_numpy() -> None:
    """Primitives marked ``moves_data`` are evaluated without silencing numpy's
    floating-point warnings: on inf and nan they must still raise none, tracked or not."""
    import warnings

    data = np.array([[np.inf, np.nan, -np.inf], [1e308, -0.0, 5e-324]])
    marked = [
        name
        for name in dir(tf.ops)
        if isinstance(getattr(tf.ops, name), type)
        and getattr(getattr(tf.ops, name), "moves_data", False)
    ]
    assert {"Reshape", "Transpose", "Slice", "BroadcastInDim", "Reverse"} <= set(marked)
    for kind in ("tensor", "eager", "tracked"):
        x: Any = {
            "tensor": tf.Tensor,
            "eager": tf.EagerTensor,
            "tracked": lambda d: tf.Tape().track(d),
        }[kind](data)
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            results = {
                "reshape": (tf.reshape(x, (3, 2)), data.reshape(3, 2)),
                "transpose": (x.T, data.T),
                "slice": (x[:, 1:], data[:, 1:]),
                "broadcast": (tf.broadcast_to(x, (2, 2, 3)), np.broadcast_to(data, (2, 2, 3))),
                "flip": (tf.flip(x, 1), data[:, ::-1]),
            }
        for name, (got, expected) in results.items():
            np.testing.assert_array_equal(np.asarray(got), expected, err_msg=name)
            assert getattr(got, "requires_grad", False) == (kind == "tracked")


@fuzz_settings(40)
@given(
    st.lists(st.integers(1, 4), min_size=0, max_size=3),
    st.data(),
    st.sampled_from([np.float64, np.float32, np.complex64, np.int32]),
    st.sampled_from(["c", "transposed", "broadcast"]),
)
def test_reduce_sum_evaluation_equals_numpys_sum(
    shape: list[int], data: Any, dtype: Any, layout: str
) -> None:
    """``reduce_sum``'s prepared evaluation (numpy's ``axis=None`` for every axis) gives
    numpy's sum over the listed axes exactly, in the input's dtype, for every layout."""
    ndim = len(shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim))))
    array = _array(tuple(shape), dtype, 5)
    if layout == "transposed":
        array = np.ascontiguousarray(array.T).T
    elif layout == "broadcast" and ndim:
        array = np.broadcast_to(array[..., :1], array.shape)
    meta = tf.Tensor(array).meta
    op = tf.ops.ReduceSum.make((meta,), axes=axes)
    for _ in range(2):  # planning, then the prepared plan
        got = np.asarray(op.impl(array))
        expected = np.sum(array, axis=axes, dtype=array.dtype)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------- the direct lane

_FLAT_STATIC = st.one_of(
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.just(1.0),
    st.lists(st.one_of(st.integers(-1, 4), st.booleans(), st.just(2.0)), max_size=3).map(tuple),
    st.builds(
        slice,
        st.none() | st.integers(-4, 4) | st.booleans(),
        st.none() | st.integers(-4, 4) | st.booleans(),
        st.none() | st.sampled_from([-2, -1, 1, 2, True]),
    ),
)
"""Static arguments of every flat kind the direct lane keys, and their lookalikes of other
types (bools, floats) that it must leave to the general lane."""

_LANE_FUNCTIONS = {"sum": (sum, "axis"), "reshape": (reshape, "shape"), "getitem": (getitem, None)}


def _lane_outcome(function: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        result = function(*args, **kwargs)
    except tf.TenferroError as error:  # the error and its message are the outcome compared
        return (type(error), str(error))
    except (TypeError, IndexError) as error:
        return type(error)
    tracked = getattr(result, "requires_grad", False)
    return (type(result), result.meta, np.asarray(result).tolist(), tracked)


@fuzz_settings(60)
@given(
    st.sampled_from(sorted(_LANE_FUNCTIONS)),
    st.lists(_FLAT_STATIC, min_size=1, max_size=4),
    st.sampled_from(["tensor", "eager", "tracked"]),
    st.sampled_from([(2, 3), (4,), (2, 2, 2)]),
    st.sampled_from([np.float64, np.int32]),  # int32 sums are two steps (a cast first)
)
def test_the_direct_lane_agrees_with_the_general_lane_and_the_uncached_function(
    name: str, statics: list[Any], kind: str, shape: tuple[int, ...], dtype: Any
) -> None:
    """Positional calls take the direct lane (a flat key); keyword calls and the uncached
    function give the reference: same values, metas, tracking and errors, at the miss
    and at the hit, whatever lookalike arguments came before."""
    function, keyword = _LANE_FUNCTIONS[name]
    x = _operand(_array(shape, dtype, 6), kind)
    for static in statics * 2:
        direct = _lane_outcome(function, x, static)
        assert direct == _lane_outcome(_uncached(function), x, static)
        if keyword is not None:
            assert direct == _lane_outcome(function, x, **{keyword: static})
    primitives = {
        id(p.single if p.single is not None else p)
        for p in dispatch._PROGRAMS.values()
        if p is not dispatch._UNCACHEABLE
    }
    for found in dispatch._DIRECT.values():  # the general cache's own programs, structure only
        if type(found) is dispatch._Slow:
            found = found.program
        assert found is dispatch._UNCACHEABLE or id(found) in primitives


def test_the_direct_lane_records_what_the_general_lane_records() -> None:
    data = _array((3, 4), np.float64, 7)
    grads, structures = [], []
    for lane in ("direct", "general", "direct"):
        tape = tf.Tape()
        x = tape.track(data)
        if lane == "direct":
            y = tf.sum(tf.reshape(x[1:], (4, 2)).T @ x[0], 0)
        else:
            y = tf.sum(
                tf.reshape(getitem(x, index=slice(1, None)), shape=(4, 2)).T @ getitem(x, index=0),
                axis=0,
            )
        structures.append((y.node.recorded, y.node.active, len(y.node.edges)))
        grads.append(np.asarray(tape.grad(y * tf.sum(tf.sin(tf.reshape(x, (12,)))), x)))
    assert structures[0] == structures[1] == structures[2]
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], grads[2])


def test_uncacheable_calls_through_the_direct_lane_run_once_per_call() -> None:
    calls = []

    @dispatch.dispatch_cached()
    def doubled_unless_probed(x: Any, times: int) -> Any:
        calls.append(times)
        if not isinstance(x, tf.Tensor):
            raise ValueError("a probe")  # recording fails; the real call succeeds
        return x * times

    tf.clear_caches()
    x = tf.EagerTensor(np.arange(3.0))
    for call in range(3):
        calls.clear()
        np.testing.assert_array_equal(np.asarray(doubled_unless_probed(x, 2)), [0.0, 2.0, 4.0])
        assert calls == ([2, 2] if call == 0 else [2])  # the probe once, the function once
    (outcome,) = dispatch._DIRECT.values()
    assert type(outcome) is dispatch._Slow
    assert outcome.program is dispatch._UNCACHEABLE
    tf.clear_caches()
    assert len(dispatch._DIRECT) == 0


def test_recorded_output_keys_are_unique_input_keys_with_their_fingerprint() -> None:
    from computegraph import Input, ValueKey

    tape = tf.Tape()
    x = tape.track(np.linspace(0.1, 0.9, 4).reshape(2, 2))
    q, r = tf.linalg.qr(tf.sin(x))
    for key in (tf.sin(x).key, q.key, r.key):
        assert isinstance(key, Input)
        assert isinstance(key, ValueKey)
        reference = Input.unique(key.key)
        assert key.fingerprint == reference.fingerprint  # computed when read
        assert key != reference  # unique: equal only to itself
        assert key != Input(key.key)
        with pytest.raises(AttributeError):
            key.key = 0  # type: ignore[misc]  # keys stay immutable


@fuzz_settings(30)
@given(
    st.floats(width=64) | st.sampled_from([0.0, -0.0, float("inf"), float("nan")]),
    st.booleans(),
    st.sampled_from(["add", "multiply"]),
)
def test_floats_taken_as_they_are_differentiate_like_prepared_operands(
    number: float, number_first: bool, name: str
) -> None:
    """A float meeting a float64 tensor is the ufunc's operand as it is (no numpy scalar):
    values, gradients, second derivatives (``create_graph``) and composites equal those
    of the prepared operands (a float64 tensor of the number)."""
    from tenferro.surface.convert import prepare

    def fast(x: Any) -> Any:
        return getattr(tf, name)(*((number, x) if number_first else (x, number)))

    def prepared(x: Any) -> Any:
        operands = (number, x) if number_first else (x, number)
        return (lax.add if name == "add" else lax.mul)(*prepare(name, operands, kinds="bifc"))

    def loss(x: Any, bind: Any) -> Any:
        y = bind(x)
        return tf.sum(tf.sin(y) * y)

    results = []
    for bind in (fast, prepared):
        tape = tf.Tape()
        x = tape.track(np.linspace(0.2, 0.8, 4))
        value = loss(x, bind)
        first = tape.grad(value, x, create_graph=True)
        second = tape.grad(tf.sum(first), x)
        through_composite = tape.grad(tf.composite(lambda v, b=bind: loss(v, b))(x), x)
        results.append([np.asarray(r) for r in (value, first, second, through_composite)])
    for got, expected in zip(*results, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_functions_with_their_own_key_take_only_the_general_lane() -> None:
    """A function's own ``key`` decides what is cached: the direct lane stays out."""

    def non_negative(times: int) -> Any:
        if times < 0:
            raise dispatch.UnkeyableError(times)
        return (times,), ((times,), {})

    @dispatch.dispatch_cached(key=non_negative)
    def scaled(x: Any, times: int) -> Any:
        return tf.reshape(x, (-1,)) if times >= 0 else x * times

    tf.clear_caches()
    x = tf.EagerTensor(np.arange(4.0).reshape(2, 2))
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(scaled(x, 3)), np.arange(4.0))
        np.testing.assert_array_equal(np.asarray(scaled(x, -2)), -2 * np.arange(4.0).reshape(2, 2))
    assert len(dispatch._DIRECT) == 0
    assert len([k for k in dispatch._PROGRAMS if k[0] is scaled]) == 1  # only times=3's


class _ListsOnly(tidu_eager.ProgramExecutor):
    """The tape's executor without the one-seed runners (``single_transposer``): every
    node takes the general runner, as before those existed."""

    single_transposer = None  # type: ignore[assignment]


@fuzz_settings(20)
@given(
    st.lists(
        st.sampled_from(["sin", "mul", "scale", "exp", "slice", "reshape", "sum0", "other"]),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
    st.booleans(),
)
def test_one_seed_runners_give_the_general_runners_gradients(
    steps: list[str], retain: bool, of_intermediate: bool
) -> None:
    """Backward's one-seed, one-input runners give bit for bit the gradients (of leaves
    and of an intermediate) the general runners give, freeing or retaining the graph."""
    from tenferro.core.primitive import ADD_ANY
    from tenferro.eager.extents import specialize

    def run(executor: Any) -> list[np.ndarray[Any, Any]]:
        tape = tf.Tape()
        if executor is not None:
            tape._plain = executor
        x = tape.track(np.linspace(0.1, 0.7, 4).reshape(2, 2))
        other = tape.track(np.linspace(-0.5, 0.5, 4).reshape(2, 2))
        v, middle = x, None
        for position, step in enumerate(steps):
            if step == "sin":
                v = tf.sin(v)
            elif step == "mul":
                v = v * v
            elif step == "scale":
                v = v * 0.75 + 0.5
            elif step == "exp":
                v = tf.exp(v * 0.1)
            elif step == "slice":
                v = tf.concatenate([v[1:], v[:1]])
            elif step == "reshape":
                v = tf.reshape(tf.reshape(v, (4,)), (2, 2))
            elif step == "sum0":
                v = v * tf.sum(v, 0)
            else:
                v = v * other
            if position == len(steps) // 2:
                middle = v
        wrt = [x, other] + ([middle] if of_intermediate and middle is not None else [])
        grads = tape.grad(tf.sum(tf.sin(v)), wrt, allow_unused=True, retain_graph=retain)
        return [np.asarray(g) if g is not None else np.zeros(0) for g in grads]

    general = run(_ListsOnly(ADD_ANY, specialize=specialize))
    for got, expected in zip(run(None), general, strict=True):
        np.testing.assert_array_equal(got, expected)
