"""Retracing answers from key memos, and the answers are the general path's.

A traced value's key remembers (computegraph.memo) what each operator, surface function
and primitive bind applied to it gave, so a retrace (``tf.grad`` retraces at every call)
finds result keys with one lookup. Keys are interned, so the general path -- after
``tf.clear_caches()``: no memo, no operator lane, no primitive instance -- must give the
very same key objects; the memo path must make no operation key at all; a memo that lost
its entries (``computegraph.memos.clear()``) must give them again. Gradients and second
derivatives through memos equal those of a fresh trace and finite differences; a
function's closures are read at every call; a memo keeps neither graphs nor data alive.

Retraces of functions whose captured values change between calls (Python numbers,
numpy scalars, 0-d arrays and tensors of one value, weak and strong, -0.0 and 0.0, nan,
arrays edited in place, arguments of alternating dtypes and shapes, caches cleared in
between, a deep graph) give exactly what the eager tape gives, values, dtypes and signed
zeros, and no memo keeps a user's array alive.
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import computegraph
import tenferro as tf
from tenferro import transforms
from tenferro.surface import dispatch as surface_dispatch
from tenferro.surface import math as surface_math
from tenferro.traced import program as traced_program
from tenferro.traced import tensor as traced_tensor

# ---------------------------------------------------------------------- random programs

_UNARY: list[Callable[[Any], Any]] = [
    tf.sin,
    tf.cos,
    tf.exp,
    tf.tanh,
    tf.log,
    tf.sqrt,
    tf.abs,
    operator.neg,
    tf.square,
]
_BINARY: list[Callable[[Any, Any], Any]] = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    tf.add,
    tf.multiply,
    tf.subtract,
    tf.maximum,
]
# Python numbers that look alike as dictionary keys (1 == 1.0 == True, 0.0 == -0.0), that
# are not equal to themselves, that do not fit some dtypes, and numbers that are not weak.
_NUMBERS: list[Any] = [
    2.0,
    0.5,
    1.0,
    0.0,
    -0.0,
    math.nan,
    math.inf,
    2,
    -3,
    1,
    0,
    2**40,
    True,
    1j,
    np.float32(0.5),
    np.float64(0.5),
    np.int32(2),
]


def _leaves() -> list[Any]:
    # Python numbers (weak) and numpy scalars (strong) of one dtype and value lift to
    # one structural constant key with two metas: memos must tell them apart.
    lifted = [tf.TracedTensor._lift(tf.asarray(n)) for n in (2.5, np.float64(2.5), 1j)]
    assert lifted[0].key is lifted[1].key
    assert lifted[0].meta != lifted[1].meta
    return [
        *lifted,
        tf.placeholder((3,), "float64"),
        tf.placeholder((3,), "float32"),
        tf.placeholder((3,), "complex128"),
        tf.placeholder((3,), "int32"),
        tf.placeholder((3,), "bool"),
        tf.placeholder((2, 3), "float64"),
        tf.placeholder((), "float64"),
        tf.placeholder((), "complex64"),
    ]


_Step = tuple[int, int, int, int, int, bool]
_STEPS = st.lists(
    st.tuples(
        st.integers(0, 4),  # the family of the step (see _apply)
        st.integers(0, 63),  # which function
        st.integers(0, 63),  # first operand (modulo the values so far)
        st.integers(0, 63),  # second operand or number
        st.integers(0, 63),  # third operand or number
        st.booleans(),  # the number or other value first
    ),
    min_size=1,
    max_size=16,
)


def _apply(step: _Step, values: list[Any]) -> list[Any]:
    """The values a step makes. Steps that apply one function twice, to one value with two
    numbers or other values, or to two values with one number, keep both results alive:
    a memo that confused them would hand one's key to the other."""
    family, which, first, second, third, swapped = step
    count = len(values)
    x = values[first % count]
    other = values[(first + 1 + third % (count - 1)) % count]  # another value than x
    if family == 0:
        return [_UNARY[which % len(_UNARY)](x)]
    if family == 3:  # three operands, the condition from a comparison with a number
        y, z = values[second % len(values)], values[third % len(values)]
        return [tf.where(x > 0.5, y, z) if swapped else tf.where(x < y, z, x)]
    function = _BINARY[which % len(_BINARY)]

    def call(a: Any, b: Any) -> Any:
        return function(b, a) if swapped else function(a, b)

    if family == 1:  # two different numbers, often of one type (neighbours in _NUMBERS)
        size = len(_NUMBERS)
        n1, n2 = _NUMBERS[second % size], _NUMBERS[(second + 1 + third % (size - 1)) % size]
        return [call(x, n1), call(x, n2)]
    if family == 2:
        return [call(x, values[second % count]), call(x, other)]
    number = _NUMBERS[second % len(_NUMBERS)]
    return [call(x, number), call(other, number)]


