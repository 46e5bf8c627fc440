"""numpy functions and ufuncs applied to tensors (issue 8, item 6).

``np.dot(x, x)`` on a tracked tensor used to return a plain array and drop the tape, so
``(tf.sum(x*x) + np.dot(x, x)).backward()`` gave half the gradient. Now every numpy
function tenferro provides runs as the tenferro function on the tensor's own kind (tape
and graph kept), and every other one raises ``UnsupportedError``: a numpy call on a
tensor never silently leaves AD.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

rng = np.random.default_rng(0)
X = rng.uniform(0.5, 2.0, (3, 4))
V = rng.uniform(0.5, 2.0, 4)

# (name, numpy call, value of the same call on plain arrays)
CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("sum", lambda x: np.sum(x)),
    ("sum-axis-keepdims", lambda x: np.sum(x, axis=1, keepdims=True)),
    ("prod", lambda x: np.prod(x, axis=0)),
    ("mean", lambda x: np.mean(x, axis=-1)),
    ("var", lambda x: np.var(x, ddof=1)),
    ("std", lambda x: np.std(x, axis=0)),
    ("max", lambda x: np.max(x, axis=1)),
    ("min", lambda x: np.min(x)),
    ("amax", lambda x: np.amax(x, axis=0)),
    ("dot", lambda x: np.dot(x, V)),
    ("dot-matrix", lambda x: np.dot(x.T, x)),
    ("vdot", lambda x: np.vdot(x, x)),
    ("inner", lambda x: np.inner(x, x)),
    ("outer", lambda x: np.outer(x[0], V)),
    ("tensordot", lambda x: np.tensordot(x, x, axes=([0], [0]))),
    ("matmul", lambda x: np.matmul(x, V)),
    ("concatenate", lambda x: np.concatenate([x, np.ones((1, 4))])),
    ("concatenate-none", lambda x: np.concatenate([x, np.ones((2, 2))], axis=None)),
    ("stack", lambda x: np.stack([x, x], axis=1)),
    ("reshape", lambda x: np.reshape(x, (2, 6))),
    ("transpose", lambda x: np.transpose(x)),
    ("swapaxes", lambda x: np.swapaxes(x, 0, 1)),
    ("moveaxis", lambda x: np.moveaxis(x, 0, -1)),
    ("expand_dims", lambda x: np.expand_dims(x, 1)),
    ("squeeze", lambda x: np.squeeze(np.expand_dims(x, 0))),
    ("ravel", lambda x: np.ravel(x)),
    ("flip", lambda x: np.flip(x, axis=1)),
    ("diagonal", lambda x: np.diagonal(x, 1)),
    ("trace", lambda x: np.trace(x)),
    ("tril", lambda x: np.tril(x, -1)),
    ("triu", lambda x: np.triu(x)),
    ("pad", lambda x: np.pad(x, ((1, 0), (0, 2)))),
    ("where", lambda x: np.where(X > 1.0, x, -x)),
    ("clip", lambda x: np.clip(x, 0.8, 1.5)),
    ("clip-keywords", lambda x: np.clip(x, min=1.0)),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4))),
    ("take", lambda x: np.take(x, [0, 2], axis=1)),
    ("round", lambda x: np.round(x, 1)),
    ("real", lambda x: np.real(x)),
    ("imag", lambda x: np.imag(x)),
    ("exp", lambda x: np.exp(x)),
    ("ufunc-binary", lambda x: np.maximum(x, 1.2) * np.log(x)),
    ("ndarray-operator", lambda x: np.ones(4) + x),
    ("add-reduce", lambda x: np.add.reduce(x, axis=1)),
    ("zeros_like", lambda x: np.zeros_like(x) + x),
    ("full_like", lambda x: np.full_like(x, 2.0) * x),
]


def kinds(data: np.ndarray[Any, Any]) -> dict[str, Any]:
    trackable = np.asarray(data).dtype.kind in "fc"
    return {
        "Tensor": tf.asarray(data),
        "EagerTensor": tf.EagerTensor(data, requires_grad=trackable),
        "TracedTensor": tf.traced(data),
    }


def value(result: Any) -> np.ndarray[Any, Any]:
    return np.asarray(result.eval() if isinstance(result, tf.TracedTensor) else result)


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_numpy_functions_run_as_tenferro_functions_on_every_kind(name, call, kind):
    tensor = kinds(X)[kind]
    result = call(tensor)
    assert type(result) is type(tensor), (name, type(result))
    expected = call(X)
    np.testing.assert_allclose(value(result), expected, rtol=1e-12, atol=1e-12)
    assert value(result).shape == np.shape(expected)


ZERO_DERIVATIVE = {"round", "imag"}  # their (zero) gradients are another item's subject


@pytest.mark.parametrize(
    ("name", "call"),
    [c for c in CALLS if c[0] not in ZERO_DERIVATIVE],
    ids=[c[0] for c in CALLS if c[0] not in ZERO_DERIVATIVE],
)
def test_numpy_functions_keep_the_tape_and_the_graph(name, call):
    """The gradient through a numpy call is the gradient of the tenferro function, on the
    tape, in traced mode and under transforms, and it passes the derivative checks."""
    weights = rng.uniform(-1.0, 1.0, np.shape(call(X)))

    def loss(x: Any) -> Any:
        return tf.sum(call(x) * weights)

    reference = np.asarray(tf.grad(loss)(X))
    assert np.any(reference != 0)
    leaf = tf.EagerTensor(X, requires_grad=True)
    loss(leaf).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), reference, rtol=1e-12, atol=1e-12)
    traced = tf.traced(X)
    np.testing.assert_allclose(value(loss(traced).grad(traced)), reference, rtol=1e-12)
    if name not in {"clip", "clip-keywords", "max", "min", "amax"}:  # kinks
        tf.testing.check_grads(loss, (X,), order=2, modes=("fwd", "rev"))


def test_dot_no_longer_drops_half_the_gradient():
    x = tf.EagerTensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (tf.sum(x * x) + np.dot(x, x)).backward()
    np.testing.assert_allclose(np.asarray(x.grad), [4.0, 8.0, 12.0])


def test_ieee_predicates_agree_with_numpy_on_every_dtype():
    data = {
        "float64": np.array([0.0, -1.5, np.inf, -np.inf, np.nan]),
        "float32": np.array([0.0, np.inf, np.nan], np.float32),
        "complex128": np.array(
            [1 + 1j, complex(np.inf, 0), complex(0, np.nan), complex(1, -np.inf)]
        ),
        "int32": np.array([1, -2], np.int32),
        "bool": np.array([True, False]),
    }
    for array in data.values():
        for name in ("isnan", "isinf", "isfinite"):
            expected = getattr(np, name)(array)
            for tensor in kinds(array).values():
                through_numpy = getattr(np, name)(tensor)
                direct = getattr(tf, name)(tensor)
                for result in (through_numpy, direct):
                    assert value(result).dtype == np.bool_
                    np.testing.assert_array_equal(value(result), expected, err_msg=name)


def test_data_only_functions_answer_on_concrete_tensors():
    x = tf.EagerTensor(X, requires_grad=True)
    assert np.allclose(x, X)
    assert np.array_equal(tf.asarray(V), V)
    assert np.argmax(x) == np.argmax(X)
    assert np.shape(x) == X.shape
    assert np.ndim(x) == 2
    assert np.size(x, 1) == 4
    assert np.iscomplexobj(tf.asarray(X * 1j))
    with pytest.raises(tf.UnsupportedError, match=r"numpy\.allclose.*none until evaluated"):
        np.allclose(tf.traced(X), X)


UNSUPPORTED_FUNCTIONS = [
    ("convolve", lambda x: np.convolve(x[0], x[1])),
    ("median", lambda x: np.median(x, axis=1)),
    ("spacing", lambda x: np.spacing(x)),
    ("multiply.outer", lambda x: np.multiply.outer(x, x)),
    ("add.accumulate", lambda x: np.add.accumulate(x)),
    ("unique", lambda x: np.unique(x)),
]


@pytest.mark.parametrize(
    ("name", "call"), UNSUPPORTED_FUNCTIONS, ids=[c[0] for c in UNSUPPORTED_FUNCTIONS]
)
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_functions_without_counterpart_raise_instead_of_leaving_ad(name, call, kind):
    """No plain array comes back (it would have left the tape or the graph); an explicit
    np.asarray conversion still gives numpy's answer."""
    tensor = kinds(X)[kind]
    with pytest.raises(tf.UnsupportedError, match="no counterpart") as info:
        call(tensor)
    assert info.value.op == f"numpy.{name}"
    assert str(info.value).startswith(f"numpy.{name}: ")
    if kind != "TracedTensor":
        np.testing.assert_array_equal(call(np.asarray(tensor)), call(X))
    if kind == "EagerTensor":
        assert tensor.grad is None


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (lambda x: np.sum(x, out=np.zeros(())), ["numpy.sum", "out="]),
        (lambda x: np.sum(x, where=np.asarray(X) > 1), ["numpy.sum", "where="]),
        (lambda x: np.reshape(x, (12,), order="F"), ["numpy.reshape", "order='F'"]),
        (lambda x: np.where(x), ["numpy.where", "one-argument"]),
        (lambda x: np.pad(x, 1, mode="edge"), ["numpy.pad", "edge"]),
        (lambda x: np.exp(x, out=np.zeros((3, 4))), ["numpy.exp", "out="]),
        (lambda x: np.exp(x, casting="unsafe"), ["numpy.exp", "casting"]),
        (lambda x: np.transpose(x, (0, 0)), ["transpose", "(0, 0)"]),
        (lambda x: np.sum(x, axis=5), ["sum", "5"]),
    ],
)
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_unsupported_options_and_bad_arguments_raise_on_every_kind(call, fragments, kind):
    tensor = kinds(X)[kind]
    with pytest.raises(tf.TenferroError) as info:
        call(tensor)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_einsum_and_linalg_are_dispatched_by_name_at_call_time(monkeypatch):
    x = tf.EagerTensor(V, requires_grad=True)
    calls: list[Any] = []

    def fake_einsum(subscripts: str, *operands: Any, optimize: Any = "auto") -> Any:
        calls.append((subscripts, optimize))
        return tf.sum(operands[0] * operands[1])

    monkeypatch.setattr(tf, "einsum", fake_einsum, raising=False)
    result = np.einsum("i,i->", x, x, optimize=True)
    assert calls == [("i,i->", True)]
    result.backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * V)
    monkeypatch.delattr(tf, "einsum")
    with pytest.raises(tf.UnsupportedError, match=r"numpy\.einsum"):
        np.einsum("i,i->", x, x)

    import sys
    import types

    linalg = types.ModuleType("tenferro.linalg")
    linalg.norm = lambda v, order=None: tf.sqrt(tf.sum(v * v))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tenferro.linalg", linalg)
    np.testing.assert_allclose(np.asarray(np.linalg.norm(x)), np.linalg.norm(V))
    with pytest.raises(tf.UnsupportedError, match=r"numpy\.linalg\.svd"):
        np.linalg.svd(x.reshape(2, 2))


