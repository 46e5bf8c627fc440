"""Differential campaign for the eager fast paths (dispatch direct lane, same-meta and
tensor-scalar caches, recording in ``EagerTensor._bind``, one-seed backward runners,
``backward(inputs=...)`` pruning).

Random programs of eager operations are generated against numpy (the reference for
values, dtypes and shapes) and run four ways: numpy, eager untracked, eager tracked on a
tape, and traced (``tf.jit``). Each program runs twice eagerly (cold, then warm caches),
with lookalike calls interleaved (same metas, static arguments equal in value but not in
type) and once after ``tf.clear_caches()``; all must agree. Gradients of float programs
are compared across ``tape.grad``, ``backward``, ``backward(inputs=subset)``,
``retain_graph``, second order with ``create_graph``, ``tf.grad`` (traced) and finite
differences. Bad arguments must raise a tenferro error naming the operation at every
call, cached or not.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given

import tenferro as tf

DTYPES = [np.float64, np.float32, np.complex128, np.complex64, np.int64]

SCALARS: list[Any] = [
    2,
    -1,
    0,
    True,
    False,
    1.5,
    -0.0,
    float("nan"),
    float("inf"),
    -float("inf"),
    0.5 + 1j,
    np.float32(0.75),
    np.float64(-1.25),
    np.array(2.0),
    np.array(-0.0),
    np.array(3),
]
"""Numbers of every kind a program combines with a tensor."""

Step = Callable[[Any, Any, Any], Any]
"""(xp, value, other) -> value, for xp the numpy or tenferro namespace."""


def _array(shape: tuple[int, ...], dtype: Any, rng: random.Random) -> np.ndarray[Any, Any]:
    data = np.array([rng.uniform(-2.0, 2.0) for _ in range(int(np.prod(shape)))])
    if np.dtype(dtype).kind == "c":
        data = data + 1j * np.array([rng.uniform(-2.0, 2.0) for _ in range(data.size)])
    if np.dtype(dtype).kind == "i":
        data = np.round(data * 2)
    return data.reshape(shape).astype(dtype)


def _basic_index(shape: tuple[int, ...], rng: random.Random) -> Any:
    items: list[Any] = []
    for extent in shape:
        kind = rng.choice(["int", "slice", "full", "none", "neg"])
        if kind == "int" and extent:
            items.append(rng.randint(-extent, extent - 1))
        elif kind == "slice":
            bound = [None, *range(-extent - 1, extent + 2)]
            items.append(
                slice(rng.choice(bound), rng.choice(bound), rng.choice([None, 1, 2, -1, -2, 3]))
            )
        elif kind == "neg":
            items.append(slice(None, None, -1))
        elif kind == "none":
            items.extend([None, slice(None)])
        else:
            items.append(slice(None))
    if items and rng.random() < 0.3:
        items = [*items[: rng.randint(0, len(items) - 1)], Ellipsis]
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]
    return tuple(items)


def _scalar_steps(value: np.ndarray[Any, Any], rng: random.Random) -> Step:
    scalar = rng.choice(SCALARS)
    op = rng.choice(["add", "sub", "mul", "div"] if value.dtype.kind != "i" else ["add", "mul"])
    first = rng.random() < 0.5
    if op == "div" and first:
        first = False  # no division by the tensor's zeros
    if value.dtype.kind == "i" and isinstance(scalar, (float, complex, np.floating)):
        scalar = 2  # int tensors keep to ints (NaN has no int)
    if value.dtype.kind == "i" and isinstance(scalar, np.ndarray) and scalar.dtype.kind != "i":
        scalar = np.array(2)

    def step(xp: Any, v: Any, other: Any) -> Any:
        if op == "add":
            return scalar + v if first else v + scalar
        if op == "sub":
            return scalar - v if first else v - scalar
        if op == "mul":
            return scalar * v if first else v * scalar
        return v / scalar

    step.__name__ = f"{op}({'s,v' if first else 'v,s'} s={scalar!r})"
    return step


def _step(value: np.ndarray[Any, Any], rng: random.Random) -> Step:
    """One operation valid on ``value`` (a numpy array), chosen at random."""
    shape = value.shape
    ndim = value.ndim
    kind = rng.choice(
        [
            "scalar",
            "scalar",
            "binary",
            "unary",
            "reshape",
            "reduce",
            "index",
            "transpose",
            "matmul",
            "same",
        ]
    )
    if kind == "scalar":
        return _scalar_steps(value, rng)
    if kind == "binary":
        other_dtype = rng.choice(DTYPES)
        other_shape = rng.choice([shape, (1,) * ndim, shape[-1:], ()])
        other_array = _array(other_shape, other_dtype, rng)
        op = rng.choice(["add", "sub", "mul"])
        swap = rng.random() < 0.5

        def binary(xp: Any, v: Any, other: Any) -> Any:
            o = other_array if xp is np else tf.EagerTensor(other_array)
            a, b = (o, v) if swap else (v, o)
            return a + b if op == "add" else a - b if op == "sub" else a * b

        binary.__name__ = f"{op}({'o,v' if swap else 'v,o'} o={other_dtype.__name__}{other_shape})"
        return binary
    if kind == "unary":
        name = rng.choice(["sin", "tanh", "negative", "conj"])

        def unary(xp: Any, v: Any, other: Any) -> Any:
            return getattr(xp, name)(v)

        unary.__name__ = name
        return unary
    if kind == "reshape":
        size = value.size
        options: list[Any] = [(-1,), (size,), [size], (1, -1), (-1, 1), ()]
        options = [o for o in options if o != () or size == 1]
        if size:
            options.append(size)
            options.append(-1)
        target = rng.choice(options)

        def reshape(xp: Any, v: Any, other: Any) -> Any:
            return xp.reshape(v, target)

        reshape.__name__ = f"reshape({target!r})"
        return reshape
    if kind == "reduce":
        axes: list[Any] = [None]
        if ndim:
            axes += [rng.randint(-ndim, ndim - 1), (rng.randint(0, ndim - 1),)]
            axes.append(tuple(range(ndim)))
            axes.append(tuple(-1 - i for i in range(ndim)))
        axis = rng.choice(axes)
        keepdims = rng.random() < 0.3
        name = rng.choice(["sum", "mean"] if value.dtype.kind != "i" else ["sum"])

        def reduce(xp: Any, v: Any, other: Any) -> Any:
            if keepdims:
                return getattr(xp, name)(v, axis, keepdims=True)
            return getattr(xp, name)(v, axis)

        reduce.__name__ = f"{name}({axis!r}, keepdims={keepdims})"
        return reduce
    if kind == "index":
        index = _basic_index(shape, rng)

        def index_step(xp: Any, v: Any, other: Any) -> Any:
            return v[index]

        index_step.__name__ = f"getitem({index!r})"
        return index_step
    if kind == "transpose":
        perm: Any = None
        if ndim and rng.random() < 0.6:
            perm = list(range(ndim))
            rng.shuffle(perm)
            perm = tuple(perm) if rng.random() < 0.7 else tuple(p - ndim for p in perm)

        def transpose(xp: Any, v: Any, other: Any) -> Any:
            return xp.transpose(v) if perm is None else xp.transpose(v, perm)

        transpose.__name__ = f"transpose({perm!r})"
        return transpose
    if kind == "matmul" and ndim in (1, 2):
        how = rng.choice(["matmul_T", "einsum"])

        def contract(xp: Any, v: Any, other: Any) -> Any:
            if how == "einsum":
                return xp.einsum("ij,kj->ik" if v.ndim == 2 else "i,i->", v, v)
            return xp.matmul(v, xp.transpose(v)) if v.ndim == 2 else xp.matmul(v, v)

        contract.__name__ = how
        return contract

    def same(xp: Any, v: Any, other: Any) -> Any:
        return v * v + v

    same.__name__ = "v*v+v"
    return same


def _program(seed: int, length: int) -> tuple[np.ndarray[Any, Any], list[Step]]:
    rng = random.Random(seed)
    shape = tuple(rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(0, 3)))
    start = _array(shape, rng.choice(DTYPES), rng)
    value = start
    steps: list[Step] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _ in range(length):
            step = _step(value, rng)
            try:
                nxt = _run(np, value, [step])
            except (ValueError, IndexError, TypeError):
                continue  # numpy refuses: not part of this (valid) program
            if nxt.size > 64:
                continue
            steps.append(step)
            value = nxt
    return start, steps


def _run(xp: Any, start: Any, steps: list[Step]) -> Any:
    v = start
    for step in steps:
        v = step(xp, v, None)
        if xp is np:  # numpy scalars promote by their own rules (a 0-d array does not)
            v = np.asarray(v)
    return v


def _agree(got: Any, expected: np.ndarray[Any, Any], what: str, single: bool = False) -> None:
    """``got`` has ``expected``'s shape and dtype and its values (NaN where it has NaN);
    ``single``: the values went through single precision somewhere."""
    array = np.asarray(got)
    assert array.shape == expected.shape, f"{what}: shape {array.shape} != {expected.shape}"
    assert array.dtype == expected.dtype, f"{what}: dtype {array.dtype} != {expected.dtype}"
    if hasattr(got, "meta"):
        assert got.meta.shape == expected.shape, what
        assert got.meta.dtype == expected.dtype, what
    tol = 2e-4 if single or expected.dtype in (np.float32, np.complex64) else 1e-9
    for part in (np.real, np.imag) if expected.dtype.kind == "c" else (np.asarray,):
        np.testing.assert_allclose(
            part(array), part(expected), rtol=tol, atol=tol, equal_nan=True, err_msg=what
        )


def _lookalikes(x: Any) -> None:
    """Calls of the cached functions on ``x``'s meta with static arguments that equal
    common ones in value but not in type, checked against numpy: they must never be served
    another call's cached primitive."""
    a = np.asarray(x)
    if a.ndim >= 1 and a.shape[0] > 1:
        _agree(x[1], a[1], "x[1]")
        _agree(x[np.int64(1)], a[np.int64(1)], "x[np.int64(1)]")
        _agree(x[(1,)], a[(1,)], "x[(1,)]")
        _agree(x[[1, 0]], a[[1, 0]], "x[[1, 0]]")
        _agree(x[True], a[True], "x[True]")
        _agree(x[False], a[False], "x[False]")
    _agree(x[None], a[None], "x[None]")
    if a.ndim:
        _agree(x[:], a[:], "x[:]")
        _agree(x[::-1], a[::-1], "x[::-1]")
    _agree(x[...], a[...], "x[...]")
    _agree(x[()], a[()], "x[()]")
    _agree(tf.reshape(x, -1), np.reshape(a, -1), "reshape -1")
    _agree(tf.reshape(x, (-1,)), np.reshape(a, (-1,)), "reshape (-1,)")
    _agree(tf.reshape(x, [-1]), np.reshape(a, [-1]), "reshape [-1]")
    if a.size:
        _agree(tf.reshape(x, np.int64(a.size)), np.reshape(a, a.size), "reshape np.int64")
        _agree(tf.reshape(x, (1, a.size)), np.reshape(a, (1, a.size)), "reshape (1,n)")
        _agree(tf.reshape(x, [1, a.size]), np.reshape(a, [1, a.size]), "reshape [1,n]")
    if a.ndim:
        _agree(tf.sum(x, 0), np.sum(a, 0), "sum 0")
        _agree(tf.sum(x, (0,)), np.sum(a, (0,)), "sum (0,)")
        _agree(tf.sum(x, -a.ndim), np.sum(a, -a.ndim), "sum -ndim")
        _agree(tf.sum(x, np.int64(0)), np.sum(a, np.int64(0)), "sum np.int64(0)")
        with pytest.raises(tf.TenferroError, match="sum"):
            tf.sum(x, True)  # numpy: TypeError too (a bool is not an axis)
        perm = tuple(range(a.ndim))[::-1]
        _agree(tf.transpose(x, perm), np.transpose(a, perm), "transpose perm")
        _agree(tf.transpose(x, list(perm)), np.transpose(a, list(perm)), "transpose list")
    _agree(tf.sum(x, None), np.sum(a, None), "sum None")
    _agree(tf.sum(x), np.sum(a), "sum ()")
    _agree(tf.transpose(x), np.transpose(a), "transpose")
    _agree(tf.transpose(x, None), np.transpose(a, None), "transpose None")
    for scalar in (1, True, 1.0, np.float64(1.0), np.float32(1.0), np.array(1.0), 1 + 0j):
        if a.dtype.kind == "i" and not isinstance(scalar, (int, np.integer)):
            continue
        _agree(x * scalar, a * scalar, f"x * {scalar!r}")
        _agree(scalar - x, scalar - a, f"{scalar!r} - x")