def _trace(
    steps: list[_Step], leaves: list[Any], made: list[int] | None = None
) -> list[tuple[Any, ...]]:
    """Every step's outcome: its keys and metas, or the error it raised. With ``made``, the
    operation keys each successful step made (counted by a :class:`_CountingFirstOutput`
    installed by the caller) are appended to it."""
    values = list(leaves)
    outcomes: list[tuple[Any, ...]] = []
    for step in steps:
        before = _COUNT[0]
        try:
            new = _apply(step, values)
        except Exception as error:  # the memo path must raise exactly what the other raises
            outcomes.append(("raises", type(error), str(error)))
            continue  # (what it made before raising is garbage: its memo entries are dead)
        if made is not None:
            made.append(_COUNT[0] - before)
        values.extend(new)
        outcomes.append(("values", *[(v.key, v.meta) for v in new]))
    return outcomes


_COUNT = [0]


class _CountingFirstOutput:
    """Stands for ``first_output`` in the traced kind: counts the operation keys made
    (in ``_COUNT``)."""

    def __init__(self) -> None:
        self.real = traced_tensor.first_output

    def __call__(self, operation: Any, inputs: Any) -> Any:
        _COUNT[0] += 1
        return self.real(operation, inputs)


class _NoCache(dict[Any, Any]):
    """Stands for a cache that never answers and keeps nothing."""

    def put(self, key: Any, value: Any) -> None:
        pass


def _general(steps: list[_Step], leaves: list[Any]) -> list[tuple[Any, ...]]:
    """The outcomes through the general path: no memo is made or read (and none exists
    after ``tf.clear_caches()``), no operator lane or known instance is used."""
    tf.clear_caches()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(traced_tensor, "memo_put", lambda key, token, entry: None)
        patch.setattr(traced_tensor, "_LANES", _NoCache())
        patch.setattr(traced_tensor, "_NULLARY", _NoCache())
        patch.setattr(surface_math, "BINDS_INSTANCES", surface_dispatch.REPLAYABLE)
        return _trace(steps, leaves)


@pytest.mark.slow
@fuzz_settings(150)
@given(_STEPS)
def test_a_retrace_gives_the_general_paths_keys_from_memos(
    steps: list[_Step],
) -> None:
    leaves = _leaves()
    general = _general(steps, leaves)
    assert _trace(steps, leaves) == general  # keys compare by identity: the same objects
    made: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(traced_tensor, "first_output", _CountingFirstOutput())
        retraced = _trace(steps, leaves, made)
    assert retraced == general
    assert not any(made)  # every value was found in memos: no operation key was made
    computegraph.memos.clear()  # lanes and instances stay: they must give the keys too
    assert _trace(steps, leaves) == general
    assert _trace(steps, leaves) == general


def test_every_operand_pair_and_number_in_both_orders_from_memos() -> None:
    # Exhaustive over the table, every result kept alive: a memo entry of one call must
    # never answer another (lookalike numbers, one key with a weak and a strong meta).
    leaves = _leaves()
    size = len(leaves)
    steps: list[_Step] = [
        (family, which, first, second, 0, swapped)
        for family, seconds in ((2, range(size)), (1, range(len(_NUMBERS))))
        for which in range(len(_BINARY))
        for first in range(size)
        for second in seconds
        for swapped in (False, True)
    ]
    # family 2 applies the function to (x, values[second]) and to (x, the next value);
    # family 1 to (x, _NUMBERS[second]) and (x, the next number)
    general = _general(steps, leaves)
    for _ in range(2):
        assert _trace(steps, leaves) == general


def test_memo_path_values_equal_numpy() -> None:
    x = tf.placeholder((3,), "float32")
    a = np.array([0.25, -1.5, 2.0], np.float32)
    expected = np.sin(a) * 0.99 + 2 - np.float64(0.5) * a
    for _ in range(3):  # a fresh trace, then two retraces from memos
        y = tf.sin(x) * 0.99 + 2 - np.float64(0.5) * x
        got = np.asarray(y.eval({x: a}))
        assert got.dtype == expected.dtype == np.float64  # a numpy scalar is strong
        np.testing.assert_allclose(got, expected, rtol=1e-6)


