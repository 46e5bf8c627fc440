"""The eager tape: EagerTensor, Tape, backward, forward mode, higher order, checkpoints."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax


def close(actual: Any, expected: Any, tol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


# ---------------------------------------------------------------------- spec §6.5 numbers


def test_backward_accumulates_across_calls():
    x = tf.EagerTensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = tf.sum(x * x)
    loss.backward(retain_graph=True)  # mul saved x: the second pass needs it
    loss.backward()
    close(x.grad, [4, 8, 12])
    y = tf.EagerTensor([1.0, 2.0, 3.0], requires_grad=True)
    doubled = tf.sum(y + y)
    doubled.backward()
    doubled.backward()  # add and sum saved nothing: nothing was freed
    close(y.grad, [4, 4, 4])


def test_backward_with_a_seed():
    x = tf.EagerTensor([2.0, 3.0], requires_grad=True)
    (x * x).backward(np.array([1.0, 2.0]))
    close(x.grad, [4, 12])


def test_gradients_of_a_product_accumulate_per_leaf():
    x = tf.EagerTensor([1.0, 2.0], requires_grad=True)
    y = tf.EagerTensor([3.0, 4.0], requires_grad=True)
    tf.sum(x * y).backward()
    close(x.grad, [3, 4])
    close(y.grad, [1, 2])
    tf.sum(x * y).backward()
    close(x.grad, [6, 8])
    x.zero_grad()
    assert x.grad is None
    assert y.grad is not None


def test_functional_gradients_leave_grad_untouched():
    tape = tf.Tape()
    x = tape.track([1.0, 2.0])
    loss = tf.sum(tf.exp(x))
    close(tape.grad(loss, x), np.exp([1.0, 2.0]))
    close(tape.vjp(tf.exp(x), x, np.array([1.0, -1.0])), np.exp([1.0, 2.0]) * [1, -1])
    assert x.grad is None


# ---------------------------------------------------------------------- graph structure


def test_fan_out_and_unused_branches():
    tape = tf.Tape()
    x = tape.track(np.array([0.5, -1.0]))
    a = tf.sin(x)
    loss = tf.sum(a * a + a * x + tf.cos(x))
    unused = tf.exp(x)  # recorded but not on the path of loss
    expected = (
        2 * np.sin(x.numpy()) * np.cos(x.numpy())
        + (np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy()))
        - np.sin(x.numpy())
    )
    close(tape.grad(loss, x), expected)
    assert unused.requires_grad


def test_multi_output_operations():
    def _sincos_jvp(xs: Any, ys: Any, ts: Any) -> Any:
        s, c = ys
        return [lax.mul(ts[0], c), lax.neg(lax.mul(ts[0], s))]

    sincos = tf.extension.define(
        "eager.sincos",
        infer=lambda x: [x, x],
        impl=lambda x: (np.sin(x), np.cos(x)),
        jvp=_sincos_jvp,
    )
    tape = tf.Tape()
    x = tape.track(np.array([0.3, 1.2]))
    s, c = sincos(x)
    first = tape.grad(tf.sum(s * 2 + c), x, retain_graph=True)  # sincos is differentiated again
    close(first, 2 * np.cos([0.3, 1.2]) - np.sin([0.3, 1.2]))
    close(tape.grad(tf.sum(c), x), -np.sin([0.3, 1.2]))  # only one output seeded


def test_detach_and_no_grad_cut_explicitly():
    tape = tf.Tape()
    x = tape.track(np.array([1.0, 2.0]))
    y = x * x
    cut = y.detach()
    assert not cut.requires_grad
    assert cut.is_leaf
    close(tape.grad(tf.sum(cut * x), x), [1, 4])  # d/dx (c * x) with c fixed
    with tf.no_grad():
        z = x * 3
    assert not z.requires_grad
    with pytest.raises(tf.TenferroError, match="backward"):
        tf.sum(z).backward()
    assert tf.is_grad_enabled()
    decorated = tf.no_grad()(lambda v: v * 2)
    assert not decorated(x).requires_grad


def test_mixing_with_tensors_arrays_and_scalars():
    tape = tf.Tape()
    x = tape.track(np.array([1.0, 2.0]))
    y = tf.sum(x * tf.asarray([3.0, 4.0]) + np.array([1.0, 1.0]) * 2 + 5)
    assert isinstance(y, tf.EagerTensor)
    close(tape.grad(y, x), [3, 4])
    assert type(np.exp(x)) is tf.EagerTensor  # numpy ufuncs dispatch to tenferro


def test_data_dependent_slice_lengths():
    """A loop that picks a slice length from concrete values, like a truncated SVD rank."""
    tape = tf.Tape()
    x = tape.track(np.array([3.0, 2.5, 0.4, 2.2, 0.1, 1.5]))
    values = x
    total = tf.zeros(())
    for _ in range(3):
        keep = int(np.sum(np.asarray(values) > 1.0))  # a concrete decision
        values = values[:keep]
        total = total + tf.sum(values**2)
        values = values * 0.5
    gradient = np.asarray(tape.grad(total, x))

    def plain(v: np.ndarray[Any, Any]) -> float:
        out = 0.0
        for _ in range(3):
            keep = int(np.sum(v > 1.0))
            v = v[:keep]
            out += float(np.sum(v**2))
            v = v * 0.5
        return out

    x0 = np.asarray(x)
    fd = np.array([(plain(x0 + 1e-6 * e) - plain(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(len(x0))])
    close(gradient, fd, tol=1e-6)


# ---------------------------------------------------------------------- complex, higher order


def test_complex_gradients_follow_the_conjugate_convention():
    tape = tf.Tape()
    z = tape.track(np.array([1.0 + 2.0j, -0.5 + 0.3j]))
    close(tape.grad(tf.sum(tf.abs(z) ** 2), z), 2 * z.numpy())
    close(tape.grad(tf.sum(tf.real(tf.exp(z))), z), np.conj(np.exp(z.numpy())))
    real = tape.track(np.array([0.3, -1.2]))
    gradient = tape.grad(tf.sum(tf.real(tf.exp(real * 1j))), real)
    assert gradient.dtype == np.float64
    close(gradient, -np.sin(real.numpy()))


def test_forward_mode():
    tape = tf.Tape()
    out, tangent = tape.jvp(lambda v: tf.sin(v) * v, [np.array([0.5, 1.0])], [np.ones(2)])
    x = np.array([0.5, 1.0])
    close(out, np.sin(x) * x)
    close(tangent, np.cos(x) * x + np.sin(x))
    y = tape.track(x)
    w = tf.exp(y)
    close(tape.push_forward(w, y, np.array([1.0, 0.0])), [np.exp(0.5), 0.0])


def test_hvp_forward_over_reverse_and_reverse_over_reverse_against_finite_differences():
    def f(v: Any) -> Any:
        return tf.sum(tf.exp(v[:-1] * v[1:])) + tf.sum(tf.sin(v) ** 3)

    x, v = np.array([0.2, -0.4, 0.9]), np.array([1.0, 0.5, -2.0])
    tape = tf.Tape()
    forward_over_reverse = np.asarray(tape.hvp(f, [x], [v]))
    leaf = tape.track(x)
    gradient = tape.grad(f(leaf), leaf, create_graph=True)
    reverse_over_reverse = np.asarray(tape.grad(tf.vdot(tf.asarray(v), gradient), leaf))
    close(forward_over_reverse, reverse_over_reverse, 1e-12)

    def grad_at(point: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        t = tf.Tape()
        p = t.track(point)
        return np.asarray(t.grad(f(p), p))

    fd = (grad_at(x + 1e-6 * v) - grad_at(x - 1e-6 * v)) / 2e-6
    close(forward_over_reverse, fd, 1e-6)
    close(forward_over_reverse, tf.hvp(f, (x,), (v,)), 1e-12)  # and traced mode


def test_third_order_by_repeated_backward():
    tape = tf.Tape()
    x = tape.track(np.array(0.4))
    d1 = tape.grad(tf.exp(tf.sin(x)), x, create_graph=True)
    d2 = tape.grad(d1, x, create_graph=True)
    d3 = tape.grad(d2, x)
    s, c = np.sin(0.4), np.cos(0.4)
    close(d3, (c**3 - 3 * s * c - c) * np.exp(s))


# ---------------------------------------------------------------------- checkpoint


def _segment(v: Any) -> Any:
    for _ in range(8):
        v = tf.sin(v) * 1.01
    return v


def test_checkpointed_segments_have_the_same_derivatives():
    x0 = np.linspace(0.1, 1.0, 5)
    tape = tf.Tape()
    x = tape.track(x0)
    y = tf.checkpoint(_segment)(tf.checkpoint(_segment)(x))
    g = tape.grad(tf.sum(y**2), x)
    plain_tape = tf.Tape()
    xp = plain_tape.track(x0)
    expected = plain_tape.grad(tf.sum(_segment(_segment(xp)) ** 2), xp)
    close(g, expected)
    hv = tape.hvp(lambda v: tf.sum(tf.checkpoint(_segment)(v) ** 2), [x0], [np.ones(5)])
    close(hv, tf.hvp(lambda v: tf.sum(_segment(v) ** 2), (x0,), (np.ones(5),)), 1e-10)


@pytest.mark.slow
def test_checkpoint_frees_intermediates():
    big = np.linspace(0.0, 1.0, 200_000)

    def retained_after_forward(use_checkpoint: bool) -> int:
        gc.collect()
        tracemalloc.start()
        tape = tf.Tape()
        x = tape.track(big)
        run = tf.checkpoint(_segment) if use_checkpoint else _segment
        y = x
        for _ in range(4):
            y = run(y)
        loss = tf.sum(y)
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        gradients.append(np.asarray(tape.grad(loss, x)))
        return current

    gradients: list[np.ndarray[Any, Any]] = []
    without = retained_after_forward(False)
    with_checkpoints = retained_after_forward(True)
    close(gradients[1], gradients[0])
    # 32 recorded sin/mul nodes keep ~32 arrays of 1.6 MB without checkpoints; the
    # four segments keep their inputs and outputs only.
    assert with_checkpoints < without / 4, (with_checkpoints, without)


# ---------------------------------------------------------------------- errors


def test_bad_input():
    tape = tf.Tape()
    x = tape.track(np.array([1.0, 2.0]))
    y = x * 2
    with pytest.raises(tf.NonScalarError, match=r"\(2,\)"):
        y.backward()
    with pytest.raises(tf.ShapeError, match="seed"):
        y.backward(np.ones(3))
    with pytest.raises(tf.DTypeError, match="seed"):
        y.backward(np.ones(2, np.float32))
    other = tf.Tape().track(np.array([1.0, 2.0]))
    with pytest.raises(tf.TenferroError, match="different tapes"):
        x + other
    with pytest.raises(tf.TenferroError, match="not tracked by this tape"):
        tape.grad(tf.sum(y), other)
    with pytest.raises(tf.TenferroError, match="not tracked by this tape"):
        tape.grad(tf.sum(y), tf.EagerTensor([1.0, 2.0]))
    with pytest.raises(tf.TenferroError, match="does not require grad"):
        tf.EagerTensor([1.0]).backward()
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 3.0
    with pytest.raises(tf.DTypeError, match="int64"):
        tf.EagerTensor([1, 2], requires_grad=True)
    with pytest.raises(tf.TenferroError, match="traced"):
        tf.traced(np.ones(2)) + x
    with pytest.raises(tf.TenferroError, match="traced transform"):
        tf.grad(lambda t: tf.sum(t * t))(x)
    close(tf.grad(lambda t: tf.sum(t * t))(x.detach()), [2, 4])
    with pytest.raises(tf.TenferroError, match="gradient for a float64\\[2\\]"):
        x.grad = np.ones(3)
    with pytest.raises(tf.DTypeError, match="tangent 0 is complex128"):
        tape.push_forward(y, x, np.ones(2, complex))  # would drop the imaginary part
    with pytest.raises(tf.ShapeError, match="tangent 0 has shape"):
        tape.push_forward(y, x, np.ones(3))
    close(tape.grad(tf.sum(y), x), [2, 2])  # nothing was corrupted


def test_missing_rules_raise_in_backward_not_when_recording():
    opaque = tf.extension.define("eager.opaque", infer=lambda x: x, impl=lambda x: x * 2)
    tape = tf.Tape()
    x = tape.track(np.array([1.0]))
    y = opaque(x)  # recording works: the rule is needed only to differentiate
    from tidu import ADRuleError

    with pytest.raises(ADRuleError, match=r"eager\.opaque"):
        tape.grad(tf.sum(y), x)


# ---------------------------------------------------------------------- scale


@pytest.mark.slow
def test_a_100k_op_tape():
    tape = tf.Tape()
    x = tape.track(np.array(0.7))
    y = x
    for _ in range(50_000):
        y = tf.sin(y) * 0.999
    value, derivative = 0.7, 1.0
    for _ in range(50_000):
        derivative *= np.cos(value) * 0.999
        value = np.sin(value) * 0.999
    close(y, value, 1e-9)
    close(tape.grad(y, x), derivative, 1e-9)


_X3 = np.array([0.3, -0.8, 1.1])


def test_grad_accumulates_across_graphs_and_zero_grad_resets() -> None:
    z = _X3 + 1j * _X3[::-1]
    x = tf.EagerTensor(z, requires_grad=True)
    tf.sum(tf.abs(x) ** 2).backward()
    tf.sum(tf.real(tf.exp(x))).backward()
    np.testing.assert_allclose(x.grad, 2 * z + np.conj(np.exp(z)), rtol=1e-14)
    x.zero_grad()
    assert x.grad is None
    tf.sum(tf.real(x * (1 + 2j))).backward()
    np.testing.assert_allclose(x.grad, np.full(3, 1 - 2j), rtol=1e-15)  # conj(f'), design §3.2


def test_create_graph_gradients_differentiate_again_with_backward() -> None:
    x = tf.EagerTensor(_X3, requires_grad=True)
    g = x.tape.grad(tf.sum(x**3), x, create_graph=True)
    tf.sum(g * g).backward()
    np.testing.assert_allclose(x.grad, 36 * _X3**3, rtol=1e-13)
