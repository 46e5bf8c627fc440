"""The numpy-style surface agrees with numpy: values, shapes, dtypes (NEP 50 promotion),
broadcasting and indexing, for concrete and traced tensors alike; and it lowers
broadcasting and promotion to explicit primitives."""

from __future__ import annotations

import operator
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

DTYPES = ["bool", "int32", "int64", "float32", "float64", "complex64", "complex128"]
NUMERIC = DTYPES[1:]
SCALARS = [True, 3, -2.5, 1.5 + 2j]


def values(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> Any:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        return rng.integers(1, 5, shape).astype(dt)
    data = rng.uniform(0.5, 2.0, shape)
    if dt.kind == "c":
        data = data + 1j * rng.uniform(-1.0, 1.0, shape)
    return data.astype(dt)


def evaluate(result: Any) -> np.ndarray[Any, Any]:
    return np.asarray(result.eval() if isinstance(result, tf.TracedTensor) else result)


def both(fn: Any, *arrays: Any) -> list[np.ndarray[Any, Any]]:
    """``fn`` on concrete tensors and on traced leaves (the same arrays)."""
    concrete = fn(*[tf.asarray(a) if isinstance(a, np.ndarray) else a for a in arrays])
    traced = fn(*[tf.traced(a) if isinstance(a, np.ndarray) else a for a in arrays])
    return [evaluate(concrete), evaluate(traced)]


def check(ours: np.ndarray[Any, Any], theirs: Any) -> None:
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    tol = 1e-5 if ours.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


BINARY = {
    "add": (tf.add, np.add),
    "subtract": (tf.subtract, np.subtract),
    "multiply": (tf.multiply, np.multiply),
    "true_divide": (tf.true_divide, np.true_divide),
    "power": (tf.power, np.power),
    "maximum": (tf.maximum, np.maximum),
    "minimum": (tf.minimum, np.minimum),
    "equal": (tf.equal, np.equal),
    "less": (tf.less, np.less),
    "floor_divide": (tf.floor_divide, np.floor_divide),
    "remainder": (tf.remainder, np.remainder),
    "fmod": (tf.fmod, np.fmod),
    "hypot": (tf.hypot, np.hypot),
    "logaddexp": (tf.logaddexp, np.logaddexp),
}
ORDERED_ONLY = {"maximum", "minimum", "less", "floor_divide", "remainder", "fmod", "hypot"}
NO_BOOL = {"subtract", "power", "floor_divide", "remainder", "fmod", "true_divide"}


def applicable(name: str, dtypes: list[Any]) -> bool:
    result = np.result_type(*dtypes)
    if name in ORDERED_ONLY and result.kind == "c":
        return False
    if name in NO_BOOL and result.kind == "b":
        return False
    if name in ("hypot", "logaddexp") and result.kind not in "f":
        return False
    return not (name == "power" and result.kind == "i")


@fuzz_settings(60)
@given(
    st.sampled_from(sorted(BINARY)),
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    st.sampled_from(DTYPES),
    st.sampled_from(DTYPES),
    st.integers(0, 2**31),
)
def test_binary_functions_broadcast_and_promote_like_numpy(name, shapes, dt1, dt2, seed):
    if not applicable(name, [np.dtype(dt1), np.dtype(dt2)]):
        return
    ours, theirs = BINARY[name]
    rng = np.random.default_rng(seed)
    a = values(shapes.input_shapes[0], dt1, rng)
    b = values(shapes.input_shapes[1], dt2, rng)
    if name in ("floor_divide", "remainder", "fmod", "true_divide"):
        b = np.where(b == 0, 1, b).astype(b.dtype)  # integer division by zero is an error
    expected = theirs(a, b)
    for result in both(ours, a, b):
        check(result, expected)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("name", ["add", "multiply", "true_divide", "maximum"])
def test_python_scalars_are_weak(dtype, scalar, name):
    if not applicable(name, [np.dtype(dtype), np.result_type(scalar)]):
        return
    a = values((3,), dtype, np.random.default_rng(0))
    ours, theirs = BINARY[name]
    try:
        expected = theirs(a, scalar)
    except (OverflowError, TypeError):
        return
    for result in both(lambda x: ours(x, scalar), a):
        check(result, expected)
    for result in both(lambda x: ours(scalar, x), a):
        check(result, theirs(scalar, a))


def test_the_promotion_table_is_numpys():
    for first in DTYPES:
        for second in DTYPES:
            expected = np.result_type(first, second)
            assert tf.add(tf.zeros(2, first), tf.zeros(2, second)).dtype == expected


OPERATORS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.pow,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
]


