"""Conversions never drop a derivative silently.

* numpy conversion (``np.asarray``, ``np.array``, ``.numpy()``) of a tracked
  ``EagerTensor`` raises, naming ``detach()`` (as PyTorch's ``.numpy()`` on a tensor
  that requires grad); of a ``TracedTensor`` raises naming what to do instead (as JAX's
  tracer conversion); Python scalar conversions of a traced value raise likewise.
  Untracked tensors convert as before.
* Nested lists and tuples holding traced or tracked values become tensors of their kind
  in every function that takes array-likes (``tf.array``, ``tf.asarray``, ``tf.mean``,
  ``tf.sum``, binary operators ...): values as numpy's, derivatives through every element.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from tenferro_support import plain

import tenferro as tf

NUMPY_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "np.asarray": np.asarray,
    "np.array": np.array,
    "np.asanyarray": np.asanyarray,
    "np.ascontiguousarray": np.ascontiguousarray,
    "numpy": lambda x: x.numpy(),
    "np.testing": lambda x: np.testing.assert_array_equal(x, x),
}


@pytest.mark.parametrize("name", sorted(NUMPY_CONVERSIONS))
def test_numpy_conversion_of_a_tracked_tensor_names_detach(name: str) -> None:
    x = tf.tensor([1.0, -2.0], requires_grad=True)
    for value in (x, x * 2):
        with pytest.raises(tf.ArgumentTypeError, match=r"requires grad.*detach\(\)"):
            NUMPY_CONVERSIONS[name](value)
    np.testing.assert_array_equal(
        NUMPY_CONVERSIONS[name](x.detach()) if name != "np.testing" else x.detach(), [1.0, -2.0]
    )
    np.testing.assert_array_equal(np.asarray(tf.tensor([1.0, -2.0])), [1.0, -2.0])


@pytest.mark.parametrize("name", sorted(set(NUMPY_CONVERSIONS) - {"numpy"}))
def test_numpy_conversion_of_a_traced_tensor_says_what_to_do(name: str) -> None:
    def f(x: Any) -> Any:
        NUMPY_CONVERSIONS[name](x)
        return tf.sum(x)

    for transform in (tf.grad, tf.jit, tf.vmap):
        with pytest.raises(tf.ArgumentTypeError, match="no concrete value while it is traced"):
            transform(f)(np.ones(2))


@pytest.mark.parametrize("convert", [float, int, complex, bool, lambda x: [0, 1][x]])
def test_python_scalar_conversions_of_a_traced_value_raise_named_errors(convert: Any) -> None:
    def f(x: Any) -> Any:
        convert(x)
        return x

    with pytest.raises(TypeError, match="TracedTensor"):
        tf.grad(f)(1.0)


# ---------------------------------------------------------------------- nested lists


def _nested(draw: Any, depth: int, shape: tuple[int, ...]) -> Any:
    """A random nesting of ``shape`` whose leaves are indices into the argument or
    numbers (drawn as ('x', i) or ('n', value))."""
    if not shape:
        if draw(st.booleans()):
            return ("x", draw(st.integers(0, 2)))
        return ("n", draw(st.sampled_from([0.5, -1.0, 2.0])))
    return [_nested(draw, depth + 1, shape[1:]) for _ in range(shape[0])]


@st.composite
def nestings(draw: Any) -> Any:
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    tree = _nested(draw, 0, shape)
    container = draw(st.sampled_from([list, tuple]))
    return shape, tree, container


def _realise(tree: Any, x: Any, container: type) -> Any:
    if isinstance(tree, list):
        return container(_realise(t, x, container) for t in tree)
    kind, value = tree
    return x[value] * (value + 1) if kind == "x" else value


CONSUMERS: dict[str, Callable[[Any], Any]] = {
    "array": lambda data: tf.sum(tf.array(data) ** 2),
    "asarray": lambda data: tf.sum(tf.asarray(data) ** 2),
    "mean": lambda data: tf.mean(data),
    "sum": lambda data: tf.sum(data),
    "multiply": lambda data: tf.sum(tf.multiply(data, data)),
}


@fuzz_settings(40)
@given(case=nestings(), consumer=st.sampled_from(sorted(CONSUMERS)))
def test_nested_lists_of_traced_and_tracked_values_keep_their_derivatives(
    case: Any, consumer: str
) -> None:
    shape, tree, container = case
    x0 = np.array([0.75, -1.25, 2.5])
    consume = CONSUMERS[consumer]

    def loss(x: Any) -> Any:
        return consume(_realise(tree, x, container))

    expected = loss(x0)  # on a numpy array: plain numbers
    step = 1e-6
    numeric = np.array(
        [(float(loss(x0 + step * e)) - float(loss(x0 - step * e))) / (2 * step) for e in np.eye(3)]
    )
    traced = tf.grad(loss)(x0)
    np.testing.assert_allclose(traced, numeric, atol=1e-6)
    leaf = tf.tensor(x0, requires_grad=True)
    value = loss(leaf)
    assert float(value) == pytest.approx(float(expected))
    if any(kind == "x" for kind, _ in _leaves(tree)):
        value.backward()
        np.testing.assert_allclose(leaf.grad, numeric, atol=1e-6)
    assert np.asarray(tf.array(_realise(tree, x0, container))).shape == shape


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, list):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def test_ragged_nested_tensors_raise_a_shape_error_naming_the_shapes() -> None:
    def f(x: Any) -> Any:
        return tf.sum(tf.array([x, x[:1]]))

    with pytest.raises(tf.ShapeError, match=r"array: .*different shapes \[\(1,\), \(2,\)\]"):
        tf.grad(f)(np.ones(2))


def test_the_dtype_argument_converts_the_stacked_tensor() -> None:
    result = tf.jit(lambda x: tf.asarray([x[0], 1.0], dtype=tf.complex64))(np.ones(2))
    assert result.dtype == np.complex64
    np.testing.assert_array_equal(result, [1.0, 1.0])
    assert tf.jit(lambda x: tf.array([x[0], 1]))(np.ones(2, np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    "make",
    [
        tf.asarray,
        lambda a: tf.asarray(a, requires_grad=True),
        tf.tensor,
        lambda a: tf.tensor(a, requires_grad=True),
        tf.Tensor,
        tf.EagerTensor,
        tf.array,
    ],
)
def test_conversions_from_numpy_copy_the_data_as_documented(make):
    """The docs say ``tf.asarray`` (and every constructor) copies: a later change to the
    numpy array is not seen by the tensor (only ``tf.from_dlpack(a, copy=False)``
    shares, read-only)."""
    source = np.array([1.0, 2.0])
    made = make(source)
    source[0] = 99.0
    assert plain(made).tolist() == [1.0, 2.0]
