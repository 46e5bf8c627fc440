"""s22 review, area 2: retraces that answer from the traced keys' memos
(computegraph.memo, traced/tensor.py's operator lanes and bind memos) give exactly
what a fresh evaluation gives.

The transforms other than ``jit`` never freeze captured values, so a function whose
closure changes between calls is retraced each time and meets the keys (and memos) of
the previous trace. Checked against the eager tape of the same function: values,
dtypes and signed zeros, for captured Python numbers, numpy scalars, 0-d arrays and
tensors of the same value, weak and strong dtypes, -0.0 and 0.0, nan, arguments of
alternating dtypes and shapes, ``tf.clear_caches()`` between calls, a deep graph, and
that no memo keeps a user's array alive. No memo bug was found.

A bug this review found in a neighbouring cache is fixed and tested here: ``jit``'s
cache compared static arguments by ``==``, so ``2`` and ``2.0`` (and ``0.0`` and ``-0.0``)
shared a trace.
"""

from __future__ import annotations

import gc
import itertools
import weakref
from typing import Any

import numpy as np
import pytest

import tenferro as tf

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


def test_jit_static_arguments_of_equal_value_and_other_type_trace_anew() -> None:
    x = np.array([1, 2])
    scaled = tf.jit(lambda v, n: v * n, static_argnums=1)
    assert scaled(x, 2).dtype == np.int64
    assert scaled(x, 2.0).dtype == np.float64
    inverse = tf.jit(lambda v, s: v / s, static_argnums=1)
    assert np.asarray(inverse(np.array([1.0]), 0.0))[0] == np.inf
    assert np.asarray(inverse(np.array([1.0]), -0.0))[0] == -np.inf


# Static values equal by ``==`` that a function may treat differently: by type, by a
# float's sign or NaN, also inside tuples.
_LOOKALIKES = [
    2,
    2.0,
    True,
    1,
    1.0,
    np.float32(2.0),
    np.float64(2.0),
    np.int64(2),
    2 + 0j,
    0.0,
    -0.0,
    np.float64(-0.0),
    float("nan"),
    (0.0,),
    (-0.0,),
    (2,),
    (2.0,),
    ((2, 0.0),),
]


def _static_use(v: Any, s: Any) -> Any:
    """A function whose result shows a static value's type, sign and NaN."""
    items = s if isinstance(s, tuple) else (s,)
    while items and isinstance(items[0], tuple):
        items = items[0]
    out = v
    for item in items:
        out = out * item + 1 / (item if item == item and item != 0 else np.copysign(1.0, item))
    return out


@pytest.mark.parametrize("by_name", [False, True], ids=["argnums", "argnames"])
def test_jit_static_lookalikes_each_match_the_plain_call(by_name: bool) -> None:
    """Every order of the lookalikes through one jit: each call equals the function
    called directly, value (bits) and dtype, so no call reused another's trace."""
    x = np.array([1.5, -2.0], dtype=np.float32)
    jitted = (
        tf.jit(lambda v, s: _static_use(v, s), static_argnames="s")
        if by_name
        else tf.jit(_static_use, static_argnums=1)
    )
    order = list(_LOOKALIKES) + list(reversed(_LOOKALIKES))
    for value in order:
        got = jitted(x, s=value) if by_name else jitted(x, value)
        with np.errstate(all="ignore"):
            expected = np.asarray(_static_use(tf.asarray(x), value))
        got = np.asarray(got)
        assert got.dtype == expected.dtype, value
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(
                np.signbit(part(got)), np.signbit(part(expected)), err_msg=repr(value)
            )
        np.testing.assert_array_equal(got, expected, err_msg=repr(value))