@pytest.mark.parametrize("op", OPERATORS, ids=lambda f: f.__name__)
def test_operators_and_reflected_operators(op):
    a = np.array([[1.5, 2.0, 0.5]])
    b = np.array([[2.0], [0.25]])
    for result in both(op, a, b):
        check(result, op(a, b))
    for result in both(lambda x: op(2.0, x), a):
        check(result, op(2.0, a))
    for result in both(lambda x: op(b, x), a):  # numpy on the left defers to tenferro
        check(result, op(b, a))
    for result in both(lambda x: op(x, 3), a):
        check(result, op(a, 3))


def test_unary_operators_and_matmul():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(3.0)
    for result in both(lambda x: -x, a):
        check(result, -a)
    for result in both(lambda x: +x, a):
        check(result, a)
    for result in both(lambda x, y: x @ y, a, b):
        check(result, a @ b)
    for result in both(lambda x: b @ x.T, a):
        check(result, b @ a.T)
    for result in both(lambda x: abs(x - 2), a):
        check(result, abs(a - 2))


UNARY = {
    "exp": (tf.exp, np.exp),
    "log": (tf.log, np.log),
    "sin": (tf.sin, np.sin),
    "cos": (tf.cos, np.cos),
    "tan": (tf.tan, np.tan),
    "tanh": (tf.tanh, np.tanh),
    "sinh": (tf.sinh, np.sinh),
    "cosh": (tf.cosh, np.cosh),
    "sqrt": (tf.sqrt, np.sqrt),
    "expm1": (tf.expm1, np.expm1),
    "log1p": (tf.log1p, np.log1p),
    "log2": (tf.log2, np.log2),
    "log10": (tf.log10, np.log10),
    "exp2": (tf.exp2, np.exp2),
    "square": (tf.square, np.square),
    "reciprocal": (tf.reciprocal, np.reciprocal),
    "abs": (tf.abs, np.abs),
    "sign": (tf.sign, np.sign),
    "conj": (tf.conj, np.conj),
    "real": (tf.real, np.real),
    "imag": (tf.imag, np.imag),
    "negative": (tf.negative, np.negative),
    "floor": (tf.floor, np.floor),
    "ceil": (tf.ceil, np.ceil),
    "trunc": (tf.trunc, np.trunc),
    "rint": (tf.rint, np.rint),
}


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_match_numpy(name, dtype):
    ours, theirs = UNARY[name]
    a = values((2, 3), dtype, np.random.default_rng(1)) * 3 - 2
    a = a.astype(dtype)
    if name in ("floor", "ceil", "trunc", "rint") and np.dtype(dtype).kind == "c":
        return
    if name == "reciprocal" and np.dtype(dtype).kind == "i":
        return  # numpy's integer reciprocal truncates; tenferro computes in float
    try:
        with np.errstate(all="ignore"):
            expected = theirs(a)
    except TypeError:
        return
    if np.dtype(dtype).kind == "i" and np.asarray(expected).dtype.kind == "f":
        expected = np.asarray(expected)  # ints are computed in float64, as numpy does
    if name in ("floor", "ceil", "trunc") and np.dtype(dtype).kind == "i":
        expected = a  # tenferro keeps integer dtypes (numpy >= 2.1 for these)
    with np.errstate(all="ignore"):
        for result in both(ours, a):
            np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5, equal_nan=True)


REDUCTIONS = {
    "sum": (tf.sum, np.sum),
    "prod": (tf.prod, np.prod),
    "mean": (tf.mean, np.mean),
    "var": (tf.var, np.var),
    "std": (tf.std, np.std),
    "max": (tf.max, np.max),
    "min": (tf.min, np.min),
    "any": (tf.any, np.any),
    "all": (tf.all, np.all),
}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_numpy(name, axis, keepdims):
    ours, theirs = REDUCTIONS[name]
    rng = np.random.default_rng(2)
    for dtype in ("float64", "complex128", "int64", "float32"):
        if name in ("max", "min") and dtype.startswith("complex"):
            continue
        a = values((2, 3, 4), dtype, rng)
        expected = theirs(a, axis=axis, keepdims=keepdims)
        for result in both(lambda x: ours(x, axis=axis, keepdims=keepdims), a):
            assert result.shape == np.shape(expected)
            tol = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(result, expected, rtol=tol, atol=tol)
            assert result.dtype == np.asarray(expected).dtype


