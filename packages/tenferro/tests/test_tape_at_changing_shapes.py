"""The eager tape at shapes it has not seen equals fresh derivations.

The tape re-uses one derivation per extent class (``tenferro/eager/extents.py``:
extent-reading kernels before ``REMAKE_AFTER`` sightings of a shape, re-made instances
after; instances whose extents coincide differently join a known class). Programs whose
shapes change at every call run in one process, in random orders and dtypes, with
``tf.clear_caches()`` interleaved or not, and every tape derivative must equal an
independent one:

* one structure at changing shapes: truncated SVDs of changing rank, slices of changing
  bounds and strides, einsums over extents 0, 1 and more, reshapes, thin and full SVDs,
  QR in every mode, eigh, batched: the tape gradient equals a fresh traced ``tf.grad``
  (derived per shape) and a central difference along a random direction, its
  forward-mode tangent a fresh ``tf.jvp``;
* random step programs (strided and negative-step slices, reshapes, broadcasts, pads with
  crops, concatenations, transposes, flips, einsums, sums, maxima) at a sequence of
  shapes of one structure, past the re-making threshold: the tape gradient equals the
  same program's after ``tf.clear_caches()``, a fresh ``tf.grad`` (when no shape is
  data-dependent) and central differences (Re<g, d>: a zero or conjugated gradient
  fails); second order by ``create_graph`` equals ``tape.hvp`` and ``tf.hvp``;
* random two-input programs ``A [m, n]``, ``B [n, k]`` at drawn extents (square and
  non-square, coinciding, 0 and 1) without clearing caches between steps: ``backward``,
  ``tape.grad``, ``tape.hvp`` and ``create_graph`` against ``tf.grad`` / ``tf.hvp`` after
  ``tf.clear_caches()`` and central differences, in float64 and complex128.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given

import tenferro as tf
from tenferro import lax

# ---------------------------------------------------------- one structure, changing shapes


Program = tuple[str, np.ndarray[Any, Any], Callable[[Any], Any], Callable[[Any], Any]]
"""(description, operand, the program on any tensor kind, a reference program with
static shapes for the traced oracle)."""

DTYPES = [np.float64, np.complex128, np.float32, np.complex64]


def _random(rng: np.random.Generator, shape: tuple[int, ...], dt: Any) -> np.ndarray[Any, Any]:
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
    x = _random(rng, shape, dt)
    w = rng.standard_normal(x[key].shape)
    f = lambda t: _weighted(t[key], w)  # noqa: E731
    return f"x{shape}[{key}]", x, f, f


def _reshaping(rng: np.random.Generator, dt: Any) -> Program:
    a, b, c = (int(n) for n in rng.integers(0, 4, 3))
    target = [(a * b, c), (a, b * c), (a * b * c,), (c, a, b), (1, a * b, c, 1)][
        int(rng.integers(0, 5))
    ]
    x = _random(rng, (a, b, c), dt)
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
    x = _random(rng, shapes[0], dt)
    others = [_random(rng, s, dt) for s in shapes[1:]]
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
        _random(rng, (*batch, m, n), np.complex128 if np.dtype(dt).kind == "c" else np.float64),
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
    x = _random(rng, (*batch, m, n), dt)
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
    x = _random(rng, (*batch, m, n), dt)
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
    x = _random(rng, (*batch, n, n), dt)
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


def _check_program(program: Program, dt: Any, rng: np.random.Generator) -> None:
    what, x, f, reference = program
    tol = _tolerance(dt)
    tape = tf.Tape()
    t = tape.track(x)
    got = np.asarray(tape.grad(f(t), t))
    expected = np.asarray(tf.grad(reference)(x))
    _close(got, expected, tol, f"tape grad vs tf.grad: {what} {np.dtype(dt)}")
    direction = _random(rng, x.shape, dt)
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


@pytest.mark.slow
@fuzz_settings(12)
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
        _check_program(family(rng, dt), dt, rng)


@pytest.mark.slow
@pytest.mark.parametrize("dt", [np.float64, np.complex128, np.float32])
def test_truncated_svd_sweep_of_changing_ranks_matches_fresh_derivations(dt: Any) -> None:
    """The same truncated-SVD program at ranks 3, 1, 0, 2, 3 and shapes growing and
    shrinking (the W4 sweep pattern), caches cleared once in the middle."""
    rng = np.random.default_rng(7)
    for step, (m, n, kept) in enumerate([(4, 3, 3), (5, 3, 1), (3, 3, 0), (6, 4, 2), (4, 3, 3)]):
        if step == 3:
            tf.clear_caches()
        u, _, vh = np.linalg.svd(
            _random(rng, (m, n), dt).astype(np.complex128), full_matrices=False
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

        _check_program((f"sweep step {step}", x, f, reference), dt, rng)


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


def test_second_derivative_of_a_strided_slice_at_new_extents() -> None:
    """By the tape's ``create_graph`` (which re-makes the pad's transpose at each new
    extent), then afresh by ``tape.hvp`` (forward over a recorded reverse pass): both
    equal ``tf.hvp`` and the closed form, at shapes the tape has not seen."""

    def f(t: Any) -> Any:
        return tf.sum(tf.sin(t[::2]))

    shapes = [(6, 5), (8, 6), (10, 3)]
    for by in ("create_graph", "tape.hvp"):
        tf.clear_caches()
        rng = np.random.default_rng(0)
        for shape in shapes:
            x, v = rng.standard_normal(shape), rng.standard_normal(shape)
            if by == "create_graph":
                tape = tf.Tape()
                t = tape.track(x)
                g = tape.grad(f(t), t, create_graph=True)
                second = tape.grad(tf.sum(g * v), t)
                np.testing.assert_allclose(np.asarray(second), tf.hvp(f, (x,), (v,)), rtol=1e-10)
                continue
            got = tf.Tape().hvp(f, [x], [v])
            expected = -np.sin(x) * v
            expected[1::2] = 0.0
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(tf.hvp(f, (x,), (v,)), expected, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------- random step programs


STEP_KINDS = [
    "slice",
    "merge",
    "unit axis",
    "expand",
    "broadcast",
    "pad",
    "concatenate",
    "transpose",
    "einsum",
    "sum",
    "max",
    "sin",
    "square",
    "flip",
]
"""(Truncated SVDs of these programs' rank-deficient matrices have tied zero singular
values, whose derivative is refused by design; the families above cover truncated SVD.)"""

Choice = tuple[str, int]


def _step(t: Any, kind: str, seed: int, extra: int) -> Any:
    """One step of a program: its choices come from ``seed`` and adapt to ``t``'s rank
    and extents, so one structure runs at any shape."""
    r = np.random.default_rng(seed)
    shape = tuple(t.shape)
    if not shape:
        t, shape = tf.reshape(t, (1, 1)), (1, 1)
    nd = len(shape)
    complex_ = np.dtype(t.dtype).kind == "c"
    if kind == "slice":
        index = []
        for _ in shape:
            step = int(r.choice([1, 2, -1, -2]))
            start = int(r.integers(0, 2)) if step > 0 else int(r.choice([-1, -2]))
            index.append(slice(start, None, step))
        return t[tuple(index)]
    if kind == "merge" and nd >= 2:
        a = int(r.integers(0, nd - 1))
        return tf.reshape(t, (*shape[:a], shape[a] * shape[a + 1], *shape[a + 2 :]))
    if kind == "unit axis":
        a = int(r.integers(0, nd))
        return tf.reshape(t, (*shape[:a], 1, shape[a], *shape[a + 1 :]))
    if kind == "expand":
        return tf.expand_dims(t, int(r.integers(0, nd + 1)))
    if kind == "broadcast":
        return tf.broadcast_to(t, (extra, *shape))
    if kind == "pad":
        low = [max(int(r.integers(-1, 3)), -n) for n in shape]
        high = [int(r.integers(-1, 3)) for _ in shape]
        high = [
            h if n + lo + h >= 0 else -(n + lo) for h, n, lo in zip(high, shape, low, strict=True)
        ]
        if r.random() < 0.5:
            return lax.pad(t, low, high, [0] * nd)
        return tf.pad(t, [(max(lo, 0), max(h, 0)) for lo, h in zip(low, high, strict=True)])
    if kind == "concatenate":
        a = int(r.integers(0, nd))
        if r.random() < 0.5:
            return tf.concatenate([t, tf.sin(t)], axis=a)
        every_other = tuple(slice(None, None, 2) if j == a else slice(None) for j in range(nd))
        return tf.concatenate([t[every_other], t], axis=a)
    if kind == "transpose":
        return tf.transpose(t, tuple(int(p) for p in r.permutation(nd)))
    if kind == "einsum":
        a = int(r.integers(0, nd))
        m = np.random.default_rng(seed).standard_normal((shape[a], extra))
        letters = "abcdefgh"[:nd]
        return tf.einsum(f"{letters},{letters[a]}z->{letters.replace(letters[a], 'z')}", t, m)
    if kind == "sum" and nd > 1:
        return tf.sum(t, axis=int(r.integers(0, nd)), keepdims=bool(r.random() < 0.5))
    if kind == "max" and nd > 1 and not complex_ and min(shape) > 0:
        return tf.max(t, axis=int(r.integers(0, nd)))
    if kind == "sin":
        return tf.sin(t) * 1.3
    if kind == "square":
        return t * (0.5 + 0.7j) if complex_ else t * t
    if kind == "tsvd" and nd >= 2:
        m = tf.reshape(t, (shape[0], int(np.prod(shape[1:]))))
        if min(m.shape) > 0:
            u, s, vh = tf.linalg.truncated_svd(m, max_rank=2)
            # gauge-invariant functions of the kept factors
            if r.random() < 0.5:
                return tf.einsum("ij,j,jk->ik", u, s, vh)
            return tf.einsum("ij,j,kj->ik", u, s * s, tf.conj(u))
    if kind == "flip":
        return tf.flip(t, int(r.integers(0, nd)))
    return t


def _program(steps: list[Choice], extra: int) -> Callable[[Any], Any]:
    def f(t: Any) -> Any:
        for kind, seed in steps:
            t = _step(t, kind, seed, extra)
        w = np.random.default_rng(99).standard_normal(tuple(t.shape))
        if np.dtype(t.dtype).kind == "c":
            return tf.sum(tf.real(t * tf.conj(t)) * w)
        return tf.sum(t * w)

    return f


def _tape_grad(f: Callable[[Any], Any], x: Any) -> Any:
    tape = tf.Tape()
    t = tape.track(x)
    return np.asarray(tape.grad(f(t), t))


def _second(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
    """<g, v>'s gradient through a create_graph gradient (zeros when g is constant)."""
    tape = tf.Tape()
    t = tape.track(x)
    g = tape.grad(f(t), t, create_graph=True)
    out = tape.grad(tf.sum(tf.real(g * np.conj(v))), t, allow_unused=True)
    return np.zeros_like(x) if out is None else np.asarray(out)


