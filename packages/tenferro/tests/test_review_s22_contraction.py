"""s22 review, area 1: ``dot_general`` planned from the operands' memory layout, and
what is built on it (einsum's programs, matmul, tensordot).

Differential tests against numpy (``einsum`` in float64/complex128/int64 as the
oracle) on random dimension numbers with operands of odd layouts: Fortran order,
transposed views, negative strides, strided slices, extents 0 and 1, several dtypes;
the same instance then met with another layout (the per-layout plans), results fed
into further operations, in-place edits of the inputs after the call (a result must
not alias a caller's buffer), the broadcast plan (a matrix applied to a middle leg),
jit over changing extents (the extent-generic kernel), and gradients in three modes
against central differences. No bug was found in this area: these are the cheap,
meaningful checks kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from transform_routes import (
    fd_gradient,
    gradients_in_every_mode,
    numpy_loss,
    values,
)

import tenferro as tf
from tenferro.ops import dot_plans

_DTYPES = ("float64", "float32", "complex128", "int64")
_LAYOUTS = ("C", "F", "transposed", "flipped", "strided")


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    if dtype == "int64":
        return rng.integers(-4, 5, shape).astype(dtype)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _odd(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, layout: str) -> Any:
    """(numpy value, a tensor holding it in ``layout``)."""
    nd = len(shape)
    if layout == "C" or nd == 0:
        a = _random(rng, shape, dtype)
        return a, tf.Tensor(a)
    if layout == "F":
        a = np.asfortranarray(_random(rng, shape, dtype))
        return a, tf.Tensor(a)
    if layout == "transposed":
        perm = tuple(int(p) for p in rng.permutation(nd))
        base_shape = [0] * nd
        for i, p in enumerate(perm):
            base_shape[p] = shape[i]
        base = _random(rng, tuple(base_shape), dtype)
        return base.transpose(perm), tf.transpose(tf.Tensor(base), perm)
    axis = int(rng.integers(0, nd))
    if layout == "flipped":
        a = _random(rng, shape, dtype)
        return np.flip(a, axis), tf.flip(tf.Tensor(a), axis=axis)
    big = list(shape)
    big[axis] *= 2
    a = _random(rng, tuple(big), dtype)
    index = tuple(slice(None, None, 2) if i == axis else slice(None) for i in range(nd))
    return a[index], tf.Tensor(a)[index]


def _reference(a: Any, b: Any, numbers: Any) -> Any:
    lc, rc, lb, rb = numbers
    left = list("abcdefgh"[: a.ndim])
    right = list("ijklmnop"[: b.ndim])
    for x, y in zip(lc + lb, rc + rb, strict=True):
        right[y] = left[x]
    out = [left[x] for x in lb]
    out += [left[i] for i in range(a.ndim) if i not in lb + lc]
    out += [right[i] for i in range(b.ndim) if i not in rb + rc]
    wide = {"f": np.float64, "c": np.complex128, "i": np.int64}[a.dtype.kind]
    subscripts = f"{''.join(left)},{''.join(right)}->{''.join(out)}"
    return np.einsum(subscripts, a.astype(wide), b.astype(wide))


def _problem(rng: np.random.Generator) -> Any:
    """Random shapes and dimension numbers (extents 0 to 5, up to 2 axes per group)."""
    groups = [int(rng.integers(0, 3)) for _ in range(4)]  # batch, contracted, lhs, rhs free
    extent = lambda: int(rng.choice([0, 1, 2, 3, 5], p=[0.05, 0.2, 0.3, 0.25, 0.2]))  # noqa: E731
    batch = [extent() for _ in range(groups[0])]
    inner = [extent() for _ in range(groups[1])]
    nb, nc = groups[0], groups[1]
    ln, rn = nb + nc + groups[2], nb + nc + groups[3]
    lpos, rpos = rng.permutation(ln), rng.permutation(rn)
    lb, lc = tuple(int(x) for x in lpos[:nb]), tuple(int(x) for x in lpos[nb : nb + nc])
    rb, rc = tuple(int(x) for x in rpos[:nb]), tuple(int(x) for x in rpos[nb : nb + nc])
    lshape, rshape = [extent() for _ in range(ln)], [extent() for _ in range(rn)]
    for axes, extents, shape in ((lb, batch, lshape), (lc, inner, lshape)):
        for a, n in zip(axes, extents, strict=True):
            shape[a] = n
    for axes, extents, shape in ((rb, batch, rshape), (rc, inner, rshape)):
        for a, n in zip(axes, extents, strict=True):
            shape[a] = n
    return tuple(lshape), tuple(rshape), (lc, rc, lb, rb)


def _close(got: Any, want: Any, dtype: str) -> bool:
    tol = 1e-4 if dtype == "float32" else 1e-10
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    return got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol * scale)


@fuzz_settings(60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(_DTYPES))
def test_dot_general_of_odd_layouts_is_numpys(seed: int, dtype: str) -> None:
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    layouts = [str(rng.choice(_LAYOUTS)) for _ in range(4)]
    a, ta = _odd(rng, lshape, dtype, layouts[0])
    b, tb = _odd(rng, rshape, dtype, layouts[1])
    result = tf.lax.dot_general(ta, tb, *numbers)
    got = np.array(result)
    want = _reference(a, b, numbers)
    assert _close(got, want, dtype), (lshape, rshape, numbers, layouts[:2])
    # the instance met again with other layouts (its per-layout plans)
    a2, ta2 = _odd(rng, lshape, dtype, layouts[2])
    b2, tb2 = _odd(rng, rshape, dtype, layouts[3])
    again = np.asarray(tf.lax.dot_general(ta2, tb2, *numbers))
    assert _close(again, _reference(a2, b2, numbers), dtype), (numbers, layouts[2:])
    # the first result is unchanged and feeds further operations as its value
    assert np.array_equal(np.asarray(result), got)
    if got.size and dtype != "int64":
        total = np.asarray(tf.sum(result * result))
        assert np.allclose(total, np.sum(want * want), rtol=1e-3 if dtype == "float32" else 1e-9)


@fuzz_settings(30)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("float64", "float32", "complex128")))
def test_broadcast_plan_of_a_middle_leg_is_numpys(seed: int, dtype: str) -> None:
    """One operand ``[P, C, Q]`` in memory (its contracted axes one block between free
    axes, its axes in any logical order): the plan that multiplies the other operand
    into each slice and keeps the big operand's layout."""
    rng = np.random.default_rng(seed)
    outer, inner, rest = (int(rng.integers(1, 3)) for _ in range(3))
    memory = [int(rng.integers(2, 6)) for _ in range(outer + inner + rest)]
    base = _random(rng, tuple(memory), dtype)
    perm = tuple(int(p) for p in rng.permutation(len(memory)))
    big, tbig = base.transpose(perm), tf.transpose(tf.Tensor(base), perm)
    contracted = [perm.index(m) for m in range(outer, outer + inner)]
    rng.shuffle(contracted)
    free = [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 3)))]
    small = _random(rng, (*free, *(big.shape[a] for a in contracted)), dtype)
    small_axes = tuple(range(len(free), small.ndim))
    if rng.random() < 0.5:
        numbers: Any = (tuple(contracted), small_axes, (), ())
        a, b, ta, tb = big, small, tbig, tf.Tensor(small)
    else:
        numbers = (small_axes, tuple(contracted), (), ())
        a, b, ta, tb = small, big, tf.Tensor(small), tbig
    got = np.asarray(tf.lax.dot_general(ta, tb, *numbers))
    assert _close(got, _reference(a, b, numbers), dtype), (memory, perm, numbers)


