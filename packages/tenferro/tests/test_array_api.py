"""tenferro as an Array API namespace: the same calls run through ``array-api-strict``
(the standard's reference implementation, a test dependency only) and through
``x.__array_namespace__()`` on every tensor kind give the same values and dtypes, and
derivatives flow through the namespace's functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tenferro_support import plain

import tenferro as tf

xp_strict = pytest.importorskip("array_api_strict")

rng = np.random.default_rng(7)
X = rng.uniform(0.5, 1.5, (3, 4))
Y = rng.uniform(0.5, 1.5, (3, 4))
S = rng.uniform(-1.0, 1.0, (3, 3)) + 3 * np.eye(3)
H = S @ S.T + np.eye(3)
C = X[:, :3] + 1j * Y[:, :3]
X32 = X.astype(np.float32)
INTS = np.array([[5, 3, -8, 0], [1, 0, 7, -2], [-4, 6, 2, 9]], dtype=np.int32)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])

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
        "linalg.cross": lambda xp, a: xp.linalg.cross(a(X[:, :3]), a(Y[0, 1:])),
        "linalg.trace-int": lambda xp, a: xp.linalg.trace(a(INTS[:, :3])),
        "bitwise_and": lambda xp, a: xp.bitwise_and(a(INTS), a(INTS[::-1])),
        "bitwise_or": lambda xp, a: xp.bitwise_or(a(INTS), 6),
        "bitwise_xor": lambda xp, a: xp.bitwise_xor(a(INTS), a(INTS * 3)),
        "bitwise_invert": lambda xp, a: xp.bitwise_invert(a(INTS)),
        "bitwise_left_shift": lambda xp, a: xp.bitwise_left_shift(a(INTS), a(np.abs(INTS) % 5)),
        "bitwise_right_shift": lambda xp, a: xp.bitwise_right_shift(a(INTS), 2),
        "operators-shift": lambda xp, a: (a(INTS) << 2) >> 1,
        "operators-bitwise": lambda xp, a: (a(INTS) & 6) | (a(INTS) ^ -1),
        "copysign": lambda xp, a: xp.copysign(a(SPECIAL), a(SPECIAL[::-1])),
        "signbit": lambda xp, a: xp.signbit(a(SPECIAL)),
        "nextafter": lambda xp, a: xp.nextafter(a(SPECIAL), a(SPECIAL[::-1])),
        "count_nonzero": lambda xp, a: xp.count_nonzero(a(INTS), axis=1, keepdims=True),
        "searchsorted": lambda xp, a: xp.searchsorted(a(np.sort(X[0])), a(Y), side="right"),
        "clip-unbounded": lambda xp, a: xp.clip(a(X)),
        "meshgrid": lambda xp, a: xp.meshgrid(a(X[0]), a(Y[1]), indexing="ij"),
        "cumulative_sum-initial": lambda xp, a: xp.cumulative_sum(
            a(INTS), axis=1, include_initial=True
        ),
        "cumulative_prod-initial": lambda xp, a: xp.cumulative_prod(
            a(X), axis=0, include_initial=True
        ),
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
        array = plain(item)
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


CONCRETE_ONLY: dict[str, Call] = {
    "linalg.pinv-rtol-array": lambda xp, a: xp.linalg.pinv(
        a(np.stack([X, 2 * X])), rtol=a(np.array([1e-3, 0.5]))
    ),
    "nonzero": lambda xp, a: xp.nonzero(a(INTS)),
    "unique_all": lambda xp, a: xp.unique_all(a(INTS % 3)),
    "unique_counts": lambda xp, a: xp.unique_counts(a(X.round(1))),
    "unique_inverse": lambda xp, a: xp.unique_inverse(a(INTS % 2)),
    "unique_values": lambda xp, a: xp.sort(xp.unique_values(a(INTS % 4))),
}


@pytest.mark.parametrize("name", sorted(CONCRETE_ONLY))
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor"])
def test_data_dependent_functions_agree_with_array_api_strict(name: str, kind: str) -> None:
    """Results whose shape (or whose loop) depends on data: concrete tensors only."""
    call = CONCRETE_ONLY[name]
    expected = _strict_values(call(xp_strict, xp_strict.asarray))
    got = _tenferro_values(call(tf.array_api, _tenferro_kinds()[kind]))
    assert len(got) == len(expected)
    for (g, gd), (e, ed) in zip(got, expected, strict=True):
        assert gd == ed, (name, gd, ed)
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_namespace_info_describes_the_namespace() -> None:
    info = tf.array_api.__array_namespace_info__()
    strict = xp_strict.__array_namespace_info__()
    assert info.default_device() in info.devices()
    assert set(info.capabilities()) >= {"boolean indexing", "data-dependent shapes"}
    defaults = info.default_dtypes(device="cpu")
    assert defaults == {
        "real floating": tf.float64,
        "complex floating": tf.complex128,
        "integral": tf.int64,
        "indexing": tf.int64,
    }
    kinds = [
        "bool",
        "signed integer",
        "unsigned integer",
        "integral",
        "real floating",
        "complex floating",
        "numeric",
        ("bool", "complex floating"),
    ]
    for kind in kinds:
        ours = {name: np.dtype(d) for name, d in info.dtypes(kind=kind).items()}
        theirs = {
            name: np.dtype(str(d).rsplit(".", 1)[-1])
            for name, d in strict.dtypes(kind=kind).items()
            if name not in ("int8", "int16", "uint8", "uint16", "uint32", "uint64")
        }
        assert ours == theirs, kind
    with pytest.raises(tf.ParameterError, match="cuda"):
        info.dtypes(device="cuda")


def test_dlpack_exchange_with_numpy_and_back() -> None:
    for data in (X, X32, C, INTS, np.array(True)):
        for kind in (tf.Tensor, tf.tensor):
            t = kind(data)
            assert t.__dlpack_device__() == (1, 0)
            exported = np.from_dlpack(t)
            np.testing.assert_array_equal(exported, data)
            assert not exported.flags.writeable  # tensors are immutable
            back = tf.from_dlpack(exported)
            assert type(back) is tf.Tensor
            np.testing.assert_array_equal(back, data)
            assert back.dtype == data.dtype
    shared = tf.from_dlpack(X, copy=False)
    np.testing.assert_array_equal(shared, X)
    assert not np.asarray(shared).flags.writeable
    with pytest.raises(tf.ArgumentTypeError, match="requires grad"):
        np.from_dlpack(tf.tensor(X, requires_grad=True))
    with pytest.raises(tf.ArgumentTypeError, match="traced"):
        tf.jit(lambda v: np.from_dlpack(v))(X)
    with pytest.raises(tf.DTypeError, match="DLPack"):
        tf.from_dlpack([1.0, 2.0])
    with pytest.raises(tf.ParameterError, match="cuda"):
        tf.from_dlpack(X, device="cuda")


def test_dlpack_exchange_with_torch_and_jax_where_installed() -> None:
    torch = pytest.importorskip("torch")
    t = tf.Tensor(X)
    np.testing.assert_array_equal(torch.from_dlpack(t).numpy(), X)
    np.testing.assert_array_equal(tf.from_dlpack(torch.ones(3)), np.ones(3, np.float32))
    jnp = pytest.importorskip("jax.numpy")
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(t)), X)
    np.testing.assert_array_equal(tf.from_dlpack(jnp.arange(3.0)), np.arange(3.0))


def test_isdtype_refuses_unknown_kinds_and_non_dtypes() -> None:
    isdtype = tf.array_api.isdtype
    assert isdtype(tf.int32, "integral")
    assert not isdtype(tf.int32, "unsigned integer")
    assert isdtype(tf.complex64, ("bool", "complex floating"))
    with pytest.raises(tf.ParameterError, match="unknown dtype kind 'banana'"):
        isdtype(tf.float64, "banana")
    with pytest.raises(tf.DTypeError, match=r"use x\.dtype"):
        isdtype(tf.ones(2), "numeric")
    with pytest.raises(tf.DTypeError, match="float16"):
        isdtype("float16", "numeric")
