"""The W4 fast paths agree with the general ones.

* a tracked leaf made from an ndarray (``EagerTensor(a, requires_grad=True)``) equals
  the one the general path makes (an explicit tape), value, meta, key kind and errors;
* basic index tuples (``x[:, None]``, ``x[1, ..., ::2]``) take the dispatch cache's
  direct lane: values equal numpy's at every call, lookalike items (``True``, ``1.0``,
  numpy integers) never share an entry with ints, and gradients equal traced mode;
* backward passes that reuse the executor's memo of node runners give the gradients
  of the first pass bit for bit, and after ``tf.clear_caches()``.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given

import tenferro as tf
from tenferro.eager.tape import default_tape

LEAF_DTYPES = [
    np.float64,
    np.float32,
    np.complex128,
    np.complex64,
    np.int64,
    np.int32,
    np.bool_,
    np.float16,
    np.dtype(">f8"),
]


def _outcome(make: Any) -> Any:
    try:
        return make()
    except Exception as error:  # the error itself is what is compared
        return error


@fuzz_settings(30)
@given(
    dtype=st.sampled_from(LEAF_DTYPES),
    shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
    seed=st.integers(0, 2**16),
)
def test_leaf_fast_path_equals_general_path(dtype: Any, shape: Any, seed: int) -> None:
    data = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)
    fast = _outcome(lambda: tf.EagerTensor(data, requires_grad=True))
    general = _outcome(lambda: tf.EagerTensor(data, requires_grad=True, tape=default_tape()))
    assert type(fast) is type(general)
    if isinstance(general, Exception):
        assert str(fast) == str(general)
        return
    assert fast.meta == general.meta
    assert fast.meta.weak is False
    np.testing.assert_array_equal(np.asarray(fast), data)
    assert not fast._value.flags.writeable
    assert fast._value is not data  # a copy, as the general path makes
    assert fast.requires_grad
    assert fast.is_leaf
    assert fast.tape is general.tape
    assert type(fast.key) is type(general.key)
    assert fast.key != general.key
    tf.real(fast * 2).sum().backward()
    np.testing.assert_array_equal(np.asarray(fast.grad), np.full(shape, 2, data.dtype))


_SLICE_BOUND = st.one_of(st.none(), st.integers(-4, 4))
_ITEM = st.one_of(
    st.integers(-2, 1),
    st.none(),
    st.just(Ellipsis),
    st.builds(slice, _SLICE_BOUND, _SLICE_BOUND, st.sampled_from([None, 1, 2, -1, -2])),
    # lookalikes: never the same key as the int they equal
    st.sampled_from([True, False, np.int64(1), slice(None, np.int64(2)), slice(True, None)]),
)


@fuzz_settings(30)
@given(index=st.lists(_ITEM, min_size=1, max_size=4).map(tuple), seed=st.integers(0, 99))
def test_basic_index_tuples_equal_numpy_at_every_call(index: Any, seed: int) -> None:
    data = np.random.default_rng(seed).standard_normal((3, 4, 2))
    expected = _outcome(lambda: data[index])
    x = tf.EagerTensor(data, requires_grad=True)
    for _ in range(3):  # the first call records; the next ones take the direct lane
        got = _outcome(lambda: x[index])
        if isinstance(expected, Exception):
            assert isinstance(got, Exception), f"{index!r} gave {got!r}, numpy raised"
            continue
        assert not isinstance(got, Exception), f"{index!r} raised {got!r}"
        assert got.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(got), expected)
    if isinstance(expected, Exception) or not expected.size:
        return
    weights = np.random.default_rng(seed + 1).standard_normal(expected.shape)
    (x[index] * weights).sum().backward()
    traced = tf.grad(lambda v: tf.sum(v[index] * weights))(data)
    np.testing.assert_array_equal(np.asarray(x.grad), np.asarray(traced))


def test_index_lookalikes_keep_their_own_entries() -> None:
    x = tf.EagerTensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    for _ in range(2):
        a = np.asarray(x)
        for index in [(slice(None), None), (True, 1), (1, True), (1, 1), (Ellipsis, None)]:
            np.testing.assert_array_equal(np.asarray(x[index]), a[index])
            assert x[index].shape == a[index].shape
        with pytest.raises(tf.errors.IndexingError):
            x[1.0, None]


def _sweep(leaves: list[Any]) -> Any:
    total = None
    carry = leaves[0]
    for core in leaves[1:]:
        left, d, right = carry.shape
        _, s, vh = tf.linalg.truncated_svd(tf.reshape(carry, (left * d, right)), max_rank=3)
        term = tf.sum(s)
        total = term if total is None else total + term
        rest = tf.matmul(s[:, None] * vh, tf.reshape(core, (right, -1)))
        carry = tf.reshape(rest, (s.shape[0], core.shape[1], core.shape[2]))
    return total


@fuzz_settings(4)
@given(seed=st.integers(0, 2**16), chi=st.integers(2, 5))
def test_backward_memo_gives_the_first_pass_gradients(seed: int, chi: int) -> None:
    rng = np.random.default_rng(seed)
    cores = [rng.standard_normal((1 if i == 0 else chi, 2, chi)) for i in range(4)]

    def grads() -> list[Any]:
        leaves = [tf.EagerTensor(c, requires_grad=True) for c in cores]
        _sweep(leaves).backward()
        return [None if t.grad is None else np.asarray(t.grad) for t in leaves]

    tf.clear_caches()
    first = grads()
    for again in (grads(), grads()):  # the executor's memo now serves every node
        for a, b in zip(first, again, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)
    tape = tf.Tape()  # a fresh tape: its executor's memo is empty (the general path)
    fresh = [tape.track(c) for c in cores[:3]] + [tf.EagerTensor(cores[3])]
    reference = tape.grad(_sweep(fresh), fresh[:3])
    for a, b in zip(first, reference, strict=False):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-12)
    assert default_tape()._plain.backward_memo  # the memo was used
    tf.clear_caches()
    assert not default_tape()._plain.backward_memo  # registered: emptied with the caches
    again = grads()
    for a, b in zip(first, again, strict=True):
        if a is not None:
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ gradients of the direct lane


_X3 = np.array([0.3, -0.8, 1.1])


def _index(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    parts: list[Any] = []
    axis, ellipsis = 0, False
    while axis < len(shape):
        n, c = shape[axis], rng.random()
        if c < 0.2 and n > 0:
            parts.append(int(rng.integers(-n, n)))
            axis += 1
        elif c < 0.3:
            parts.append(None)
        elif c < 0.37 and not ellipsis:
            parts.append(Ellipsis)
            ellipsis = True
            axis = len(shape) - int(rng.integers(0, len(shape) - axis + 1))
        elif c < 0.45 and n > 0:
            parts.append(np.int64(rng.integers(-n, n)))
            axis += 1
        else:
            step = int(rng.choice([1, 2, 3, -1, -2, -3])) if rng.random() < 0.8 else None
            start = int(rng.integers(-n - 2, n + 3)) if rng.random() < 0.7 else None
            stop = int(rng.integers(-n - 2, n + 3)) if rng.random() < 0.7 else None
            parts.append(slice(start, stop, step))
            axis += 1
    if rng.random() < 0.2:
        parts.append(None)
    if len(parts) == 1 and rng.random() < 0.5:
        return parts[0]
    return tuple(parts)


@fuzz_settings(25)
@given(st.integers(0, 2**32 - 1))
def test_basic_indexing_gradients_scatter_the_weights(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for trial in range(4):
        shape = tuple(int(n) for n in rng.integers(0, 5, int(rng.integers(0, 4))))
        dt = [np.float64, np.complex128, np.float32][trial % 3]
        x = rng.standard_normal(shape) + (
            1j * rng.standard_normal(shape) if dt == np.complex128 else 0
        )
        x = np.asarray(x).astype(dt)
        index = _index(rng, shape)
        w = np.asarray(rng.standard_normal(x[index].shape)).astype(
            np.float32 if dt == np.float32 else np.float64
        )
        expected = np.zeros(shape, dtype=dt)
        expected[index] = w  # basic indexing selects each position at most once
        tol = 1e-5 if dt == np.float32 else 1e-12

        def loss(t: Any, index: Any = index, w: Any = w) -> Any:
            y = t[index] * w
            return tf.sum(tf.real(y)) if np.dtype(y.dtype).kind == "c" else tf.sum(y)

        for repeat in range(2):  # the second pass meets the lanes' memos
            leaf = tf.EagerTensor(x, requires_grad=True)
            np.testing.assert_array_equal(leaf[index], x[index])
            loss(leaf).backward()
            tape = tf.Tape()
            tracked = tape.track(x)
            for got, what in [
                (leaf.grad, "leaf"),
                (tape.grad(loss(tracked), tracked), "tape"),
                (tf.grad(loss)(x), "tf.grad"),
            ]:
                got = np.asarray(got)
                assert got.dtype == np.dtype(dt), (what, index)
                np.testing.assert_allclose(
                    got, expected, atol=tol, err_msg=f"{what} {shape} {index} {repeat}"
                )


@pytest.mark.parametrize(
    "index",
    [3, -4, (0, 0), (Ellipsis, Ellipsis), 1.0, "a", slice(None, None, 0), (np.array([0, 3]),)],
    ids=repr,
)
def test_bad_indices_raise_tenferro_errors_and_change_nothing(index: Any) -> None:
    leaf = tf.EagerTensor(_X3, requires_grad=True)
    with pytest.raises(tf.IndexingError):
        leaf[index]
    tf.sum(leaf[1:] * 2.0).backward()
    np.testing.assert_array_equal(leaf.grad, [0.0, 2.0, 2.0])


def test_leaf_values_are_copies_and_gradients_read_only() -> None:
    source = _X3.copy()
    x = tf.EagerTensor(source, requires_grad=True)
    loss = tf.sum(tf.sin(x))
    source[0] = 5.0  # does not reach the saved values
    loss.backward()
    np.testing.assert_allclose(x.grad, np.cos(_X3), rtol=1e-15)
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(x.grad)[0] = 1.0
