"""``tf.checkpoint`` on traced values: one segment primitive that recomputes in backward.

Derivatives through checkpointed segments equal the plain ones under every transform
(and to second order, by finite differences and the adjoint identity); the backward
program stores only segment boundaries, so a long chain's peak memory is at least
halved, in traced mode and on the eager tape (tracemalloc, never timing).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.traced.remat import Segment

RNG = np.random.default_rng(3)
X = RNG.standard_normal(5)
V = RNG.standard_normal(5)
M = RNG.standard_normal((5, 5))


def block(v: Any) -> Any:
    for _ in range(3):
        v = tf.tanh(v * 1.1 + 0.2) * tf.exp(v * 0.1)
    return v


def chain(segment: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return tf.sum(segment(segment(x)) ** 2)

    return f


PLAIN = chain(block)
CHECKPOINTED = chain(tf.checkpoint(block))


def close(a: Any, b: Any, rtol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-13)


def test_every_transform_agrees_with_the_plain_function():
    close(tf.grad(CHECKPOINTED)(X), tf.grad(PLAIN)(X))
    close(tf.jit(tf.grad(CHECKPOINTED))(X), tf.grad(PLAIN)(X))
    close(tf.jit(CHECKPOINTED)(X), PLAIN(tf.asarray(X)))
    for got, want in zip(
        tf.value_and_grad(CHECKPOINTED)(X), tf.value_and_grad(PLAIN)(X), strict=True
    ):
        close(got, want)
    for got, want in zip(tf.jvp(CHECKPOINTED, (X,), (V,)), tf.jvp(PLAIN, (X,), (V,)), strict=True):
        close(got, want)
    close(tf.vjp(CHECKPOINTED, X)[1](1.0)[0], tf.vjp(PLAIN, X)[1](1.0)[0])
    value, jvp_fn = tf.linearize(CHECKPOINTED, X)
    close(value, PLAIN(tf.asarray(X)))
    close(jvp_fn(V), tf.jvp(PLAIN, (X,), (V,))[1])
    close(tf.hvp(CHECKPOINTED, (X,), (V,)), tf.hvp(PLAIN, (X,), (V,)), 1e-10)
    third = tf.grad(lambda x: tf.sum(tf.grad(CHECKPOINTED)(x) * V))
    close(third(X), tf.hvp(PLAIN, (X,), (V,)), 1e-10)


def test_traced_leaves_and_the_eval_method():
    x = tf.traced(X)
    y = tf.checkpoint(block)(x)
    close(y.eval(), block(tf.asarray(X)))
    loss = tf.sum(y * y)
    close(loss.grad(x).eval(), tf.grad(lambda v: tf.sum(block(v) ** 2))(X))
    stored = tf.exp(x).checkpoint()  # the method: evaluate now, differentiate through
    close(tf.sum(stored * x).grad(x).eval(), np.exp(X) * (1 + X))


def test_checks_to_second_order_in_both_modes():
    def f(x: Any, w: Any) -> Any:
        h = tf.checkpoint(lambda a, b: tf.sin(b @ a) * a)(x, w)
        return tf.checkpoint(lambda a: tf.sum(tf.exp(a * 0.3)))(h)

    tf.testing.check_grads(f, (X, M), order=2, modes=("fwd", "rev"))


def test_complex_and_single_precision_segments():
    z = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
    w = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))

    def segment(a: Any) -> Any:
        return tf.sin(a) @ w

    def loss(a: Any, run: Callable[[Any], Any]) -> Any:
        return tf.sum(tf.abs(run(a)) ** 2)

    close(
        tf.grad(lambda a: loss(a, tf.checkpoint(segment)))(z),
        tf.grad(lambda a: loss(a, segment))(z),
    )
    tf.testing.check_grads(tf.checkpoint(segment), (z,), order=2)
    x32 = RNG.standard_normal(4).astype(np.float32)
    single = tf.checkpoint(lambda b: tf.tanh(b) * b)
    assert tf.grad(lambda a: tf.sum(single(a)))(x32).dtype == np.float32
    tf.testing.check_grads(single, (x32,), order=2)


def test_several_outputs_captures_kwargs_integers_and_nesting():
    offset = RNG.standard_normal(5)  # a captured concrete array: an extra operand
    index = np.array([4, 0, 2])

    def inner(a: Any) -> Any:
        return tf.sin(a) + offset

    def segment(a: Any, idx: Any, *, scale: Any) -> Any:
        h = tf.checkpoint(inner)(a * scale)  # nested: captures the outer argument too
        return {"sum": tf.sum(h * a), "pick": h[idx]}

    def f(x: Any, scale: Any) -> Any:
        out = tf.checkpoint(segment)(x, index, scale=scale)
        return out["sum"] + tf.sum(out["pick"] ** 2)

    def g(x: Any, scale: Any) -> Any:
        h = tf.sin(x * scale) + offset
        return tf.sum(h * x) + tf.sum(h[index] ** 2)

    for argnums in (0, 1, (0, 1)):
        got = tf.grad(f, argnums=argnums)(X, 0.7)
        want = tf.grad(g, argnums=argnums)(X, 0.7)
        for a, b in zip(
            got if isinstance(got, tuple) else (got,),
            want if isinstance(want, tuple) else (want,),
            strict=True,
        ):
            close(a, b)
    tf.testing.check_grads(lambda x: f(x, 0.7), (X,), order=2)


def test_a_segment_that_ignores_an_input_or_returns_it():
    def f(x: Any, y: Any) -> Any:
        a, b = tf.checkpoint(lambda u, w: (u, tf.exp(u)))(x, y)
        return tf.sum(a * b)

    close(tf.grad(f)(X, V), np.exp(X) * (1 + X))
    close(tf.grad(f, argnums=1)(X, V), np.zeros(5))


def test_a_long_segment_pickles_without_recursion():
    import pickle

    def long_segment(a: Any) -> Any:
        for _ in range(1000):
            a = tf.sin(a)
        return a

    x = tf.traced(X)
    y = tf.checkpoint(long_segment)(x)
    again = pickle.loads(pickle.dumps(y))
    close(again.eval(), y.eval())
    close(tf.sum(again).grad(_leaf_of(again)).eval(), tf.sum(y).grad(x).eval())


def _leaf_of(value: Any) -> Any:
    """The (unpickled) leaf the value's single segment reads."""
    (operand,) = value.key.operation_key.inputs
    return tf.TracedTensor(operand, value.meta)


