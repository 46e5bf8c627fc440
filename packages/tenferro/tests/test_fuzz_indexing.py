"""numpy indexing, differentially: random index expressions against numpy itself.

Expressions mix integers (Python, numpy and 0-d arrays), slices with any start, stop
and (negative) step, ``None``, ``...``, integer arrays (lists, numpy arrays, tensors,
traced tensors), boolean masks of any rank and scalar booleans, on tensors of rank 0
to 4 with empty axes. For each expression the value on every tensor kind equals
numpy's, an expression numpy rejects is rejected with a tenferro error of the same
builtin class, and the derivatives (gradient in traced mode and on the eager tape, and
a JVP in both) equal the exact ones: indexing is a selection, so its transpose adds the
cotangent back at the selected positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.errors import IndexingError, TenferroError

# ---------------------------------------------------------------------- the instances


def _x() -> np.ndarray[Any, Any]:
    return np.arange(12.0).reshape(4, 3)


INSTANCES = [
    (np.array([[0, 1], [2, 3]]), None),
    (0, Ellipsis, [0, 1]),
    True,
    False,
    np.bool_(True),
    (slice(None), True),
    ([0, 1], True),
    (0, Ellipsis, True),
    ([1, 2], slice(None), True),
    (None, [0, 2], None),
    ([[0], [3]], [0, 2]),
    (Ellipsis, None, [2, 0]),
]


@pytest.mark.parametrize("index", INSTANCES, ids=repr)
@pytest.mark.parametrize("kind", ["tensor", "eager", "traced"])
def test_instances_match_numpy(index, kind):
    x = _x()
    expected = x[index]
    result = _run(kind, x, index)
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


def test_advanced_index_then_none_keeps_numpy_placement_in_a_sum():
    x = _x()
    index = (np.array([[0, 1], [2, 3]]), None)
    expected = np.sum(x[index] * np.arange(3.0))
    np.testing.assert_array_equal(
        np.asarray(tf.sum(tf.Tensor(x)[index] * np.arange(3.0))), expected
    )


@pytest.mark.parametrize("kind", ["tensor", "eager", "traced"])
@pytest.mark.parametrize(
    "mask",
    [np.array([True, False, True]), np.ones((4, 2), bool), [True] * 5, np.ones((2, 3), bool)],
    ids=["short", "2d-narrow", "long-list", "2d-short"],
)
def test_boolean_mask_of_the_wrong_length_raises(kind, mask):
    with pytest.raises(IndexError):
        _x()[mask]
    with pytest.raises(IndexingError, match="boolean index did not match"):
        _run(kind, _x(), mask)


# ---------------------------------------------------------------------- running an index


def _wrap(index: Any, kind: str, traced_arrays: bool) -> Any:
    """The index for one tensor kind: integer arrays become tensors of that kind sometimes."""
    if not traced_arrays or kind != "traced":
        return index
    items = index if isinstance(index, tuple) else (index,)
    wrapped = tuple(
        tf.traced(item)
        if isinstance(item, np.ndarray) and item.dtype.kind == "i" and item.ndim > 0
        else item
        for item in items
    )
    return wrapped if isinstance(index, tuple) else wrapped[0]


def _run(kind: str, x: np.ndarray[Any, Any], index: Any, traced_arrays: bool = False) -> Any:
    index = _wrap(index, kind, traced_arrays)
    if kind == "tensor":
        return np.asarray(tf.Tensor(x)[index])
    if kind == "eager":
        return np.asarray(tf.EagerTensor(x)[index])
    return np.asarray(tf.traced(x)[index].eval())


# ---------------------------------------------------------------------- random expressions


@st.composite
def _int_array(draw: Any, extent: int, batch: tuple[int, ...]) -> Any:
    # A shape that broadcasts to ``batch``: a suffix of it with some extents set to 1.
    suffix = batch[draw(st.integers(0, len(batch))) :]
    shape = tuple(n if draw(st.booleans()) else 1 for n in suffix)
    low, high = (-extent, extent - 1) if extent else (-1, 0)
    values = draw(
        st.lists(st.integers(low, high), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))
    )
    array = np.asarray(values, dtype=np.int64).reshape(shape)
    form = draw(st.sampled_from(["array", "list", "tensor", "int32"]))
    if form == "list":
        return array.tolist()
    if form == "tensor":
        return tf.Tensor(array)
    if form == "int32":
        return array.astype(np.int32)
    return array


@st.composite
def _integer(draw: Any, extent: int) -> Any:
    low, high = (-extent, extent - 1) if extent else (-1, 0)
    value = draw(st.integers(low, high))
    form = draw(st.sampled_from(["int", "np", "0d"]))
    return value if form == "int" else np.int64(value) if form == "np" else np.array(value)


@st.composite
def _slice(draw: Any, extent: int) -> Any:
    bound = st.none() | st.integers(-extent - 2, extent + 2)
    step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
    return slice(draw(bound), draw(bound), step)


@st.composite
def index_problems(draw: Any) -> tuple[np.ndarray[Any, Any], Any]:
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 4, 2, 3, 0])) for _ in range(rank))
    dtype = draw(st.sampled_from([np.float64, np.float32, np.complex128, np.complex64]))
    size = int(np.prod(shape))
    x = (np.arange(size) + 1).astype(dtype).reshape(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * (np.arange(size).reshape(shape) % 3)
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n_items = draw(st.integers(0, 5))
    has_ellipsis = draw(st.booleans())
    ellipsis_at = draw(st.integers(0, n_items)) if has_ellipsis else -1
    # Items in order; the ones that index axes take them from the front, except that
    # with an ellipsis the items after it index the last axes.
    kinds = [
        draw(
            st.sampled_from(
                ["int", "slice", "slice", "none", "array", "array", "mask", "bool", "extra"]
            )
        )
        for _ in range(n_items)
    ]
    consumed = []
    budget = rank
    for kind in kinds:
        if kind == "mask":
            take = draw(st.integers(1, 2)) if budget else 0
            take = min(take, budget)
        elif kind in ("int", "slice", "array"):
            take = 1 if budget else 0
        else:
            take = 0
        budget -= take
        consumed.append(take)
    # Axis positions: before the ellipsis count from the front, after it from the back.
    front = [sum(consumed[:i]) for i in range(len(kinds))]
    after_ellipsis = consumed[ellipsis_at:] if has_ellipsis else []
    back_start = rank - sum(after_ellipsis)
    items: list[Any] = []
    for i, (kind, take) in enumerate(zip(kinds, consumed, strict=True)):
        if i == ellipsis_at:
            items.append(Ellipsis)
        axis = (
            front[i]
            if not has_ellipsis or i < ellipsis_at
            else back_start + sum(consumed[ellipsis_at:i])
        )
        extent = shape[axis] if take and axis < rank else 0
        if kind in ("int", "slice", "array") and not take:
            kind = "none"
        if kind == "mask" and not take:
            kind = "bool"
        if kind == "int":
            items.append(draw(_integer(extent)))
        elif kind == "slice":
            items.append(draw(_slice(extent)))
        elif kind == "none":
            items.append(None)
        elif kind == "array":
            items.append(draw(_int_array(extent, batch)))
        elif kind == "mask":
            mask_shape = list(shape[axis : axis + take])
            if draw(st.integers(0, 9)) == 0:  # sometimes the wrong length: numpy raises
                mask_shape[-1] += 1
            bits = draw(
                st.lists(
                    st.booleans(),
                    min_size=int(np.prod(mask_shape)),
                    max_size=int(np.prod(mask_shape)),
                )
            )
            mask = np.asarray(bits, dtype=bool).reshape(mask_shape)
            items.append(mask.tolist() if draw(st.booleans()) and mask.ndim == 1 else mask)
        elif kind == "bool":
            items.append(draw(st.sampled_from([True, False, np.bool_(True), np.array(False)])))
        else:  # an integer beyond the last axis: numpy raises "too many indices"
            items.append(0)
    if ellipsis_at == len(kinds):
        items.append(Ellipsis)
    index = items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)
    return x, index


def _numpy(x: np.ndarray[Any, Any], index: Any) -> tuple[Any, BaseException | None]:
    plain = _to_numpy_index(index)
    try:
        return x[plain], None
    except Exception as error:
        return None, error


def _to_numpy_index(index: Any) -> Any:
    items = index if isinstance(index, tuple) else (index,)
    converted = tuple(np.asarray(i) if isinstance(i, tf.Tensor) else i for i in items)
    return converted if isinstance(index, tuple) else converted[0]


def _selection_gradient(
    x: np.ndarray[Any, Any], index: Any, weights: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """The exact gradient of ``Re <w, x[index]>``: each weight added where it was read."""
    ids = np.arange(x.size).reshape(x.shape)[_to_numpy_index(index)]
    flat = np.zeros(x.size, dtype=x.dtype)
    np.add.at(flat, ids.reshape(-1), weights.reshape(-1))
    return flat.reshape(x.shape)


@fuzz_settings(150)
@given(problem=index_problems(), traced_arrays=st.booleans())
def test_random_index_expressions_match_numpy(problem, traced_arrays):
    x, index = problem
    expected, error = _numpy(x, index)
    for kind in ("tensor", "eager", "traced"):
        if error is not None:
            if kind == "traced" and traced_arrays and "out of bounds" in str(error):
                continue  # traced index values are unknown when indexing: they are clamped
            with pytest.raises(TenferroError) as caught:
                _run(kind, x, index, traced_arrays)
            for builtin in (IndexError, ValueError, TypeError):
                if isinstance(error, builtin):
                    assert isinstance(caught.value, builtin), (caught.value, error)
            continue
        result = _run(kind, x, index, traced_arrays)
        assert result.shape == expected.shape, (kind, index)
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(result, expected)


@fuzz_settings(60)
@given(problem=index_problems(), traced_arrays=st.booleans())
def test_random_index_expressions_differentiate_exactly(problem, traced_arrays):
    x, index = problem
    expected, error = _numpy(x, index)
    if error is not None:
        return
    rng = np.random.default_rng(x.size)
    weights = rng.standard_normal(expected.shape).astype(x.dtype)
    if x.dtype.kind == "c":
        weights = weights + 1j * rng.standard_normal(expected.shape).astype(x.dtype)
    direction = rng.standard_normal(x.shape).astype(x.dtype)
    exact = _selection_gradient(x, index, weights)
    tol = 1e-6 if x.dtype in (np.float32, np.complex64) else 1e-13

    def loss(v: Any) -> Any:
        return tf.sum(
            tf.real(tf.conj(tf.asarray(weights)) * v[_wrap(index, "traced", traced_arrays)])
        )

    def eager_loss(v: Any) -> Any:
        return tf.sum(tf.real(tf.conj(tf.asarray(weights)) * v[index]))

    np.testing.assert_allclose(np.asarray(tf.grad(loss)(x)), exact, rtol=tol, atol=tol)
    tape = tf.Tape()
    leaf = tape.track(x)
    (eager,) = tape.grad(eager_loss(leaf), [leaf], allow_unused=True)
    eager = np.zeros_like(x) if eager is None else eager
    np.testing.assert_allclose(np.asarray(eager), exact, rtol=tol, atol=tol)

    def select(v: Any) -> Any:
        return v[_wrap(index, "traced", traced_arrays)]

    _, tangent = tf.jvp(select, (x,), (direction,))
    np.testing.assert_allclose(np.asarray(tangent), direction[_to_numpy_index(index)], rtol=tol)
    _, eager_tangent = tf.Tape().jvp(lambda v: v[index], [x], [direction])
    np.testing.assert_allclose(
        np.asarray(eager_tangent), direction[_to_numpy_index(index)], rtol=tol
    )


# ---------------------------------------------------------------------- take


@pytest.mark.parametrize(
    "indices", [np.array([True, False, True]), [True, False, True], True], ids=repr
)
def test_take_with_boolean_indices_is_numpy_take_or_refused(indices: Any) -> None:
    v = np.arange(3.0)
    try:
        got = np.asarray(tf.take(v, indices))
    except TenferroError:
        return
    np.testing.assert_array_equal(got, np.take(v, indices))


@fuzz_settings(60)
@given(
    st.integers(1, 4),
    st.one_of(
        st.lists(st.booleans(), max_size=5), st.lists(st.integers(-3, 2), min_size=1, max_size=5)
    ),
    st.sampled_from([None, 0, 1, -1]),
    st.booleans(),
)
def test_take_matches_numpy_take_for_integer_and_boolean_indices(
    rows: int, picks: list[Any], axis: int | None, as_array: bool
) -> None:
    x = np.arange(3.0 * rows).reshape(rows, 3)
    indices = np.asarray(picks, dtype=bool if picks and isinstance(picks[0], bool) else np.int64)
    given_indices = indices if as_array else picks
    extent = x.size if axis is None else x.shape[axis]
    if indices.size and not -extent <= indices.astype(np.int64).min() <= indices.max() < extent:
        with pytest.raises(TenferroError):
            tf.take(x, given_indices, axis=axis)
        return
    expected = np.take(x, indices, axis=axis)
    np.testing.assert_array_equal(np.asarray(tf.take(x, given_indices, axis=axis)), expected)