def test_foreign_array_types_are_left_to_their_library():
    class Foreign:
        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
            return "foreign"

    result = tf.asarray(V).__array_function__(np.sum, (type(tf.asarray(V)), Foreign), (), {})
    assert result is NotImplemented


@fuzz_settings(40)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
    st.sampled_from(["sum", "mean", "max", "prod", "var"]),
    st.booleans(),
    st.data(),
)
def test_numpy_reductions_match_numpy_for_any_axis(shape, name, keepdims, data):
    array = np.random.default_rng(len(shape)).uniform(0.5, 2.0, shape)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    function = getattr(np, name)
    expected = function(array, axis=axis, keepdims=keepdims)
    for tensor in kinds(array).values():
        result = function(tensor, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(value(result), expected, rtol=1e-12)
        assert value(result).shape == np.shape(expected)


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_numpy_einsum_runs_tf_einsum_with_its_derivatives(kind):
    a = np.arange(12.0).reshape(3, 4) / 7
    tensor = kinds(X)[kind]
    result = np.einsum("ij,kj,k->i", tensor, a, V[:3], optimize=True)
    assert type(result) is type(tensor)
    np.testing.assert_allclose(value(result), np.einsum("ij,kj,k->i", X, a, V[:3]), rtol=1e-12)

    def loss(x: Any) -> Any:
        return tf.sum(np.einsum("ij,kj,k->i", x, a, V[:3]) ** 2)

    tf.testing.check_grads(loss, (X,), order=2, modes=("fwd", "rev"))
