"""Review campaign (session 20): the eager tape's fast paths and PyTorch semantics.

Tracked leaves (``tf.EagerTensor(x, requires_grad=True)``, ``tape.track``), the direct
lane for basic index tuples (ints, numpy ints, slices with negative steps and
out-of-range bounds, ``None``, ``Ellipsis``), backward called twice, ``retain_graph``,
``.grad`` accumulation, ``inputs=``, ``detach``, in-place operators, seeds, against
numpy (the gradient of ``Σ w·x[idx]`` is ``w`` scattered at ``idx``) and PyTorch's
documented behaviour.
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from tenferro_support import plain

import tenferro as tf

X = np.array([0.3, -0.8, 1.1])


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


@settings(max_examples=25, deadline=None, derandomize=True)
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
            np.testing.assert_array_equal(plain(leaf[index]), x[index])
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
    leaf = tf.EagerTensor(X, requires_grad=True)
    with pytest.raises(tf.IndexingError):
        leaf[index]
    tf.sum(leaf[1:] * 2.0).backward()
    np.testing.assert_array_equal(leaf.grad, [0.0, 2.0, 2.0])


def test_backward_twice_with_retain_graph_accumulates_each_seed() -> None:
    s1, s2 = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])
    x = tf.EagerTensor(X, requires_grad=True)
    y = tf.sin(x) * x
    y.backward(s1, retain_graph=True)
    y.backward(s2)
    np.testing.assert_allclose(x.grad, (np.cos(X) * X + np.sin(X)) * (s1 + s2), rtol=1e-14)
    with pytest.raises(tf.ReleasedGraphError):
        y.backward(s1)


def test_grad_accumulates_across_graphs_and_zero_grad_resets() -> None:
    z = X + 1j * X[::-1]
    x = tf.EagerTensor(z, requires_grad=True)
    tf.sum(tf.abs(x) ** 2).backward()
    tf.sum(tf.real(tf.exp(x))).backward()
    np.testing.assert_allclose(x.grad, 2 * z + np.conj(np.exp(z)), rtol=1e-14)
    x.zero_grad()
    assert x.grad is None
    tf.sum(tf.real(x * (1 + 2j))).backward()
    np.testing.assert_allclose(x.grad, np.full(3, 1 - 2j), rtol=1e-15)  # conj(f'), design §3.2


def test_inputs_restricts_accumulation_and_passes_may_alternate() -> None:
    x = tf.EagerTensor(X, requires_grad=True)
    w = tf.EagerTensor(X + 1, requires_grad=True)
    loss = tf.sum(x * w)
    loss.backward(inputs=[x], retain_graph=True)
    assert w.grad is None
    loss.backward(inputs=[w])
    np.testing.assert_allclose(x.grad, X + 1, rtol=1e-15)
    np.testing.assert_allclose(w.grad, X, rtol=1e-15)


def test_create_graph_gradients_differentiate_again_with_backward() -> None:
    x = tf.EagerTensor(X, requires_grad=True)
    g = x.tape.grad(tf.sum(x**3), x, create_graph=True)
    tf.sum(g * g).backward()
    np.testing.assert_allclose(x.grad, 36 * X**3, rtol=1e-13)


def test_leaf_values_are_copies_and_gradients_read_only() -> None:
    source = X.copy()
    x = tf.EagerTensor(source, requires_grad=True)
    loss = tf.sum(tf.sin(x))
    source[0] = 5.0  # does not reach the saved values
    loss.backward()
    np.testing.assert_allclose(x.grad, np.cos(X), rtol=1e-15)
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(x.grad)[0] = 1.0


def test_detach_and_no_grad_cut_the_graph() -> None:
    x = tf.EagerTensor(X, requires_grad=True)
    y = (x * x).detach()
    assert not y.requires_grad
    assert y.is_leaf
    tf.sum(y * x).backward()
    np.testing.assert_allclose(x.grad, X * X, rtol=1e-15)
    with tf.no_grad():
        z = x * 2
    assert not z.requires_grad
    with pytest.raises(tf.TenferroError, match="backward"):
        z.backward()


def test_in_place_operators_and_seeds() -> None:
    x = tf.EagerTensor(X, requires_grad=True)
    with pytest.raises(tf.InPlaceError):
        x += 1
    y = x * 1
    y += x  # rebinding a non-leaf is an ordinary add
    tf.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])
    x = tf.EagerTensor(X, requires_grad=True)
    with pytest.raises(tf.NonScalarError):
        (x * 2).backward()
    with pytest.raises(tf.ShapeError):
        (x * 2).backward(np.ones(4))
    with pytest.raises(tf.DTypeError):
        (x * 2).backward(np.ones(3, np.float32))
    with pytest.raises(tf.DTypeError):
        tf.EagerTensor(np.arange(3), requires_grad=True)
    with pytest.raises(tf.TenferroError, match="float32"):
        x.grad = np.ones(3, np.float32)
