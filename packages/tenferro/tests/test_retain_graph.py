"""``retain_graph``: a reverse pass frees each node's saved values once it has used them
(PyTorch's default), so a second pass through the same nodes raises a clear
``tf.ReleasedGraphError`` instead of reading freed values; ``retain_graph=True`` keeps
them, ``create_graph=True`` keeps them by default, and forward mode over a freed graph
is refused the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

X = np.array([0.3, -0.8, 1.1])


def _leaf(tape: tf.Tape | None = None) -> tf.EagerTensor:
    return (tape or tf.Tape()).track(X)


def test_a_second_backward_through_a_freed_graph_names_the_operation():
    x = tf.EagerTensor(X, requires_grad=True)
    loss = tf.sum(tf.sin(x))
    loss.backward()
    first = x.grad
    with pytest.raises(tf.ReleasedGraphError, match=r"'sin'.*retain_graph=True") as caught:
        loss.backward()
    assert caught.value.op == "backward"
    assert isinstance(caught.value, RuntimeError)
    assert x.grad is first  # nothing accumulated by the refused pass
    np.testing.assert_allclose(first, np.cos(X), rtol=1e-15)


def test_retain_graph_allows_more_passes_and_the_last_one_frees():
    x = tf.EagerTensor(X, requires_grad=True)
    loss = tf.sum(tf.sin(x) * x)
    loss.backward(retain_graph=True)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad, 3 * (np.cos(X) * X + np.sin(X)), rtol=1e-14)
    with pytest.raises(tf.ReleasedGraphError, match="'mul'"):
        loss.backward()


@pytest.mark.parametrize("method", ["grad", "vjp", "backward"])
def test_every_reverse_entry_point_frees_by_default(method: str):
    tape = tf.Tape()
    x = _leaf(tape)
    y = tf.exp(x) * 2.0
    seed = np.ones(3)

    def run(**kwargs: Any) -> Any:
        if method == "grad":
            return tape.grad(y, x, seed, **kwargs)
        if method == "vjp":
            return tape.vjp(y, x, seed, **kwargs)
        return tape.backward(y, seed, **kwargs)

    run(retain_graph=True)
    run()
    with pytest.raises(tf.ReleasedGraphError, match=f"^{method if method != 'vjp' else 'grad'}:"):
        run()


def test_create_graph_retains_by_default_and_can_free():
    tape = tf.Tape()
    x = _leaf(tape)
    y = tf.sum(tf.sin(x) ** 3)
    g = tape.grad(y, x, create_graph=True)
    np.testing.assert_allclose(tape.grad(y, x), g.detach(), rtol=1e-14)  # still retained
    tape2 = tf.Tape()
    x2 = _leaf(tape2)
    y2 = tf.sum(tf.sin(x2) ** 3)
    g2 = tape2.grad(y2, x2, create_graph=True, retain_graph=False)
    np.testing.assert_allclose(g2.detach(), g.detach(), rtol=1e-15)
    with pytest.raises(tf.ReleasedGraphError):
        tape2.grad(y2, x2)
    with pytest.raises(tf.ReleasedGraphError):  # as in PyTorch: g2's graph reaches them too
        tape2.grad(tf.sum(g2), x2)


def test_forward_mode_over_a_freed_graph_is_refused():
    tape = tf.Tape()
    x = _leaf(tape)
    y = tf.tanh(x) * x
    tape.grad(tf.sum(y), x)
    with pytest.raises(tf.ReleasedGraphError, match=r"^jvp: .*'tanh'|^jvp: .*'mul'"):
        tape.push_forward(y, x, np.ones(3))


def test_operations_that_saved_nothing_stay_differentiable():
    tape = tf.Tape()
    x = _leaf(tape)
    y = tf.sum(x + x - 3.0)  # add, sub, sum: their derivatives read no primal value
    first = tape.grad(y, x)
    np.testing.assert_array_equal(tape.grad(y, x), first)
    np.testing.assert_array_equal(first, np.full(3, 2.0))


def test_hvp_and_higher_order_keep_working():
    tape = tf.Tape()
    got = tape.hvp(lambda t: tf.sum(tf.sin(t) * t), [X], [np.ones(3)])
    np.testing.assert_allclose(got, 2 * np.cos(X) - X * np.sin(X), rtol=1e-13)
    x = _leaf(tape)
    g = tape.grad(tf.sum(tf.exp(x) ** 2), x, create_graph=True)
    h = tape.grad(tf.sum(g), x, create_graph=True)
    np.testing.assert_allclose(tape.grad(tf.sum(h), x), 8 * np.exp(2 * X), rtol=1e-13)


def test_a_freed_checkpointed_segment_is_named():
    tape = tf.Tape()
    x = _leaf(tape)

    def segment(v: Any) -> Any:
        return tf.cos(tf.sin(v) * 2.0)

    y = tf.sum(tf.checkpoint(segment)(x))
    expected = tape.grad(y, x, retain_graph=True)
    np.testing.assert_allclose(tape.grad(y, x), expected, rtol=1e-15)
    with pytest.raises(tf.ReleasedGraphError, match="recorded segment of"):
        tape.grad(y, x)


_UNARY: list[Callable[[Any], Any]] = [tf.sin, tf.tanh, tf.exp, lambda v: v * 0.5, lambda v: v + 1.0]


@fuzz_settings(25)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, len(_UNARY) - 1), st.integers(0, 8), st.booleans()),
        min_size=1,
        max_size=8,
    )
)
def test_freeing_never_changes_a_gradient(steps: list[tuple[int, int, bool]]):
    """Random branching graphs: the freeing pass gives the retaining pass's gradient, and
    a third pass either raises or (when no node it runs saved a value) agrees again."""
    tape = tf.Tape()
    x = _leaf(tape)
    values = [x]
    for op, source, binary in steps:
        a = _UNARY[op](values[source % len(values)])
        values.append(a * values[(source + 1) % len(values)] if binary else a)
    y = tf.sum(values[-1]) + tf.sum(values[len(values) // 2])
    retained = tape.grad(y, x, retain_graph=True)
    np.testing.assert_array_equal(tape.grad(y, x), retained)
    op, _, binary = steps[-1]
    if binary or op != 4:  # the last node is on every path and saved a value
        with pytest.raises(tf.ReleasedGraphError):
            tape.grad(y, x)
    else:
        try:
            again = tape.grad(y, x)
        except tf.ReleasedGraphError:
            return
        np.testing.assert_array_equal(again, retained)


def test_the_gradient_of_an_intermediate_runs_and_frees_nothing_below_it():
    tape = tf.Tape()
    x = _leaf(tape)
    h = tf.sin(x) * x  # below the target: neither run nor freed
    y = tf.exp(h)
    loss = tf.sum(y * y)
    np.testing.assert_allclose(tape.grad(loss, y), 2 * np.exp(np.sin(X) * X), rtol=1e-14)
    with pytest.raises(tf.ReleasedGraphError, match="'mul'"):
        tape.grad(loss, y)  # the nodes above y were freed
    np.testing.assert_allclose(  # those below it were not
        tape.grad(tf.sum(h), x), np.cos(X) * X + np.sin(X), rtol=1e-14
    )
    # a target below another still gets its gradient through the nodes between them
    tape2 = tf.Tape()
    x2 = _leaf(tape2)
    h2 = tf.sin(x2) * x2
    y2 = tf.exp(h2)
    gy, gh, gx = tape2.grad(tf.sum(y2 * y2), [y2, h2, x2])
    np.testing.assert_allclose(gh, gy * np.exp(np.sin(X) * X), rtol=1e-14)
    np.testing.assert_allclose(gx, gh * (np.cos(X) * X + np.sin(X)), rtol=1e-14)


def test_backward_twice_with_retain_graph_accumulates_each_seed() -> None:
    s1, s2 = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])
    x = tf.EagerTensor(X, requires_grad=True)
    y = tf.sin(x) * x
    y.backward(s1, retain_graph=True)
    y.backward(s2)
    np.testing.assert_allclose(x.grad, (np.cos(X) * X + np.sin(X)) * (s1 + s2), rtol=1e-14)
    with pytest.raises(tf.ReleasedGraphError):
        y.backward(s1)