def _check_at_shape(
    f: Callable[[Any], Any], x: Any, rng: np.random.Generator, dynamic: bool, what: str
) -> None:
    got = _tape_grad(f, x)
    tf.clear_caches()
    _close(got, _tape_grad(f, x), 1e-10, f"tape vs after clear_caches: {what}")
    if not dynamic:
        _close(got, tf.grad(f)(x), 1e-8, f"tape vs tf.grad: {what}")
    d = _random(rng, x.shape, x.dtype)
    h = 1e-6
    slope = (
        float(np.asarray(f(tf.asarray(x + h * d)))) - float(np.asarray(f(tf.asarray(x - h * d))))
    ) / (2 * h)
    paired = float(np.real(np.vdot(got, d)))
    assert abs(paired - slope) <= 1e-5 * max(1.0, abs(slope)), (what, paired, slope)
    v = _random(rng, x.shape, x.dtype)
    forward_over_reverse = tf.Tape().hvp(f, [x], [v])
    forward_over_reverse = np.asarray(
        forward_over_reverse[0]
        if isinstance(forward_over_reverse, (list, tuple))
        else forward_over_reverse
    )
    _close(_second(f, x, v), forward_over_reverse, 1e-7, f"create_graph vs tape.hvp: {what}")
    if not dynamic:
        _close(forward_over_reverse, tf.hvp(f, (x,), (v,)), 1e-7, f"tape.hvp vs tf.hvp: {what}")


