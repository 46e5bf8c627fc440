"""Review campaign (session 19): data-dependent shapes on the eager tape.

Programs whose shapes change at every call (truncated SVDs of changing rank,
slices of changing bounds and strides, einsums over extents 0, 1 and more,
reshapes, thin and full SVDs, QR in every mode, eigh, batched) run in random
orders, dtypes and with ``tf.clear_caches()`` interleaved. The extent-generic
re-making (``tenferro/eager/extents.py``) re-uses one derivation per extent
class across shapes; every tape gradient must still equal a fresh traced
``tf.grad`` (derived per shape) and a central finite difference along a random
direction, and every tape forward-mode tangent a fresh ``tf.jvp``.

Failing cases found by the campaign are pinned below as strict xfails (bugs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import tenferro as tf
from tenferro import lax

Program = tuple[str, np.ndarray[Any, Any], Callable[[Any], Any], Callable[[Any], Any]]
"""(description, operand, the program on any tensor kind, a reference program with
static shapes for the traced oracle)."""

DTYPES = [np.float64, np.complex128, np.float32, np.complex64]


def _values(rng: np.random.Generator, shape: tuple[int, ...], dt: Any) -> np.ndarray[Any, Any]:
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dt)


def _weighted(y: Any, w: np.ndarray[Any, Any]) -> Any:
    """A real loss of ``y`` invariant under the phases of its entries (so of the sign and
    phase gauges of factorizations): ``Σ w |y|²``."""
    if np.dtype(y.dtype).kind == "c":
        return tf.sum(tf.real(y * tf.conj(y)) * w)
    return tf.sum(y * y * w)


def _slicing(rng: np.random.Generator, dt: Any) -> Program:
    rank = int(rng.integers(1, 3))
    shape = tuple(int(n) for n in rng.integers(0, 6, rank))
    index = []
    for n in shape:
        start = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.8 else None
        stop = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.8 else None
        index.append(slice(start, stop, int(rng.choice([1, 2, 3, -1, -2]))))
    key = tuple(index)
    x = _values(rng, shape, dt)
    w = rng.standard_normal(x[key].shape)
    f = lambda t: _weighted(t[key], w)  # noqa: E731
    return f"x{shape}[{key}]", x, f, f


def _reshaping(rng: np.random.Generator, dt: Any) -> Program:
    a, b, c = (int(n) for n in rng.integers(0, 4, 3))
    target = [(a * b, c), (a, b * c), (a * b * c,), (c, a, b), (1, a * b, c, 1)][
        int(rng.integers(0, 5))
    ]
    x = _values(rng, (a, b, c), dt)
    w = rng.standard_normal(target)
    f = lambda t: _weighted(tf.reshape(t, target), w)  # noqa: E731
    return f"reshape {(a, b, c)} -> {target}", x, f, f


EINSUMS = [
    ("ij,jk->ik", lambda i, j, k, n: [(i, j), (j, k)]),
    ("ij,jk,kl->il", lambda i, j, k, n: [(i, j), (j, k), (k, n)]),
    ("bij,bjk->bik", lambda i, j, k, n: [(n, i, j), (n, j, k)]),
    ("ii->i", lambda i, j, k, n: [(i, i)]),
    ("ij->", lambda i, j, k, n: [(i, j)]),
    ("i,j->ij", lambda i, j, k, n: [(i,), (j,)]),
    ("ijk,jl->lki", lambda i, j, k, n: [(i, j, k), (j, n)]),
    ("...ij,...jk", lambda i, j, k, n: [(n, i, j), (j, k)]),
    ("ij,ij->i", lambda i, j, k, n: [(i, j), (i, j)]),
    ("i->ii", lambda i, j, k, n: [(i,)]),
]


def _contracting(rng: np.random.Generator, dt: Any) -> Program:
    subscripts, shapes_of = EINSUMS[int(rng.integers(0, len(EINSUMS)))]
    shapes = shapes_of(*(int(n) for n in rng.integers(0, 4, 4)))
    x = _values(rng, shapes[0], dt)
    others = [_values(rng, s, dt) for s in shapes[1:]]
    w = rng.standard_normal(tf.einsum(subscripts, x, *others).shape)
    f = lambda t: _weighted(tf.einsum(subscripts, t, *others), w)  # noqa: E731
    return f"einsum {subscripts} {shapes}", x, f, f


def _batch(rng: np.random.Generator) -> tuple[int, ...]:
    return () if rng.random() < 0.7 else (int(rng.integers(1, 3)),)


def _truncating(rng: np.random.Generator, dt: Any) -> Program:
    """A truncated SVD whose kept rank (a clear gap in the spectrum) changes per call."""
    batch = _batch(rng)
    m, n = (int(v) for v in rng.integers(1, 6, 2))
    k = min(m, n)
    kept = int(rng.integers(0, k + 1))
    u, _, vh = np.linalg.svd(
        _values(rng, (*batch, m, n), np.complex128 if np.dtype(dt).kind == "c" else np.float64),
        full_matrices=False,
    )
    spectrum = np.concatenate([np.linspace(3.0, 1.0, kept), np.full(k - kept, 1e-3)])
    x = np.asarray((u * spectrum) @ vh, dtype=dt)
    max_rank = None if rng.random() < 0.6 else int(rng.integers(0, k + 1))
    r = kept if max_rank is None else min(kept, max_rank)
    ws = rng.standard_normal(r)
    wu = rng.standard_normal((*batch, m, r))
    wv = rng.standard_normal((*batch, r, n))

    def f(t: Any) -> Any:
        big, s, small = tf.linalg.truncated_svd(t, atol=0.01, max_rank=max_rank)
        return tf.sum(s * ws) + _weighted(big, wu) + _weighted(small, wv)

    def reference(t: Any) -> Any:
        big, s, small = tf.linalg.svd(t, full_matrices=False)
        return (
            tf.sum(s[..., :r] * ws) + _weighted(big[..., :r], wu) + _weighted(small[..., :r, :], wv)
        )

    return f"truncated_svd {(*batch, m, n)} rank {r}", x, f, reference


def _svd(rng: np.random.Generator, dt: Any) -> Program:
    batch = _batch(rng)
    m, n = (int(v) for v in rng.integers(0, 5, 2))
    full = bool(rng.random() < 0.3)
    if full:
        n = m  # full non-square factors have no derivative (ADRuleError, by design)
    k = min(m, n)
    x = _values(rng, (*batch, m, n), dt)
    ws = rng.standard_normal(k)
    wu = rng.standard_normal((*batch, m, m if full else k))
    wv = rng.standard_normal((*batch, n if full else k, n))

    def f(t: Any) -> Any:
        u, s, vh = tf.linalg.svd(t, full_matrices=full)
        return tf.sum(s * ws) + _weighted(u, wu) + _weighted(vh, wv)

    return f"svd {(*batch, m, n)} full={full}", x, f, f


def _qr(rng: np.random.Generator, dt: Any) -> Program:
    batch = _batch(rng)
    m, n = (int(v) for v in rng.integers(1, 5, 2))
    mode = str(rng.choice(["reduced", "r", "complete"]))
    gauge = str(rng.choice(["raw", "positive"]))
    if mode == "complete" and m > n:
        m, n = n, m  # a complete tall Q has no derivative (ADRuleError, by design)
    x = _values(rng, (*batch, m, n), dt)
    k = m if mode == "complete" else min(m, n)
    wq = rng.standard_normal((*batch, m, k))
    wr = rng.standard_normal((*batch, k, n))

    def real(y: Any) -> Any:
        return tf.real(y) if np.dtype(dt).kind == "c" else y

    def f(t: Any) -> Any:
        out = tf.linalg.qr(t, mode=mode, gauge=gauge)
        if mode == "r":
            return tf.sum(real(out) * wr)
        return tf.sum(real(out.R) * wr) + tf.sum(real(out.Q) * wq)

    return f"qr {(*batch, m, n)} {mode} {gauge}", x, f, f


def _eigh(rng: np.random.Generator, dt: Any) -> Program:
    batch = _batch(rng)
    n = int(rng.integers(0, 5))
    x = _values(rng, (*batch, n, n), dt)
    uplo = str(rng.choice(["L", "U"]))
    wl = rng.standard_normal(n)
    wv = rng.standard_normal((*batch, n, n))

    def f(t: Any) -> Any:  # of the Hermitian part: eigh's input is differentiated as such
        hermitian = (t + tf.conj(tf.swapaxes(t, -1, -2))) * 0.5
        values, vectors = tf.linalg.eigh(hermitian, UPLO=uplo)
        return tf.sum(values * wl) + _weighted(vectors, wv)

    return f"eigh {(*batch, n, n)} {uplo}", x, f, f


FAMILIES = [_slicing, _reshaping, _contracting, _truncating, _svd, _qr, _eigh]


def _tolerance(dt: Any) -> float:
    return 1e-8 if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128)) else 2e-3


def _close(got: Any, expected: Any, tol: float, what: str) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, what
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, err_msg=what)


def _check(program: Program, dt: Any, rng: np.random.Generator) -> None:
    what, x, f, reference = program
    tol = _tolerance(dt)
    tape = tf.Tape()
    t = tape.track(x)
    got = np.asarray(tape.grad(f(t), t))
    expected = np.asarray(tf.grad(reference)(x))
    _close(got, expected, tol, f"tape grad vs tf.grad: {what} {np.dtype(dt)}")
    direction = _values(rng, x.shape, dt)
    _, tangent = tf.Tape().jvp(f, [x], [direction])
    _close(tangent, tf.jvp(reference, (x,), (direction,))[1], tol, f"tape jvp: {what}")
    if np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128)) and x.size:
        # The gradient pairs with a direction as Re<g, d> (the conjugate convention).
        h = 1e-6
        plus = float(np.asarray(f(tf.asarray(x + h * direction))))
        minus = float(np.asarray(f(tf.asarray(x - h * direction))))
        slope = (plus - minus) / (2 * h)
        paired = float(np.real(np.vdot(got, direction)))
        assert abs(paired - slope) <= 1e-5 * max(1.0, abs(slope)), (what, paired, slope)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_shape_changing_programs_on_the_tape_match_fresh_derivations(seed: int) -> None:
    """Eight programs per example, each of a random family, dtype and shape; caches
    cleared at random points in between."""
    rng = np.random.default_rng(seed)
    for _ in range(8):
        if rng.random() < 0.2:
            tf.clear_caches()
        dt = DTYPES[int(rng.integers(0, len(DTYPES)))]
        family = FAMILIES[int(rng.integers(0, len(FAMILIES)))]
        _check(family(rng, dt), dt, rng)


@pytest.mark.parametrize("dt", [np.float64, np.complex128, np.float32])
def test_truncated_svd_sweep_of_changing_ranks_matches_fresh_derivations(dt: Any) -> None:
    """The same truncated-SVD program at ranks 3, 1, 0, 2, 3 and shapes growing and
    shrinking (the W4 sweep pattern), caches cleared once in the middle."""
    rng = np.random.default_rng(7)
    for step, (m, n, kept) in enumerate([(4, 3, 3), (5, 3, 1), (3, 3, 0), (6, 4, 2), (4, 3, 3)]):
        if step == 3:
            tf.clear_caches()
        u, _, vh = np.linalg.svd(
            _values(rng, (m, n), dt).astype(np.complex128), full_matrices=False
        )
        spectrum = np.concatenate([np.linspace(3.0, 1.0, kept), np.full(min(m, n) - kept, 1e-4)])
        x = (u * spectrum) @ vh
        x = np.asarray(x if np.dtype(dt).kind == "c" else np.real(x), dtype=dt)
        w = rng.standard_normal((m, kept))

        def f(t: Any, w: Any = w) -> Any:
            big, s, _ = tf.linalg.truncated_svd(t, atol=0.01)
            return tf.sum(s * s) + _weighted(big, w)

        def reference(t: Any, w: Any = w, kept: int = kept) -> Any:
            big, s, _ = tf.linalg.svd(t, full_matrices=False)
            return tf.sum(s[:kept] * s[:kept]) + _weighted(big[:, :kept], w)

        _check((f"sweep step {step}", x, f, reference), dt, rng)


# ---------------------------------------------------------------------- bugs found


def test_pad_with_interior_padding_differentiates_at_new_extents() -> None:
    tf.clear_caches()
    rng = np.random.default_rng(0)
    # (3, 5): the unpadded axis-0 length 5 equals axis 1's; later shapes reuse the class
    for shape in [(3, 5), (4, 6), (2, 3), (5, 9), (4, 7), (3, 5)]:
        x = rng.standard_normal(shape)
        w = rng.standard_normal((2 * shape[0] + 1, shape[1]))

        def f(t: Any, w: Any = w) -> Any:
            return tf.sum(lax.pad(t, (1, 0), (1, 0), (1, 0)) * w)

        tape = tf.Tape()
        t = tape.track(x)
        np.testing.assert_allclose(np.asarray(tape.grad(f(t), t)), tf.grad(f)(x), rtol=1e-12)


def test_second_derivative_of_a_strided_slice_on_the_tape_at_new_extents() -> None:
    tf.clear_caches()
    rng = np.random.default_rng(0)

    def f(t: Any) -> Any:
        return tf.sum(tf.sin(t[::2]))

    for shape in [(6, 5), (8, 6), (10, 3)]:
        x, v = rng.standard_normal(shape), rng.standard_normal(shape)
        tape = tf.Tape()
        t = tape.track(x)
        g = tape.grad(f(t), t, create_graph=True)
        second = tape.grad(tf.sum(g * v), t)
        np.testing.assert_allclose(np.asarray(second), tf.hvp(f, (x,), (v,)), rtol=1e-10)


def test_second_derivative_of_a_strided_slice_by_tape_hvp_at_new_extents() -> None:
    """The same second derivatives through ``tape.hvp`` (forward over a recorded reverse
    pass) are right: only ``create_graph`` re-makes the pad's transpose."""
    tf.clear_caches()
    rng = np.random.default_rng(0)

    def f(t: Any) -> Any:
        return tf.sum(tf.sin(t[::2]))

    for shape in [(6, 5), (8, 6), (10, 3)]:
        x, v = rng.standard_normal(shape), rng.standard_normal(shape)
        got = tf.Tape().hvp(f, [x], [v])
        expected = -np.sin(x) * v
        expected[1::2] = 0.0
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tf.hvp(f, (x,), (v,)), expected, rtol=1e-12, atol=1e-14)


