"""The tape's reverse-mode contract, as a PyTorch user relies on it.

``Tape.grad`` returns gradients (``torch.autograd.grad``), ``Tape.backward`` and
``EagerTensor.backward`` accumulate into ``.grad`` (``torch.autograd.backward``); an
input the output does not use raises unless ``allow_unused``; leaves reached only
through zero-derivative operations get zeros; no implicit seed for complex outputs;
no silent zero Hessian when ``create_graph`` was forgotten.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf


def close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- seeds


def test_a_complex_scalar_output_needs_a_seed():
    tape = tf.Tape()
    z = tape.track(np.array([1.0 + 2.0j, -0.5j]))
    loss = tf.sum(z * z)
    with pytest.raises(tf.DTypeError, match=r"grad.*real floating output.*complex128"):
        tape.grad(loss, z)
    with pytest.raises(tf.DTypeError, match=r"backward.*complex128"):
        loss.backward()
    assert z.grad is None
    close(tape.grad(loss, z, np.array(1.0 + 0j)), np.conj(2 * np.asarray(z)))


@pytest.mark.parametrize(
    ("output_dtype", "seed"),
    [
        (np.float64, np.array([1.0 + 0j, 2.0])),
        (np.float64, np.array([1.0, 2.0], np.float32)),
        (np.float64, np.array([1, 2])),
        (np.float32, np.array([1.0, 2.0])),
        (np.complex64, np.array([1.0 + 0j, 2.0])),
    ],
)
def test_a_cotangent_of_another_dtype_is_rejected(output_dtype, seed):
    tape = tf.Tape()
    x = tape.track(np.array([1.0, 2.0], output_dtype))
    y = tf.exp(x)
    with pytest.raises(tf.DTypeError, match=r"vjp|grad"):
        tape.vjp(y, x, seed)
    with pytest.raises(tf.DTypeError, match="backward"):
        y.backward(seed)
    assert x.grad is None


# ---------------------------------------------------------------------- unused inputs


def test_an_unused_input_raises_unless_allowed():
    tape = tf.Tape()
    x, w = tape.track([1.0, 2.0]), tape.track([3.0])
    loss = tf.sum(x * x)
    with pytest.raises(tf.InactiveError, match=r"grad: wrt\[1\].*allow_unused"):
        tape.grad(loss, [x, w], retain_graph=True)  # as in PyTorch, the pass ran first
    gx, gw = tape.grad(loss, [x, w], allow_unused=True)
    close(gx, [2.0, 4.0])
    assert gw is None


def test_an_output_computed_without_the_tape_raises_unless_allowed():
    tape = tf.Tape()
    x = tape.track([1.0, 2.0])
    with tf.no_grad():
        loss = tf.sum(x * x)
    with pytest.raises(tf.InactiveError, match="no tracked tensor"):
        tape.grad(loss, x)
    assert tape.grad(loss, x, allow_unused=True) is None


def test_grad_of_grad_without_create_graph_raises_instead_of_a_zero_hessian():
    tape = tf.Tape()
    x = tape.track([1.0, 2.0])
    g = tape.grad(tf.sum(x**3), x)  # detached: create_graph was not given
    with pytest.raises(tf.InactiveError, match="create_graph=True"):
        tape.grad(tf.sum(g), x)
    g = tape.grad(tf.sum(x**3), x, create_graph=True)
    close(tape.grad(tf.sum(g), x), 6 * np.array([1.0, 2.0]))


def test_zero_derivative_paths_give_zeros_not_none():
    for make in (tf.floor, tf.ceil, tf.sign, tf.round):
        x = tf.EagerTensor([0.3, 1.7, -2.2], requires_grad=True)
        tf.sum(make(x)).backward()
        assert x.grad is not None
        close(x.grad, np.zeros(3))
        tape = tf.Tape()
        y = tape.track([0.3, 1.7])
        close(tape.grad(tf.sum(make(y)), y), np.zeros(2))


# ---------------------------------------------------------------------- accumulation


def test_tape_backward_accumulates_like_torch_autograd_backward():
    tape = tf.Tape()
    x, w = tape.track([1.0, 2.0]), tape.track([3.0, -1.0])
    assert tape.backward(tf.sum(x * w)) is None
    close(x.grad, [3.0, -1.0])
    close(w.grad, [1.0, 2.0])
    tape.backward(tf.sum(x * w), inputs=[x])  # only x accumulates
    close(x.grad, [6.0, -2.0])
    close(w.grad, [1.0, 2.0])
    with pytest.raises(tf.TenferroError, match="not a leaf"):
        tape.backward(tf.sum(x * w), inputs=[x * 2])


@given(
    used=st.lists(st.booleans(), min_size=1, max_size=5).filter(any),
    through_floor=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_gradients_of_random_subsets_of_inputs(used, through_floor):
    """The class of the bugs above: for any subset of leaves a loss uses (some only
    through a zero-derivative op), grad raises exactly for the unused ones, allow_unused
    gives None exactly there, and backward gives zeros for floor-only leaves."""
    tape = tf.Tape()
    values = [np.array([0.5 + i, -1.25 * i]) for i in range(len(used))]
    leaves = [tape.track(v) for v in values]
    terms = []
    for i, (leaf, uses) in enumerate(zip(leaves, used, strict=True)):
        if uses:
            terms.append(tf.sum(tf.floor(leaf)) if through_floor[i] else tf.sum(leaf * leaf))
    loss = terms[0]
    for term in terms[1:]:
        loss = loss + term
    grads = tape.grad(loss, leaves, allow_unused=True, retain_graph=True)
    for i, (g, uses) in enumerate(zip(grads, used, strict=True)):
        if not uses:
            assert g is None
        else:
            close(g, np.zeros(2) if through_floor[i] else 2 * values[i])
    if not all(used):
        with pytest.raises(tf.InactiveError):
            tape.grad(loss, leaves, retain_graph=True)
    loss.backward()
    for i, (leaf, uses) in enumerate(zip(leaves, used, strict=True)):
        if not uses:
            assert leaf.grad is None
        else:
            close(leaf.grad, np.zeros(2) if through_floor[i] else 2 * values[i])


def test_backward_to_inputs_runs_only_the_nodes_leading_to_them():
    """As torch.autograd.backward(inputs=...): the other branches neither run nor have
    their saved values freed, so a later pass over them still works."""
    tape = tf.Tape()
    x, w = tape.track([1.0, 2.0]), tape.track([0.5, -1.0])
    loss = tf.sum(x * 3.0) + tf.sum(tf.sin(w))
    tape.backward(loss, inputs=[x])
    close(x.grad, [3.0, 3.0])
    assert w.grad is None
    loss.backward(inputs=w)  # sin's saved input was not freed by the first pass
    close(w.grad, np.cos([0.5, -1.0]))
    close(x.grad, [3.0, 3.0])


def test_backward_with_bad_inputs_frees_nothing():
    tape = tf.Tape()
    x, w = tape.track([1.0, 2.0]), tape.track([3.0, -1.0])
    loss = tf.sum(x * w)
    with pytest.raises(tf.TenferroError, match=r"inputs\[0\] is not a leaf"):
        tape.backward(loss, inputs=[x * 2])
    with pytest.raises(tf.TenferroError, match=r"inputs\[1\] is not tracked"):
        tape.backward(loss, inputs=[x, tf.asarray([1.0, 2.0])])
    assert x.grad is None
    tape.backward(loss, inputs=[x, w])  # the graph is intact: no retain_graph needed
    close(x.grad, [3.0, -1.0])
    close(w.grad, [1.0, 2.0])


@given(
    chosen=st.lists(st.booleans(), min_size=4, max_size=4).filter(any),
    mixing=st.lists(st.integers(0, 3), min_size=3, max_size=3),
)
def test_backward_to_random_inputs_matches_grad(chosen, mixing):
    """The class: for any subset of four leaves feeding a loss through shared and
    separate branches, backward(inputs=subset) accumulates exactly grad's values into
    the subset, leaves the others untouched, and leaves the rest of the graph runnable."""
    tape = tf.Tape()
    values = [np.array([0.3 + i, -0.7 * i]) for i in range(4)]
    leaves = [tape.track(v) for v in values]
    shared = leaves[mixing[0]] * leaves[mixing[1]]
    loss = tf.sum(tf.sin(shared)) + tf.sum(tf.exp(leaves[mixing[2]]))
    for leaf in leaves:
        loss = loss + tf.sum(leaf * leaf)
    expected = tape.grad(loss, leaves, retain_graph=True)
    subset = [leaf for leaf, pick in zip(leaves, chosen, strict=True) if pick]
    tape.backward(loss, inputs=subset)
    for leaf, pick, g in zip(leaves, chosen, expected, strict=True):
        if pick:
            close(leaf.grad, np.asarray(g))
        else:
            assert leaf.grad is None
    rest = [leaf for leaf, pick in zip(leaves, chosen, strict=True) if not pick]
    if rest and not any(chosen[i] for i in set(mixing)):
        tape.backward(loss, inputs=rest)  # branches only the rest use were not freed
        for leaf, pick, g in zip(leaves, chosen, expected, strict=True):
            if not pick:
                close(leaf.grad, np.asarray(g))


@given(picks=st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_backward_inputs_with_repeats_and_unused_leaves(picks):
    """The class of a differential campaign's finds: inputs listed twice accumulate once
    (as torch), and inputs the output does not depend on are refused before the pass
    (nothing freed, nothing accumulated, no advice backward cannot take)."""
    tape = tf.Tape()
    values = [np.array([0.4 + i, -0.9 * i]) for i in range(4)]
    leaves = [tape.track(v) for v in values]
    loss = tf.sum(tf.sin(leaves[0]) * leaves[1]) + tf.sum(leaves[2] ** 2)  # leaf 3 unused
    expected = tape.grad(loss, leaves[:3], retain_graph=True)
    inputs = [leaves[i] for i in picks]
    if 3 in picks:
        with pytest.raises(tf.InactiveError, match=r"inputs\[\d\]") as info:
            tape.backward(loss, inputs=inputs)
        assert "allow_unused" not in str(info.value)
        assert all(leaf.grad is None for leaf in leaves)
        inputs = [leaves[i] for i in picks if i != 3]
        if not inputs:
            return
    tape.backward(loss, inputs=inputs)
    for i, leaf in enumerate(leaves):
        if i in picks and i != 3:
            close(leaf.grad, np.asarray(expected[i]))
        else:
            assert leaf.grad is None


# ---------------------------------------------------------------------- scale and threads


def test_backward_through_an_operation_with_many_tracked_operands():
    tape = tf.Tape()
    leaves = [tape.track([float(i)]) for i in range(150)]
    joined = tf.concatenate(leaves)
    weights = np.arange(150.0)
    tf.sum(joined * weights).backward()
    for i, leaf in enumerate(leaves):
        close(leaf.grad, [weights[i]])
    grads = tape.grad(tf.sum(tf.concatenate(leaves) ** 2), leaves)
    close(np.concatenate([np.asarray(g) for g in grads]), 2 * np.arange(150.0))


def test_zero_grad_while_another_thread_tracks_leaves():
    tape = tf.Tape()
    kept: list[Any] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def track() -> None:
        try:
            for i in range(20000):
                kept.append(tape.track([float(i)]))
        except BaseException as error:
            errors.append(error)
        finally:
            done.set()

    worker = threading.Thread(target=track)
    worker.start()
    try:
        while not done.is_set():
            tape.zero_grad()
    except BaseException as error:
        errors.append(error)
    worker.join()
    assert not errors
    assert len(kept) == 20000


def test_backward_frees_each_cotangent_after_its_last_use():
    """A 240-op chain on 800 kB arrays: backward holds a few cotangents at a time, not
    one per node (it held 183 MiB before intermediate cotangents were freed)."""
    import tracemalloc

    x = tf.EagerTensor(np.ones(100_000), requires_grad=True)
    y = x
    for _ in range(240):
        y = y * 0.99
    tracemalloc.start()
    try:
        tf.sum(y).backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    array_bytes = 100_000 * 8
    assert peak < 6 * array_bytes, f"peak {peak / 2**20:.1f} MiB"
    close(x.grad, np.full(100_000, 0.99**240))
    tape = tf.Tape()
    a = tape.track(np.ones(3))
    b = a * 2.0
    c = b * 3.0
    ga, gb = tape.grad(tf.sum(c), [a, b])  # an intermediate asked for keeps its cotangent
    close(ga, np.full(3, 6.0))
    close(gb, np.full(3, 3.0))


_X3 = np.array([0.3, -0.8, 1.1])


def test_inputs_restricts_accumulation_and_passes_may_alternate() -> None:
    x = tf.EagerTensor(_X3, requires_grad=True)
    w = tf.EagerTensor(_X3 + 1, requires_grad=True)
    loss = tf.sum(x * w)
    loss.backward(inputs=[x], retain_graph=True)
    assert w.grad is None
    loss.backward(inputs=[w])
    np.testing.assert_allclose(x.grad, _X3 + 1, rtol=1e-15)
    np.testing.assert_allclose(w.grad, _X3, rtol=1e-15)