@pytest.mark.slow
@fuzz_settings(5)
@given(st.integers(0, 2**32 - 1))
def test_random_programs_at_changing_shapes_match_fresh_derivations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps = [
        (str(rng.choice(STEP_KINDS)), int(rng.integers(0, 10**6)))
        for _ in range(int(rng.integers(2, 6)))
    ]
    dt = [np.float64, np.complex128][int(rng.integers(0, 2))]
    shapes = [tuple(int(n) for n in rng.integers(0, 5, 2)) for _ in range(3)]
    for shape in shapes * 2:
        f = _program(steps, int(rng.integers(1, 4)))
        x = _random(rng, shape, dt)
        _check_at_shape(
            f,
            x,
            rng,
            any(kind == "tsvd" for kind, _ in steps),
            f"{steps} at {shape} {np.dtype(dt)}",
        )


PROGRAMS: dict[str, tuple[Callable[[Any], Any], bool]] = {
    "real to complex, reversed stride": (
        lambda t: tf.sum(tf.abs(tf.astype(t, np.complex128)[::-2] * (1 + 2j)) ** 2),
        True,
    ),
    "complex einsum of a real input": (
        lambda t: tf.sum(tf.real(tf.einsum("ij,jk->ik", t * (1 + 1j), tf.transpose(t))) ** 2),
        True,
    ),
    "broadcast then pad": (
        lambda t: tf.sum(
            tf.sin(tf.pad(tf.broadcast_to(t[None], (2, *t.shape)), [(0, 0), (1, 2), (0, 1)]))
        ),
        False,
    ),
    "concatenate of reversals": (
        lambda t: tf.sum(tf.concatenate([t[::-1], t[:, ::-1] * 2], axis=0) ** 3),
        False,
    ),
    "centred squares": (lambda t: tf.sum((t - tf.sum(t, axis=1, keepdims=True)) ** 2), False),
    "variance and mean": (
        lambda t: tf.sum(tf.var(t, axis=0)) + tf.sum(tf.mean(t, axis=1) ** 2),
        True,
    ),
    "max over an axis": (lambda t: tf.sum(tf.max(t, axis=1) ** 2), True),
    "qr positive gauge": (
        lambda t: tf.sum(tf.abs(tf.linalg.qr(t, gauge="positive").R) ** 2),
        False,
    ),
    "svdvals cubed": (lambda t: tf.sum(tf.linalg.svdvals(t) ** 3), False),
}

