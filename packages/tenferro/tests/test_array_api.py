"""tenferro as an Array API namespace: the same calls run through ``array-api-strict``
(the standard's reference implementation, a test dependency only) and through
``x.__array_namespace__()`` on every tensor kind give the same values and dtypes, and
derivatives flow through the namespace's functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf

xp_strict = pytest.importorskip("array_api_strict")

rng = np.random.default_rng(7)
X = rng.uniform(0.5, 1.5, (3, 4))
Y = rng.uniform(0.5, 1.5, (3, 4))
S = rng.uniform(-1.0, 1.0, (3, 3)) + 3 * np.eye(3)
H = S @ S.T + np.eye(3)
C = X[:, :3] + 1j * Y[:, :3]
X32 = X.astype(np.float32)

Call = Callable[[Any, Callable[[np.ndarray[Any, Any]], Any]], Any]
"""``call(xp, asarray)``: a program over namespace ``xp`` whose inputs ``asarray`` makes."""

UNARY = [
    "abs",
    "ceil",
    "conj",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "floor",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_not",
    "negative",
    "positive",
    "real",
    "reciprocal",
    "round",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
]
BINARY = [
    "add",
    "divide",
    "equal",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "less",
    "less_equal",
    "logaddexp",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "not_equal",
    "pow",
    "remainder",
    "subtract",
]

CALLS: dict[str, Call] = {}
for _name in UNARY:
    if _name == "logical_not":
        CALLS[_name] = lambda xp, a: xp.logical_not(a(X) > 1.0)
    elif _name in ("real", "imag", "conj"):
        CALLS[_name] = lambda xp, a, n=_name: getattr(xp, n)(a(C))
    else:
        CALLS[_name] = lambda xp, a, n=_name: getattr(xp, n)(a(X))
for _name in BINARY:
    if _name.startswith("logical"):
        CALLS[_name] = lambda xp, a, n=_name: getattr(xp, n)(a(X) > 1.0, a(Y) > 1.0)
    else:
        CALLS[_name] = lambda xp, a, n=_name: getattr(xp, n)(a(X), a(Y))
CALLS.update(
    {
        "complex-exp": lambda xp, a: xp.exp(a(C)),
        "complex-abs": lambda xp, a: xp.abs(a(C)),
        "mixed-precision": lambda xp, a: xp.add(a(X32), a(Y)),
        "python-scalar": lambda xp, a: xp.multiply(a(X32), 2.5),
        "sum": lambda xp, a: xp.sum(a(X), axis=0, keepdims=True),
        "cumulative_sum": lambda xp, a: xp.cumulative_sum(a(X), axis=1),
        "cumulative_prod": lambda xp, a: xp.cumulative_prod(a(X), axis=0),
        "argmax": lambda xp, a: xp.argmax(a(X), axis=1),
        "argmin": lambda xp, a: xp.argmin(a(X)),
        "sort": lambda xp, a: xp.sort(a(X), axis=0, descending=True),
        "argsort": lambda xp, a: xp.argsort(a(X), axis=1),
        "sum-f32": lambda xp, a: xp.sum(a(X32), axis=1),
        "prod": lambda xp, a: xp.prod(a(X), axis=1),
        "mean": lambda xp, a: xp.mean(a(X), axis=(0, 1)),
        "std": lambda xp, a: xp.std(a(X), axis=0, correction=1),
        "var": lambda xp, a: xp.var(a(X), keepdims=True),
        "max": lambda xp, a: xp.max(a(X), axis=1),
        "min": lambda xp, a: xp.min(a(X)),
        "all": lambda xp, a: xp.all(a(X) > 0.7, axis=0),
        "any": lambda xp, a: xp.any(a(X) > 1.4),
        "concat": lambda xp, a: xp.concat([a(X), a(Y)], axis=1),
        "concat-none": lambda xp, a: xp.concat([a(X), a(S)], axis=None),
        "stack": lambda xp, a: xp.stack([a(X), a(Y)], axis=2),
        "unstack": lambda xp, a: xp.unstack(a(X), axis=1),
        "reshape": lambda xp, a: xp.reshape(a(X), (2, 6)),
        "permute_dims": lambda xp, a: xp.permute_dims(a(X), (1, 0)),
        "moveaxis": lambda xp, a: xp.moveaxis(xp.reshape(a(X), (3, 2, 2)), 0, -1),
        "squeeze": lambda xp, a: xp.squeeze(xp.expand_dims(a(X), axis=0), axis=0),
        "flip": lambda xp, a: xp.flip(a(X), axis=1),
        "tril": lambda xp, a: xp.tril(a(S), k=-1),
        "triu": lambda xp, a: xp.triu(a(S), k=1),
        "take": lambda xp, a: xp.take(a(X), a(np.array([2, 0])), axis=1),
        "where": lambda xp, a: xp.where(a(X) > 1.0, a(X), a(Y)),
        "clip": lambda xp, a: xp.clip(a(X), min=0.8, max=1.2),
        "astype": lambda xp, a: xp.astype(a(X), xp.complex64),
        "broadcast_to": lambda xp, a: xp.broadcast_to(a(X[0]), (2, 4)),
        "broadcast_arrays": lambda xp, a: xp.broadcast_arrays(a(X), a(Y[:1])),
        "matmul": lambda xp, a: xp.matmul(a(X), xp.matrix_transpose(a(Y))),
        "tensordot": lambda xp, a: xp.tensordot(a(X), a(Y), axes=([0], [0])),
        "vecdot": lambda xp, a: xp.vecdot(a(X), a(Y), axis=-2),
        "matrix_transpose": lambda xp, a: xp.matrix_transpose(a(X)),
        "zeros": lambda xp, a: xp.zeros((2, 3), dtype=xp.float32),
        "ones": lambda xp, a: xp.ones((2,)),
        "full": lambda xp, a: xp.full((2, 2), 1.5),
        "eye": lambda xp, a: xp.eye(3, 4, k=1),
        "arange": lambda xp, a: xp.arange(1, 7, 2),
        "linspace": lambda xp, a: xp.linspace(0.0, 1.0, 5),
        "zeros_like": lambda xp, a: xp.zeros_like(a(X32)),
        "ones_like": lambda xp, a: xp.ones_like(a(X), dtype=xp.complex128),
        "full_like": lambda xp, a: xp.full_like(a(X), 2.0),
        "linalg.det": lambda xp, a: xp.linalg.det(a(S)),
        "linalg.inv": lambda xp, a: xp.linalg.inv(a(S)),
        "linalg.solve": lambda xp, a: xp.linalg.solve(a(S), a(X[:, :3])),
        "linalg.slogdet": lambda xp, a: xp.linalg.slogdet(a(S)),
        "linalg.svdvals": lambda xp, a: xp.linalg.svdvals(a(X)),
        "linalg.eigvalsh": lambda xp, a: xp.linalg.eigvalsh(a(H)),
        "linalg.cholesky": lambda xp, a: xp.linalg.cholesky(a(H)),
        "linalg.cholesky-upper": lambda xp, a: xp.linalg.cholesky(a(H), upper=True),
        "linalg.pinv": lambda xp, a: xp.linalg.pinv(a(X)),
        "linalg.matrix_power": lambda xp, a: xp.linalg.matrix_power(a(S), 3),
        "linalg.matrix_norm": lambda xp, a: xp.linalg.matrix_norm(a(X), ord="nuc"),
        "linalg.vector_norm": lambda xp, a: xp.linalg.vector_norm(a(X), axis=1, ord=3),
        "linalg.trace": lambda xp, a: xp.linalg.trace(a(S), offset=1),
        "linalg.diagonal": lambda xp, a: xp.linalg.diagonal(a(X), offset=-1),
        "linalg.outer": lambda xp, a: xp.linalg.outer(a(X[0]), a(Y[1])),
        "linalg.matmul": lambda xp, a: xp.linalg.matmul(a(S), a(S)),
        "linalg.tensordot": lambda xp, a: xp.linalg.tensordot(a(X), a(Y), axes=2),
        "linalg.vecdot": lambda xp, a: xp.linalg.vecdot(a(X), a(Y)),
    }
)


def _tenferro_kinds() -> dict[str, Callable[[np.ndarray[Any, Any]], Any]]:
    return {
        "Tensor": tf.Tensor,
        "EagerTensor": lambda v: tf.tensor(v, requires_grad=v.dtype.kind in "fc"),
        "TracedTensor": tf.traced,
    }


def _strict_values(result: Any) -> list[tuple[np.ndarray[Any, Any], str]]:
    items = list(result) if isinstance(result, tuple | list) else [result]
    return [(np.asarray(item), str(item.dtype).rsplit(".", 1)[-1]) for item in items]


def _tenferro_values(result: Any) -> list[tuple[np.ndarray[Any, Any], str]]:
    items = list(result) if isinstance(result, tuple | list) else [result]
    values = []
    for item in items:
        array = np.asarray(item.eval() if isinstance(item, tf.TracedTensor) else item)
        values.append((array, str(array.dtype).replace("bool", "bool")))
    return values


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_same_values_and_dtypes_as_array_api_strict(name, kind):
    call = CALLS[name]
    expected = _strict_values(call(xp_strict, xp_strict.asarray))
    make = _tenferro_kinds()[kind]
    xp = make(X).__array_namespace__()
    got = _tenferro_values(call(xp, make))
    assert len(got) == len(expected)
    for (value, dtype), (reference, reference_dtype) in zip(got, expected, strict=True):
        assert dtype == reference_dtype, (name, dtype, reference_dtype)
        assert value.shape == reference.shape
        np.testing.assert_allclose(value, reference, rtol=1e-6 if "32" in dtype else 1e-12)


def test_namespace_identity_and_device():
    for make in _tenferro_kinds().values():
        x = make(X)
        assert x.__array_namespace__() is tf.array_api
        assert x.__array_namespace__(api_version="2023.12") is tf.array_api
        assert x.device == "cpu"
        assert x.to_device("cpu") is x
        with pytest.raises(tf.ParameterError, match="cuda"):
            x.to_device("cuda")
    with pytest.raises(tf.ParameterError, match="cuda"):
        tf.array_api.zeros((2,), device="cuda")


def test_dtype_helpers_agree_with_the_standard():
    xp = tf.array_api
    for dtype, kinds in (
        (xp.float32, ("real floating", "numeric")),
        (xp.complex128, ("complex floating", "numeric")),
        (xp.int64, ("signed integer", "integral", "numeric")),
        (xp.bool, ("bool",)),
    ):
        strict = getattr(xp_strict, str(np.dtype(dtype)))
        for kind in (
            "bool",
            "signed integer",
            "integral",
            "real floating",
            "complex floating",
            "numeric",
        ):
            assert xp.isdtype(dtype, kind) == xp_strict.isdtype(strict, kind) == (kind in kinds)
    assert xp.result_type(xp.float32, xp.float64) == np.float64
    assert xp.can_cast(xp.float32, xp.float64)
    assert not xp.can_cast(xp.complex64, xp.float64)
    assert xp.finfo(xp.float32).eps == xp_strict.finfo(xp_strict.float32).eps


def test_derivatives_flow_through_the_namespace():
    def loss(x: Any) -> Any:
        xp = x.__array_namespace__()
        y = xp.concat([xp.exp(x), xp.pow(x, 2.0)], axis=0)
        return xp.sum(xp.std(y, axis=0, correction=1)) + xp.linalg.trace(x @ xp.matrix_transpose(x))

    tf.testing.check_grads(loss, (X,), order=2, modes=("fwd", "rev"))
    leaf = tf.tensor(X, requires_grad=True)
    loss(leaf).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), np.asarray(tf.grad(loss)(X)), rtol=1e-12)


def test_not_covered_names_are_absent_and_the_rest_of_the_standard_is_present():
    xp = tf.array_api
    missing = set(xp.not_covered())
    standard = {n for n in xp_strict.__all__ if not n.startswith("_")}
    standard -= {"ArrayAPIStrictFlags", "Device", "get_array_api_strict_flags"}
    standard -= {"reset_array_api_strict_flags", "set_array_api_strict_flags"}
    standard -= {"int8", "int16", "uint8", "uint16", "uint32", "uint64"}  # not tenferro dtypes
    for name in standard - missing:
        assert hasattr(xp, name), name
    for name in missing:
        assert not hasattr(xp, name), name
    assert missing <= standard
