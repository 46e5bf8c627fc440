"""s21 review, area 3: integer parameters (core/params.py) and lax operands
(core/operands.py) across the public surface.

Oracles: the same call with plain Python ints (every integer encoding numpy accepts
must give the same result: numpy integer scalars, 0-d integer arrays and tensors,
tuples, lists, 1-d integer arrays, negative axes), numpy's own functions, and
``jax.lax`` / ``jax`` transforms on numpy operands where JAX is installed (x64 on).
Encodings numpy refuses, and those tenferro refuses by design (bools, floats), must
raise a tenferro error, never a bare Python one. Bugs are pinned as strict xfails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from review_s21_support import values

import tenferro as tf

X = np.arange(24.0).reshape(2, 3, 4)
M = np.arange(9.0).reshape(3, 3) + 5 * np.eye(3)


def _integers(v: int) -> dict[str, Any]:
    """Every encoding of the integer ``v`` numpy and tenferro accept."""
    found = {
        "int": v,
        "np.int64": np.int64(v),
        "np.int32": np.int32(v),
        "0-d array": np.array(v),
        "0-d Tensor": tf.Tensor(np.array(v)),
    }
    if v >= 0:
        found["np.uint8"] = np.uint8(v)
    return found


def _sequences(vs: tuple[int, ...]) -> dict[str, Any]:
    """Every encoding of the integer sequence ``vs`` tenferro documents as accepted."""
    return {
        "tuple": tuple(vs),
        "list": list(vs),
        "int64 array": np.array(vs, np.int64),
        "int32 array": np.array(vs, np.int32),
        "tuple of np.int64": tuple(np.int64(v) for v in vs),
        "tuple of 0-d arrays": tuple(np.array(v) for v in vs),
        "tuple of 0-d Tensors": tuple(tf.Tensor(np.array(v)) for v in vs),
    }


REFUSED_INTEGERS = {
    "bool": True,
    "float": 1.0,
    "np.float64": np.float64(1.0),
    "str": "1",
    "None": None,
}
REFUSED_SEQUENCES = {
    "float list": [1.0, 2.0],
    "float array": np.array([1.0, 2.0]),
    "nested": [[1, 2]],
    "str": "12",
    "bool entries": (True, 1),
    "2-d array": np.array([[1, 2]]),
}

# name: (tenferro call of the parameter, numpy call, "int" or "seq", base value)
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], str, Any]] = {
    "sum axis": (lambda p: tf.sum(X, axis=p), lambda p: np.sum(X, axis=p), "int", -1),
    "sum axes": (lambda p: tf.sum(X, axis=p), lambda p: np.sum(X, axis=tuple(p)), "seq", (0, -1)),
    "argmax axis": (lambda p: tf.argmax(X, axis=p), lambda p: np.argmax(X, axis=p), "int", 2),
    "reshape": (lambda p: tf.reshape(X, p), lambda p: np.reshape(X, p), "seq", (4, -1)),
    "transpose": (lambda p: tf.transpose(X, p), lambda p: np.transpose(X, p), "seq", (2, 0, 1)),
    "expand_dims": (lambda p: tf.expand_dims(X, p), lambda p: np.expand_dims(X, p), "int", -1),
    "moveaxis": (lambda p: tf.moveaxis(X, p, 0), lambda p: np.moveaxis(X, p, 0), "int", -1),
    "flip": (lambda p: tf.flip(X, p), lambda p: np.flip(X, tuple(p)), "seq", (0, 2)),
    "cumsum": (lambda p: tf.cumsum(X, axis=p), lambda p: np.cumsum(X, axis=p), "int", 1),
    "tril": (lambda p: tf.tril(M, p), lambda p: np.tril(M, p), "int", -1),
    "diagonal": (lambda p: tf.diagonal(X, p, 1, 2), lambda p: np.diagonal(X, p, 1, 2), "int", 1),
    "take axis": (
        lambda p: tf.take(X, [0, 1], axis=p),
        lambda p: np.take(X, [0, 1], axis=p),
        "int",
        1,
    ),
    "stack axis": (
        lambda p: tf.stack([X, X], axis=p),
        lambda p: np.stack([X, X], axis=p),
        "int",
        -1,
    ),
    "split sections": (
        lambda p: tf.split(X, p, axis=2)[1],
        lambda p: np.split(X, p, axis=2)[1],
        "int",
        2,
    ),
    "split indices": (
        lambda p: tf.split(X, p, axis=2)[1],
        lambda p: np.split(X, p, axis=2)[1],
        "seq",
        (1, 3),
    ),
    "pad": (lambda p: tf.pad(X, p), lambda p: np.pad(X, p), "seq", (1, 2)),
    "round": (lambda p: tf.round(X / 7, p), lambda p: np.round(X / 7, p), "int", 2),
    "roll": (lambda p: tf.roll(X, p, (0, 2)), lambda p: np.roll(X, p, (0, 2)), "seq", (1, -1)),
    "tile": (lambda p: tf.tile(X, p), lambda p: np.tile(X, p), "seq", (1, 2)),
    "repeat": (
        lambda p: tf.repeat(X, p, axis=1),
        lambda p: np.repeat(X, p, axis=1),
        "seq",
        (1, 0, 2),
    ),
    "diff n": (lambda p: tf.diff(X, p), lambda p: np.diff(X, p), "int", 2),
    "diag k": (lambda p: tf.diag(M, p), lambda p: np.diag(M, p), "int", -1),
    "diagflat k": (lambda p: tf.diagflat(M[0], p), lambda p: np.diagflat(M[0], p), "int", 2),
    "zeros": (lambda p: tf.zeros(p), lambda p: np.zeros(p), "seq", (2, 3)),
    "eye k": (lambda p: tf.eye(3, k=p), lambda p: np.eye(3, k=p), "int", 1),
    "linspace num": (lambda p: tf.linspace(0, 1, p), lambda p: np.linspace(0, 1, p), "int", 5),
    "broadcast_to": (
        lambda p: tf.broadcast_to(X[0, 0], p),
        lambda p: np.broadcast_to(X[0, 0], p),
        "seq",
        (2, 4),
    ),
    "matrix_power": (
        lambda p: tf.linalg.matrix_power(M, p),
        lambda p: np.linalg.matrix_power(M, p),
        "int",
        -2,
    ),
    "norm axes": (
        lambda p: tf.linalg.norm(X, axis=p),
        lambda p: np.linalg.norm(X, axis=tuple(p)),
        "seq",
        (0, 2),
    ),
    "random size": (
        lambda p: tf.random.default_rng(0).standard_normal(p),
        lambda p: np.random.default_rng(0).standard_normal(p),
        "seq",
        (2, 3),
    ),
    "random integers": (
        lambda p: tf.random.default_rng(0).integers(0, p, size=4),
        lambda p: np.random.default_rng(0).integers(0, p, size=4),
        "int",
        7,
    ),
    "lax reshape": (lambda p: tf.lax.reshape(X, p), lambda p: np.reshape(X, p), "seq", (4, 6)),
    "lax transpose": (
        lambda p: tf.lax.transpose(X, p),
        lambda p: np.transpose(X, p),
        "seq",
        (2, 0, 1),
    ),
    "lax reduce_sum": (
        lambda p: tf.lax.reduce_sum(X, p),
        lambda p: np.sum(X, axis=tuple(p)),
        "seq",
        (0, 2),
    ),
    "lax slice": (
        lambda p: tf.lax.slice(X, p, (2, 3, 4)),
        lambda p: X[p[0] :, p[1] :, p[2] :],
        "seq",
        (1, 0, 2),
    ),
    "lax cumsum": (lambda p: tf.lax.cumsum(X, p), lambda p: np.cumsum(X, axis=p), "int", -1),
    "lax concatenate": (
        lambda p: tf.lax.concatenate([X, X], p),
        lambda p: np.concatenate([X, X], axis=p),
        "int",
        1,
    ),
    "lax pad crop": (
        lambda p: tf.lax.pad(X, p, (0, 0, 0), (0, 0, 0)),
        lambda p: X[:, 1:, 2:],
        "seq",
        (0, -1, -2),
    ),
}


def _encodings() -> list[Any]:
    cases = []
    for name, (_, _, kind, base) in sorted(CASES.items()):
        found = _integers(base) if kind == "int" else _sequences(base)
        cases.extend(pytest.param(name, label, id=f"{name}-{label}") for label in found)
    return cases


@pytest.mark.parametrize(("name", "label"), _encodings())
def test_every_integer_encoding_gives_numpys_result(name: str, label: str) -> None:
    call, reference, kind, base = CASES[name]
    encoded = (_integers(base) if kind == "int" else _sequences(base))[label]
    plain = base if kind == "int" else tuple(base)
    got = values(call(encoded))
    np.testing.assert_array_equal(got, values(call(plain)))
    np.testing.assert_array_equal(got, reference(plain))


MEANINGFUL = {
    ("sum axis", "None"),  # None: every axis (numpy)
    ("argmax axis", "None"),
    ("cumsum", "None"),
    ("take axis", "None"),
    ("pad", "nested"),  # numpy's ((before, after),) pad widths
    ("pad", "2-d array"),
}
"""Refused encodings that are meaningful for one parameter: left out there."""


def _refusals() -> list[Any]:
    cases = []
    for name, (_, _, kind, _) in sorted(CASES.items()):
        found = REFUSED_INTEGERS if kind == "int" else REFUSED_SEQUENCES
        cases.extend(
            pytest.param(name, label, id=f"{name}-{label}")
            for label in found
            if (name, label) not in MEANINGFUL
        )
    return cases


@pytest.mark.parametrize(("name", "label"), _refusals())
def test_refused_encodings_raise_a_tenferro_error(name: str, label: str) -> None:
    call, _, kind, _ = CASES[name]
    bad = (REFUSED_INTEGERS if kind == "int" else REFUSED_SEQUENCES)[label]
    with pytest.raises(tf.TenferroError):
        call(bad)


# ---------------------------------------------------------------------- refusals of valid input


ONE_D_TENSOR_CASES = ["reshape", "transpose", "zeros", "broadcast_to", "random size", "lax reshape"]


@pytest.mark.parametrize("name", ONE_D_TENSOR_CASES)
def test_a_one_d_integer_tensor_is_a_sequence_of_integers(name: str) -> None:
    call, reference, _, base = CASES[name]
    np.testing.assert_array_equal(values(call(tf.Tensor(np.array(base)))), reference(tuple(base)))


@pytest.mark.parametrize("stop", [np.array(5), tf.Tensor(np.array(5))], ids=["array", "Tensor"])
def test_arange_of_a_zero_d_integer(stop: Any) -> None:
    np.testing.assert_array_equal(values(tf.arange(stop)), np.arange(5))


def test_choice_of_a_zero_d_integer_array_is_a_population_size() -> None:
    draw = values(tf.random.default_rng(0).choice(np.array(5), size=3))
    assert draw.shape == (3,)
    assert set(draw.tolist()) <= set(range(5))


# ---------------------------------------------------------------------- bare Python errors


@pytest.mark.parametrize("function", ["norm", "vector_norm"])
@pytest.mark.parametrize("order", [[3], 3j], ids=["list", "complex"])
def test_norm_with_a_non_real_ord_raises_a_parameter_error(function: str, order: Any) -> None:
    with pytest.raises(tf.TenferroError, match="ord"):
        getattr(tf.linalg, function)(np.arange(3.0), ord=order)


def test_arange_of_none_raises_a_parameter_error() -> None:
    with pytest.raises(tf.TenferroError, match="arange"):
        tf.arange(None)


@pytest.mark.parametrize("decimals", [309, 400])
def test_round_to_too_many_decimals_is_no_bare_error(decimals: int) -> None:
    """numpy's value (NaN: its scale 10**decimals is inf past float64's range)."""
    x = np.array([1.25, -3.5])
    got = values(tf.round(x, decimals))
    with np.errstate(all="ignore"):
        expected = np.round(x, decimals)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------- transforms


@pytest.mark.parametrize(
    "argnums",
    [1, np.int64(1), np.array(1), -1, (1,), [1], np.array([1]), (0, 1)],
    ids=["int", "np.int64", "0-d", "negative", "tuple", "list", "array", "pair"],
)
def test_argnums_encodings_give_the_same_gradients(argnums: Any) -> None:
    a, b = np.array([0.5, -1.0]), np.array([2.0, 0.25])

    def f(x: Any, y: Any) -> Any:
        return tf.sum(x * y * y)

    got = tf.grad(f, argnums=argnums)(a, b)
    expected = {0: 2 * 0 + b * b, 1: 2 * a * b}
    if isinstance(got, tuple):
        positions = [int(n) % 2 for n in np.atleast_1d(argnums)]
        assert len(got) == len(positions)
        for value, position in zip(got, positions, strict=True):
            np.testing.assert_allclose(values(value), expected[position])
    else:
        np.testing.assert_allclose(values(got), expected[int(np.asarray(argnums)) % 2])


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
def test_a_repeated_argnum_gives_the_derivative_for_each_copy(transform: str) -> None:
    x = np.array([0.0, 1.0, 2.0])
    if transform == "hessian":
        blocks = tf.hessian(lambda a, b: tf.sum(a * b * b), argnums=(1, 1))(x, x)
        expected = np.diag(2 * x)
        for row in blocks:
            for block in row:
                np.testing.assert_allclose(values(block), expected)
        return
    jacobians = getattr(tf, transform)(lambda a, b: a * b, argnums=(0, 0))(x, x)
    for jacobian in jacobians:
        np.testing.assert_allclose(values(jacobian), np.diag(x))


def test_grad_with_a_repeated_argnum_gives_the_gradient_for_each_copy() -> None:
    x = np.array([0.0, 1.0, 2.0])
    for g in tf.grad(lambda a, b: tf.sum(a * b * b), argnums=(1, 1))(x, x):
        np.testing.assert_allclose(values(g), 2 * x * x)


@pytest.mark.parametrize("axis", [0, np.int64(0), -2], ids=["int", "np", "neg"])
def test_vmap_axis_encodings(axis: Any) -> None:
    x = np.arange(6.0).reshape(2, 3)
    got = tf.vmap(lambda v, s: v * s, in_axes=(axis, None))(x, 2.0)
    np.testing.assert_array_equal(values(got), x * 2.0)
    got = tf.vmap(lambda v: v * 2.0, out_axes=axis)(x)
    np.testing.assert_array_equal(values(got), x * 2.0)


@pytest.mark.parametrize("size", [3, np.int64(3)], ids=["int", "np"])
def test_vmap_axis_size_encodings(size: Any) -> None:
    assert values(tf.vmap(lambda: tf.ones(2), in_axes=(), axis_size=size)()).shape == (3, 2)


# ---------------------------------------------------------------------- lax operands vs jax.lax


LAX_UNARY = ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sin", "exp", "log", "sqrt"]
OPERANDS = {
    "float64 array": np.array([0.5, -0.25, 2.0]),
    "float32 array": np.array([0.5, -0.25, 2.0], np.float32),
    "complex128 array": np.array([0.5 + 1j, -2.0, 1j]),
    "python float": 0.5,
    "python complex": 0.5 - 2j,
    "numpy float32": np.float32(0.5),
    "0-d array": np.array(-0.5),
    "int64 array": np.array([1, 2]),
    "python int": 2,
    "bool": True,
}


@pytest.mark.parametrize("name", LAX_UNARY)
@pytest.mark.parametrize("operand", sorted(OPERANDS))
def test_lax_unary_functions_take_numpy_operands_as_jax_lax_does(name: str, operand: str) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    value = OPERANDS[operand]
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(getattr(jax.lax, name)(value))
    except TypeError:
        with pytest.raises(tf.TenferroError, match=name):
            getattr(tf.lax, name)(value)
        return
    with np.errstate(all="ignore"):
        got = values(getattr(tf.lax, name)(value))
    assert got.dtype == expected.dtype
    rtol = 1e-6 if expected.dtype in (np.float32, np.complex64) else 1e-14
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, equal_nan=True)


NUMPY_UNARY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh}


@pytest.mark.parametrize("name", sorted(NUMPY_UNARY))
@pytest.mark.parametrize("operand", sorted(OPERANDS))
def test_lax_unary_operands_without_jax(name: str, operand: str) -> None:
    """The jax.lax rules restated with numpy as the oracle (runs where JAX is absent):
    an inexact operand keeps its dtype (a Python float is float64, a Python complex
    complex128), an integer or bool operand is refused with a tenferro error."""
    value = OPERANDS[operand]
    dtype = np.asarray(value).dtype
    if dtype.kind in "bi":
        with pytest.raises(tf.TenferroError, match=name):
            getattr(tf.lax, name)(value)
        return
    with np.errstate(all="ignore"):
        expected = NUMPY_UNARY[name](np.asarray(value))
        got = values(getattr(tf.lax, name)(value))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("y", "x"),
    [
        (np.array([0.0, -0.0, 1.0]), np.array([-1.0, -1.0, 0.0])),
        (np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)),
        (0.5, -1.5),
        (np.array(1.0), np.array(-0.0)),
    ],
)
def test_lax_atan2_equals_jax_lax(y: Any, x: Any) -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    expected = np.asarray(jax.lax.atan2(y, x))
    got = values(tf.lax.atan2(y, x))
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=2e-7 if got.dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


X3 = np.array([0.5, -1.0, 3.0])
SCALAR_OPERANDS = {
    "mul python": (lambda: tf.lax.mul(X3, 2.0), X3 * 2.0),
    "mul numpy": (lambda: tf.lax.mul(X3, np.float64(2.0)), X3 * 2.0),
    "mul 0-d": (lambda: tf.lax.mul(np.array(2.0), X3), X3 * 2.0),
    "select scalar predicate": (lambda: tf.lax.select(True, X3, -X3), X3),
    "clamp scalar bounds": (lambda: tf.lax.clamp(0.0, X3, 1.0), np.clip(X3, 0.0, 1.0)),
}


@pytest.mark.parametrize("name", sorted(SCALAR_OPERANDS))
def test_lax_functions_take_a_scalar_operand_as_jax_lax_does(name: str) -> None:
    call, expected = SCALAR_OPERANDS[name]
    np.testing.assert_array_equal(values(call()), expected)