def test_var_std_ddof_and_complex():
    a = values((4, 3), "complex128", np.random.default_rng(3))
    for ddof in (0, 1, 2.5):
        for result in both(lambda x, ddof=ddof: tf.var(x, axis=0, ddof=ddof), a):
            check(result, np.var(a, axis=0, ddof=ddof))
        for result in both(lambda x, ddof=ddof: tf.std(x, ddof=ddof), a):
            check(result, np.std(a, ddof=ddof))


SHAPES = [
    ("reshape", lambda x: tf.reshape(x, (4, -1)), lambda a: np.reshape(a, (4, -1))),
    ("transpose", lambda x: tf.transpose(x), lambda a: np.transpose(a)),
    ("permute", lambda x: tf.transpose(x, (1, 2, 0)), lambda a: np.transpose(a, (1, 2, 0))),
    ("swapaxes", lambda x: tf.swapaxes(x, 0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("moveaxis", lambda x: tf.moveaxis(x, 0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("expand", lambda x: tf.expand_dims(x, (0, 3)), lambda a: np.expand_dims(a, (0, 3))),
    ("squeeze", lambda x: tf.squeeze(x[:, :1]), lambda a: np.squeeze(a[:, :1])),
    ("ravel", lambda x: tf.ravel(x), lambda a: np.ravel(a)),
    ("flip", lambda x: tf.flip(x, 1), lambda a: np.flip(a, 1)),
    ("flip_all", lambda x: tf.flip(x), lambda a: np.flip(a)),
    ("diagonal", lambda x: tf.diagonal(x, 1, 2, 1), lambda a: np.diagonal(a, 1, 2, 1)),
    ("trace", lambda x: tf.trace(x, -1, 1, 2), lambda a: np.trace(a, -1, 1, 2)),
    ("tril", lambda x: tf.tril(x, -1), lambda a: np.tril(a, -1)),
    ("triu", lambda x: tf.triu(x, 1), lambda a: np.triu(a, 1)),
    (
        "pad",
        lambda x: tf.pad(x, ((0, 1), (2, 0), (1, 1))),
        lambda a: np.pad(a, ((0, 1), (2, 0), (1, 1))),
    ),
    (
        "concatenate",
        lambda x: tf.concatenate([x, x[:, :1]], axis=1),
        lambda a: np.concatenate([a, a[:, :1]], axis=1),
    ),
    ("stack", lambda x: tf.stack([x, 2 * x], axis=-1), lambda a: np.stack([a, 2 * a], axis=-1)),
    (
        "broadcast_to",
        lambda x: tf.broadcast_to(x[0], (5, 3, 4)),
        lambda a: np.broadcast_to(a[0], (5, 3, 4)),
    ),
    (
        "tensordot",
        lambda x: tf.tensordot(x, x, axes=((0, 2), (0, 2))),
        lambda a: np.tensordot(a, a, axes=((0, 2), (0, 2))),
    ),
    (
        "tensordot_int",
        lambda x: tf.tensordot(x, tf.ones((4, 2)), 1),
        lambda a: np.tensordot(a, np.ones((4, 2)), 1),
    ),
    ("matmul_batched", lambda x: x @ tf.swapaxes(x, -1, -2), lambda a: a @ np.swapaxes(a, -1, -2)),
    ("matmul_broadcast", lambda x: tf.ones((5, 1, 4, 3)) @ x, lambda a: np.ones((5, 1, 4, 3)) @ a),
    ("dot", lambda x: tf.dot(x, tf.ones(4)), lambda a: np.dot(a, np.ones(4))),
    ("inner", lambda x: tf.inner(x, x), lambda a: np.inner(a, a)),
    ("outer", lambda x: tf.outer(x[0, 0], x[1, 1]), lambda a: np.outer(a[0, 0], a[1, 1])),
    ("vdot", lambda x: tf.vdot(x, x), lambda a: np.vdot(a, a)),
    ("vecdot", lambda x: tf.vecdot(x, x, axis=1), lambda a: np.vecdot(a, a, axis=1)),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), SHAPES, ids=[s[0] for s in SHAPES])
def test_shape_functions_match_numpy(name, ours, theirs):
    a = values((2, 3, 4), "complex128", np.random.default_rng(4))
    expected = theirs(a)
    for result in both(ours, a):
        check(result, expected)


INDICES = [
    (1,),
    (-1, slice(None, None, -2)),
    (slice(1, None), None, Ellipsis, 2),
    (Ellipsis, slice(3, 0, -1)),
    ([0, 1, 0],),
    (slice(None), [2, 0]),
    ([[0], [1]], slice(None), [1, 3]),
    ([0, 1], [2, 0], [3, 1]),
    (1, [0, 2], slice(None, 2)),
    (np.array([1, 0]), Ellipsis, None),
    (slice(None), slice(None), -1),
    (),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_indexing_matches_numpy(index):
    a = values((2, 3, 4), "float64", np.random.default_rng(5))
    for result in both(lambda x: x[index], a):
        check(result, a[index])
    gradient = tf.grad(lambda x: tf.sum(x[index] ** 2))(a)
    expected = np.zeros_like(a)
    np.add.at(expected, index, 2 * a[index])
    np.testing.assert_allclose(gradient, expected)


def test_boolean_masks_on_concrete_tensors():
    a = np.arange(6.0).reshape(2, 3)
    mask = a > 2
    check(np.asarray(tf.asarray(a)[mask]), a[mask])
    # A concrete mask has a known count, so traced tensors accept it too.
    check(np.asarray(tf.traced(a)[mask].eval()), a[mask])
    with pytest.raises(tf.TenferroError, match="mask"):
        tf.traced(a)[tf.traced(mask)]


def test_take_and_integer_tensor_indices():
    a = values((3, 4), "float64", np.random.default_rng(6))
    for result in both(lambda x: tf.take(x, [2, 0, 2], axis=1), a):
        check(result, np.take(a, [2, 0, 2], axis=1))
    index = tf.traced(np.array([1, 2]))
    check(np.asarray(tf.traced(a)[index].eval()), a[[1, 2]])


def test_creation_functions():
    check(np.asarray(tf.zeros((2, 3))), np.zeros((2, 3)))
    check(np.asarray(tf.ones(3, tf.int32)), np.ones(3, np.int32))
    check(np.asarray(tf.full((2,), 1.5j)), np.full((2,), 1.5j))
    check(np.asarray(tf.eye(3, 4, k=1)), np.eye(3, 4, k=1))
    check(np.asarray(tf.arange(2, 11, 3)), np.arange(2, 11, 3))
    check(np.asarray(tf.linspace(0.0, 1.0, 5)), np.linspace(0.0, 1.0, 5))
    check(np.asarray(tf.zeros_like(np.ones((2, 2), np.float32))), np.zeros((2, 2), np.float32))


def test_astype_and_numpy_interop():
    t = tf.asarray(np.array([1.7, -2.2]))
    check(np.asarray(t.astype(tf.int32)), np.array([1.7, -2.2]).astype(np.int32))
    check(np.asarray(t.astype(tf.complex64)), np.array([1.7, -2.2]).astype(np.complex64))
    check(np.asarray(tf.asarray([1 + 2j]).astype("float64")), np.array([1.0]))
    assert t.numpy().flags.writeable is False
    assert float(tf.sum(t)) == pytest.approx(-0.5)
    assert t.shape == (2,)
    assert t.ndim == 1
    assert t.size == 2
    assert t.dtype == np.float64
    assert type(np.add(t, 1)) is tf.Tensor  # ufuncs run as tenferro functions
    assert type(np.exp(tf.traced(np.ones(2)))) is tf.TracedTensor
    assert type(np.ones(2) * t) is tf.Tensor
    assert type(np.arctan(t)) is tf.Tensor
    with pytest.raises(TypeError, match="spacing"):
        np.spacing(t)


def test_graph_to_dot_draws_what_format_graph_lists():
    x = tf.traced(np.array([0.5, 1.0]), name="x")
    y = tf.sum(tf.sin(x) * x)
    dot = tf.graph_to_dot(y, y.grad(x))
    assert dot.startswith("digraph")
    assert dot.rstrip().endswith("}")
    for line in tf.format_graph(y, y.grad(x)).splitlines():
        if " = " in line and "(" in line:  # an operation: its name is a node of the drawing
            operation = line.split(" = ", 1)[1].split("(", 1)[0].split("[", 1)[0]
            assert operation in dot, operation
    assert "output 1" in dot
    with pytest.raises(TypeError, match="graph_to_dot"):
        tf.graph_to_dot(np.ones(2))


def test_broadcasting_and_promotion_are_explicit_primitives():
    x = tf.traced(np.ones(3, np.float32), name="x")
    y = tf.traced(np.ones((2, 3)), name="y")
    text = tf.format_graph(x + y)
    assert "convert[dtype=float64]" in text
    assert "broadcast_in_dim[shape=(2, 3), dims=(1,)]" in text
    assert "add(float64[2,3] float64[2,3])" in text
    # nothing is inserted when shapes and dtypes already agree
    plain = tf.format_graph(y + y)
    assert "convert" not in plain
    assert "broadcast" not in plain
