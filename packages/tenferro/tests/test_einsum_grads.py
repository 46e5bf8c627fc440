"""Derivatives of tf.einsum in every mode: finite differences, the adjoint identity and
second order (tf.testing.check_grads, traced), eager tape parity, complex convention."""

from __future__ import annotations

import numpy as np
import pytest
from einsum_support import laid_out, networks
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

FORMS = [
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ab,bc,cd,da->", [(2, 3), (3, 2), (2, 2), (2, 2)]),
    ("ii->", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->ij", [(2, 2, 3)]),
    ("i->ii", [(3,)]),
    ("ij->iji", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("tkj,to->tokj", [(2, 3, 2), (2, 3)]),  # batched outer products (dot_general, no
    ("tjk,to->tokj", [(2, 3, 2), (2, 3)]),  # contraction), operands swapped, transposed
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ji->", [(2, 3), (3, 2)]),
    (",i->i", [(), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ijk->kji", [(2, 3, 2)]),
]


def data(shape, dtype, rng):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return np.asarray(x, dtype=dtype)


@pytest.mark.parametrize(("subscripts", "shapes"), FORMS, ids=[f[0] for f in FORMS])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_check_grads_order_two(subscripts, shapes, dtype):
    rng = np.random.default_rng(7)
    xs = [data(s, dtype, rng) for s in shapes]
    tf.testing.check_grads(lambda *a: tf.einsum(subscripts, *a), xs, order=2)


@pytest.mark.parametrize("optimize", ["greedy", "optimal", "dp", False, [(2, 3), (0, 1), (0, 1)]])
def test_check_grads_with_every_planner(optimize):
    rng = np.random.default_rng(8)
    xs = [data(s, np.float64, rng) for s in [(2, 3), (3, 2), (2, 2), (2, 2)]]
    tf.testing.check_grads(
        lambda *a: tf.einsum("ab,bc,cd,da->", *a, optimize=optimize), xs, order=2
    )


def test_check_grads_interleaved_and_float32():
    rng = np.random.default_rng(9)
    a, b = data((2, 3), np.float32, rng), data((3, 2), np.float32, rng)
    tf.testing.check_grads(lambda x, y: tf.einsum(x, [0, 1], y, [1, 2], [0, 2]), [a, b], order=2)
    c, d = data((2, 3), np.complex64, rng), data((3,), np.complex64, rng)
    tf.testing.check_grads(lambda x, y: tf.einsum("ij,j->i", x, y), [c, d], order=1)


@st.composite
def problems(draw):
    pool = "abcd"
    sizes = {c: draw(st.integers(1, 3)) for c in pool}
    count = draw(st.integers(1, 3))
    terms = [
        "".join(draw(st.lists(st.sampled_from(pool), min_size=0, max_size=3))) for _ in range(count)
    ]
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    if output and draw(st.booleans()):
        output += output[0]  # a diagonal embedding
    dtype = draw(st.sampled_from([np.float64, np.complex128]))
    return ",".join(terms) + "->" + output, [[sizes[c] for c in t] for t in terms], dtype


@fuzz_settings(25)
@given(problems())
def test_check_grads_class(problem):
    subscripts, shapes, dtype = problem
    rng = np.random.default_rng(10)
    xs = [data(s, dtype, rng) for s in shapes]
    tf.testing.check_grads(lambda *a: tf.einsum(subscripts, *a), xs, order=2)


def loss(subscripts):
    def f(*xs):
        y = tf.einsum(subscripts, *xs)
        return tf.sum(tf.real(y * tf.conj(y)) + tf.real(y))

    return f


@pytest.mark.parametrize(("subscripts", "shapes"), FORMS, ids=[f[0] for f in FORMS])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eager_tape_matches_traced(subscripts, shapes, dtype):
    rng = np.random.default_rng(11)
    xs = [data(s, dtype, rng) for s in shapes]
    f = loss(subscripts)
    argnums = tuple(range(len(xs)))
    traced = tf.grad(f, argnums=argnums)(*xs)
    tape = tf.Tape()
    leaves = [tape.track(x) for x in xs]
    eager = tape.grad(f(*leaves), leaves)
    for e, t in zip(eager, traced, strict=True):
        np.testing.assert_allclose(np.asarray(e), np.asarray(t), rtol=1e-12, atol=1e-12)
    tracked = [tf.EagerTensor(x, requires_grad=True) for x in xs]
    f(*tracked).backward()
    for e, t in zip(tracked, traced, strict=True):
        np.testing.assert_allclose(np.asarray(e.grad), np.asarray(t), rtol=1e-12, atol=1e-12)
    for _ in range(2):  # the cached program serves later calls and their backward
        tracked = [tf.EagerTensor(x, requires_grad=True) for x in xs]
        f(*tracked).backward()
        np.testing.assert_allclose(np.asarray(tracked[0].grad), np.asarray(traced[0]), rtol=1e-12)


@pytest.mark.parametrize(("subscripts", "shapes"), FORMS[:8], ids=[f[0] for f in FORMS[:8]])
def test_eager_second_order_matches_traced(subscripts, shapes):
    rng = np.random.default_rng(12)
    xs = [data(s, np.float64, rng) for s in shapes]
    ts = [data(s, np.float64, rng) for s in shapes]
    f = loss(subscripts)
    if len(xs) == 1:
        traced = tf.hvp(f, (xs[0],), (ts[0],))
        eager = tf.Tape().hvp(f, [xs[0]], [ts[0]])
        np.testing.assert_allclose(np.asarray(eager), np.asarray(traced), rtol=1e-11, atol=1e-12)
    else:
        traced = tf.hvp(f, tuple(xs), tuple(ts))
        eager = tf.Tape().hvp(f, xs, ts)
        for e, t in zip(eager, traced, strict=True):
            np.testing.assert_allclose(np.asarray(e), np.asarray(t), rtol=1e-11, atol=1e-12)


def test_complex_convention_is_torchs():
    """grad of sum |A B|^2 w.r.t. A is 2 (A B) B^H (PyTorch's; JAX's is its conjugate)."""
    rng = np.random.default_rng(13)
    a, b = data((2, 3), np.complex128, rng), data((3, 4), np.complex128, rng)

    def f(x, y):
        z = tf.einsum("ij,jk->ik", x, y)
        return tf.sum(tf.real(z * tf.conj(z)))

    expected = 2 * (a @ b) @ b.conj().T
    np.testing.assert_allclose(np.asarray(tf.grad(f)(a, b)), expected, rtol=1e-12)
    x = tf.EagerTensor(a, requires_grad=True)
    f(x, b).backward()
    np.testing.assert_allclose(np.asarray(x.grad), expected, rtol=1e-12)


@fuzz_settings(30)
@given(networks(), st.sampled_from([np.float64, np.complex128]), st.sampled_from(["c", "f"]))
def test_network_gradients_in_every_mode(problem, dtype, layout):
    """Chains, transfer steps and batched (outer) products at extents where dot_general
    flips or broadcasts its products: the tape's, tf.grad's and tf.jit(tf.grad)'s
    gradients agree, and match central finite differences along a random direction."""
    subscripts, shapes = problem
    rng = np.random.default_rng(14)
    xs = [laid_out(data(s, dtype, rng), layout) for s in shapes]
    weight = data(np.einsum(subscripts, *xs).shape, dtype, rng)

    def f(*args):
        y = tf.einsum(subscripts, *args)
        return tf.sum(tf.real(y * weight))

    argnums = tuple(range(len(xs)))
    traced = tf.grad(f, argnums=argnums)(*xs)
    jitted = tf.jit(tf.grad(f, argnums=argnums))(*xs)
    tape = tf.Tape()
    leaves = [tape.track(x) for x in xs]
    eager = tape.grad(f(*leaves), leaves)
    scale = max(1.0, max(float(np.abs(np.asarray(t)).max(initial=0.0)) for t in traced))
    for e, t, j in zip(eager, traced, jitted, strict=True):
        np.testing.assert_allclose(np.asarray(e), np.asarray(t), rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(np.asarray(j), np.asarray(t), rtol=1e-10, atol=1e-10 * scale)
    directions = [data(x.shape, dtype, rng) for x in xs]
    eps = 1e-6

    def value(step):
        args = [x + step * d for x, d in zip(xs, directions, strict=True)]
        return float(np.real(np.sum(np.einsum(subscripts, *args) * weight)))

    numeric = (value(eps) - value(-eps)) / (2 * eps)
    # the gradient is d(loss)/d(conj x) convention-wise: <g, d> = Re sum(conj(g) d)
    analytic = sum(
        float(np.real(np.vdot(np.asarray(g), d))) for g, d in zip(traced, directions, strict=True)
    )
    assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(numeric))


def test_second_derivatives_of_an_empty_contraction_are_empty() -> None:
    """On the tape (``create_graph``) and by ``grad`` of ``grad``."""
    f = lambda t: tf.einsum("ij,ij->", t, t)  # noqa: E731
    tape = tf.Tape()
    t = tape.track(np.zeros((0, 0)))
    g = tape.grad(f(t), t, create_graph=True)
    second = tape.grad(tf.sum(g), t)
    assert np.asarray(second).shape == (0, 0)
    assert np.asarray(tf.grad(lambda y: tf.sum(tf.grad(f)(y)))(np.zeros((0, 0)))).shape == (0, 0)