def test_the_broadcast_plan_is_reached() -> None:
    """The generator above covers the broadcast plan (it is the one chosen for a
    matrix applied to the middle leg of a C-ordered tensor)."""
    called = []
    original = dot_plans.Broadcast.__call__

    def spy(self: Any, lhs: Any, rhs: Any) -> Any:
        called.append(True)
        return original(self, lhs, rhs)

    rng = np.random.default_rng(0)
    t, m = rng.standard_normal((6, 5, 7)), rng.standard_normal((4, 5))
    dot_plans.Broadcast.__call__ = spy  # type: ignore[method-assign]
    try:
        got = np.asarray(tf.lax.dot_general(tf.Tensor(t), tf.Tensor(m), (1,), (1,)))
    finally:
        dot_plans.Broadcast.__call__ = original  # type: ignore[method-assign]
    assert called
    np.testing.assert_allclose(got, np.einsum("pcq,mc->pqm", t, m), rtol=1e-12)


@fuzz_settings(40)
@given(st.integers(0, 2**32 - 1))
def test_einsum_of_odd_layouts_is_numpys(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = "abcde"[: int(rng.integers(1, 6))]
    extents = {c: int(rng.choice([0, 1, 2, 3, 4], p=[0.03, 0.17, 0.3, 0.3, 0.2])) for c in labels}
    terms = [
        "".join(rng.choice(list(labels), int(rng.integers(0, 4))))
        for _ in range(int(rng.integers(1, 5)))
    ]
    used = sorted(set("".join(terms)))
    out = [c for c in used if rng.random() < 0.5]
    rng.shuffle(out)
    subscripts = ",".join(terms) + "->" + "".join(out)
    dtypes = [str(rng.choice(_DTYPES)) for _ in terms]
    pairs = [
        _odd(rng, tuple(extents[c] for c in t), d, str(rng.choice(_LAYOUTS)))
        for t, d in zip(terms, dtypes, strict=True)
    ]
    optimize = ["auto", "greedy", "optimal", False][int(rng.integers(0, 4))]
    got = np.asarray(tf.einsum(subscripts, *[p[1] for p in pairs], optimize=optimize))
    want = np.einsum(subscripts, *[p[0] for p in pairs])
    assert got.dtype == want.dtype, (subscripts, dtypes)
    assert _close(got, want, "float32" if "float32" in dtypes else "float64"), (subscripts, dtypes)


def test_results_never_alias_the_callers_arrays() -> None:
    """numpy inputs edited in place after the call leave every result as it was."""
    rng = np.random.default_rng(1)
    calls = [
        lambda x, y: tf.lax.dot_general(x, y, (1,), (0,)),
        lambda x, y: tf.einsum("ij,jk->ki", x, y),
        lambda x, y: tf.einsum("ij->ji", x),
        lambda x, y: tf.einsum("ij", x),
        lambda x, y: tf.matmul(x, y),
        lambda x, y: tf.tensordot(x, y, 1),
    ]
    for call in calls:
        x, y = np.asfortranarray(rng.standard_normal((3, 4))), rng.standard_normal((4, 5))[:, ::-1]
        result = call(x, y)
        before = np.array(result)
        x[...] = 7.0
        y[...] = -3.0
        assert np.array_equal(np.asarray(result), before)
        assert not np.asarray(result).flags.writeable


@fuzz_settings(25)
@given(st.integers(0, 2**32 - 1))
def test_jit_over_changing_extents_and_layouts_is_numpys(seed: int) -> None:
    """One jitted function met at several extents (the extent-generic kernel) with
    operands transposed and flipped inside it."""
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    nl, nr = len(lshape), len(rshape)
    pl = tuple(int(p) for p in rng.permutation(nl))
    pr = tuple(int(p) for p in rng.permutation(nr))
    flip = int(rng.integers(0, nl)) if nl else None

    def f(x: Any, y: Any) -> Any:
        x = tf.transpose(x, pl)
        if flip is not None:
            x = tf.flip(x, axis=flip)
        return tf.lax.dot_general(x, tf.transpose(y, pr), *numbers) * 2.0

    jitted = tf.jit(f)
    lc, rc, lb, rb = numbers
    for step in range(3):
        lcur = [int(rng.integers(0, 5)) for _ in range(nl)] if step else list(lshape)
        rcur = [int(rng.integers(0, 5)) for _ in range(nr)] if step else list(rshape)
        for a, b in zip(lc + lb, rc + rb, strict=True):
            rcur[b] = lcur[a]
        xs, ys = [0] * nl, [0] * nr
        for i, p in enumerate(pl):
            xs[p] = lcur[i]
        for i, p in enumerate(pr):
            ys[p] = rcur[i]
        dtype = "complex128" if step == 1 else "float64"
        x, y = _random(rng, tuple(xs), dtype), _random(rng, tuple(ys), dtype)
        xa = x.transpose(pl)
        if flip is not None:
            xa = np.flip(xa, flip)
        want = 2.0 * _reference(xa, y.transpose(pr), numbers)
        assert _close(np.asarray(jitted(x, y)), want, dtype), (lcur, rcur, numbers)


@fuzz_settings(15)
@given(st.integers(0, 2**32 - 1), st.sampled_from(("float64", "complex128")))
def test_dot_general_gradients_of_odd_layouts(seed: int, dtype: str) -> None:
    """tf.grad, jit(grad) and the tape of ``dot_general`` (either operand order) of a
    permuted and flipped argument and an odd-layout constant, against central
    differences."""
    rng = np.random.default_rng(seed)
    lshape, rshape, numbers = _problem(rng)
    while np.prod(lshape) > 24 or np.prod(rshape) > 40:
        lshape, rshape, numbers = _problem(rng)
    _, constant = _odd(rng, rshape, dtype, str(rng.choice(_LAYOUTS)))
    nd = len(lshape)
    perm = tuple(int(p) for p in rng.permutation(nd))
    inverse = tuple(int(i) for i in np.argsort(perm))
    flip = int(rng.integers(0, nd)) if nd else None
    swap = bool(rng.integers(0, 2))
    lc, rc, lb, rb = numbers

    def f(x: Any) -> Any:
        y = tf.transpose(x, inverse)
        if flip is not None:
            y = tf.flip(y, axis=flip)
        if swap:
            return tf.lax.dot_general(constant, y, rc, lc, rb, lb)
        return tf.lax.dot_general(y, constant, *numbers)

    x = np.array(_random(rng, lshape, dtype).transpose(perm), order="C")
    out = values(f(tf.Tensor(x)))
    w = _random(rng, out.shape, dtype)
    want = fd_gradient(numpy_loss(f, [w]), x)
    for mode, got in gradients_in_every_mode(f, x, [w]).items():
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=mode)