# ---------------------------------------------------------------------- derivatives


def _program(steps: list[tuple[int, int, float]]) -> Callable[[Any, Any], Any]:
    """A smooth real function of two float64 vectors: chained sin/tanh/exp-like steps,
    products with numbers and between the running values."""

    def f(x: Any, y: Any) -> Any:
        values = [x, y]
        for kind, which, number in steps:
            a, b = values[which % len(values)], values[-1]
            if kind == 0:
                values.append(tf.sin(a) * number)
            elif kind == 1:
                values.append(tf.tanh(a) + number)
            elif kind == 2:
                values.append(a * b + number)
            elif kind == 3:
                values.append(number - tf.cos(a * 0.5) * b)
            else:
                values.append(tf.exp(a * 0.25) / (2.0 + number * number))
        return tf.sum(values[-1] * values[-1]) + tf.sum(values[-2])

    return f


_SMOOTH = st.lists(
    st.tuples(
        st.integers(0, 4),
        st.integers(0, 9),
        st.sampled_from([0.5, 0.99, -1.25, 2.0, 1.0, 3.0]),
    ),
    min_size=1,
    max_size=8,
)


def _fresh_programs() -> None:
    """Drop the compiled programs, keep the memos: the next call retraces from memos and
    compiles anew from the keys it found."""
    transforms.clear_caches()
    traced_program.programs.clear()


def _finite_difference(f: Callable[..., Any], args: list[np.ndarray], h: float = 1e-6) -> Any:
    grads = []
    for position, arg in enumerate(args):
        g = np.zeros_like(arg)
        for i in range(arg.size):
            step = np.zeros_like(arg)
            step.flat[i] = h
            plus = [a + step if k == position else a for k, a in enumerate(args)]
            minus = [a - step if k == position else a for k, a in enumerate(args)]
            g.flat[i] = (float(f(*plus)) - float(f(*minus))) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.slow
@fuzz_settings(40)
@given(_SMOOTH)
def test_gradients_and_second_order_through_memos_equal_a_fresh_trace(
    steps: list[tuple[int, int, float]],
) -> None:
    f = _program(steps)
    x0, y0 = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    tx, ty = np.array([1.0, -0.5, 0.25]), np.array([0.5, 0.75, -1.0])
    grad = tf.grad(f, argnums=(0, 1))
    tf.clear_caches()
    general = [np.asarray(g) for g in grad(x0, y0)]
    general_hvp = [np.asarray(h) for h in tf.hvp(f, (x0, y0), (tx, ty))]
    for _ in range(2):  # from memos with the cached programs, then with fresh ones
        again = [np.asarray(g) for g in grad(x0, y0)]
        again_hvp = [np.asarray(h) for h in tf.hvp(f, (x0, y0), (tx, ty))]
        for a, b in zip([*again, *again_hvp], [*general, *general_hvp], strict=True):
            np.testing.assert_array_equal(a, b)
        _fresh_programs()
    value = tf.jit(f)
    for got, fd in zip(general, _finite_difference(value, [x0, y0]), strict=True):
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-7)
    h = 1e-6  # the HVP is the derivative of the gradient along (tx, ty)
    plus = grad(x0 + h * tx, y0 + h * ty)
    minus = grad(x0 - h * tx, y0 - h * ty)
    for got, p, m in zip(general_hvp, plus, minus, strict=True):
        np.testing.assert_allclose(got, (np.asarray(p) - np.asarray(m)) / (2 * h), atol=1e-5)


def test_second_order_grad_of_grad_from_memos() -> None:
    def f(v: Any) -> Any:
        return tf.sum(tf.sin(v * 0.99) * v + 0.01)

    def g(v: Any) -> Any:
        return tf.sum(tf.grad(f)(v) * tf.cos(v))

    w = np.array([0.2, -0.7, 1.1])
    tf.clear_caches()
    first = np.asarray(tf.grad(g)(w))
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(tf.grad(g)(w)), first)
    # d/dv [ (0.99 v cos(0.99 v) + sin(0.99 v)) cos v ]
    c, s = np.cos(0.99 * w), np.sin(0.99 * w)
    inner = 0.99 * w * c + s
    d_inner = 0.99 * c - 0.99**2 * w * s + 0.99 * c
    np.testing.assert_allclose(first, d_inner * np.cos(w) - inner * np.sin(w), rtol=1e-12)


# ---------------------------------------------------------------------- closures, scalars