def _values(start: np.ndarray[Any, Any], steps: list[Step]) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = np.asarray(_run(np, start, steps))
        names = " -> ".join(s.__name__ for s in steps) or "identity"
        single = start.dtype in (np.float32, np.complex64)
        for round_ in range(3):
            if round_ == 2:
                tf.clear_caches()
            x = tf.EagerTensor(start)
            _agree(
                _run(tf, x, steps), expected, f"eager untracked, round {round_}: {names}", single
            )
            _lookalikes(x)
            tape = tf.Tape()
            tracked = tape.track(start) if start.dtype.kind in "fc" else tf.EagerTensor(start)
            got = _run(tf, tracked, steps)
            _agree(got, expected, f"eager tracked, round {round_}: {names}", single)
            _lookalikes(got)
        traced = tf.jit(lambda v: _run(tf, v, steps))
        _agree(traced(start), expected, f"traced: {names}", single)
        _agree(traced(start), expected, f"traced again: {names}", single)


@pytest.mark.slow
@fuzz_settings(60)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_random_eager_programs_agree_with_numpy_traced_and_each_other(
    seed: int, length: int
) -> None:
    start, steps = _program(seed, length)
    _values(start, steps)


_TENSOR_DTYPES = ["bool", "int32", "int64", "float32", "float64", "complex64", "complex128"]
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
}


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "value", np.asarray(call())
    except tf.TenferroError as error:
        return "tenferro error", error
    except (TypeError, ValueError, OverflowError) as error:  # numpy's refusals
        return "refused", error


