"""Bad input is rejected where it is made, with the operation, phase and offending values.

Traced graphs have concrete shapes, so every shape, axis and dtype mistake is found
while the graph is built (phase ``build``), not when it runs. IEEE special values
are data, never errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro import lax
from tidu import ADRuleError


def kinds(value: Any) -> list[Any]:
    """The same value as a concrete tensor and as a traced leaf."""
    return [tf.asarray(value), tf.traced(value)]


@pytest.mark.parametrize("kind", [0, 1], ids=["Tensor", "TracedTensor"])
@pytest.mark.parametrize(
    ("call", "error", "fragments"),
    [
        (lambda x: tf.transpose(x, (0, 0, 1)), tf.AxisError, ["transpose", "(0, 0, 1)"]),
        (lambda x: tf.transpose(x, (0, 1)), tf.AxisError, ["transpose", "(0, 1)"]),
        (lambda x: tf.sum(x, axis=(0, 0)), tf.AxisError, ["sum", "0"]),
        (lambda x: tf.sum(x, axis=3), tf.AxisError, ["sum", "3"]),
        (lambda x: tf.mean(x, axis=-4), tf.AxisError, ["mean", "-4"]),
        (lambda x: x + tf.ones((2, 4)), tf.ShapeError, ["add", "(2, 3, 4)", "(2, 4)"]),
        (lambda x: tf.reshape(x, (5, 5)), tf.ShapeError, ["reshape", "(2, 3, 4)", "(5, 5)"]),
        (lambda x: tf.reshape(x, (-1, -1)), tf.ShapeError, ["reshape"]),
        (lambda x: x @ tf.ones((3, 2)), tf.ShapeError, ["matmul", "4", "3"]),
        (
            lambda x: lax.dot_general(x, tf.ones((5, 3)), (2,), (0,)),
            tf.ShapeError,
            ["dot_general", "4", "5"],
        ),
        (
            lambda x: lax.dot_general(x, tf.ones((4, 3)), (2,), (0,), (0,), ()),
            tf.ShapeError,
            ["dot_general", "batch"],
        ),
        (lambda x: tf.diagonal(x, axis1=1, axis2=1), tf.AxisError, ["diagonal"]),
        (lambda x: tf.concatenate([x, tf.ones((2, 2, 2))], axis=1), tf.ShapeError, ["concat"]),
        (lambda x: tf.broadcast_to(x, (3, 4)), tf.ShapeError, ["broadcast_to"]),
        (lambda x: x.astype("float16"), tf.DTypeError, ["float16"]),
        (lambda x: tf.maximum(x, x.astype(tf.complex128)), tf.DTypeError, ["maximum"]),
        (lambda x: lax.add(x, x.astype(tf.float32)), tf.DTypeError, ["add", "float32"]),
        (lambda x: lax.compare(x, x, "bigger"), tf.ParameterError, ["compare", "bigger"]),
        (lambda x: x[2], IndexError, ["2"]),
        (lambda x: x[0, 0, 0, 0], IndexError, ["getitem", "too many indices"]),
    ],
)
def test_bad_input_is_reported_at_build_time(kind, call, error, fragments):
    x = kinds(np.ones((2, 3, 4)))[kind]
    with pytest.raises(error) as info:
        call(x)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    if isinstance(info.value, tf.TenferroError):
        assert info.value.phase == "build"
        assert info.value.op in message


@pytest.mark.parametrize("name", ["float16", "uint8", "int8", "complex256", "object", "U3"])
def test_unsupported_dtypes_are_rejected(name):
    with pytest.raises(tf.DTypeError, match="float32, float64, complex64"):
        tf.dtype(name)
    with pytest.raises(tf.DTypeError):
        tf.asarray(np.zeros(3, dtype=name if name != "U3" else "U3"))
    with pytest.raises(tf.DTypeError):
        tf.placeholder((2,), name)


def test_integer_division_by_zero_is_an_execution_error():
    a, b = tf.asarray([4, 5]), tf.asarray([2, 0])
    with pytest.raises(tf.ExecutionError, match="zero") as info:
        tf.floor_divide(a, b)
    assert info.value.phase == "execution"
    with pytest.raises(tf.ExecutionError, match="zero"):
        tf.remainder(a, b)
    traced = tf.traced(np.array([4, 5])) // tf.traced(np.array([2, 0]))
    with pytest.raises(tf.ExecutionError, match="zero"):
        traced.eval()


def test_float_special_values_flow_through():
    with np.errstate(all="raise"):  # tenferro must not trip numpy's floating-point errors
        x = tf.asarray([0.0, -1.0, np.inf, np.nan])
        logs = np.asarray(tf.log(x))
        assert logs[0] == -np.inf
        assert np.isnan(logs[1])
        assert logs[2] == np.inf
        assert np.isnan(np.asarray(x / 0.0)[0])
        traced = tf.log(tf.traced(np.array([0.0, -1.0]))) * 2
        values = np.asarray(traced.eval())
        assert values[0] == -np.inf
        assert np.isnan(values[1])
        gradient = tf.grad(lambda v: tf.sum(tf.sqrt(v)))(np.array([0.0, 4.0]))
        assert np.asarray(gradient)[0] == np.inf
        assert np.asarray(gradient)[1] == 0.25


def test_grad_of_a_non_scalar():
    with pytest.raises(tf.NonScalarError, match=r"\(3,\)"):
        tf.grad(lambda x: x * 2)(np.ones(3))
    x = tf.traced(np.ones(3))
    with pytest.raises(tf.NonScalarError):
        (x * 2).grad(x)


def test_grad_of_a_complex_output_or_integer_input():
    with pytest.raises(tf.DTypeError, match="complex"):
        tf.grad(lambda z: tf.sum(z))(np.ones(2, complex))
    with pytest.raises(tf.DTypeError, match="int"):
        tf.grad(lambda n: tf.sum(n * 1.0))(np.arange(3))


def test_derivative_of_an_unrelated_output():
    x, y = tf.traced(1.0), tf.traced(2.0)
    with pytest.raises(tf.InactiveError, match="does not depend"):
        (y * y).grad(x)
    assert (y * y).grad(x, allow_unused=True) is None
    assert (y * y).jvp(x, tf.asarray(1.0), allow_unused=True) is None


def test_derivatives_are_taken_with_respect_to_leaves_only():
    x = tf.traced(1.0)
    y = x * 2
    with pytest.raises(tf.TenferroError, match="leaf"):
        (y * y).grad(y)


def test_placeholder_binding_errors():
    p = tf.placeholder((2,), tf.float64, name="p")
    y = p * 2
    with pytest.raises(tf.BindingError, match="no binding") as info:
        y.eval()
    assert info.value.phase == "bind"
    with pytest.raises(tf.BindingError, match=r"shape \(3,\)"):
        y.eval({p: np.ones(3)})
    with pytest.raises(tf.BindingError, match="float32"):
        y.eval({p: np.ones(2, np.float32)})
    np.testing.assert_allclose(y.eval({p: np.array([1.0, 2.0])}), [2, 4])  # state intact
    np.testing.assert_allclose(y.eval({"p": np.array([3.0, 4.0])}), [6, 8])


def test_transform_argument_errors():
    f = lambda x: tf.sum(x * x)  # noqa: E731
    with pytest.raises(tf.ShapeError, match="tangent"):
        tf.jvp(f, (np.ones(3),), (np.ones(2),))
    with pytest.raises(tf.TenferroError, match="argnums"):
        tf.grad(f, argnums=3)(np.ones(3))
    _, pullback = tf.vjp(lambda x: x * 2, np.ones(3))
    with pytest.raises(tf.ShapeError, match="cotangent"):
        pullback(np.ones(4))
    np.testing.assert_allclose(pullback(np.ones(3))[0], [2, 2, 2])  # still usable


def test_missing_rules_raise_adruleerror_never_zero():
    family = tf.extension.define("test.no_rules", infer=lambda x: x, impl=lambda x: x * 3)
    with pytest.raises(ADRuleError) as info:
        tf.grad(lambda x: tf.sum(family(x)))(np.ones(2))
    assert info.value.op == "test.no_rules"
    assert info.value.rule == "jvp"
    linear = tf.extension.define(
        "test.linear_without_transpose", infer=lambda x: x, impl=lambda x: x * 3, linear=True
    )
    _, tangent = tf.jvp(lambda x: linear(x), (np.ones(2),), (np.ones(2),))
    np.testing.assert_allclose(tangent, [3, 3])
    with pytest.raises(ADRuleError) as info:
        tf.grad(lambda x: tf.sum(linear(x)))(np.ones(2))
    assert info.value.rule == "transpose"


def test_errors_leave_caches_usable():
    f = tf.jit(lambda x: tf.sum(x, axis=1))
    np.testing.assert_allclose(f(np.ones((2, 3))), [3, 3])
    with pytest.raises(tf.AxisError):
        f(np.ones(3))
    np.testing.assert_allclose(f(np.ones((2, 3))), [3, 3])


# ---------------------------------------------------------------------- properties

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@fuzz_settings(80)
@given(shapes, st.lists(st.integers(-6, 6), max_size=5))
def test_permutations_are_accepted_exactly_when_valid(shape, permutation):
    x = tf.traced(np.zeros(shape))
    ndim = len(shape)
    in_range = all(-ndim <= p < ndim for p in permutation)
    valid = in_range and sorted(p % ndim for p in permutation) == list(range(ndim))
    if valid:  # negative axes count from the end, as in numpy
        expected = np.transpose(np.zeros(shape), permutation).shape
        assert tf.transpose(x, permutation).shape == expected
    else:
        with pytest.raises(tf.AxisError, match="transpose"):
            tf.transpose(x, permutation)


@fuzz_settings(80)
@given(shapes, st.lists(st.integers(-6, 6), max_size=4))
def test_reduction_axes_are_accepted_exactly_when_valid(shape, axes):
    x = tf.asarray(np.ones(shape))
    ndim = len(shape)
    normalized = [a % ndim for a in axes if -ndim <= a < ndim] if ndim else []
    valid = all(-ndim <= a < ndim for a in axes) and len(set(normalized)) == len(axes)
    if valid:
        np.testing.assert_allclose(tf.sum(x, axis=tuple(axes)), np.sum(np.ones(shape), tuple(axes)))
    else:
        with pytest.raises(tf.AxisError, match="sum"):
            tf.sum(x, axis=tuple(axes))


@fuzz_settings(80)
@given(shapes, shapes)
def test_broadcasting_errors_agree_with_numpy(first, second):
    try:
        expected = np.broadcast_shapes(first, second)
    except ValueError:
        expected = None
    a, b = tf.traced(np.zeros(first)), tf.traced(np.zeros(second))
    if expected is None:
        with pytest.raises(tf.ShapeError, match="add"):
            a + b
    else:
        assert (a + b).shape == expected


@fuzz_settings(60)
@given(shapes, shapes)
def test_reshape_requires_the_same_size(shape, target):
    x = tf.asarray(np.zeros(shape))
    if np.prod(shape, dtype=int) == np.prod(target, dtype=int):
        assert tf.reshape(x, target).shape == target
    else:
        with pytest.raises(tf.ShapeError, match="reshape"):
            tf.reshape(x, target)
