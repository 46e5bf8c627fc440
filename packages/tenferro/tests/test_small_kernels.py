"""The small-size evaluation paths of structural primitives that derivative programs run
at every backward step (spectral rules, sums): a trailing ``embed_diag`` written by one
strided assignment, ``broadcast_in_dim`` written out below a size limit, two-matrix
``dot_general`` of transposed views, ``tril``/``triu`` by a mask made once per instance,
``extract_diag`` without moving an axis already in place. Each equals its numpy
definition for every dtype and layout (evaluation only; the rules are covered by the
rule-case tables)."""

from __future__ import annotations

from typing import Any

import numpy as np
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from tenferro_support import sample

from tenferro.linalg.degeneracy import _first_uneven, uneven_on_ties
from tenferro.meta import Meta
from tenferro.ops import BroadcastInDim, DotGeneral, EmbedDiag, ExtractDiag, Tril, Triu

DTYPES = [np.dtype(d) for d in ("float32", "float64", "complex64", "complex128", "int64")]


def _sample(shape: tuple[int, ...], dt: np.dtype[Any], seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    if dt.kind == "i":
        return rng.integers(-5, 5, shape).astype(dt)
    return sample(shape, dt, rng)


@fuzz_settings(40)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
    axes=st.tuples(st.integers(0, 2), st.integers(0, 3)),
    dt=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_embed_diag_equals_its_definition(shape, axes, dt, seed):
    axis_a, axis_b = axes[0] % len(shape), axes[1] % (len(shape) + 1)
    x = _sample(shape, dt, seed)
    op = EmbedDiag.make((Meta(shape, dt),), axis_a=axis_a, axis_b=axis_b)
    got = op.impl(x)
    n = shape[axis_a]
    moved = np.moveaxis(x, axis_a, -1)
    expected = np.zeros((*moved.shape, n), dt)
    index = np.arange(n)
    expected[..., index, index] = moved
    source = axis_a if axis_a < axis_b else axis_a + 1
    expected = np.moveaxis(expected, (-2, -1), (source, axis_b))
    assert got.shape == op.outputs[0].shape
    np.testing.assert_array_equal(got, expected)


@fuzz_settings(40)
@given(
    shape=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    extra=st.lists(st.integers(0, 40), min_size=0, max_size=2).map(tuple),
    permute=st.booleans(),
    dt=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_broadcast_in_dim_equals_numpy_broadcasting(shape, extra, permute, dt, seed):
    x = _sample(shape, dt, seed)
    target = (*extra, *shape)
    dims = tuple(range(len(extra), len(target)))
    if permute and len(shape) == 2:  # the operand's axes land in the other order
        x = np.swapaxes(x, 0, 1).copy()
        dims = dims[::-1]
        expected = np.broadcast_to(np.swapaxes(x, 0, 1), target)
    else:
        expected = np.broadcast_to(x, target)
    op = BroadcastInDim.make((Meta(x.shape, dt),), shape=target, dims=dims)
    got = op.impl(x)
    assert got.shape == target
    assert got.dtype == dt
    np.testing.assert_array_equal(got, expected)


@fuzz_settings(40)
@given(
    m=st.integers(0, 4),
    k=st.integers(0, 4),
    n=st.integers(0, 4),
    contracting=st.sampled_from([(1, 0), (0, 0), (1, 1), (0, 1)]),
    dt=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_two_matrix_dot_general_equals_tensordot(m, k, n, contracting, dt, seed):
    left, right = contracting
    lhs = _sample((m, k) if left == 1 else (k, m), dt, seed)
    rhs = _sample((k, n) if right == 0 else (n, k), dt, seed + 1)
    op = DotGeneral.make(
        (Meta(lhs.shape, dt), Meta(rhs.shape, dt)),
        lhs_contracting=(left,),
        rhs_contracting=(right,),
        lhs_batch=(),
        rhs_batch=(),
    )
    got = op.impl(lhs, rhs)
    expected = np.tensordot(lhs, rhs, axes=([left], [right]))
    assert got.shape == (m, n)
    assert got.dtype == dt
    tol = 1e-4 if dt in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@fuzz_settings(60)
@given(
    k=st.integers(0, 40),
    ties=st.lists(st.integers(0, 39), max_size=4),
    weights=st.sampled_from(["even", "ramp", "one"]),
    dt=st.sampled_from([np.dtype(np.float32), np.dtype(np.float64)]),
    seed=st.integers(0, 2**16),
)
def test_the_short_tie_scan_agrees_with_the_array_check(k, ties, weights, dt, seed):
    rng = np.random.default_rng(seed)
    w = np.sort(rng.standard_normal(k)).astype(dt)
    for i in ties:
        if i + 1 < k:
            w[i + 1] = w[i]
    cotangent = {
        "even": np.full(k, 0.7, dt),
        "ramp": np.arange(k, dtype=dt),
        "one": (np.arange(k) == k // 2).astype(dt),
    }[weights]
    bad = uneven_on_ties(w, cotangent, 1e-12)
    expected = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else None
    assert _first_uneven(w, cotangent, 1e-12) == expected


@fuzz_settings(40)
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple),
    k=st.integers(-4, 4),
    dt=st.sampled_from([*DTYPES, np.dtype(bool)]),
    seed=st.integers(0, 2**16),
)
def test_triangles_equal_numpy(shape, k, dt, seed):
    x = (
        _sample(shape, np.dtype(np.int64), seed).astype(dt)
        if dt.kind == "b"
        else _sample(shape, dt, seed)
    )
    if dt.kind == "f" and x.size:
        x.flat[0] = np.nan  # kept or cleared like any value
    for primitive, reference in ((Tril, np.tril), (Triu, np.triu)):
        got = primitive.make((Meta(shape, dt),), k=k).impl(x)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, reference(x, k))


@fuzz_settings(40)
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple),
    axes=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    dt=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)
def test_extract_diag_equals_numpy(shape, axes, dt, seed):
    a, b = axes[0] % len(shape), axes[1] % len(shape)
    if a == b:
        b = (a + 1) % len(shape)
    x = _sample(shape, dt, seed)
    op = ExtractDiag.make((Meta(shape, dt),), axis_a=a, axis_b=b)
    got = op.impl(x)
    expected = np.moveaxis(np.diagonal(x, axis1=a, axis2=b), -1, a if a < b else a - 1)
    assert got.shape == op.outputs[0].shape
    np.testing.assert_array_equal(got, expected)


def test_broadcast_in_dim_takes_a_number_operand():
    """A Python float (how a number operand may arrive) broadcasts like its array."""
    for target in ((3,), (2, 700)):  # written out, and a view above the size limit
        op = BroadcastInDim.make((Meta((), np.dtype(np.float64)),), shape=target, dims=())
        np.testing.assert_array_equal(op.impl(2.5), np.full(target, 2.5))
