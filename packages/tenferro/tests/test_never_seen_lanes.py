"""Never-seen shapes' fast lanes equal the general paths (session 21).

* Extent kernels (what a derivative program runs at a node's extents without making
  its instances) give exactly what the instance ``remake`` makes gives: the pad's lane
  without interior padding or crop, and its general path, slices, reshapes, broadcasts.
* A primitive declaring that its rules read no coincidence of extents
  (``reads_extent_coincidences = False``) serves an instance whose extents coincide
  where its class's stand-in's do not with that class: the programs re-made for the
  instance, and those run with extent kernels, equal the ones derived afresh at its
  extents; a primitive that reads them (the SVD: square or not) gets a class of its own.
* On the tape, programs over those primitives at a sequence of shapes whose extents
  coincide in changing ways (so later shapes join earlier classes): gradients equal a
  fresh traced ``tf.grad`` and central finite differences, Hessian-vector products by
  ``tape.hvp`` and ``create_graph`` equal ``tf.hvp``; float64 and complex128.
* The short-spectrum tie scan (quick rejection, then the pairwise loop) flags what the
  numpy path flags.
"""

from __future__ import annotations

import gc
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import assume, given
from test_extent_generic import CASES, DTYPES, _active, _inputs, _programs, _structure

import tenferro as tf
from tenferro import ops
from tenferro.core.primitive import TensorPrimitive
from tenferro.eager import extents
from tenferro.eager.record_plans import canonical_names
from tenferro.linalg.degeneracy import _first_uneven, uneven_on_ties
from tenferro.linalg.singular_values import Svd, SvdTruncate
from tenferro.meta import Meta

F64, C128 = np.dtype(np.float64), np.dtype(np.complex128)


def _array(shape: tuple[int, ...], dtype: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    value = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * rng.standard_normal(shape)
    return value.astype(dtype)


# ---------------------------------------------------------------------- extent kernels


@fuzz_settings(120)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(-2, 2), st.integers(-2, 3)), max_size=3),
    st.lists(st.integers(0, 1), max_size=3),
    st.sampled_from(DTYPES),
)
def test_pad_extent_kernels_equal_the_instances(
    axes: list[tuple[int, int, int]], inner: list[int], dtype: Any
) -> None:
    """Every pad (crops and interior padding included): the extent kernel, given the
    output extents, returns the instance's output exactly."""
    shape = tuple(n for n, _, _ in axes)
    low = tuple(lo for _, lo, _ in axes)
    high = tuple(hi for _, _, hi in axes)
    interior = tuple((inner + [0] * 3)[: len(axes)])
    meta = Meta(shape, dtype)
    try:
        op = ops.Pad.make((meta,), low=low, high=high, interior=interior)
    except tf.ShapeError:
        assume(False)  # crops more than the extent
        raise
    x = _array(shape, dtype, len(axes))
    expected = op.impl(x)
    got = op.extent_kernel(op.outputs[0].shape)(x)
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected)