@pytest.mark.slow
@fuzz_settings(150)
@given(
    st.sampled_from(_TENSOR_DTYPES),
    st.sampled_from([(), (3,), (0,), (2, 1)]),
    st.sampled_from([*SCALARS, np.int64(3), np.bool_(True), np.array(-0.0, np.float32), 2**40]),
    st.sampled_from(sorted(_OPERATORS)),
    st.booleans(),
)
def test_tensor_number_arithmetic_agrees_with_numpy_cold_warm_and_traced(
    dtype: str, shape: tuple[int, ...], scalar: Any, name: str, first: bool
) -> None:
    """``tensor op number`` for every tensor dtype and kind of number: numpy's value,
    dtype and sign of zero, or an error where numpy refuses, at the first (learning)
    call, at repeated (cached) calls, after clearing the caches, and traced."""
    operator = _OPERATORS[name]

    def f(v: Any) -> Any:
        return operator(scalar, v) if first else operator(v, scalar)

    a = (np.arange(int(np.prod(shape))) % 3 - 1).reshape(shape).astype(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = _outcome(lambda: f(a))
        x = tf.EagerTensor(a)
        got = [_outcome(lambda: f(x)) for _ in range(3)]
        tf.clear_caches()
        got.append(_outcome(lambda: f(x)))
        got.append(_outcome(lambda: tf.jit(f)(a)))
    for position, (kind, value) in enumerate(got):
        where = f"call {position}: {dtype}{shape} {name} {scalar!r} first={first}"
        assert kind != "refused", f"{where}: raised {value!r}, not a tenferro error"
        if expected[0] == "value":
            assert kind == "value", f"{where}: raised {value!r}; numpy gives {expected[1]!r}"
            _agree(value, expected[1], where)
            if value.dtype.kind in "fc":
                np.testing.assert_array_equal(
                    np.signbit(np.real(value)), np.signbit(np.real(expected[1])), err_msg=where
                )
        else:
            assert kind == "tenferro error", f"{where}: numpy refuses, got {value!r}"


# ---------------------------------------------------------------------- gradients


def _grad_program(seed: int, length: int) -> tuple[list[Callable[[Any, Any], Any]], int]:
    """A smooth float64 program of ``(x, w)`` (x of shape (2, 3), w of shape (3,)), as
    steps on the running value ``v``; returns the steps and how many use ``w``."""
    rng = random.Random(seed)
    steps: list[Callable[[Any, Any], Any]] = []
    uses_w = 0
    shape: tuple[int, ...] = (2, 3)
    for _ in range(length):
        choice = rng.choice(
            [
                "scale",
                "shift",
                "rsub",
                "sin",
                "same",
                "w",
                "index",
                "reshape",
                "T",
                "mm",
                "sum",
                "const",
                "concat",
                "mean",
            ]
        )
        if choice == "scale":
            c = rng.choice([2, 0.5, np.float64(-1.5), np.float32(0.25), True, np.array(1.5)])
            steps.append(lambda v, w, c=c: v * c)
        elif choice == "shift":
            c = rng.choice([1, -0.0, 0.25, np.float64(2.0), np.array(-1.0)])
            steps.append(lambda v, w, c=c: v + c)
        elif choice == "rsub":
            c = rng.choice([1, 0.5, np.float64(2.0)])
            steps.append(lambda v, w, c=c: c - v)
        elif choice == "sin":
            steps.append(lambda v, w: tf.sin(v))
        elif choice == "same":
            steps.append(lambda v, w: v * v - v)
        elif choice == "w" and shape and shape[-1] == 3:
            steps.append(lambda v, w: v * w)
            uses_w += 1
        elif choice == "index" and shape and shape[0] > 1:
            index = rng.choice([slice(1, None), slice(None, None, -1), (slice(None), None)])
            steps.append(lambda v, w, i=index: v[i])
            shape = np.empty(shape)[index].shape
        elif choice == "reshape":
            target = rng.choice([(-1,), -1, (1, -1)])
            steps.append(lambda v, w, t=target: tf.reshape(v, t))
            shape = np.empty(shape).reshape(target).shape
        elif choice == "T":
            steps.append(lambda v, w: tf.transpose(v))
            shape = shape[::-1]
        elif choice == "mm" and len(shape) == 2 and shape[-1] == 3:
            steps.append(lambda v, w: tf.matmul(v, w))
            uses_w += 1
            shape = shape[:-1]
        elif choice == "const":
            # an untracked operand of the same meta: one tracked input of two
            constant = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
            if rng.random() < 0.5:
                steps.append(lambda v, w, c=constant: v * tf.EagerTensor(c))
            else:
                steps.append(lambda v, w, c=constant: tf.EagerTensor(c) - v)
        elif choice == "concat" and shape and shape[0] <= 3:
            # three operands, the middle one untracked
            constant = np.full(shape, 0.5)
            steps.append(lambda v, w, c=constant: tf.concatenate([v, tf.EagerTensor(c), v * v]))
            shape = (3 * shape[0], *shape[1:])
        elif choice == "mean" and shape:
            axis = rng.choice([None, -1, (0,)])
            keep = rng.random() < 0.5
            steps.append(
                lambda v, w, a=axis, k=keep: tf.mean(v, a, keepdims=True) if k else tf.mean(v, a)
            )
            shape = np.empty(shape).mean(axis, keepdims=keep).shape
        elif choice == "sum" and shape:
            axis = rng.choice([0, -1, (0,)])
            steps.append(lambda v, w, a=axis: tf.sum(v, a))
            shape = np.empty(shape).sum(axis).shape
    return steps, uses_w


def _loss(steps: list[Callable[[Any, Any], Any]]) -> Callable[[Any, Any], Any]:
    def loss(x: Any, w: Any) -> Any:
        v = x
        for step in steps:
            v = step(v, w)
        return tf.sum(tf.sin(v) * v) + tf.sum(w * w) * 0.5

    return loss


def _finite_difference(f: Callable[[np.ndarray[Any, Any]], float], x: np.ndarray[Any, Any]) -> Any:
    out = np.zeros_like(x)
    eps = 1e-6
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.slow
@fuzz_settings(30)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7), st.booleans())
def test_eager_gradients_agree_across_entry_points_traced_and_finite_differences(
    seed: int, length: int, clear: bool
) -> None:
    steps, _ = _grad_program(seed, length)
    loss = _loss(steps)
    rng = np.random.default_rng(seed % 1000)
    xd = rng.uniform(-1, 1, (2, 3))
    wd = rng.uniform(-1, 1, (3,))
    gx_ref, gw_ref = tf.grad(loss, argnums=(0, 1))(xd, wd)
    gx_ref, gw_ref = np.asarray(gx_ref), np.asarray(gw_ref)
    np.testing.assert_allclose(
        gx_ref,
        _finite_difference(lambda v: float(np.asarray(loss(tf.EagerTensor(v), wd))), xd),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        gw_ref,
        _finite_difference(lambda v: float(np.asarray(loss(xd, tf.EagerTensor(v)))), wd),
        rtol=1e-5,
        atol=1e-6,
    )

    def close(got: Any, expected: Any, what: str) -> None:
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12, err_msg=what)

    for round_ in range(2):
        if clear and round_:
            tf.clear_caches()
        # tape.grad, with retain_graph for a second pass
        tape = tf.Tape()
        x, w = tape.track(xd), tape.track(wd)
        out = loss(x, w)
        gx, gw = tape.grad(out, [x, w], retain_graph=True)
        close(gx, gx_ref, "grad x")
        close(gw, gw_ref, "grad w")
        gx2 = tape.grad(out, x)
        close(gx2, gx_ref, "grad x after retain_graph")
        # backward into .grad, accumulating over two retained passes
        tape = tf.Tape()
        x, w = tape.track(xd), tape.track(wd)
        out = loss(x, w)
        tape.backward(out, retain_graph=True)
        tape.backward(out)
        close(x.grad, 2 * gx_ref, "backward x.grad (twice)")
        close(w.grad, 2 * gw_ref, "backward w.grad (twice)")
        # backward(inputs=subset): only the listed leaves accumulate
        tape = tf.Tape()
        x, w = tape.track(xd), tape.track(wd)
        out = loss(x, w)
        tape.backward(out, inputs=[x], retain_graph=True)
        close(x.grad, gx_ref, "backward(inputs=[x]) x.grad")
        assert w.grad is None, "backward(inputs=[x]) touched w.grad"
        tape.backward(out, inputs=w)
        close(w.grad, gw_ref, "backward(inputs=w) w.grad after a retained subset pass")
        close(x.grad, gx_ref, "x.grad unchanged by backward(inputs=w)")
        # second order: the gradient of <grad_x, u> equals the traced Hessian product
        u = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
        tape = tf.Tape()
        x, w = tape.track(xd), tape.track(wd)
        g = tape.grad(loss(x, w), x, create_graph=True)
        close(g, gx_ref, "create_graph first order")
        hx, hw = tape.grad(tf.sum(g * u), [x, w], allow_unused=True)
        hx_ref, hw_ref = tf.grad(lambda a, b, u=u: tf.sum(tf.grad(loss)(a, b) * u), argnums=(0, 1))(
            xd, wd
        )
        np.testing.assert_allclose(np.asarray(hx), np.asarray(hx_ref), rtol=1e-10, atol=1e-12)
        if hw is not None:
            np.testing.assert_allclose(np.asarray(hw), np.asarray(hw_ref), rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_array_equal(np.asarray(hw_ref), 0.0)


@fuzz_settings(12)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 6),
    st.sampled_from([np.float32, np.complex128, np.complex64]),
)
def test_eager_gradients_of_single_precision_and_complex_programs_equal_traced_ones(
    seed: int, length: int, dtype: Any
) -> None:
    """The same random programs on float32 / complex leaves (a real loss): ``tape.grad``,
    ``backward`` and ``backward(inputs=[x])`` equal ``tf.grad``, cold and warm."""
    steps, _ = _grad_program(seed, length)

    def loss(x: Any, w: Any) -> Any:
        v = x
        for step in steps:
            v = step(v, w)
        return tf.real(tf.sum(tf.sin(v) * tf.conj(v))) + tf.real(tf.sum(w * tf.conj(w)))

    rng = np.random.default_rng(seed % 1000)
    xd = rng.uniform(-1, 1, (2, 3)).astype(dtype)
    wd = rng.uniform(-1, 1, (3,)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        xd = xd + 1j * rng.uniform(-1, 1, (2, 3)).astype(dtype)
        wd = wd - 0.5j
    refs = [np.asarray(g) for g in tf.grad(loss, argnums=(0, 1))(xd, wd)]
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    for _ in range(2):
        tape = tf.Tape()
        x, w = tape.track(xd), tape.track(wd)
        out = loss(x, w)
        for got, ref in zip(tape.grad(out, [x, w], retain_graph=True), refs, strict=True):
            assert np.asarray(got).dtype == ref.dtype
            np.testing.assert_allclose(np.asarray(got), ref, rtol=tol, atol=tol)
        tape.backward(out, inputs=[x])
        assert w.grad is None
        np.testing.assert_allclose(np.asarray(x.grad), refs[0], rtol=tol, atol=tol)


@fuzz_settings(10)
@given(st.integers(0, 2**32 - 1), st.integers(1, 7))
def test_clearing_caches_while_recording_and_between_passes_changes_no_gradient(
    seed: int, length: int
) -> None:
    """``tf.clear_caches()`` between recorded calls, between a retained pass and a
    ``create_graph`` pass, and before the second-order pass: ``tf.grad``'s gradients
    and Hessian product."""
    steps, _ = _grad_program(seed, length)
    loss = _loss(steps)
    rng = np.random.default_rng(seed % 1000)
    xd, wd = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))
    refs = [np.asarray(g) for g in tf.grad(loss, argnums=(0, 1))(xd, wd)]
    second = np.asarray(tf.grad(lambda a: tf.sum(tf.grad(loss)(a, wd) ** 2))(xd))
    tape = tf.Tape()
    x, w = tape.track(xd), tape.track(wd)
    v = x
    for position, step in enumerate(steps):
        v = step(v, w)
        if position % 2 == 0:
            tf.clear_caches()
    out = tf.sum(tf.sin(v) * v) + tf.sum(w * w) * 0.5
    for got, ref in zip(tape.grad(out, [x, w], retain_graph=True), refs, strict=True):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)
    tf.clear_caches()
    g = tape.grad(out, x, create_graph=True)
    np.testing.assert_allclose(np.asarray(g), refs[0], rtol=1e-12, atol=1e-12)
    tf.clear_caches()
    np.testing.assert_allclose(
        np.asarray(tape.grad(tf.sum(g * g), x)), second, rtol=1e-9, atol=1e-10
    )