SHAPES = [(3, 4), (5, 2), (2, 2), (4, 4), (6, 3), (1, 5), (5, 1), (7, 7)] + [(3, 4)] * 9


def _real(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def g(t: Any) -> Any:
        out = f(t)
        return tf.real(out) + 0.7 * tf.imag(out) if np.dtype(out.dtype).kind == "c" else out

    return g


_CASES = [
    pytest.param(name, dt, id=f"{name}-{np.dtype(dt).name}")
    for name, (_, real_only) in sorted(PROGRAMS.items())
    for dt in ((np.float64,) if real_only else (np.float64, np.complex128))
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "dt"), _CASES)
def test_programs_past_the_remake_threshold_match_fresh_derivations(name: str, dt: Any) -> None:
    """Shapes never seen, then one shape met more than ``REMAKE_AFTER`` times (extent
    kernels first, re-made instances after); real-input programs (var, max) in float64."""
    f, _ = PROGRAMS[name]
    f = _real(f)
    rng = np.random.default_rng(len(name))
    for i, shape in enumerate(SHAPES):
        x = _random(rng, shape, dt)
        got = _tape_grad(f, x)
        _close(got, tf.grad(f)(x), 1e-9, f"{name} at {shape} (run {i})")
        if i < 8 or i == len(SHAPES) - 1:
            _check_at_shape(f, x, rng, False, f"{name} at {shape}")


# ------------------------------------------------- two-input programs, coinciding extents


PairStep = Callable[[Any, Any], tuple[Any, Any]]


def _square_map(x: Any) -> Any:
    """A smooth map with values bounded by 1 (no overflow however the steps compose)."""
    return x / (1.0 + x * tf.conj(x)) + tf.sin(x * 0.1)


def _scaled(x: Any, extent: int) -> Any:
    return x * (1.0 / (1 + extent))


# Each step maps (X, Y) to (X', Y') for any extents: X is 2-D, Y is 2-D, and the
# steps only use shape-polymorphic operations (their own extents read from the
# operands), so the same program runs at every drawn shape.
PAIR_STEPS: dict[str, PairStep] = {
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
            x, y = PAIR_STEPS[name](x, y)
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


@pytest.mark.slow
@fuzz_settings(20)
@given(
    st.lists(st.sampled_from(sorted(PAIR_STEPS)), min_size=1, max_size=4),
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
