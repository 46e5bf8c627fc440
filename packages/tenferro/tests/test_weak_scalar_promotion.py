"""Python numbers combine weakly in every mode (NEP 50, JAX's weak types).

A Python number is weak: beside a tensor it takes the tensor's dtype. Two Python numbers
combined give a Python number again (``2 + 3.0`` is a float, still weak), so the result
meets a float32 array as float32 — in eager tensors, under ``jit`` (where the numbers
are arguments, known only when the program runs) and under ``vmap``. A Python int
argument narrowed to an integer dtype it does not fit raises, as numpy does on the
number itself, instead of wrapping.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
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


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_NUMBERS, _NUMBERS, st.sampled_from(sorted(_OPS)), st.sampled_from(_STRONG))
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


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from([np.int32, np.int64]),
    st.integers(-(2**70), 2**70),
    st.sampled_from(["+", "*"]),
)
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
            with pytest.raises((tf.ScalarOverflowError, tf.TenferroError), match=str(number)):
                run()


def test_a_weak_result_of_two_numbers_keeps_the_strong_operand_dtype_under_grad():
    w = np.ones(3, np.float32)
    g = tf.grad(lambda s, x: tf.sum((s * 2 + 1) * x), argnums=1)(0.5, w)
    assert np.asarray(g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), 2.0)