@fuzz_settings(60)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.data())
def test_structural_extent_kernels_equal_the_instances(shape: list[int], data: Any) -> None:
    """Canonical slices, reshapes and broadcasts: the extent kernel equals the instance."""
    x = _array(tuple(shape), F64, 3)
    meta = Meta(tuple(shape), F64)
    starts = tuple(data.draw(st.integers(0, n)) for n in shape)
    strides = tuple(data.draw(st.integers(1, 2)) for _ in shape)
    counts = tuple(-(-(n - s) // t) for n, s, t in zip(shape, starts, strides, strict=True))
    limits = tuple(
        s + ((c - 1) * t + 1 if c else 0) for s, t, c in zip(starts, strides, counts, strict=True)
    )
    made = [
        ops.Slice.make((meta,), starts=starts, limits=limits, strides=strides),
        ops.Reshape.make((meta,), shape=(int(np.prod(shape)),)),
        ops.BroadcastInDim.make((meta,), shape=(2, *shape), dims=tuple(range(1, len(shape) + 1))),
    ]
    for op in made:
        got = op.extent_kernel(op.outputs[0].shape)(x)
        assert np.array_equal(got, op.impl(x))
        assert got.shape == op.outputs[0].shape


# ---------------------------------------------------------------------- coincidences


def _declared_free() -> set[type[TensorPrimitive]]:
    gc.collect()  # dataclass(slots=True) leaves the class it replaces until collected
    found: set[type[TensorPrimitive]] = set()
    pending = [TensorPrimitive]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if getattr(sub, "reads_extent_coincidences", True) is False:
                found.add(sub)
    return found


FREE = {ops.Reshape, ops.BroadcastInDim, ops.ReduceSum, ops.Slice, ops.Pad, SvdTruncate}


def test_the_primitives_reading_no_coincidences_are_checked_here() -> None:
    assert _declared_free() == FREE
    assert all(cls.extent_generic and cls in CASES for cls in FREE)


def _make(cls: Any, free: list[int], dtype: Any) -> Any:
    """An instance of ``cls`` built from the extents ``free`` (each at least 2)."""
    a, b, c, d = free
    real = np.empty(0, dtype).real.dtype
    if cls is ops.Reshape:
        return cls.make((Meta((a, b, c), dtype),), shape=(a * b, c))
    if cls is ops.BroadcastInDim:
        return cls.make((Meta((a, b), dtype),), shape=(c, a, b), dims=(1, 2))
    if cls is ops.ReduceSum:
        return cls.make((Meta((a, b, c), dtype),), axes=(1,))
    if cls is ops.Slice:  # x[1:, ::2] (canonical limits)
        return cls.make(
            (Meta((a, b), dtype),),
            starts=(1, 0),
            limits=(a, 2 * ((b - 1) // 2) + 1),
            strides=(1, 2),
        )
    if cls is ops.Pad:
        return cls.make((Meta((a, b), dtype),), low=(1, 0), high=(0, 2), interior=(0, 0))
    m, k, n = a, max(b, c) + 1, d  # SvdTruncate: U [M, K], S [K], Vh [K, N] to rank R < K
    r = min(b, c)
    metas = (Meta((m, k), dtype), Meta((k,), real), Meta((k, n), dtype))
    return cls.make(metas, rank=r)


@st.composite
def _pairs(draw: Any) -> Any:
    """A class's stand-in of distinct extents and an instance whose extents coincide
    (both at least 2: the same 0 and 1 entries)."""
    cls = draw(st.sampled_from(sorted(FREE, key=lambda c: c.name)))
    distinct = draw(st.lists(st.integers(2, 9), min_size=4, max_size=4, unique=True))
    values = draw(st.lists(st.sampled_from(distinct[:2]), min_size=4, max_size=4))
    return cls, distinct, values


@pytest.mark.slow
@fuzz_settings(80)
@given(_pairs(), st.sampled_from(DTYPES), st.data())
def test_coinciding_extents_join_a_class_and_equal_fresh_derivations(
    pair: Any, dtype: Any, data: st.DataObject
) -> None:
    """An instance whose extents coincide where the class's stand-in's do not joins its
    class; the programs re-made for it, and those run with extent kernels, equal the
    programs derived afresh at its extents (instruction by instruction, and values)."""
    cls, distinct, values = pair
    stand, joining = _make(cls, distinct, dtype), _make(cls, values, dtype)
    fa, fb = stand.extent_facts(), joining.extent_facts()
    assume(fa is not None and fb is not None and fa != fb and extents._separates(fa, fb))
    count = len(stand.inputs)
    active = _active(cls, count, data)
    keys = canonical_names(count)
    tf.clear_caches()
    shared = extents.extent_class(stand, active, keys)
    assert shared is not None
    assert extents.extent_class(joining, active, keys) is shared  # joined, not derived
    fresh = extents.RecordedGraph.from_primitive(joining, keys)
    seeds = [tuple(joining.outputs), tuple(joining.inputs[i] for i in active)]
    for at_stand, at_fresh, given_seeds in zip(
        _programs(shared, active), _programs(fresh, active), seeds, strict=True
    ):
        inputs = _inputs(at_stand, shared, joining, given_seeds)
        remade = extents.reinstantiate(at_stand.program, inputs, (stand, joining))
        assert _structure(remade) == _structure(at_fresh.program)
        at_any, mapped, single = extents._at_any_extents(at_stand.program, stand)
        if at_any is None:
            continue
        runner: Any = at_any
        if mapped:
            runner = extents._AtNode(at_any, extents._flat_extents(joining), single)
        values = [
            _array(np.shape(v), v.dtype, 11 + i).astype(v.dtype) for i, v in enumerate(inputs)
        ]
        expected = at_fresh.program.eval(values)
        for _ in range(3):  # interpreted, then generated code
            for got, want in zip(runner.eval(values), expected, strict=True):
                np.testing.assert_array_equal(got, want)
        if single is not None:
            np.testing.assert_array_equal(runner.only_kernel()(*values), expected[0])


def test_a_primitive_reading_coincidences_gets_a_class_per_pattern() -> None:
    """The SVD's rules tell square from wide matrices: a square instance never joins
    the class of a wide one (its pattern only adds coincidences)."""
    tf.clear_caches()
    keys = canonical_names(1)
    wide = Svd.make((Meta((3, 5), F64),), eps=1e-12, gauge="raw")
    square = Svd.make((Meta((4, 4), F64),), eps=1e-12, gauge="raw")
    first = extents.extent_class(wide, (0,), keys)
    assert first is not None
    assert extents.extent_class(square, (0,), keys) not in (None, first)


def _program(x: Any) -> Any:
    """Reshapes, broadcasts, sums, slices and pads whose extents coincide in changing
    ways as ``x``'s shape changes."""
    m, n = x.shape
    y = tf.reshape(x * tf.conj(x) + x, (n, m))
    z = tf.broadcast_to(tf.reshape(y, (1, n, m)), (2, n, m)) * 0.5
    s = tf.sum(z, axis=0)[1:, ::2]
    p = tf.pad(s, ((1, 0), (0, 2)))
    return tf.sum(tf.real(p * tf.conj(tf.sin(p)))) + tf.sum(tf.real(tf.exp(y) * y))


@pytest.mark.slow
@fuzz_settings(12)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=3, max_size=6),
    st.sampled_from([np.float64, np.complex128]),
)
def test_tape_at_coinciding_extents_equals_traced_and_finite_differences(
    shapes: list[tuple[int, int]], dtype: Any
) -> None:
    """One program at a sequence of shapes (extents coinciding in changing ways): tape
    gradients equal traced ``tf.grad`` and a central difference along a random direction;
    ``tape.hvp`` and ``create_graph`` equal ``tf.hvp``."""
    tf.clear_caches()
    for step, shape in enumerate(shapes):
        x = _array(shape, dtype, step)
        tape = tf.Tape()
        leaf = tape.track(x)
        got = np.asarray(tape.grad(_program(leaf), leaf))
        expected = np.asarray(tf.grad(_program)(x))
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
        direction = _array(shape, dtype, 100 + step)
        eps = 1e-6

        def loss(v: Any) -> float:
            return float(np.asarray(_program(tf.asarray(v))))

        slope = (loss(x + eps * direction) - loss(x - eps * direction)) / (2 * eps)
        np.testing.assert_allclose(np.real(np.vdot(got, direction)), slope, rtol=1e-6, atol=1e-7)
        hvp = np.asarray(tf.Tape().hvp(_program, [x], [direction]))
        np.testing.assert_allclose(
            hvp, np.asarray(tf.hvp(_program, (x,), (direction,))), rtol=1e-9, atol=1e-11
        )
        second = tf.Tape()
        leaf = second.track(x)
        (g,) = second.grad(_program(leaf), [leaf], create_graph=True)
        inner = tf.sum(tf.real(g * tf.conj(tf.asarray(direction))))
        np.testing.assert_allclose(np.asarray(second.grad(inner, leaf)), hvp, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------- tie scan


@fuzz_settings(150)
@given(
    st.lists(st.sampled_from([0.0, 1.0, 1.0 + 1e-15, 2.0, 3.5, -1.0, 7.0]), max_size=12),
    st.lists(st.sampled_from([0.0, 1.0, -2.0, 1e-9, 5.0]), min_size=12, max_size=12),
    st.sampled_from([1e-12, 1e-3]),
)
def test_short_tie_scan_equals_the_numpy_path(
    values: list[float], cotangents: list[float], eps: float
) -> None:
    """The Python scan of short spectra (quick rejection when no pair is within the
    bound, else the numpy path) flags the first pair the numpy path flags."""
    v = np.sort(np.asarray(values, float))[::-1].copy()
    c = np.asarray(cotangents[: len(v)], float)
    got = _first_uneven(v, c, eps)
    if len(v) < 2:
        assert got is None
        return
    bad = uneven_on_ties(v, c, eps)
    expected = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else None
    assert got == expected


# ---------------------------------------------------------------------- truncation rank


@fuzz_settings(150)
@given(
    st.lists(st.sampled_from([0.0, 1e-17, 1e-3, 0.5, 1.0, 1.0, 2.0, 7.5]), max_size=9),
    st.sampled_from([None, 0.0, 1e-2, 0.3, 1.0]),
    st.sampled_from([None, 0.0, 1e-3, 0.6, 3.0]),
    st.integers(0, 10),
)
def test_truncation_rank_equals_the_count_above_the_tolerance(
    values: list[float], rtol: Any, atol: Any, cap: int
) -> None:
    """The rank a concrete truncated SVD keeps (the cap's shortcut when the cap-th
    value clears the tolerance, else a count) equals the count of singular values
    above numpy's ``matrix_rank`` tolerance, at most the cap."""
    from tenferro.linalg.singular_values import _concrete_rank

    s = np.sort(np.asarray(values, float))[::-1].copy()
    shape = (len(s) + 2, max(len(s), 1))
    if rtol is None:
        eps = 0.0 if atol is not None and atol > 0 else np.finfo(float).eps * max(shape)
    else:
        eps = rtol
    threshold = max(0.0 if atol is None else atol, eps * (s[0] if len(s) else 0.0))
    expected = min(cap, int(np.count_nonzero(s > threshold)))
    assert _concrete_rank(s, shape, rtol, atol, cap) == expected
    batch = np.stack([s, s[::-1] * 0.0]) if len(s) else np.zeros((2, 0))
    assert _concrete_rank(batch, shape, rtol, atol, cap) == expected  # the batch's largest


# ---------------------------------------------------------------------- tape passes


@pytest.mark.parametrize("extra", [0, 40])
def test_backward_accumulates_into_the_reached_leaves_only(extra: int) -> None:
    """``backward()`` finds the leaves among the fewer of the tape's live leaves and the
    keys the pass reached: with none or many unrelated live leaves, exactly the leaves
    the output depends on accumulate (closed form), twice over two passes."""
    tape = tf.Tape()
    unrelated = [tape.track(np.full((2,), float(i))) for i in range(extra)]
    a, b = tape.track(np.array([0.5, -1.0])), tape.track(np.array([2.0, 3.0]))
    for _ in range(2):
        tf.sum(tf.sin(a) * b).backward()
    np.testing.assert_allclose(np.asarray(a.grad), 2 * np.cos([0.5, -1.0]) * [2.0, 3.0])
    np.testing.assert_allclose(np.asarray(b.grad), 2 * np.sin([0.5, -1.0]))
    assert all(leaf.grad is None for leaf in unrelated)


def test_tape_passes_silence_and_restore_the_floating_point_state() -> None:
    """Reverse and forward passes through infinities neither warn nor leave numpy's
    error state changed, also when the pass raises."""
    before = np.geterr()
    with np.errstate(all="raise"):
        tape = tf.Tape()
        x = tape.track(np.array([0.0, 1.0]))
        y = tf.sum(tf.log(x))
        np.testing.assert_array_equal(np.asarray(tape.grad(y, x, retain_graph=True)), [np.inf, 1])
        _, tangent = tf.Tape().jvp(
            lambda v: tf.sum(tf.log(v)), [np.array([0.0, 2.0])], [np.ones(2)]
        )
        assert np.isinf(np.asarray(tangent))
        tape.grad(y, x)
        with pytest.raises(tf.ReleasedGraphError):
            tape.grad(y, x)
        assert np.geterr()["divide"] == "raise"
    assert np.geterr() == before