# ---------------------------------------------------------------------- bad input


def _bad_calls(x: Any, y: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(operation name, call) for calls that must raise a tenferro error naming it."""
    return [
        ("reshape", lambda: tf.reshape(x, (5,))),
        ("reshape", lambda: tf.reshape(x, 5)),
        ("reshape", lambda: tf.reshape(x, [5])),
        ("reshape", lambda: tf.reshape(x, (-1, -1))),
        ("reshape", lambda: tf.reshape(x, (6.0,))),
        ("reshape", lambda: tf.reshape(x, 6.0)),
        ("sum", lambda: tf.sum(x, 2)),
        ("sum", lambda: tf.sum(x, -3)),
        ("sum", lambda: tf.sum(x, (0, 0))),
        ("sum", lambda: tf.sum(x, 1.0)),
        ("sum", lambda: tf.sum(x, (2,))),
        ("mean", lambda: tf.mean(x, 5)),
        ("transpose", lambda: tf.transpose(x, (0,))),
        ("transpose", lambda: tf.transpose(x, (0, 0))),
        ("transpose", lambda: tf.transpose(x, (0, 2))),
        ("getitem", lambda: x[5]),
        ("getitem", lambda: x[-3]),
        ("getitem", lambda: x[0, 0, 0]),
        ("getitem", lambda: x[..., ...]),
        ("getitem", lambda: x[1.0]),
        ("matmul", lambda: tf.matmul(x, x)),
        ("matmul", lambda: x @ y),
        ("add", lambda: x + tf.EagerTensor(np.ones(4))),
        ("multiply", lambda: x * tf.EagerTensor(np.ones((3, 2)))),
    ]


@pytest.mark.parametrize("tracked", [False, True])
def test_bad_arguments_raise_a_named_tenferro_error_at_every_call(tracked: bool) -> None:
    data = np.arange(6.0).reshape(2, 3)
    tape = tf.Tape()
    x = tape.track(data) if tracked else tf.EagerTensor(data)
    y = tf.EagerTensor(np.ones((2, 2)))
    for round_ in range(4):
        if round_ == 2:
            tf.clear_caches()
        for name, call in _bad_calls(x, y):
            with pytest.raises(tf.TenferroError) as info:
                call()
            message = str(info.value).lower()
            assert name in message or name[:3] in message, (name, round_, str(info.value))
            # good calls of the same metas between the bad ones stay right
            np.testing.assert_array_equal(np.asarray(tf.reshape(x, (3, 2))), data.reshape(3, 2))
            np.testing.assert_array_equal(np.asarray(tf.sum(x, 1)), data.sum(1))
            np.testing.assert_array_equal(np.asarray(x[1]), data[1])
            np.testing.assert_array_equal(np.asarray(tf.transpose(x, (1, 0))), data.T)


def test_wrong_dtypes_raise_at_every_call() -> None:
    x = tf.EagerTensor(np.arange(6.0).reshape(2, 3))
    n = tf.EagerTensor(np.arange(6).reshape(2, 3))
    for round_ in range(3):
        if round_ == 1:
            tf.clear_caches()
        with pytest.raises(tf.TenferroError):
            x & x
        with pytest.raises(tf.TenferroError):
            n + 2**70
        with pytest.raises(tf.TenferroError):
            tf.reshape(x, "6")
        with pytest.raises(tf.TenferroError):
            x["a"]
        np.testing.assert_array_equal(np.asarray(n + 2), np.arange(6).reshape(2, 3) + 2)


# ---------------------------------------------------------------------- found by this campaign


@pytest.mark.parametrize(
    "index",
    [
        slice(None, None, 0),
        (slice(None), slice(1, 2, 0)),
        slice(1.0, 2),
        slice(None, 2.0),
        slice("a", None),
    ],
)
def test_a_bad_slice_raises_a_tenferro_error_naming_getitem(index: Any) -> None:
    """numpy refuses a zero step (ValueError) and non-integer bounds (TypeError);
    tenferro must refuse them with its own error naming the operation, at every call
    (it raised Python's ValueError / TypeError from ``slice.indices``)."""
    x = tf.EagerTensor(np.arange(6.0).reshape(2, 3))
    for _ in range(2):
        with pytest.raises(tf.TenferroError, match="getitem"):
            x[index]


def test_backward_with_a_leaf_listed_twice_accumulates_it_once() -> None:
    """``backward(inputs=[x, x])`` accumulates the gradient into ``x.grad`` once, as
    ``torch.autograd.backward`` does (tenferro accumulated it twice)."""
    tape = tf.Tape()
    x = tape.track(np.array([1.0, 2.0]))
    tape.backward(tf.sum(x * x), inputs=[x, x])
    np.testing.assert_array_equal(np.asarray(x.grad), [2.0, 4.0])


def test_a_refused_backward_leaves_the_graph_runnable_and_gives_applicable_advice() -> None:
    """A ``backward(inputs=...)`` refused because the output does not depend on one of
    the inputs changes nothing (commit 777fe81: "checks its inputs before the pass (a bad
    call used to free the graph and then raise)"): the graph is not freed, so a corrected
    call runs; and its error does not advise ``allow_unused=True``, which ``backward``
    does not take. (The refusal came after the pass had freed the saved values.)"""
    data = np.array([1.0, 2.0])
    tape = tf.Tape()
    x = tape.track(data)
    unused = tape.track(np.array([3.0, 4.0]))
    out = tf.sum(tf.sin(x) * x)
    with pytest.raises(tf.TenferroError, match="backward") as info:
        tape.backward(out, inputs=[x, unused])
    assert x.grad is None
    tape.backward(out, inputs=[x])
    np.testing.assert_allclose(np.asarray(x.grad), np.sin(data) + data * np.cos(data), rtol=1e-12)
    assert "allow_unused" not in str(info.value), str(info.value)


# ---------------------------------------------------------------------- lookalike static arguments

_LOOKALIKES: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("x[1]", lambda xp, v: v[1]),
    ("x[True]", lambda xp, v: v[True]),
    ("x[np.int64(1)]", lambda xp, v: v[np.int64(1)]),
    ("x[(1,)]", lambda xp, v: v[(1,)]),
    ("x[[1]]", lambda xp, v: v[[1]]),
    ("x[1:2]", lambda xp, v: v[1:2]),
    ("x[1:2:1]", lambda xp, v: v[1:2:1]),
    ("x[True:2]", lambda xp, v: v[True:2]),
    ("x[np.int64(1):2]", lambda xp, v: v[np.int64(1) : 2]),
    ("x[None]", lambda xp, v: v[None]),
    ("x[:]", lambda xp, v: v[:]),
    ("x[None, :]", lambda xp, v: v[None, :]),
    ("x[..., None]", lambda xp, v: v[..., None]),
    ("x[::-1]", lambda xp, v: v[::-1]),
    ("x[-1::-2]", lambda xp, v: v[-1::-2]),
    ("x[0, 1]", lambda xp, v: v[0, 1]),
    ("x[(0, 1)]", lambda xp, v: v[(0, 1)]),
    ("x[[0, 1]]", lambda xp, v: v[[0, 1]]),
    ("x[0, -1]", lambda xp, v: v[0, -1]),
    ("reshape (2, 3)", lambda xp, v: xp.reshape(v, (2, 3))),
    ("reshape [2, 3]", lambda xp, v: xp.reshape(v, [2, 3])),
    ("reshape (np.int64(2), 3)", lambda xp, v: xp.reshape(v, (np.int64(2), 3))),
    ("reshape (2.0, 3)", lambda xp, v: xp.reshape(v, (2.0, 3))),
    ("reshape 6", lambda xp, v: xp.reshape(v, 6)),
    ("reshape (6,)", lambda xp, v: xp.reshape(v, (6,))),
    ("reshape -1", lambda xp, v: xp.reshape(v, -1)),
    ("reshape (3, -1)", lambda xp, v: xp.reshape(v, (3, -1))),
    ("sum 1", lambda xp, v: xp.sum(v, 1)),
    ("sum -1", lambda xp, v: xp.sum(v, -1)),
    ("sum (1,)", lambda xp, v: xp.sum(v, (1,))),
    ("sum (0, 1)", lambda xp, v: xp.sum(v, (0, 1))),
    ("sum (1, 0)", lambda xp, v: xp.sum(v, (1, 0))),
    # numpy takes no list of axes; tenferro takes it as the tuple
    ("sum [0, 1]", lambda xp, v: xp.sum(v, [0, 1] if xp is tf else (0, 1))),
    ("sum ()", lambda xp, v: xp.sum(v, ())),
    ("sum None", lambda xp, v: xp.sum(v, None)),
    ("sum", lambda xp, v: xp.sum(v)),
    ("sum 1.0", lambda xp, v: xp.sum(v, 1.0)),
    ("sum 2", lambda xp, v: xp.sum(v, 2)),
    ("mean 0", lambda xp, v: xp.mean(v, 0)),
    ("mean (0,)", lambda xp, v: xp.mean(v, (0,))),
    ("mean -2", lambda xp, v: xp.mean(v, -2)),
    ("transpose", lambda xp, v: xp.transpose(v)),
    ("transpose None", lambda xp, v: xp.transpose(v, None)),
    ("transpose (1, 0)", lambda xp, v: xp.transpose(v, (1, 0))),
    ("transpose [1, 0]", lambda xp, v: xp.transpose(v, [1, 0])),
    ("transpose (0, 1)", lambda xp, v: xp.transpose(v, (0, 1))),
    ("transpose (-1, 0)", lambda xp, v: xp.transpose(v, (-1, 0))),
    ("transpose (1, 1)", lambda xp, v: xp.transpose(v, (1, 1))),
    ("expand_dims 0", lambda xp, v: xp.expand_dims(v, 0)),
    ("expand_dims (0,)", lambda xp, v: xp.expand_dims(v, (0,))),
    ("expand_dims -1", lambda xp, v: xp.expand_dims(v, -1)),
    ("expand_dims (0, 3)", lambda xp, v: xp.expand_dims(v, (0, 3))),
    ("expand_dims 4", lambda xp, v: xp.expand_dims(v, 4)),
    ("squeeze", lambda xp, v: xp.squeeze(v)),
    ("squeeze None", lambda xp, v: xp.squeeze(v, None)),
    ("squeeze 0", lambda xp, v: xp.squeeze(v, 0)),
    ("squeeze (0,) of x[None]", lambda xp, v: xp.squeeze(v[None], (0,))),
    ("squeeze 0 of x[None]", lambda xp, v: xp.squeeze(v[None], 0)),
    ("ravel", lambda xp, v: xp.ravel(v)),
    ("swapaxes 0 1", lambda xp, v: xp.swapaxes(v, 0, 1)),
    ("swapaxes 0 2", lambda xp, v: xp.swapaxes(v, 0, 2)),
    ("moveaxis 0 1", lambda xp, v: xp.moveaxis(v, 0, 1)),
    ("moveaxis (0,) (-1,)", lambda xp, v: xp.moveaxis(v, (0,), (-1,))),
    ("x @ x.T", lambda xp, v: xp.matmul(v, xp.transpose(v))),
    ("x.T @ x", lambda xp, v: xp.matmul(xp.transpose(v), v)),
    ("x @ x", lambda xp, v: xp.matmul(v, v)),
    ("einsum ij,kj", lambda xp, v: xp.einsum("ij,kj->ik", v, v)),
    ("einsum ij,ij", lambda xp, v: xp.einsum("ij,ij->", v, v)),
    ("x * x", lambda xp, v: v * v),
    ("x + x", lambda xp, v: v + v),
    ("x * 1", lambda xp, v: v * 1),
    ("x * True", lambda xp, v: v * True),
    ("x * 1.0", lambda xp, v: v * 1.0),
    ("1.0 - x", lambda xp, v: 1.0 - v),
    ("1 - x", lambda xp, v: 1 - v),
    ("x + -0.0", lambda xp, v: v + -0.0),
    ("x * nan", lambda xp, v: v * float("nan")),
]


@fuzz_settings(12)
@given(
    st.sampled_from(["float64", "float32", "complex128", "int64"]),
    st.permutations(range(len(_LOOKALIKES))),
    st.integers(0, len(_LOOKALIKES)),
    st.booleans(),
)
def test_lookalike_static_arguments_in_any_order_agree_with_numpy(
    dtype: str, order: list[int], clear_at: int, tracked: bool
) -> None:
    """Calls on one (2, 3) tensor whose static arguments are equal in value but not in
    type (1, True, np.int64(1), (1,), [1], 1.0; slices; tuples and lists), in a random
    order so each lane sees lookalike keys first, twice over, with the caches cleared
    once in between: numpy's value, dtype and shape each time, or a tenferro error
    naming the operation where numpy refuses."""
    a = (np.arange(6) - 2).reshape(2, 3).astype(dtype)
    tape = tf.Tape()
    x = tape.track(a) if tracked and a.dtype.kind in "fc" else tf.EagerTensor(a)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for position, index in enumerate([*order, *order]):
            if position == clear_at:
                tf.clear_caches()
            name, call = _LOOKALIKES[index]
            expected = _outcome(lambda call=call: call(np, a))
            got = _outcome(lambda call=call: call(tf, x))
            assert got[0] != "refused", f"{name}: raised {got[1]!r}, not a tenferro error"
            if expected[0] == "value":
                assert got[0] == "value", f"{name}: raised {got[1]!r}"
                _agree(got[1], expected[1], f"{name} ({dtype})")
            else:
                assert got[0] == "tenferro error", f"{name}: numpy refuses, got {got[1]!r}"


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("first", [False, True])
def test_true_division_of_an_integer_tensor_by_a_big_python_int_is_numpys(
    dtype: str, first: bool
) -> None:
    """numpy true-divides an integer array and a Python int beyond its dtype's range
    (the result is float64: nothing is stored in the narrow dtype); tenferro raised
    ScalarOverflowError ("divide: Python integer 1099511627776 is out of bounds for
    int32"), at every call, eager and traced. Addition and multiplication overflow in
    numpy too, so their refusal is right."""
    a = np.array([-1, 2], dtype)
    big = 2**63 if dtype == "int64" else 2**40

    def f(v: Any) -> Any:
        return big / v if first else v / big

    expected = f(a)
    for _ in range(2):
        _agree(f(tf.EagerTensor(a)), expected, f"{dtype} {'big / x' if first else 'x / big'}")
    _agree(tf.jit(f)(a), expected, "traced")
