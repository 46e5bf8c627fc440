"""s21 review, area 4: the eager tape at never-seen shapes (eager/extents.py: instances
whose extents coincide differently join a known extent class).

Random eager programs (a drawn list of shape-polymorphic steps over two inputs ``A
[m, n]`` and ``B [n, k]``) run at a drawn sequence of extents, in one process and
without clearing the caches between steps, so later steps meet classes founded by
earlier ones: square and non-square, extents equal to each other, 0 and 1. At every
step the tape's gradients (``backward``, ``tape.grad``), ``tape.hvp`` and a
``create_graph`` second order are compared with ``tf.grad`` / ``tf.hvp`` computed
after ``tf.clear_caches()`` (fresh derivations) and with central finite differences
of the plain (untracked) evaluation, in float64 and complex128.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

Step = Callable[[Any, Any], tuple[Any, Any]]


def _square_map(x: Any) -> Any:
    """A smooth map with values bounded by 1 (no overflow however the steps compose)."""
    return x / (1.0 + x * tf.conj(x)) + tf.sin(x * 0.1)


def _scaled(x: Any, extent: int) -> Any:
    return x * (1.0 / (1 + extent))


# Each step maps (X, Y) to (X', Y') for any extents: X is 2-D, Y is 2-D, and the
# steps only use shape-polymorphic operations (their own extents read from the
# operands), so the same program runs at every drawn shape.
STEPS: dict[str, Step] = {
    "elementwise": lambda x, y: (_square_map(x), tf.tanh(y)),
    "transpose": lambda x, y: (tf.transpose(x), y),
    "swap": lambda x, y: (y, x),
    "reshape_swapped": lambda x, y: (tf.reshape(x, (x.shape[1], x.shape[0])), y),
    "flatten_roundtrip": lambda x, y: (tf.reshape(tf.reshape(x, (-1,)) * 1.5, x.shape), y),
    "center_rows": lambda x, y: (x - tf.mean(x, axis=0, keepdims=True) * 0.5, y),
    "sum_broadcast": lambda x, y: (
        tf.broadcast_to(tf.sum(x, axis=1, keepdims=True), x.shape) + x,
        y,
    ),
    "slice": lambda x, y: (x[1:, :], y[:, ::2]),
    "pad": lambda x, y: (tf.pad(x, ((1, 0), (0, 2))), y),
    "concat": lambda x, y: (tf.concatenate([x, x * 2.0], axis=0), y),
    "outer_sum": lambda x, y: (
        _scaled(tf.sum(x[:, :, None] * x[:, None, :], axis=0), x.shape[0]),
        y,
    ),
    "gram": lambda x, y: (_scaled(x @ tf.conj(tf.transpose(x)), x.shape[1]), y),
    "matmul_if": lambda x, y: (
        (_scaled(x @ y, y.shape[0]), y)
        if x.shape[1] == y.shape[0]
        else (x, _scaled(y @ tf.transpose(y), y.shape[1]))
    ),
    "roll": lambda x, y: (tf.roll(x, 1, axis=0), tf.roll(y, -1)),
    "diff": lambda x, y: (tf.diff(x, axis=1, prepend=0.5), y),
    "tile": lambda x, y: (tf.tile(x, (1, 2)), y),
    "repeat": lambda x, y: (tf.repeat(x, 2, axis=0), y),
    "stack_rows": lambda x, y: (tf.vstack([x, tf.exp(x * 0.1)]), y),
    "diag": lambda x, y: (
        (x + tf.diag(tf.diagonal(x), 0)[: x.shape[0], : x.shape[1]], y)
        if x.shape[0] == x.shape[1]
        else (x, y)
    ),
    "arctan": lambda x, y: (tf.arctan(x * 0.5), tf.arcsinh(y)),
    "einsum_diagonal": lambda x, y: (
        (x + tf.einsum("ii->i", x)[None, :] * 0.5, y) if x.shape[0] == x.shape[1] else (x, y)
    ),
    "kron": lambda x, y: (tf.kron(x, np.array([[1.0, 0.5]])), y),
    "triangles": lambda x, y: (tf.triu(x, 1) + tf.tril(x) * 0.5, y),
    "trace": lambda x, y: (x * tf.trace(x) * 0.1, y) if x.shape[0] == x.shape[1] else (x, y),
    "cumsum_flip": lambda x, y: (tf.cumsum(x, axis=0) * 0.3, tf.flip(y, 0)),
    "where": lambda x, y: (tf.where(tf.real(x) > 0, x, x * 0.5), y),
    "checkpoint": lambda x, y: (tf.checkpoint(lambda v: tf.sin(v) * v)(x), y),
    "svd": lambda x, y: (_svd_step(x), y),
    "eigh": lambda x, y: (_eigh_step(x), y) if x.shape[0] == x.shape[1] else (x, y),
    "einsum": lambda x, y: (tf.einsum("ij,kj->ik", x, x) * 0.5, tf.einsum("ij->j", y)[None, :]),
    "lstsq": lambda x, y: (tf.linalg.lstsq(_separated(x), np.eye(x.shape[0])).solution * 0.1, y),
    "qr": lambda x, y: (tf.linalg.qr(_separated(x))[1], y) if x.shape[0] >= x.shape[1] else (x, y),
}


def _separated(x: Any) -> Any:
    """``x`` (entries bounded by about 1) made a small perturbation of a matrix whose
    singular values 1, 2, 3, ... are far apart: full rank, no degeneracy (the spectral
    and solver steps are then differentiable, whatever the earlier steps did)."""
    m, n = x.shape
    spread = np.zeros((m, n))
    r = min(m, n)
    spread[np.arange(r), np.arange(r)] = np.arange(1, r + 1)
    return x * 0.02 + spread


def _svd_step(x: Any) -> Any:
    """``U diag(tanh(s)) V^H``: through the SVD's derivative, gauge-invariant."""
    if min(x.shape) == 0:
        return x
    u, s, vh = tf.linalg.svd(_separated(x), full_matrices=False)
    return (u * tf.tanh(s * 0.3)[None, :]) @ vh


