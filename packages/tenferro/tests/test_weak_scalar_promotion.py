"""Python numbers combine weakly in every mode (NEP 50, JAX's weak types).

A Python number is weak: beside a tensor it takes the tensor's dtype. Two Python numbers
combined give a Python number again (``2 + 3.0`` is a float, still weak), so the result
meets a float32 array as float32 — in eager tensors, under ``jit`` (where the numbers
are arguments, known only when the program runs) and under ``vmap``. A Python int
argument narrowed to an integer dtype it does not fit raises, as numpy does on the
number itself, instead of wrapping.

The operator lanes follow the same rules: ``+ - * /`` between a tensor (concrete, eager,
traced inside ``tf.jit``) of each of the 7 dtypes and Python scalars, numpy scalars, 0-d
arrays and tensors of every dtype, both operand orders, give numpy's dtype and value
(numpy scalars and 0-d arrays are strong); what numpy refuses, and scalar types
tenferro does not take, raise tenferro errors; ``jit`` re-traces when an argument's
dtype, shape or weak type changes.
"""

from __future__ import annotations

import decimal
import fractions
import itertools
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import example, given
from hypothesis import strategies as st

import tenferro as tf

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
_STRONG = [np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128]
_NUMBERS = st.one_of(
    st.booleans(),
    st.integers(-100, 100),
    st.floats(-100, 100, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
    st.complex_numbers(max_magnitude=100, allow_nan=False, allow_infinity=False),
)


def _expected(a: Any, b: Any, op: str, strong: Any) -> np.dtype[Any] | None:
    """numpy's dtype for ``(a op b) * array(strong)`` on the Python numbers themselves
    (``None`` when numpy refuses or the number is not exact)."""
    try:
        combined = _OPS[op](a, b)
    except (ZeroDivisionError, TypeError):
        return None
    if isinstance(combined, bool) or (op == "-" and isinstance(a, bool) and isinstance(b, bool)):
        return None  # numpy refuses boolean subtraction; bool + bool is an int in Python
    try:
        return (combined * np.ones(2, strong)).dtype
    except (TypeError, OverflowError):
        return None


@fuzz_settings(150)
@given(_NUMBERS, _NUMBERS, st.sampled_from(sorted(_OPS)), st.sampled_from(_STRONG))
@example(2.0, 3, "+", np.float32)  # numbers of different kinds
@example(2, 3.0, "*", np.float32)
@example(2, 3, "/", np.float32)
@example(2.0, 1j, "+", np.complex64)
@example(2, True, "+", np.int32)
def test_two_python_numbers_combined_stay_weak_in_every_mode(a, b, op, strong):
    if isinstance(a, bool) and isinstance(b, bool):
        return  # Python's bool arithmetic gives ints; the tensors keep numpy's bool rules
    expected = _expected(a, b, op, strong)
    if expected is None or expected.kind == "b":
        return
    array = np.ones(2, strong)

    def f(x: Any, y: Any, s: Any) -> Any:
        return _OPS[op](x, y) * s

    reference = _OPS[op](a, b) * array
    for name, got in [
        ("eager", f(tf.asarray(a), tf.asarray(b), tf.asarray(array))),
        ("jit", tf.jit(f)(a, b, array)),
        ("vmap", tf.vmap(f, in_axes=(None, None, 0))(a, b, np.stack([array, array]))[0]),
    ]:
        value = np.asarray(got)
        assert value.dtype == expected, (name, a, b, op, strong)
        np.testing.assert_allclose(value, reference, rtol=1e-5, err_msg=name)


@fuzz_settings(60)
@given(
    st.sampled_from([np.int32, np.int64]),
    st.integers(-(2**70), 2**70),
    st.sampled_from(["+", "*"]),
)
@example(np.int32, 2**40, "*")
@example(np.int32, 2**31, "+")
@example(np.int32, -(2**31) - 1, "+")
def test_python_int_arguments_narrowed_to_an_integer_dtype_are_checked(strong, number, op):
    array = np.ones(2, strong)
    info = np.iinfo(strong)
    fits = info.min <= number <= info.max
    runs = {
        "jit": lambda: tf.jit(lambda a, b: _OPS[op](a, b))(number, array),
        "vmap": lambda: tf.vmap(lambda a, b: _OPS[op](a, b), in_axes=(None, 0))(
            number, np.stack([array])
        ),
    }
    for name, run in runs.items():
        if fits:
            with np.errstate(over="ignore"):
                expected = _OPS[op](np.asarray(array), strong(number))
            np.testing.assert_array_equal(np.ravel(np.asarray(run())), expected, err_msg=name)
        else:
            with pytest.raises(tf.ScalarOverflowError, match=str(number)):
                run()


def test_a_weak_result_of_two_numbers_keeps_the_strong_operand_dtype_under_grad():
    w = np.ones(3, np.float32)
    g = tf.grad(lambda s, x: tf.sum((s * 2 + 1) * x), argnums=1)(0.5, w)
    assert np.asarray(g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), 2.0)