def test_closures_are_read_at_every_call_whatever_the_memos_hold() -> None:
    box: dict[str, Any] = {}

    def f(v: Any) -> Any:
        return tf.sum(tf.sin(v) * box["c"] + v * box["array"])

    grad = tf.grad(f)
    v32 = np.array([0.1, 0.2, 0.3], np.float32)
    v64 = v32.astype(np.float64)
    cases: list[tuple[Any, Any]] = [
        (2, np.ones(3)),
        (2.0, np.ones(3)),
        (True, np.full(3, 2.0)),
        (0.5, np.arange(3.0)),
        (-0.0, np.arange(3.0)),
        (0.0, np.arange(3.0)),
        (np.float32(0.5), np.ones(3, np.float32)),
        (np.float64(0.5), np.ones(3, np.float32)),
        (2, np.arange(3.0)),
    ]
    for _ in range(2):
        for c, array in cases:
            box["c"], box["array"] = c, array
            for v in (v32, v64):
                got = np.asarray(grad(v))
                assert got.dtype == v.dtype  # the gradient has the argument's dtype
                expected = np.cos(v64) * float(c) + array
                tolerance = 1e-6 if v.dtype == np.float32 else 1e-15
                np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
                value = np.asarray(tf.value_and_grad(f)(v)[0])
                assert value.dtype == np.asarray(np.sum(np.sin(v) * c + v * array)).dtype


def test_weak_python_scalar_arguments_through_memos() -> None:
    f32 = np.ones(3, np.float32)

    def f(a: Any, b: Any) -> Any:
        return tf.sin(a * b + 1) * f32 * 2.0

    jitted = [tf.jit(f) for _ in range(3)]  # new functions: each traces, from memos
    for j in jitted:
        got = np.asarray(j(2.0, 3))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, np.sin(np.float32(7.0)) * 2.0, rtol=1e-6)
        assert np.asarray(j(2.0, np.float64(3))).dtype == np.float64  # a strong scalar


# ---------------------------------------------------------------------- what memos keep


def test_a_memo_keeps_no_graph_and_no_data_alive() -> None:
    x = tf.placeholder((1000,), "float64")
    data = np.linspace(0.0, 1.0, 1000)
    data_probe = weakref.ref(data)
    leaf = tf.traced(data)
    del data
    results = [x * leaf, tf.add(x, leaf), leaf * 2.0, tf.sin(leaf), x * 3.0]
    key_probes = [weakref.ref(r.key) for r in results]
    assert isinstance(x.key.memo, dict)
    del results, leaf
    gc.collect()
    assert data_probe() is None  # x's memo names the leaf weakly: its data is freed
    assert all(probe() is None for probe in key_probes)
    # the entries are dead now: the same calls make the keys again, as the surface does
    again = x * 3.0
    assert again.key is tf.multiply(x, 3.0).key


def test_memo_entries_of_dropped_results_are_made_again() -> None:
    x = tf.placeholder((3,), "float64")
    y = tf.sin(x) * 0.5
    structure = tf.format_graph(y)
    del y
    gc.collect()
    z = tf.sin(x) * 0.5
    assert tf.format_graph(z) == structure
    assert (tf.sin(x) * 0.5).key is z.key
    values = np.asarray(z.eval({x: np.array([0.1, 0.2, 0.3])}))
    np.testing.assert_allclose(values, np.sin([0.1, 0.2, 0.3]) * 0.5, rtol=1e-15)


# ---------------------------------------------------------------------- captured values


_CAPTURED: list[Any] = [None]

_FUNCTIONS = [
    lambda x: x * _CAPTURED[0],
    lambda x: _CAPTURED[0] * x,
    lambda x: x + _CAPTURED[0],
    lambda x: _CAPTURED[0] - x,
    lambda x: x / _CAPTURED[0],
    lambda x: _CAPTURED[0] / x,
    lambda x: (x * _CAPTURED[0]) * _CAPTURED[0] + x,
    lambda x: tf.sin(x) * _CAPTURED[0] + tf.sin(x) * _CAPTURED[0],
]

_VALUES = [
    2.0,
    2,
    np.float64(2.0),
    np.float32(2.0),
    np.array(2.0),
    np.array(2.0, np.float32),
    np.int32(2),
    tf.Tensor(2.0),
    tf.Tensor(np.float32(2.0)),
    -0.0,
    0.0,
    float("nan"),
    float("inf"),
    1e40,
    True,
    np.array([2.0, 3.0]),
]

