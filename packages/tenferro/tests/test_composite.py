"""Composite tape nodes: a function's primitives recorded as one node of the tape.

The node's derivative equals the primitives' (checked against recording them one by
one, finite differences and to second order), it is derived once per structure, and
its save policy decides what is kept: ``"needed"`` replays nothing in backward,
``"inputs"`` (checkpointing) keeps only inputs and outputs and replays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tidu.eager import ProgramExecutor, default_derivative_cache


def block(x: Any, w: Any) -> Any:
    h = tf.sin(tf.exp(x @ w) * 0.1)  # sin and exp read intermediates in backward
    return tf.sum(h * h, axis=0), h


RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 3))


def _plain_grads() -> list[Any]:
    tape = tf.Tape()
    x, w = tape.track(X), tape.track(W)
    s, h = block(x, w)
    return tape.grad(tf.sum(s) + tf.sum(h[0]), [x, w])


@pytest.mark.parametrize("save", ["needed", "inputs"])
def test_a_composite_is_one_node_with_the_same_derivative(save):
    tape = tf.Tape()
    x, w = tape.track(X), tape.track(W)
    s, h = tf.composite(block, save=save)(x, w)
    assert s.node is h.node  # one node for both outputs
    assert len(s.node.recorded.graph.operations) > 3
    assert {edge[1] for edge in s.node.input_edges if edge[2]} == {x.key, w.key}
    grads = tape.grad(tf.sum(s) + tf.sum(h[0]), [x, w])
    for ours, plain in zip(grads, _plain_grads(), strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(plain), rtol=1e-12)


@pytest.mark.parametrize("save", ["needed", "inputs"])
def test_composite_derivatives_to_second_order(save):
    def loss(x: Any, w: Any) -> Any:
        s, h = tf.composite(block, save=save)(x, w)
        return tf.sum(s * s) + tf.sum(tf.sin(h))

    tape = tf.Tape()
    x, w = tape.track(X), tape.track(W)
    tf.testing.check_grads(loss, [X, W], order=2, modes=("fwd", "rev"))  # traced: transparent
    gx, gw = tape.grad(loss(x, w), [x, w], create_graph=True)
    hx = tape.grad(tf.sum(gx) + tf.sum(gw), x)
    plain = tf.Tape()
    px, pw = plain.track(X), plain.track(W)
    s, h = block(px, pw)
    pgx, pgw = plain.grad(tf.sum(s * s) + tf.sum(tf.sin(h)), [px, pw], create_graph=True)
    np.testing.assert_allclose(
        np.asarray(hx), np.asarray(plain.grad(tf.sum(pgx) + tf.sum(pgw), px)), rtol=1e-10
    )
    direction = RNG.standard_normal(X.shape)
    ours = tape.hvp(lambda a: loss(a, tf.Tensor(W)), [X], [direction])
    reference = plain.hvp(
        lambda a: (
            tf.sum(block(a, tf.Tensor(W))[0] ** 2) + tf.sum(tf.sin(block(a, tf.Tensor(W))[1]))
        ),
        [X],
        [direction],
    )
    np.testing.assert_allclose(np.asarray(ours), np.asarray(reference), rtol=1e-9)


def test_the_derivative_is_derived_once_per_structure():
    composite = tf.composite(block)
    tape = tf.Tape()
    x, w = tape.track(X), tape.track(W)
    tape.grad(tf.sum(composite(x, w)[0]), [x, w])
    misses = default_derivative_cache.stats().misses
    for _ in range(3):
        x, w = tape.track(RNG.standard_normal(X.shape)), tape.track(W)
        tape.grad(tf.sum(composite(x, w)[0]), [x, w])
    assert default_derivative_cache.stats().misses == misses


@pytest.mark.parametrize(("save", "replays"), [("needed", False), ("inputs", True)])
def test_the_save_policy_decides_whether_backward_replays(save, replays, monkeypatch):
    calls: list[int] = []
    original = ProgramExecutor.execute_forward_subset

    def counting(self: Any, graph: Any, data: Any, wanted: Any) -> Any:
        calls.append(1)
        return original(self, graph, data, wanted)

    monkeypatch.setattr(ProgramExecutor, "execute_forward_subset", counting)
    tape = tf.Tape()
    x, w = tape.track(X), tape.track(W)
    s, _ = tf.composite(block, save=save)(x, w)
    saved = len(s.node.saved_data)
    tape.grad(tf.sum(s), [x, w])
    assert bool(calls) is replays
    if save == "inputs":
        assert saved == len(s.node.edges) // 3 + 2  # the inputs and the two outputs
    else:
        assert saved > len(s.node.edges) // 3 + 2  # and intermediates the derivative reads


def test_composite_rejects_bad_arguments():
    with pytest.raises(tf.TenferroError, match=r"composite.*save"):
        tf.composite(block, save="everything")  # type: ignore[arg-type]
    with pytest.raises(tf.TenferroError, match=r"composite.*callable"):
        tf.composite(42)  # type: ignore[arg-type]
    tape = tf.Tape()
    with pytest.raises(tf.TenferroError, match=r"composite.*must return tensors"):
        tf.composite(lambda x: (x, "text"))(tape.track(X))


def test_a_composite_of_untracked_values_records_nothing():
    s, h = tf.composite(block)(tf.EagerTensor(X), tf.EagerTensor(W))
    assert s.tape is None
    assert h.tape is None
    np.testing.assert_allclose(np.asarray(s), np.asarray(block(tf.Tensor(X), tf.Tensor(W))[0]))


def _chain_memory(use_checkpoint: bool) -> tuple[float, float]:
    """(arrays kept after the forward pass, arrays at the backward peak) for a chain of
    4 segments of 16 ops on 200,000-element arrays."""
    import gc
    import tracemalloc

    n = 200_000

    def segment(v: Any) -> Any:
        for _ in range(16):
            v = tf.sin(v) * 1.01
        return v

    x = tf.EagerTensor(np.linspace(0, 1, n), requires_grad=True)
    run = tf.checkpoint(segment) if use_checkpoint else segment
    gc.collect()
    tracemalloc.start()
    try:
        y = x
        for _ in range(4):
            y = run(y)
        loss = tf.sum(y)
        kept, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        loss.backward()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return kept / (8 * n), peak / (8 * n)


@pytest.mark.slow
def test_checkpoint_keeps_segment_boundaries_and_replays_one_segment_at_a_time():
    plain_kept, plain_peak = _chain_memory(False)
    kept, peak = _chain_memory(True)
    assert plain_kept > 60  # the plain tape keeps every sin input
    assert kept < 6  # segment inputs and outputs only
    # backward holds one replayed segment (its 16 sin inputs) and a few cotangents
    assert peak < 0.5 * plain_peak, (peak, plain_peak)
