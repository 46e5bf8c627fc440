"""Sliced contractions: a memory limit that no path fits slices the contraction, and the
sliced einsum equals the unsliced one -- values, gradients (which slice the same way)
and second derivatives -- in eager, taped, traced and vmapped code, with every
intermediate of a slice within the limit."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest
from einsum_support import data
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.einsum import PlanningError
from tenferro.einsum.sliced import SlicedContraction

api = sys.modules["tenferro.einsum.api"]


@st.composite
def limited(draw: Any) -> tuple[str, list[tuple[int, ...]], int, Any]:
    """A connected network of 3-5 operands (matrices and 3-tensors on a ring with
    chords, some labels kept) and a memory limit below its largest intermediate."""
    count = draw(st.integers(3, 5))
    labels = "abcdefghij"
    sizes = {c: draw(st.integers(2, 4)) for c in labels}
    terms = []
    for k in range(count):
        term = labels[k] + labels[(k + 1) % count]
        if draw(st.booleans()):
            term += labels[5 + draw(st.integers(0, 4))]
        terms.append("".join(dict.fromkeys(term)))
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.lists(st.sampled_from(used), max_size=2, unique=True)))
    subscripts = ",".join(terms) + "->" + output
    shapes = [tuple(sizes[c] for c in t) for t in terms]
    _, info = tf.einsum_path(subscripts, *shapes, shapes=True)
    top = max(info.size_list[:-1], default=1)
    limit = draw(st.integers(1, max(1, top - 1)))
    dtype = draw(st.sampled_from([np.float64, np.complex128]))
    return subscripts, shapes, limit, dtype


def _sliced_nodes(subscripts: str, operands: list[Any], limit: int) -> list[SlicedContraction]:
    metas = tuple(tf.asarray(o).meta for o in operands)
    program = api._lowered(subscripts, metas, "auto", limit)
    return [op for op, _, _ in program.instructions if isinstance(op, SlicedContraction)]


@fuzz_settings(40)
@given(limited())
def test_sliced_einsum_equals_the_unsliced_one(case: Any) -> None:
    subscripts, shapes, limit, dtype = case
    rng = np.random.default_rng(3)
    xs = [data(s, dtype, rng) for s in shapes]
    expected = np.einsum(subscripts, *xs)
    got = tf.einsum(subscripts, *xs, memory_limit=limit)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-10, atol=1e-10)
    _, info = tf.einsum_path(subscripts, *shapes, shapes=True, memory_limit=limit)
    output_size = math.prod(info.size_dict[c] for c in info.output_subscript)
    bound = max(limit, output_size)
    if info.sliced:
        assert info.sliced_largest_intermediate <= bound
        assert info.slices == math.prod(info.size_dict[c] for c in info.sliced)
        assert info.sliced_cost >= info.opt_cost // 2  # slicing never saves work
        nodes = _sliced_nodes(subscripts, xs, limit)
        assert len(nodes) == 1
        program = nodes[0]._prepare()[0]
        sizes = [math.prod(op.outputs[0].shape) for op, _, _ in program.instructions[:-1]]
        assert max(sizes, default=1) <= bound  # every intermediate of a slice fits
    else:  # a path that fits: its pairs' results but the last (one-term steps only
        # sum an operand's own labels: never larger than the operand)
        pairs = [
            size
            for step, size in zip(info.contraction_list, info.size_list, strict=True)
            if len(step[0]) > 1
        ]
        assert max(pairs[:-1], default=1) <= bound


@fuzz_settings(25)
@given(limited())
def test_gradients_of_sliced_einsums_equal_the_unsliced_ones(case: Any) -> None:
    subscripts, shapes, limit, dtype = case
    rng = np.random.default_rng(4)
    xs = [data(s, dtype, rng) for s in shapes]
    weights = data(np.einsum(subscripts, *xs).shape, dtype, rng)
    argnums = tuple(range(len(xs)))

    def loss(limit: Any) -> Any:
        def f(*operands: Any) -> Any:
            out = tf.einsum(subscripts, *operands, memory_limit=limit)
            return tf.real(tf.sum(out * weights))

        return f

    expected = tf.grad(loss(None), argnums=argnums)(*xs)
    traced = tf.grad(loss(limit), argnums=argnums)(*xs)
    tape = tf.Tape()
    leaves = [tape.track(x) for x in xs]
    taped = tape.grad(loss(limit)(*leaves), leaves)
    for want, got_traced, got_taped in zip(expected, traced, taped, strict=True):
        np.testing.assert_allclose(np.asarray(got_traced), np.asarray(want), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(got_taped), np.asarray(want), rtol=1e-10, atol=1e-10)


def test_gradients_slice_the_same_way() -> None:
    """The backward pass of a sliced contraction is made of sliced contractions planned
    for the same limit: every intermediate of their slices fits too."""
    subscripts = "ab,bc,cd,da->"
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((6, 6)) for _ in range(4)]
    limit = 4
    tf.clear_caches()
    grads = tf.grad(lambda *a: tf.einsum(subscripts, *a, memory_limit=limit), argnums=(0, 1, 2, 3))
    values = grads(*xs)
    for k, value in enumerate(values):
        others = [x for j, x in enumerate(xs) if j != k]
        terms = subscripts.split("->")[0].split(",")
        expected = np.einsum(
            ",".join(t for j, t in enumerate(terms) if j != k) + "->" + terms[k], *others
        )
        np.testing.assert_allclose(np.asarray(value), expected, rtol=1e-12)
    made = [op for op in SlicedContraction._instances.values() if isinstance(op, SlicedContraction)]
    transposes = [op for op in made if op.outputs[0].shape == (6, 6)]
    assert len(transposes) == 4  # one sliced contraction per operand's cotangent
    assert all(op.memory_limit == limit for op in made)
    for op in transposes:
        program = op._prepare()[0]
        sizes = [math.prod(o.outputs[0].shape) for o, _, _ in program.instructions[:-1]]
        assert max(sizes, default=1) <= max(limit, math.prod(op.outputs[0].shape))


def test_second_derivatives_through_a_sliced_contraction() -> None:
    subscripts = "ab,bc,ca->"
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((5, 5)) for _ in range(3)]
    direction = rng.standard_normal((5, 5))

    def f(limit: Any) -> Any:
        return lambda a: tf.einsum(subscripts, a, tf.sin(a), xs[2], memory_limit=limit)

    want = tf.hvp(f(None), (xs[0],), (direction,))
    got = tf.hvp(f(3), (xs[0],), (direction,))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_vmap_of_a_sliced_contraction() -> None:
    subscripts = "ab,bc,cd->ad"
    rng = np.random.default_rng(2)
    batch = rng.standard_normal((3, 4, 5))
    rest = [rng.standard_normal((5, 6)), rng.standard_normal((6, 4))]
    got = tf.vmap(lambda a: tf.einsum(subscripts, a, *rest, memory_limit=8))(batch)
    np.testing.assert_allclose(
        np.asarray(got), np.einsum("zab,bc,cd->zad", batch, *rest), rtol=1e-12
    )
    grads = tf.vmap(tf.grad(lambda a: tf.sum(tf.einsum(subscripts, a, *rest, memory_limit=8))))(
        batch
    )
    single = np.einsum("bc,cd->b", *rest)
    np.testing.assert_allclose(np.asarray(grads), np.broadcast_to(single, batch.shape), rtol=1e-12)


def test_a_limit_that_needs_too_many_slices_says_why() -> None:
    shapes = [(512, 512), (512, 512), (512, 512)]
    with pytest.raises(PlanningError) as caught:
        tf.einsum_path("ab,bc,ca->", *shapes, shapes=True, memory_limit=1)
    message = str(caught.value)
    assert "memory_limit=1" in message
    assert "slices" in message
    assert "'ab,bc,ca->'" in message
    assert isinstance(caught.value, RuntimeError)  # opt_einsum raises RuntimeError there