def test_weak_python_arguments_of_one_kind_stay_weak_through_traced_arithmetic() -> None:
    f32 = np.ones(3, np.float32)
    for f in [
        lambda a, b: (a + b) * f32,
        lambda a, b: (a * b) * f32,
        lambda a, b: -(a - b) * f32,
        lambda a, b: tf.sin(a / b) * f32,
    ]:
        assert np.asarray(tf.jit(f)(2.0, 3.0)).dtype == np.float32
        assert np.asarray(f(2.0, 3.0)).dtype == np.float32
    i32 = np.ones(3, np.int32)
    assert np.asarray(tf.jit(lambda a, b: (a + b) * i32)(2, 3)).dtype == np.int32


def test_python_int_beyond_the_integer_dtype_is_refused_in_eager_and_closures() -> None:
    ones = np.ones(2, np.int32)
    with pytest.raises(tf.ScalarOverflowError):
        tf.Tensor(ones) * 2**40
    with pytest.raises(tf.ScalarOverflowError):
        tf.jit(lambda b: b * 2**40)(ones)
    with pytest.raises(tf.ScalarOverflowError):
        tf.jit(lambda a, b: a + b)(2**63, np.ones(2, np.int64))


# ---------------------------------------------------------------------- operator lanes


DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64, np.bool_]
OPS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("+", operator.add),
    ("-", operator.sub),
    ("*", operator.mul),
    ("/", operator.truediv),
]


def _base(dt: Any) -> np.ndarray[Any, Any]:
    if dt is np.bool_:
        return np.array([True, False, True])
    return np.asarray([1, 2, 3]).astype(dt)


def _others() -> list[tuple[str, Any, bool]]:
    """(name, operand, whether it enters as a tensor)."""
    out: list[tuple[str, Any, bool]] = [
        ("int", 3, False),
        ("float", 2.5, False),
        ("complex", 1 + 2j, False),
        ("bool", True, False),
        ("int 2**40", 2**40, False),
    ]
    for dt in DTYPES:
        name = np.dtype(dt).name
        out.append((f"np.{name}", dt(2), False))
        out.append((f"0-d {name}", np.asarray(2).astype(dt), False))
        out.append((f"tensor {name}", _base(dt), True))
        out.append((f"0-d tensor {name}", np.asarray(_base(dt)[0]), True))
    return out


def _numpy(op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(op(a, b))
        except (TypeError, OverflowError, ValueError):
            return None


def _run(kind: str, op: Any, x: np.ndarray[Any, Any], other: Any, tensor: bool, rev: bool) -> Any:
    if kind == "traced":
        if tensor:
            f = (lambda a, b: op(b, a)) if rev else op
            return tf.jit(f)(x, other)
        return tf.jit(lambda a: op(other, a) if rev else op(a, other))(x)
    make = tf.Tensor if kind == "concrete" else tf.EagerTensor
    o = make(other) if tensor else other
    return op(o, make(x)) if rev else op(make(x), o)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_operator_lanes_follow_numpy_promotion_on_every_tensor_kind(dt: Any) -> None:
    x = _base(dt)
    problems = []
    for (name, other, tensor), (symbol, op), rev in itertools.product(
        _others(), OPS, (False, True)
    ):
        expected = _numpy(op, other, x) if rev else _numpy(op, x, other)
        for kind in ("concrete", "eager", "traced"):
            what = f"{kind}: {np.dtype(dt).name} {symbol} {name} (reversed={rev})"
            try:
                got = np.asarray(_run(kind, op, x, other, tensor, rev))
            except tf.TenferroError:
                if expected is not None:
                    problems.append(f"{what}: refused, numpy gives {expected.dtype}")
                continue
            if expected is None:
                problems.append(f"{what}: accepted ({got.dtype}), numpy refuses")
            elif got.dtype != expected.dtype or not np.allclose(got, expected, equal_nan=True):
                problems.append(f"{what}: {got.dtype} {got}, numpy {expected.dtype} {expected}")
    assert not problems, "\n".join(problems[:20])


ODD = [
    np.int8(2),
    np.uint8(2),
    np.float16(2),
    np.uint64(2),
    np.longdouble(2),
    np.asarray(2, np.float16),
    np.asarray(2, np.uint32),
    fractions.Fraction(1, 2),
    decimal.Decimal("1.5"),
    "a",
    None,
]


@pytest.mark.parametrize("other", ODD, ids=repr)
@pytest.mark.parametrize("kind", ["eager", "traced"])
def test_unsupported_scalar_types_are_refused_with_tenferro_errors(other: Any, kind: str) -> None:
    x = np.array([1.0, 2.0])
    for rev in (False, True):
        with pytest.raises(tf.TenferroError):
            _run(kind, operator.add, x, other, False, rev)


def test_jit_retraces_on_weak_type_dtype_and_shape() -> None:
    c32 = np.ones(3, np.float32)
    jitted = tf.jit(lambda a: a * c32)
    sequence: list[Any] = [
        2.0,
        np.float64(2.0),
        np.float32(2.0),
        np.asarray(2.0),
        2,
        np.int64(2),
        True,
        2.0,
        np.asarray(2.0, np.float32),
        1 + 1j,
        np.complex128(1 + 1j),
        2.0,
        np.ones((2, 3)),
        np.ones(3, np.int32),
        2.0,
    ]
    for a in sequence:
        got = np.asarray(jitted(a))
        expected = np.asarray(a * c32)
        assert got.dtype == expected.dtype, (a, got.dtype, expected.dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