_ARGUMENTS = [
    np.array([1.5, -2.0], np.float32),
    np.array([1.5, -2.0]),
    np.array([1.5 + 1j, -2.0]),
    np.array(1.5),
    np.array([[1.5, 0.5]]),
]


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a, b, equal_nan=True)
        and np.array_equal(np.signbit(a.real), np.signbit(b.real))
    )


def _eager(f: Any, x: Any) -> tuple[Any, Any]:
    leaf = tf.EagerTensor(x, requires_grad=True)
    out = f(leaf)
    tf.sum(tf.real(out)).backward()
    return np.asarray(out.detach()), np.asarray(leaf.grad)


def _transformed(f: Any, x: Any) -> tuple[Any, Any]:
    out, _ = tf.vjp(f, x)
    return np.asarray(out), np.asarray(tf.grad(lambda y: tf.sum(tf.real(f(y))))(x))


def _sweep(order: list[tuple[int, int, int]]) -> list[str]:
    wrong = []
    for fi, vi, ai in order:
        _CAPTURED[0] = _VALUES[vi]
        f, x = _FUNCTIONS[fi], _ARGUMENTS[ai]
        with np.errstate(all="ignore"):
            eager = _eager(f, x)
            traced = _transformed(f, x)
        if not (_same(traced[0], eager[0]) and _same(traced[1], eager[1])):
            wrong.append(f"function {fi}, captured {_VALUES[vi]!r}, argument {x!r}")
    return wrong


def test_retraces_with_changing_captured_values_are_fresh_traces() -> None:
    rng = np.random.default_rng(0)
    cases = list(
        itertools.product(range(len(_FUNCTIONS)), range(len(_VALUES)), range(len(_ARGUMENTS)))
    )
    order = [cases[i] for i in rng.permutation(len(cases))[:250]]
    assert _sweep(order) == []
    again = [order[i] for i in rng.permutation(len(order))]  # now answered from memos
    assert _sweep(again) == []
    tf.clear_caches()
    assert _sweep(again[:60]) == []


def test_signed_zero_and_nan_captured_between_calls() -> None:
    x = np.array([0.3, -1.2, 2.0])
    grad = tf.grad(lambda v: tf.sum(v * _CAPTURED[0]))
    for value in (2.0, -0.0, 0.0, -0.0, float("nan"), 3.0, np.float64(-0.0), 0.0):
        _CAPTURED[0] = value
        assert _same(grad(x), np.full(3, float(value)))


def test_captured_array_edited_in_place_between_calls() -> None:
    captured = np.array([1.0, 2.0, 3.0])
    grad = tf.grad(lambda v: tf.sum(v * captured))
    x = np.array([0.3, -1.2, 2.0])
    assert _same(grad(x), captured.copy())
    captured[:] = [5.0, -6.0, 7.0]
    assert _same(grad(x), captured.copy())


@pytest.mark.slow
def test_deep_graph_retrace_matches_the_tape() -> None:
    def f(x: Any) -> Any:
        for i in range(3000):
            x = x * 1.0001 if i % 2 else tf.sin(x) + 0.5
        return tf.sum(x)

    x = np.array([0.3, 0.7])
    first, second = tf.grad(f)(x), tf.grad(f)(x)
    leaf = tf.EagerTensor(x, requires_grad=True)
    f(leaf).backward()
    assert _same(first, second)
    assert _same(first, leaf.grad)


@pytest.mark.slow
@pytest.mark.parametrize(
    "transform",
    [tf.grad, tf.jit, lambda f: tf.jit(tf.grad(f)), lambda f: lambda x: tf.vjp(f, x)[0]],
    ids=["grad", "jit", "jit(grad)", "vjp"],
)
def test_no_memo_keeps_user_data_alive(transform: Any) -> None:
    holder: dict[str, Any] = {}

    def run() -> tuple[weakref.ref[Any], weakref.ref[Any], weakref.ref[Any]]:
        argument = np.random.default_rng(0).standard_normal(3)
        matrix = tf.Tensor(np.random.default_rng(1).standard_normal(3))
        scalar = tf.Tensor(0.25)
        holder["refs"] = (
            weakref.ref(argument),
            weakref.ref(matrix._value),
            weakref.ref(scalar._value),
        )
        transform(lambda x: tf.sum(x * matrix * scalar))(argument)
        return holder.pop("refs")  # type: ignore[no-any-return]

    refs = run()
    gc.collect()
    assert [r() is None for r in refs] == [True, True, True]