def _eigh_step(x: Any) -> Any:
    if x.shape[0] == 0:
        return x
    w, v = tf.linalg.eigh(_separated(x + tf.conj(tf.transpose(x))))
    return (v * tf.tanh(w * 0.3)[None, :]) @ tf.conj(tf.transpose(v))


def _loss(steps: list[str]) -> Callable[[Any, Any], Any]:
    def loss(a: Any, b: Any) -> Any:
        x, y = a, b
        for name in steps:
            x, y = STEPS[name](x, y)
        return tf.sum(tf.real(_square_map(x) * tf.conj(x))) + tf.sum(
            tf.real(tf.exp(_square_map(y)))
        )

    return loss


def _array(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.uniform(-1, 1, shape)
    return values.astype(dtype)


def _plain(loss: Callable[..., Any], a: Any, b: Any) -> float:
    return float(np.asarray(loss(tf.asarray(a), tf.asarray(b))))


def _slope(loss: Callable[..., Any], a: Any, b: Any, da: Any, db: Any) -> float:
    eps = 1e-6
    up = _plain(loss, a + eps * da, b + eps * db)
    down = _plain(loss, a - eps * da, b - eps * db)
    return (up - down) / (2 * eps)


def _vdot(g: Any, d: Any) -> float:
    return float(np.real(np.vdot(np.asarray(g), d)))


EXTENTS = st.integers(0, 3)


@fuzz_settings(20)
@given(
    st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
    st.lists(st.tuples(EXTENTS, EXTENTS, EXTENTS), min_size=3, max_size=5),
    st.sampled_from([np.float64, np.complex128]),
)
def test_random_programs_at_coinciding_extents_equal_fresh_derivations(
    steps: list[str], shapes: list[tuple[int, int, int]], dtype: Any
) -> None:
    loss = _loss(steps)
    tf.clear_caches()
    for step, (m, n, k) in enumerate(shapes):
        a, b = _array((m, n), dtype, step), _array((n, k), dtype, 50 + step)
        da, db = _array((m, n), dtype, 100 + step), _array((n, k), dtype, 150 + step)
        tape = tf.Tape()
        la, lb = tape.track(a), tape.track(b)
        ga, gb = (np.asarray(g) for g in tape.grad(loss(la, lb), [la, lb]))
        la2, lb2 = tape.track(a), tape.track(b)
        loss(la2, lb2).backward()
        np.testing.assert_array_equal(np.asarray(la2.grad), ga)
        np.testing.assert_array_equal(np.asarray(lb2.grad), gb)

        hvp = [np.asarray(h) for h in tf.Tape().hvp(loss, [a, b], [da, db])]
        second = tf.Tape()
        sa, sb = second.track(a), second.track(b)
        first = second.grad(loss(sa, sb), [sa, sb], create_graph=True)
        inner = tf.sum(tf.real(first[0] * tf.conj(tf.asarray(da))))
        inner = inner + tf.sum(tf.real(first[1] * tf.conj(tf.asarray(db))))
        created = second.grad(inner, [sa, sb], allow_unused=True)

        tf.clear_caches()  # the references derive everything afresh
        fa, fb = (np.asarray(g) for g in tf.grad(loss, argnums=(0, 1))(a, b))
        fresh_hvp = [np.asarray(h) for h in tf.hvp(loss, (a, b), (da, db))]
        where = f"step {step} at (m, n, k) = {(m, n, k)}"
        np.testing.assert_allclose(ga, fa, rtol=1e-10, atol=1e-12, err_msg=where)
        np.testing.assert_allclose(gb, fb, rtol=1e-10, atol=1e-12, err_msg=where)
        for got, want in zip(hvp, fresh_hvp, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11, err_msg=where)
        if dtype == np.float64:  # <d, g> has gradient H d for a real symmetric Hessian
            for got, want in zip(created, fresh_hvp, strict=True):
                value = np.zeros_like(want) if got is None else np.asarray(got)
                np.testing.assert_allclose(value, want, rtol=1e-9, atol=1e-11, err_msg=where)
        if a.size + b.size:
            slope = _slope(loss, a, b, da, db)
            np.testing.assert_allclose(
                _vdot(ga, da) + _vdot(gb, db), slope, rtol=1e-6, atol=1e-7, err_msg=where
            )
            up = tf.grad(loss, argnums=(0, 1))(a + 1e-5 * da, b + 1e-5 * db)
            down = tf.grad(loss, argnums=(0, 1))(a - 1e-5 * da, b - 1e-5 * db)
            grad_slope = (
                _vdot(up[0], da) + _vdot(up[1], db) - _vdot(down[0], da) - _vdot(down[1], db)
            ) / 2e-5
            np.testing.assert_allclose(
                _vdot(hvp[0], da) + _vdot(hvp[1], db),
                grad_slope,
                rtol=1e-5,
                atol=1e-6,
                err_msg=where,
            )
