"""Traced operators take a lane learned from the surface, and the structural caches of
the transforms never hand one program's result to a lookalike program.

``TracedTensor``'s ``+ - * /`` remember, per structure of a call (the traced operand's
meta, the other operand's meta or its number type and value), which primitive the
numpy-style surface bound; a repeated call binds it directly. Every call must give the
very key (interned structure) the surface function gives, or raise what it raises,
whatever the order of calls and cache clearings. And ``tf.grad`` (which retraces at every
call and finds its derivative program by structure) must give each lookalike function --
differing in one scalar, dtype, shape, constant or captured value -- its own gradient.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

_OPERATORS: list[tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
    (operator.add, tf.add),
    (operator.sub, tf.subtract),
    (operator.mul, tf.multiply),
    (operator.truediv, tf.true_divide),
]

# Numbers that look alike as dictionary keys (1 == 1.0 == True, 0.0 == -0.0), that are
# not equal to themselves (nan), or that do not fit some dtypes (2**40 beside int32).
_NUMBERS: list[Any] = [
    1,
    1.0,
    True,
    0,
    0.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    2,
    2.0,
    0.5,
    -3,
    2**40,
    2**70,
    np.float64(0.5),
    np.float32(0.5),
    np.int64(2),
    1j,
]


def _operands() -> list[Any]:
    return [
        tf.placeholder((3,), "float64"),
        tf.placeholder((3,), "float32"),
        tf.placeholder((3,), "complex128"),
        tf.placeholder((3,), "int32"),
        tf.placeholder((3,), "int64"),
        tf.placeholder((3,), "bool"),
        tf.placeholder((2,), "float64"),
        tf.placeholder((), "float64"),
        tf.placeholder((2, 3), "float64"),
        tf.traced(np.array([1.0, 2.0, 3.0])),
        tf.traced(2.5),  # a traced leaf made from a Python number
    ]


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        result = call()
    except Exception as error:  # the lane must raise exactly what the surface raises
        return ("raises", type(error))
    return ("key", (result.key, result.meta))


@pytest.mark.slow
@fuzz_settings(60)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_OPERATORS) - 1),
            st.integers(0, 10),
            st.integers(0, len(_NUMBERS) + 10),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_operators_bind_what_the_surface_binds(calls: list[tuple[int, int, int, bool, bool]]):
    operands = _operands()
    for which, first, second, swapped, clear in calls:
        if clear:
            tf.clear_caches()
        method, function = _OPERATORS[which]
        x = operands[first]
        # the other operand: a number, or another traced operand (same or other meta)
        y = _NUMBERS[second] if second < len(_NUMBERS) else operands[second - len(_NUMBERS)]
        left, right = (y, x) if swapped else (x, y)
        expected = _outcome(lambda: function(left, right))  # noqa: B023
        for _ in range(2):  # the first call may learn the lane; the second takes it
            assert _outcome(lambda: method(left, right)) == expected  # noqa: B023


def _lookalike_functions() -> list[tuple[Callable[[Any], Any], Callable[[np.ndarray], Any]]]:
    """Pairs (tenferro function, its gradient by hand) that differ in one detail."""
    captured = np.array([1.0, -2.0, 0.5])
    pairs: list[tuple[Callable[[Any], Any], Callable[[np.ndarray], Any]]] = []
    for c in (0.99, 0.98, 1.0, 2.0, -1.0):
        pairs.append(
            (
                lambda v, c=c: tf.sum(tf.sin(v) * c),
                lambda w, c=c: np.cos(w) * c,
            )
        )
        pairs.append(
            (
                lambda v, c=c: tf.sum(c * tf.sin(v) + v * v),
                lambda w, c=c: c * np.cos(w) + 2 * w,
            )
        )
        pairs.append(
            (
                lambda v, c=c: tf.sum(tf.sin(v) / c - c),
                lambda w, c=c: np.cos(w) / c,
            )
        )
    for k in (1, 2, 3):
        pairs.append((lambda v, k=k: tf.sum(v * k), lambda w, k=k: np.full_like(w, k)))
    pairs.append((lambda v: tf.sum(tf.sin(v) * captured), lambda w: np.cos(w) * captured))
    pairs.append((lambda v: tf.sum(tf.sin(v) * -captured), lambda w: -np.cos(w) * captured))
    pairs.append((lambda v: tf.sum(tf.sin(v) + 0.5), lambda w: np.cos(w)))
    pairs.append((lambda v: tf.sum(tf.sin(v) - 0.5), lambda w: np.cos(w)))
    pairs.append((lambda v: tf.sum(0.5 - tf.sin(v)), lambda w: -np.cos(w)))
    return pairs


_FUNCTIONS = _lookalike_functions()
_INPUTS = [
    np.array([0.1, 0.2, 0.3]),
    np.array([0.1, 0.2, 0.3], np.float32),
    np.array([0.4, -0.2]),
    np.array(0.7),
]


@pytest.mark.slow
@fuzz_settings(40)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_FUNCTIONS) - 1),
            st.integers(0, len(_INPUTS) - 1),
            st.booleans(),
        ),
        min_size=2,
        max_size=25,
    )
)
def test_grad_of_lookalike_functions_is_each_ones_own(calls: list[tuple[int, int, bool]]):
    captured_shape = _FUNCTIONS[-5][1](np.zeros(3)).shape
    for which, arg, clear in calls:
        if clear:
            tf.clear_caches()
        function, expected = _FUNCTIONS[which]
        w = _INPUTS[arg]
        if which in (len(_FUNCTIONS) - 5, len(_FUNCTIONS) - 4) and w.shape != captured_shape:
            continue  # the captured array only fits length-3 arguments
        got = np.asarray(tf.grad(function)(w))
        tolerance = 1e-5 if w.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected(w.astype(np.float64)), rtol=tolerance)
        assert got.dtype == w.dtype


def test_a_captured_array_changed_between_calls_is_read_anew():
    captured = np.array([1.0, 2.0, 3.0])

    def f(v: Any) -> Any:
        return tf.sum(tf.sin(v) * captured * 0.5)

    g = tf.grad(f)
    w = np.array([0.1, 0.2, 0.3])
    for scale in (1.0, -2.0, 7.0):
        captured = np.array([1.0, 2.0, 3.0]) * scale
        np.testing.assert_allclose(g(w), np.cos(w) * captured * 0.5, rtol=1e-12)


def test_every_operator_operand_and_lookalike_number_in_both_orders():
    # Exhaustive over the table, forwards then backwards without clearing: a lane learned
    # for one lookalike (0.0 for -0.0, 1 for True or 1.0) must never serve another.
    operands = _operands()
    others = [*_NUMBERS, *operands]
    cases = [
        (which, x, y, swapped)
        for which in range(len(_OPERATORS))
        for x in operands
        for y in others
        for swapped in (False, True)
    ]
    for order in (cases, cases[::-1]):
        tf.clear_caches()
        for which, x, y, swapped in order:
            method, function = _OPERATORS[which]
            left, right = (y, x) if swapped else (x, y)
            expected = _outcome(lambda: function(left, right))  # noqa: B023
            assert _outcome(lambda: method(left, right)) == expected  # noqa: B023


def test_grad_and_value_and_grad_read_closures_at_call_time() -> None:
    box: dict[str, Any] = {"c": np.ones(3, np.float32)}

    def f(x: Any) -> Any:
        return tf.sum(x * box["c"])

    grad, value_and_grad = tf.grad(f), tf.value_and_grad(f)
    x = np.arange(3.0).astype(np.float32)
    for c in [np.ones(3, np.float32), np.full(3, 2.0), np.full((2, 3), 3.0), 2.0, np.float64(2)]:
        box["c"] = c
        g = np.asarray(grad(x))
        value, g2 = value_and_grad(x)
        assert g.dtype == np.float32  # the gradient has the argument's dtype
        np.testing.assert_allclose(
            g,
            np.broadcast_to(c, np.broadcast_shapes(np.shape(c), (3,))).reshape(-1, 3).sum(0),
            rtol=1e-6,
        )
        np.testing.assert_allclose(g2, g, rtol=1e-6)
        assert np.asarray(value).dtype == np.asarray(np.sum(x * c)).dtype, c
