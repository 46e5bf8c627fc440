"""Truncation that traces: ``truncated_svd`` in a trace gives factors with a data-dependent
extent (at most ``max_rank``), and the ordinary operations of a split step accept it, so
one truncation code runs eagerly and traced with the same values and derivatives and no
extra forward pass."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import renormalisation_workload as workload

import tenferro as tf
from tenferro.linalg import singular_values

D = 3


def _matrix(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((D * D, D * D))


def _split_steps() -> dict[str, Callable[[Any], Any]]:
    """Split-step idioms on the factors of a truncated SVD (rank <= 4 of 9)."""

    def factors(m: Any) -> tuple[Any, Any, Any]:
        return tf.linalg.truncated_svd(m, max_rank=4, rtol=1e-12)

    def scalar(m: Any) -> Any:
        u, s, _ = factors(m)
        return tf.sum((2.0 * u + 1.0) * (u / 3.0)) + tf.sum(0.5 * s)

    def same_extent(m: Any) -> Any:
        u, s, vh = factors(m)
        root = tf.sqrt(s)
        return tf.sum((u * root) @ (root[:, None] * vh) * m)

    def einsum(m: Any) -> Any:
        u, s, vh = factors(m)
        left = tf.einsum("ik,k->ik", u, s)
        return tf.einsum("ik,kj,ij->", left, vh, m) + tf.einsum("ik,ik->", u, u)

    def reshape(m: Any) -> Any:
        u, s, vh = factors(m)
        legs = tf.reshape(u * tf.sqrt(s), (D, D, u.shape[-1]))  # (D, D, <=k)
        back = tf.reshape(tf.sqrt(s)[:, None] * vh, (vh.shape[0], D, D))  # (<=k, D, D)
        merged = tf.reshape(tf.transpose(legs, (2, 0, 1)), (-1, D))  # (<=k*D, D)
        return tf.einsum("abk,kcd->", legs, back) + tf.sum(merged * merged)

    def concatenate(m: Any) -> Any:
        u, s, _ = factors(m)
        both = tf.concatenate([u, 2.0 * u], axis=0)  # along the static axis
        return tf.sum(both * both * s)

    def slicing(m: Any) -> Any:
        u, s, vh = factors(m)
        return tf.sum(u[:4] * u[:4]) + tf.sum(vh[:, 2:] * s[:, None])

    return {
        "scalars": scalar,
        "tensors of the same extent": same_extent,
        "einsum": einsum,
        "reshape": reshape,
        "concatenate": concatenate,
        "slice": slicing,
    }


STEPS = _split_steps()


def _tape_value_and_grad(f: Callable[[Any], Any], x: np.ndarray) -> tuple[float, np.ndarray]:
    tape = tf.Tape()
    leaf = tape.track(x)
    out = f(leaf)
    return float(out), np.asarray(tape.grad(out, leaf))


@pytest.mark.parametrize("name", sorted(STEPS))
def test_split_steps_run_eagerly_and_traced_alike(name: str) -> None:
    f = STEPS[name]
    m = _matrix()
    eager, eager_grad = _tape_value_and_grad(f, m)
    traced = float(tf.jit(f)(m))
    traced_grad = np.asarray(tf.grad(f)(m))
    np.testing.assert_allclose(traced, eager, rtol=1e-12)
    np.testing.assert_allclose(traced_grad, eager_grad, rtol=1e-12, atol=1e-12)
    tf.testing.check_grads(f, [m], order=2, modes=("fwd", "rev"))


def test_max_rank_bounds_the_static_extent() -> None:
    seen = {}

    def f(m: Any) -> Any:
        u, s, vh = tf.linalg.truncated_svd(m, max_rank=4)
        seen["u"], seen["s"], seen["vh"] = u.meta, s.meta, vh.meta
        return tf.sum(s)

    tf.grad(f)(_matrix())
    assert seen["u"].shape == (D * D, 4)
    assert seen["u"].dynamic == (1,)
    assert seen["s"].shape == (4,)
    assert seen["vh"].shape == (4, D * D)
    assert seen["vh"].dynamic == (0,)


def test_operations_that_cannot_know_a_data_dependent_extent_refuse_it() -> None:
    """Clear errors, naming the operation: merging two data-dependent axes, a static
    extent meeting a data-dependent one, slicing into a data-dependent axis."""

    def factors(m: Any) -> tuple[Any, Any, Any]:
        return tf.linalg.truncated_svd(m, max_rank=4)

    def merge_two(m: Any) -> Any:
        u, _, vh = factors(m)
        return tf.sum(tf.reshape(tf.einsum("ik,lj->kl", u, vh), (16,)))

    def static_meets_dynamic(m: Any) -> Any:
        u, _, _ = factors(m)
        return tf.sum(u * np.ones((D * D, 4)))

    def partial_slice(m: Any) -> Any:
        _, s, _ = factors(m)
        return s[:2]

    for f, message in (
        (merge_two, "reshape"),
        (static_meets_dynamic, "multiply"),
        (partial_slice, "slice"),
    ):
        with pytest.raises(tf.ShapeError, match=message):
            tf.jit(f)(_matrix())


# ---------------------------------------------------------------------- the workload


@pytest.fixture
def counted_svds(monkeypatch: pytest.MonkeyPatch) -> Any:
    calls = {"count": 0}
    original = singular_values.svd_factors

    def counting(op: str, a: Any) -> Any:
        calls["count"] += 1
        return original(op, a)

    monkeypatch.setattr(singular_values, "svd_factors", counting)
    return calls


def test_the_renormalisation_workload_is_written_once(counted_svds: Any) -> None:
    """The TRG free energy (split, reshape, contract, repeated): values, gradients and
    HVPs equal eagerly and traced to 1e-12, equal to finite differences, with no
    warning (the suite turns warnings into errors), and each mode runs one SVD per split
    (a traced program needs no concrete forward pass to read ranks)."""
    beta, steps = 0.4, 4
    splits = 2 * steps

    def f(b: Any) -> Any:
        return workload.free_energy(b, chi=4, steps=steps)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counted_svds["count"] = 0
        eager, eager_grad = _tape_value_and_grad(f, np.float64(beta))
        assert counted_svds["count"] == splits
        counted_svds["count"] = 0
        traced, traced_grad = (float(v) for v in tf.value_and_grad(f)(beta))
        assert counted_svds["count"] == splits
        hvp = float(tf.hvp(f, (np.float64(beta),), (np.float64(1.0),)))
        tape = tf.Tape()
        leaf = tape.track(np.float64(beta))
        first = tape.grad(f(leaf), leaf, create_graph=True)
        eager_hvp = float(tape.grad(first, leaf))
    np.testing.assert_allclose(traced, eager, rtol=1e-12)
    np.testing.assert_allclose(traced_grad, eager_grad, rtol=1e-12)
    np.testing.assert_allclose(hvp, eager_hvp, rtol=1e-10)
    h = 1e-5
    up, down = float(f(tf.asarray(beta + h))), float(f(tf.asarray(beta - h)))
    np.testing.assert_allclose(eager_grad, (up - down) / (2 * h), rtol=1e-7)
    np.testing.assert_allclose(hvp, (up - 2 * eager + down) / h**2, rtol=1e-4)