def test_derived_segments_are_cached_and_cleared():
    tf.clear_caches()
    tf.grad(CHECKPOINTED)(X)
    from tenferro.traced import remat

    assert len(remat._DERIVED._entries) > 0
    assert len(remat._PROGRAMS._entries) > 0
    tf.clear_caches()
    assert len(remat._DERIVED._entries) == 0
    assert len(remat._PROGRAMS._entries) == 0


@fuzz_settings(10)
@given(
    segments=st.integers(1, 3),
    length=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_checkpointed_chains_equal_plain_chains(segments: int, length: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, v = rng.standard_normal(4), rng.standard_normal(4)
    scales = rng.uniform(0.5, 1.5, length)

    def piece(a: Any) -> Any:
        for s in scales:
            a = tf.sin(a * float(s)) + a * 0.5
        return a

    def build(run: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def f(a: Any) -> Any:
            for _ in range(segments):
                a = run(a)
            return tf.sum(a**2)

        return f

    plain, ck = build(piece), build(tf.checkpoint(piece))
    close(tf.grad(ck)(x), tf.grad(plain)(x), 1e-11)
    close(tf.hvp(ck, (x,), (v,)), tf.hvp(plain, (x,), (v,)), 1e-9)


# ---------------------------------------------------------------------- memory

N = 100_000
SEGMENTS = 12


def _segment(v: Any) -> Any:
    for _ in range(10):
        v = tf.sin(v) * 1.01
    return v


def _long_chain(run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """240 primitive ops on 1e5-element arrays (12 segments of 10 sin and 10 mul)."""

    def f(x: Any) -> Any:
        for _ in range(SEGMENTS):
            x = run(x)
        return tf.sum(x)

    return f


def _peak_arrays(run: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - base) / (8 * N), result


@pytest.mark.slow
def test_traced_checkpoint_halves_the_peak_of_a_long_chain():
    x = np.linspace(0.0, 1.0, N)
    figures = {}
    for name, run in (("plain", _segment), ("checkpoint", tf.checkpoint(_segment))):
        gradient = tf.jit(tf.grad(_long_chain(run)))
        gradient(x)  # compiled outside the measurement
        figures[name] = _peak_arrays(lambda g=gradient: g(x))  # type: ignore[misc]
    (plain, expected), (checkpointed, got) = figures["plain"], figures["checkpoint"]
    close(got, expected, 1e-12)
    assert plain > 100  # every sin input is a residual of the plain program
    # boundaries (12) plus one recomputed segment (10 sin inputs) and a cotangent:
    # measured 23.0 arrays (the plain program: 122, its liveness minimum)
    assert checkpointed < 0.5 * plain, (checkpointed, plain)
    assert checkpointed < 25, checkpointed


def test_traced_backward_program_stores_only_segment_boundaries():
    gradient = tf.jit(tf.grad(_long_chain(tf.checkpoint(_segment))))
    gradient(np.ones(3))
    (plan,) = list(gradient.cache._entries.values())  # type: ignore[attr-defined]
    instructions = plan.program.program.instructions
    segments = [i for i in instructions if isinstance(i.operation, Segment)]
    # one backward segment each, and forward ones except the last (the gradient of the
    # final sum does not read its operand); the enclosing program has no sin
    assert len(segments) == 2 * SEGMENTS - 1
    assert not any(i.operation.name == "sin" for i in instructions)


@pytest.mark.slow
def test_eager_checkpoint_halves_the_peak_of_a_long_chain():
    x0 = np.linspace(0.0, 1.0, N)

    def backward_peak(run: Callable[[Any], Any]) -> tuple[float, Any]:
        def forward_and_backward() -> Any:
            x = tf.EagerTensor(x0, requires_grad=True)
            _long_chain(run)(x).backward()
            return x.grad

        return _peak_arrays(forward_and_backward)

    plain, expected = backward_peak(_segment)
    checkpointed, got = backward_peak(tf.checkpoint(_segment))
    close(got, expected, 1e-12)
    assert plain > 100
    assert checkpointed < 0.5 * plain, (checkpointed, plain)
    # the tape keeps the 12 boundaries; backward replays one segment's 10 sin inputs at a
    # time and drops them before the next (measured 26.3 arrays; before the replay kept
    # only what the derivative reads and dropped it per segment, ~3x more)
    assert checkpointed < 28, checkpointed


# ---------------------------------------------------------------------- linalg segments


_CHECKPOINTED = {
    "det": lambda y: tf.linalg.det(y),
    "slogdet": lambda y: tf.linalg.slogdet(y)[1],
    "inv": lambda y: tf.sum(tf.linalg.inv(y)),
    "solve": lambda y: tf.sum(tf.linalg.solve(y, tf.sin(y))),
    "matrix_exp": lambda y: tf.sum(tf.linalg.matrix_exp(y)),
    "matrix_power": lambda y: tf.sum(tf.linalg.matrix_power(y, 3)),
    "svdvals": lambda y: tf.sum(tf.linalg.svdvals(y)),
    "eigvalsh": lambda y: tf.sum(tf.linalg.eigvalsh(y + tf.swapaxes(y, -1, -2))),
    "qr": lambda y: tf.sum(tf.linalg.qr(y).R),
    "cholesky": lambda y: tf.sum(tf.linalg.cholesky(y @ tf.swapaxes(y, -1, -2))),
    "pinv": lambda y: tf.sum(tf.linalg.pinv(y)),
    "lu_solve": lambda y: tf.sum(tf.linalg.lu_solve(tf.linalg.lu_factor(y), tf.cos(y))),
    "norm": lambda y: tf.linalg.norm(y, "nuc"),
}


@pytest.mark.parametrize("name", sorted(_CHECKPOINTED))
def test_checkpointed_linalg_differentiates_as_plain(name: str) -> None:
    """A JVP rule of a family linear in one operand reads, when only that operand is
    active, nothing computed from it: a checkpointed segment's JVP, transposed,
    recomputes without it (tf.grad and tf.hvp of tf.checkpoint(f) equal those of f)."""
    f = _CHECKPOINTED[name]
    a = np.eye(3) * 2 + 0.1 * np.arange(9.0).reshape(3, 3)
    expected = np.asarray(tf.grad(f)(a))
    np.testing.assert_allclose(np.asarray(tf.grad(tf.checkpoint(f))(a)), expected, rtol=1e-10)
    v = np.cos(np.arange(9.0)).reshape(3, 3)
    np.testing.assert_allclose(
        np.asarray(tf.hvp(tf.checkpoint(f), (a,), (v,))),
        np.asarray(tf.hvp(f, (a,), (v,))),
        rtol=1e-9,
        atol=1e-12,
    )
