"""Bad input to the transforms and traced values is rejected at the call with a tenferro
error naming the operation and the offending value (issue 8, items 10, 11, 14), and
traced values pickle."""

from __future__ import annotations

import collections
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.errors import ArgumentTypeError, BindingError, ShapeError, TenferroError

Pair = collections.namedtuple("Pair", "a b")


def square_sum(x: Any) -> Any:
    return tf.sum(x * x)


# ---------------------------------------------------------------------- creation time

NOT_CALLABLE = [42, "f", None, np.ones(2)]


@pytest.mark.parametrize("value", NOT_CALLABLE, ids=repr)
@pytest.mark.parametrize(
    "make",
    [
        lambda v: tf.grad(v),
        lambda v: tf.value_and_grad(v),
        lambda v: tf.jit(v),
        lambda v: tf.vjp(v, np.ones(2)),
        lambda v: tf.jvp(v, (np.ones(2),), (np.ones(2),)),
        lambda v: tf.linearize(v, np.ones(2)),
        lambda v: tf.hvp(v, (np.ones(2),), (np.ones(2),)),
    ],
    ids=["grad", "value_and_grad", "jit", "vjp", "jvp", "linearize", "hvp"],
)
def test_a_non_callable_is_rejected_when_the_transform_is_made(make: Any, value: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="callable") as caught:
        make(value)
    assert repr(value)[:10] in str(caught.value)


@pytest.mark.parametrize("argnums", [1.5, "0", None, True, (0, 1.0), [0, None]], ids=repr)
@pytest.mark.parametrize("transform", [tf.grad, tf.value_and_grad])
def test_bad_argnums_are_rejected_when_the_transform_is_made(transform: Any, argnums: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="argnums") as caught:
        transform(square_sum, argnums=argnums)
    assert repr(argnums) in str(caught.value)


def test_empty_argnums_and_bad_has_aux_are_rejected():
    with pytest.raises(TenferroError, match="argnums"):
        tf.grad(square_sum, argnums=())
    with pytest.raises(ArgumentTypeError, match="has_aux"):
        tf.grad(square_sum, has_aux="yes")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="has_aux"):
        tf.vjp(square_sum, np.ones(2), has_aux=1)  # type: ignore[arg-type]


@given(st.floats(allow_nan=False) | st.text(max_size=3) | st.lists(st.floats(), max_size=2))
def test_argnums_that_are_not_ints_always_raise(argnums: Any) -> None:
    with pytest.raises(TenferroError, match="grad: argnums"):
        tf.grad(square_sum, argnums=argnums)


# ---------------------------------------------------------------------- has_aux outputs


@pytest.mark.parametrize(
    "returned",
    [
        lambda x: tf.sum(x),  # a scalar
        lambda x: x,  # a vector is not a pair
        lambda x: (tf.sum(x), x, x),  # a 3-tuple
        lambda x: (tf.sum(x),),
    ],
    ids=["scalar", "vector", "triple", "single"],
)
def test_has_aux_needs_a_pair(returned: Any) -> None:
    x = np.ones(2)
    for call in (
        lambda: tf.grad(returned, has_aux=True)(x),
        lambda: tf.value_and_grad(returned, has_aux=True)(x),
        lambda: tf.vjp(returned, x, has_aux=True),
        lambda: tf.grad(lambda y: tf.grad(returned, has_aux=True)(y)[0].sum())(x),
    ):
        with pytest.raises(ArgumentTypeError, match="pair"):
            call()


def test_has_aux_pairs_still_work():
    g, aux = tf.grad(lambda x: (tf.sum(x * x), x + 1), has_aux=True)(np.ones(2))
    np.testing.assert_allclose(np.asarray(g), 2.0)
    np.testing.assert_allclose(np.asarray(aux), 2.0)


# ---------------------------------------------------------------------- primals