EMPTY_FACTORIZATIONS = {
    "qr": lambda t: tf.sum(tf.linalg.qr(t).R),
    "cholesky": lambda t: tf.sum(tf.linalg.cholesky(t)),
    "qr_complete": lambda t: tf.sum(tf.linalg.qr(t, mode="complete").Q),
    "lu": lambda t: tf.sum(tf.linalg.lu(t).L) + tf.sum(tf.linalg.lu(t).U),
    "lu_factor": lambda t: tf.sum(tf.linalg.lu_factor(t)[0]),
}


@pytest.mark.parametrize("name", sorted(EMPTY_FACTORIZATIONS))
def test_second_derivative_through_an_empty_factorization_on_the_tape(name: str) -> None:
    f = EMPTY_FACTORIZATIONS[name]
    tape = tf.Tape()
    for shape in [(0, 0), (0, 3), (3, 0), (2, 0, 0)]:
        if name == "cholesky" and shape[-1] != shape[-2]:
            continue
        t = tape.track(np.zeros(shape))
        g = tape.grad(f(t), t, create_graph=True)
        second = tape.grad(tf.sum(g), t)
        assert np.asarray(g).shape == shape
        assert np.asarray(second).shape == shape
        assert not np.asarray(second).any()


@pytest.mark.parametrize(
    "f",
    [
        lambda t: tf.sum(tf.linalg.svd(t, full_matrices=False).S),
        lambda t: tf.sum(tf.linalg.eigh(t)[0]),
        lambda t: tf.sum(tf.linalg.inv(t)),
        lambda t: tf.linalg.det(t),
        lambda t: tf.einsum("ij,ij->", t, t),
    ],
)
def test_second_derivative_through_other_empty_operations_on_the_tape(f: Any) -> None:
    """The behaviour the two factorizations above should share."""
    tape = tf.Tape()
    t = tape.track(np.zeros((0, 0)))
    g = tape.grad(f(t), t, create_graph=True)
    second = tape.grad(tf.sum(g), t)
    assert np.asarray(second).shape == (0, 0)
    assert np.asarray(tf.grad(lambda y: tf.sum(tf.grad(f)(y)))(np.zeros((0, 0)))).shape == (0, 0)
