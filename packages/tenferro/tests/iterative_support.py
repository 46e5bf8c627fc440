"""Helpers of the iterative solvers' tests: one derivative, compared in every mode.

:func:`assert_every_mode` differentiates a real scalar loss built on an iterative
solver with each of tenferro's ways -- the traced transforms (``grad``, ``jit(grad)``,
``vjp``, ``jvp``, ``hvp``, ``vmap(grad)``) and the eager tape (``backward()``,
``tape.grad``, ``tape.jvp``, ``tape.hvp``) -- and compares every result with the same
quantity of a dense reference loss (the same function through ``tf.linalg.solve``,
``eigh``, a closed form ...), so each mode is checked against an independent answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tenferro as tf


def random_like(x: np.ndarray[Any, Any], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    values = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(x.shape)
    return values.astype(x.dtype)


def _close(actual: Any, expected: Any, tol: float, what: str) -> None:
    a, e = np.asarray(actual), np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
    error = float(np.max(np.abs(a - e), initial=0.0))
    assert error <= tol * scale, f"{what}: max error {error:.3g} (scale {scale:.3g})"


def _directional(gradients: Sequence[Any], tangents: Sequence[Any]) -> float:
    pairs = zip(gradients, tangents, strict=True)
    return float(sum(np.real(np.vdot(np.asarray(g), t)) for g, t in pairs))


def _listed(result: Any, args: Sequence[Any]) -> list[Any]:
    """A transform's per-argument results as a list (one argument: the result itself)."""
    return list(result) if len(args) > 1 else [result]


def assert_every_mode(
    loss: Callable[..., Any],
    reference: Callable[..., Any],
    args: Sequence[np.ndarray[Any, Any]],
    rng: np.random.Generator,
    tol: float = 1e-8,
    second_order: bool = True,
    modes: Sequence[str] = ("grad", "jit", "vjp", "jvp", "hvp", "vmap", "tape"),
) -> None:
    """The gradient (and directional first and second derivatives) of the real scalar
    ``loss`` equal the reference's in every mode of ``modes``."""
    argnums = tuple(range(len(args)))
    expected = tf.grad(reference, argnums=argnums)(*args)
    tangents = [random_like(a, rng) for a in args]
    slope = _directional(expected, tangents)
    if "grad" in modes:
        for got, want in zip(tf.grad(loss, argnums=argnums)(*args), expected, strict=True):
            _close(got, want, tol, "grad")
    if "jit" in modes:
        jitted = tf.jit(tf.grad(loss, argnums=argnums))
        for _ in range(2):  # traced once, run twice
            for got, want in zip(jitted(*args), expected, strict=True):
                _close(got, want, tol, "jit(grad)")
    if "vjp" in modes:
        value, pullback = tf.vjp(loss, *args)
        _close(value, reference(*args), tol, "vjp value")
        for got, want in zip(pullback(tf.ones((), value.dtype)), expected, strict=True):
            _close(got, want, tol, "vjp")
    if "jvp" in modes:
        _, derivative = tf.jvp(loss, tuple(args), tuple(tangents))
        _close(derivative, slope, tol, "jvp")
    if "hvp" in modes and second_order:
        got = tf.hvp(loss, tuple(args), tuple(tangents))
        want = tf.hvp(reference, tuple(args), tuple(tangents))
        for g, w in zip(_listed(got, args), _listed(want, args), strict=True):
            _close(g, w, tol * 100, "hvp")
    if "vmap" in modes:
        shifted = [a + 0.01 * random_like(a, rng) for a in args]
        batched = [np.stack([a, s]) for a, s in zip(args, shifted, strict=True)]
        got_batch = tf.vmap(tf.grad(loss, argnums=argnums))(*batched)
        for example, inputs in enumerate((args, shifted)):
            want = tf.grad(reference, argnums=argnums)(*inputs)
            for g, w in zip(got_batch, want, strict=True):
                _close(np.asarray(g)[example], w, tol, f"vmap(grad) example {example}")
    if "tape" in modes:
        leaves = [tf.EagerTensor(a, requires_grad=True) for a in args]
        loss(*leaves).backward()
        for leaf, want in zip(leaves, expected, strict=True):
            _close(leaf.grad, want, tol, "backward()")
        tape = tf.Tape()
        tracked = [tape.track(a) for a in args]
        for got, want in zip(tape.grad(loss(*tracked), tracked), expected, strict=True):
            _close(got, want, tol, "tape.grad")
        _, derivative = tape.jvp(loss, list(args), tangents)
        _close(derivative, slope, tol, "tape.jvp")
        if second_order:
            got = tape.hvp(loss, list(args), tangents)
            want = tf.hvp(reference, tuple(args), tuple(tangents))
            for g, w in zip(_listed(got, args), _listed(want, args), strict=True):
                _close(g, w, tol * 100, "tape.hvp")


def weights(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> Any:
    """Fixed random weights for a loss ``Re sum(conj(w) * y)``."""
    return tf.asarray(random_like(np.zeros(shape, dtype), rng))


def weighted(y: Any, w: Any) -> Any:
    return tf.sum(tf.real(tf.conj(w) * y))
