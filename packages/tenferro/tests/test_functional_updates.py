"""``x.at[index].set/add/subtract/multiply/divide/power/min/max/apply/get`` (JAX's functional
updates): for random index expressions of every form ``x[index]`` takes (integers,
slices with steps, ``None``, ``...``, integer arrays with repeats and negative entries,
boolean masks, tensors of every kind as indices), every operation equals numpy's
unbuffered ``ufunc.at`` (``set``: the last of repeated positions wins) on every tensor
kind, never changes ``x``, and is differentiable in ``x`` and in the values (finite
differences and the adjoint identity, real and complex)."""

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

SHAPE = (4, 3)

NUMPY_AT: dict[str, Callable[..., Any] | None] = {
    "set": None,
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "power": np.power,
    "min": np.minimum,
    "max": np.maximum,
}


@st.composite
def indices(draw: Any) -> Any:
    """An index expression for a (4, 3) array."""
    form = draw(
        st.sampled_from(["int", "slice", "pair", "array", "arrays", "mask", "mixed", "ellipsis"])
    )
    ints = st.integers(-4, 3)
    if form == "int":
        return draw(ints)
    if form == "slice":
        step = draw(st.sampled_from([None, 1, 2, -1, -2]))
        return slice(draw(st.none() | ints), draw(st.none() | ints), step)
    if form == "pair":
        return (draw(ints), draw(st.integers(-3, 2)))
    if form == "array":
        return draw(st.lists(ints, min_size=0, max_size=5))
    if form == "arrays":
        count = draw(st.integers(1, 4))
        rows = draw(st.lists(ints, min_size=count, max_size=count))
        cols = draw(st.lists(st.integers(-3, 2), min_size=count, max_size=count))
        return (np.array(rows), np.array(cols))
    if form == "mask":
        return np.array(draw(st.lists(st.booleans(), min_size=12, max_size=12))).reshape(SHAPE)
    if form == "mixed":
        return (slice(None, None, -1), draw(st.lists(st.integers(-3, 2), min_size=1, max_size=3)))
    return (Ellipsis, None, draw(st.integers(-3, 2)))


def _expected(op: str, x: np.ndarray[Any, Any], index: Any, v: np.ndarray[Any, Any]) -> Any:
    positions = np.arange(x.size).reshape(x.shape)[index].reshape(-1)
    flat = x.copy().reshape(-1)
    updates = np.broadcast_to(v, np.shape(x[index])).reshape(-1)
    ufunc = NUMPY_AT[op]
    if ufunc is None:
        flat[positions] = updates  # numpy's fancy assignment: the last repeat wins
    else:
        ufunc.at(flat, positions, updates)
    return flat.reshape(x.shape)


KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.tensor(a, requires_grad=True),
    "TracedTensor": tf.traced,
}


@fuzz_settings(120)
@given(
    index=indices(),
    op=st.sampled_from(sorted(NUMPY_AT)),
    kind=st.sampled_from(sorted(KINDS)),
    seed=st.integers(0, 999),
)
def test_updates_equal_numpys_ufunc_at_for_every_index_form(
    index: Any, op: str, kind: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, SHAPE)
    selected = np.shape(x[index])
    values = rng.uniform(0.5, 2.0, selected[-1:] if selected and seed % 2 else selected)
    tensor = KINDS[kind](x)
    result = getattr(tensor.at[index], op)(values)
    assert type(result) is type(tensor)
    np.testing.assert_allclose(plain(result), _expected(op, x, index, values), rtol=1e-12)
    np.testing.assert_array_equal(plain(tensor), x)  # x itself is unchanged
    np.testing.assert_array_equal(plain(tensor.at[index].get()), x[index])


@fuzz_settings(40)
@given(
    index=indices(),
    op=st.sampled_from(["set", "add", "multiply", "max", "apply"]),
    dtype=st.sampled_from([np.float64, np.complex128]),
)
def test_updates_are_differentiable_in_the_tensor_and_the_values(
    index: Any, op: str, dtype: Any
) -> None:
    if op == "max" and dtype == np.complex128:
        dtype = np.float64
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 2.0, SHAPE).astype(dtype)
    values = rng.uniform(0.6, 1.9, np.shape(x[index])).astype(dtype)
    if dtype == np.complex128:
        x = x + 0.5j * rng.uniform(0.5, 2.0, SHAPE)
        values = values - 0.25j

    def update(a: Any, v: Any) -> Any:
        if op == "apply":
            return a.at[index].apply(lambda e: e * e * v.sum())
        return getattr(a.at[index], op)(v)

    tf.testing.check_grads(update, [x, values], order=1)


def test_traced_index_tensors_get_set_and_add() -> None:
    x = np.arange(5.0)

    def set_at(a: Any, i: Any) -> Any:
        return a.at[i].set(a[0] * 10)

    i = np.array([3, 1, 3])
    np.testing.assert_allclose(tf.jit(set_at)(x, i), [0.0, 0.0, 2.0, 0.0, 4.0])
    np.testing.assert_allclose(tf.jit(lambda a, i: a.at[i].add(1.0))(x, i), [0, 2, 2, 5, 4])
    gradient = tf.grad(lambda a, i: tf.sum(set_at(a, i) ** 2))(x, i)
    np.testing.assert_allclose(gradient, [0.0, 0.0, 4.0, 0.0, 8.0])
    with pytest.raises(tf.UnsupportedError, match="only get, set and add"):
        tf.jit(lambda a, i: a.at[i].multiply(2.0))(x, i)


def test_a_whole_mask_with_a_scalar_is_a_select_for_traced_masks_too() -> None:
    x = np.array([[1.0, -2.0], [3.0, -4.0]])
    for op, expected in (("set", [[1, 0], [3, 0]]), ("max", [[1, -1], [3, -1]])):
        value = -1.0 if op == "max" else 0.0
        got = tf.jit(lambda a, op=op, value=value: getattr(a.at[a < 0], op)(value))(x)
        np.testing.assert_allclose(got, expected)


def test_bad_updates_raise_named_errors() -> None:
    x = tf.Tensor(np.ones(3))
    with pytest.raises(tf.IndexingError):
        x.at[5].set(1.0)
    with pytest.raises(tf.ShapeError):
        x.at[:2].set(np.ones(3))
    with pytest.raises(tf.DTypeError, match="complex128 values into a float64"):
        x.at[0].set(1j)
    with pytest.raises(tf.UnsupportedError, match="needs a function"):
        x.at[0].apply(3)
    with pytest.raises(TypeError, match=r"x\.at\[index\]\.set"):
        x[0] = 1.0