@pytest.mark.parametrize(
    "call",
    [
        lambda: tf.jvp(square_sum, np.ones(2), np.ones(2)),
        lambda: tf.jvp(square_sum, (np.ones(2),), np.ones(2)),
        lambda: tf.hvp(square_sum, np.ones(2), np.ones(2)),
        lambda: tf.jvp(square_sum, tf.Tensor(np.ones(2)), (np.ones(2),)),
    ],
)
def test_primals_and_tangents_must_be_tuples(call: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="tuple or list"):
        call()


def test_namedtuple_arguments_are_pytree_nodes():
    def f(p: Pair) -> Any:
        return tf.sum(p.a * p.b)

    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    g = tf.grad(f)(Pair(a, b))
    assert isinstance(g, Pair)
    np.testing.assert_allclose(np.asarray(g.a), b)
    np.testing.assert_allclose(np.asarray(g.b), a)
    _, tangent = tf.jvp(f, (Pair(a, b),), (Pair(np.ones(2), np.zeros(2)),))
    np.testing.assert_allclose(float(np.asarray(tangent)), b.sum())
    out = tf.jit(lambda p: Pair(p.b, p.a))(Pair(a, b))
    assert isinstance(out, Pair)
    np.testing.assert_allclose(np.asarray(out.a), b)


# ---------------------------------------------------------------------- traced values


@pytest.mark.parametrize("shape", [(2.5,), (2, 3.0), (-1,), (True,), "ab", 1.5, None], ids=repr)
def test_placeholder_shapes_must_be_non_negative_ints(shape: Any) -> None:
    with pytest.raises(ShapeError, match="placeholder"):
        tf.placeholder(shape)


def test_placeholder_accepts_int_and_numpy_shapes():
    assert tf.placeholder(3).shape == (3,)
    assert tf.placeholder(np.array([2, 3])).shape == (2, 3)


def test_two_placeholders_with_one_name_are_ambiguous():
    a = tf.placeholder((2,), name="x")
    b = tf.placeholder((2,), name="x")
    with pytest.raises(BindingError, match="'x'"):
        (a + b).eval({"x": np.ones(2)})
    with pytest.raises(BindingError, match="'x'"):
        (a + b).eval({a: np.ones(2), b: np.ones(2)})
    np.testing.assert_allclose(np.asarray((a * 2).eval({"x": np.ones(2)})), 2.0)


@pytest.mark.parametrize("method", ["item", "tolist"])
def test_traced_values_have_no_item(method: str) -> None:
    t = tf.traced(np.ones(()))
    with pytest.raises(ArgumentTypeError, match=f"{method}: .*float64"):
        getattr(t * 2, method)()
    with pytest.raises(ArgumentTypeError, match=method):
        tf.grad(lambda x: x * getattr(x, method)())(1.0)


# ---------------------------------------------------------------------- pickling


def test_derived_traced_values_pickle_round_trip():
    x = tf.traced(np.array([0.5, -1.0, 2.0]))
    p = tf.placeholder((3,), name="p")
    y = tf.sin(x) * p + x[1:].sum()
    z = tf.exp(y).checkpoint() * 3
    for value in (y, z, tf.sum(y).grad(x), tf.sum(z).grad(x)):
        restored = pickle.loads(pickle.dumps(value))
        assert restored.shape == value.shape
        assert restored.dtype == value.dtype
        binding = {"p": np.arange(3.0)}
        np.testing.assert_array_equal(
            np.asarray(restored.eval(binding)), np.asarray(value.eval(binding))
        )


def test_a_restored_computation_differentiates_with_respect_to_its_restored_leaf():
    x = tf.traced(np.array([0.5, -1.0]))
    restored_x, restored_y = pickle.loads(pickle.dumps((x, tf.sum(tf.sin(x) * x))))
    gradient = restored_y.grad(restored_x).eval()
    expected = np.cos([0.5, -1.0]) * [0.5, -1.0] + np.sin([0.5, -1.0])
    np.testing.assert_allclose(np.asarray(gradient), expected, rtol=1e-12)


@pytest.mark.slow
def test_deep_traced_values_pickle_without_recursion():
    x = tf.traced(np.zeros(2))
    y = x
    for _ in range(20_000):
        y = y + 1.0
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(y)).eval()), 20_000.0)
