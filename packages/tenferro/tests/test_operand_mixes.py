"""Every binary function accepts any mix of tensors, numpy arrays and scalars, lists and
Python scalars, also inside transforms (issue 8, item 8: ``tf.add(np.array([1., 2.]),
1.0)`` and ``tf.add(1.0, 2.0)`` used to fail with ``AttributeError: ... 'meta'``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

BINARY = [
    "add",
    "subtract",
    "multiply",
    "true_divide",
    "divide",
    "power",
    "maximum",
    "minimum",
    "hypot",
    "logaddexp",
    "floor_divide",
    "remainder",
    "fmod",
    "equal",
    "not_equal",
    "less",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
]
FORMS = [
    "Tensor",
    "EagerTensor",
    "TracedTensor",
    "ndarray",
    "numpy scalar",
    "list",
    "python scalar",
]
SCALAR_FORMS = {"numpy scalar", "python scalar"}


def form(data: np.ndarray[Any, Any], kind: str) -> Any:
    """``data`` (float64) in the given form; the scalar forms take its first element."""
    if kind == "Tensor":
        return tf.asarray(data)
    if kind == "EagerTensor":
        return tf.EagerTensor(data, requires_grad=True)
    if kind == "TracedTensor":
        return tf.traced(data)
    if kind == "ndarray":
        return data
    if kind == "list":
        return data.tolist()
    if kind == "numpy scalar":
        return np.float64(data.flat[0])
    return float(data.flat[0])


def reference(data: np.ndarray[Any, Any], kind: str) -> Any:
    """What numpy sees for the same form (a Python scalar stays a Python scalar)."""
    if kind in SCALAR_FORMS:
        return form(data, kind)
    return data


def value(result: Any) -> np.ndarray[Any, Any]:
    return np.asarray(result.eval() if isinstance(result, tf.TracedTensor) else result)


def numpy_function(name: str) -> Any:
    return getattr(np, name)


@fuzz_settings(300)
@given(
    st.sampled_from(BINARY),
    st.sampled_from(FORMS),
    st.sampled_from(FORMS),
    st.integers(0, 2**16),
)
def test_binary_functions_accept_every_operand_form(name, first, second, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0.5, 2.0, 3), rng.uniform(0.5, 2.0, 3)
    if {first, second} == {"EagerTensor", "TracedTensor"}:
        # a tracked eager tensor would lose its gradient in a graph: refused, by name
        with pytest.raises(tf.TenferroError, match=r"^traced: a tracked EagerTensor"):
            getattr(tf, name)(form(x, first), form(y, second))
        return
    result = getattr(tf, name)(form(x, first), form(y, second))
    expected = numpy_function(name)(reference(x, first), reference(y, second))
    np.testing.assert_allclose(value(result), expected, rtol=1e-12)
    assert value(result).shape == np.shape(expected)
    if first not in SCALAR_FORMS or second not in SCALAR_FORMS:
        assert value(result).dtype == np.asarray(expected).dtype
    kinds = {first, second} & {"Tensor", "EagerTensor", "TracedTensor"}
    ranked = ["TracedTensor", "EagerTensor", "Tensor"]
    expected_kind = next((k for k in ranked if k in kinds), "Tensor")
    assert type(result).__name__ == expected_kind


@fuzz_settings(120)
@given(
    st.sampled_from(["add", "subtract", "multiply", "true_divide", "power", "hypot", "maximum"]),
    st.sampled_from(["ndarray", "numpy scalar", "list", "python scalar", "Tensor"]),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_non_tensor_operands_inside_transforms(name, kind, constant_first, seed):
    """The constant operand may take any form under tf.grad, on the tape and traced; the
    gradient is the one with the constant given as a tensor."""
    rng = np.random.default_rng(seed)
    w, c = rng.uniform(0.5, 2.0, 3), rng.uniform(0.5, 2.0, 3)
    function = getattr(tf, name)

    def loss_with(constant: Any) -> Any:
        def loss(v: Any) -> Any:
            pair = (constant, v) if constant_first else (v, constant)
            return tf.sum(function(*pair))

        return loss

    expected = np.asarray(tf.grad(loss_with(tf.asarray(reference(c, kind))))(w))
    np.testing.assert_allclose(tf.grad(loss_with(form(c, kind)))(w), expected, rtol=1e-12)
    leaf = tf.EagerTensor(w, requires_grad=True)
    loss_with(form(c, kind))(leaf).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), expected, rtol=1e-12)
    traced = tf.traced(w)
    np.testing.assert_allclose(
        value(loss_with(form(c, kind))(traced).grad(traced)), expected, rtol=1e-12
    )


def test_the_issue_instances():
    np.testing.assert_array_equal(tf.add(np.array([1.0, 2.0]), 1.0), [2.0, 3.0])
    three = tf.add(1.0, 2.0)
    assert float(three) == 3.0
    assert type(three) is tf.Tensor
    assert tf.add(1, 2).dtype == np.int64
    assert tf.multiply(np.float32(2.0), [1.0, 2.0]).dtype == np.float64
    assert tf.add(np.array([1.0], np.float32), 1.0).dtype == np.float32  # NEP 50
    g = tf.grad(lambda w: tf.sum(tf.add(np.array([1.0, 2.0]), 1.0) * w))(np.ones(2))
    np.testing.assert_array_equal(g, [2.0, 3.0])


@pytest.mark.parametrize("junk", ["text", None, object(), {"a": 1}])
def test_non_numeric_operands_are_named(junk):
    with pytest.raises(tf.DTypeError, match=r"^add: "):
        tf.add(junk, 1.0)
    with pytest.raises(tf.DTypeError, match=r"^add: "):
        tf.add(np.ones(2), junk)


def test_namedtuples_are_sequences_to_the_surface_as_to_numpy():
    """A namedtuple of values is a sequence, as numpy reads it (the transforms treat
    namedtuples as pytree nodes; the numpy-style surface follows numpy)."""
    from collections import namedtuple

    Pair = namedtuple("Pair", "first second")
    pair = Pair(np.array([1.0, 2.0]), np.array([3.0]))
    np.testing.assert_array_equal(tf.concatenate(pair), np.concatenate(pair))
    np.testing.assert_array_equal(tf.asarray(Pair(1.0, 2.0)), np.asarray(Pair(1.0, 2.0)))
    np.testing.assert_array_equal(tf.add(Pair(1.0, 2.0), 1), np.add(Pair(1.0, 2.0), 1))
    leaf = tf.EagerTensor(np.array([1.0, 2.0]), requires_grad=True)
    tf.sum(tf.stack(Pair(leaf, leaf * 3.0)) ** 2).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), 2 * leaf.numpy() * 10)


def test_tracking_a_tracked_tensor_is_refused_and_changes_nothing():
    tape = tf.Tape()
    leaf = tape.track(np.array([1.0, 2.0]))
    for again in (lambda: tape.track(leaf), lambda: tf.Tape().track(leaf)):
        with pytest.raises(tf.TenferroError, match=r"^track: .*already tracked"):
            again()
    with pytest.raises(tf.TenferroError, match=r"^track: .*already tracked"):
        tf.EagerTensor(leaf, requires_grad=True)
    fresh = tape.track(leaf.detach())  # the documented way: a new leaf from its value
    tf.sum(leaf * fresh).backward()
    np.testing.assert_array_equal(np.asarray(leaf.grad), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(fresh.grad), [1.0, 2.0])
