"""PyTorch habits: ``tf.tensor``, ``tf.asarray(requires_grad=...)``, ``.tolist()``,
formatting, ``round``, ``.requires_grad_()``, ``.retain_grad()``, ``.data``,
``.T``/``.mT``/``.H``/``.mH`` and in-place operators (refused on tracked leaves,
out of place elsewhere)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tenferro as tf

DTYPES = ["float32", "float64", "complex64", "complex128", "int32", "int64", "bool"]
IN_PLACE = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@="]


def test_tensor_is_a_function_making_eager_tensors():
    x = tf.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert type(x) is tf.EagerTensor
    assert not x.requires_grad
    np.testing.assert_array_equal(x, [[1.0, 2.0], [3.0, 4.0]])
    w = tf.tensor(np.arange(3.0), dtype=tf.float32, requires_grad=True)
    assert w.requires_grad
    assert w.is_leaf
    assert w.dtype == np.float32
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad, 2 * np.arange(3.0))


def test_tensor_refuses_tracked_data_and_non_differentiable_dtypes():
    w = tf.tensor([1.0], requires_grad=True)
    with pytest.raises(tf.TenferroError, match="already tracked"):
        tf.tensor(w)
    with pytest.raises(tf.DTypeError, match="floating and complex"):
        tf.tensor([1, 2], requires_grad=True)
    with pytest.raises(tf.DTypeError, match="tensor"):
        tf.tensor(tf.traced(np.ones(2)))


def test_asarray_with_requires_grad_is_a_tracked_leaf():
    data = np.array([0.5, -1.0])
    for source in (data, data.tolist(), tf.Tensor(data), tf.EagerTensor(data)):
        x = tf.asarray(source, requires_grad=True)
        assert type(x) is tf.EagerTensor
        assert x.requires_grad
        assert x.is_leaf
        tf.exp(x).sum().backward()
        np.testing.assert_allclose(x.grad, np.exp(data))
    plain = tf.Tensor(data)
    assert tf.asarray(plain) is plain
    assert tf.asarray(data, dtype=tf.float32).dtype == np.float32
    with pytest.raises(tf.ParameterError, match="cuda"):
        tf.asarray(data, device="cuda")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor"])
def test_format_of_every_scalar_kind_is_the_python_scalars(kind, dtype):
    value = np.array(-2.375 + 1.5j if dtype.startswith("complex") else 3).astype(dtype)
    x = getattr(tf, kind)(value)
    for spec in (".4f", "+.2e", "8.3g", ""):
        if spec and dtype == "bool":
            expected = format(bool(value), spec)
        elif spec:
            expected = format(value.item(), spec)
        else:
            expected = str(x)
        assert format(x, spec) == expected


def test_format_of_a_tracked_loss():
    w = tf.tensor([0.5, 0.25], requires_grad=True)
    loss = (w * w).sum()
    assert f"{loss:.4f}" == "0.3125"
    assert f"step {1}: {loss:.2f}" == "step 1: 0.31"


@pytest.mark.parametrize("kind", [tf.Tensor, tf.EagerTensor, tf.traced])
def test_format_spec_on_a_non_scalar_raises_like_torch(kind):
    x = kind(np.ones((2,)))
    with pytest.raises(TypeError, match=r"only 0-d tensors take a format spec"):
        f"{x:.3f}"


@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=3), elements=st.floats(-1e6, 1e6))
)
@fuzz_settings(25)
def test_tolist_and_round_agree_with_numpy(a):
    for make in (tf.Tensor, tf.EagerTensor):
        x = make(a)
        assert x.tolist() == a.tolist()
        np.testing.assert_array_equal(round(x), np.round(a))
        np.testing.assert_array_equal(round(x, 2), np.round(a, 2))
        assert type(round(x)) is make


def test_round_of_a_traced_tensor_stays_traced():
    x = tf.traced(np.array([1.26, -2.5]))
    assert isinstance(round(x, 1), tf.TracedTensor)
    np.testing.assert_array_equal(round(x, 1).eval(), np.round([1.26, -2.5], 1))


def test_requires_grad_false_freezes_a_leaf_as_in_pytorch():
    w, b = tf.tensor([1.0, 2.0], requires_grad=True), tf.tensor([3.0, 4.0], requires_grad=True)
    (w * b).sum().backward()
    assert w.requires_grad_(False) is w
    assert not w.requires_grad
    assert w.is_leaf
    np.testing.assert_allclose(w.grad, [3.0, 4.0])  # the gradient it had is kept
    loss = (w * b * b).sum()
    loss.backward()
    np.testing.assert_allclose(b.grad, [1.0, 2.0] + 2 * np.array([1.0, 2.0]) * [3.0, 4.0])
    np.testing.assert_allclose(w.grad, [3.0, 4.0])  # frozen: not accumulated
    assert w.requires_grad_() is w  # tracked again, as a new leaf
    (w * b).sum().backward()
    np.testing.assert_allclose(w.grad, [6.0, 8.0])
    tape = tf.Tape()
    v = tape.track(np.ones(2))
    v.requires_grad_(False)
    with pytest.raises(tf.TenferroError):
        tape.grad(tf.sum(v * 2), v)


def test_requires_grad_():
    x = tf.tensor([1.0, 2.0])
    assert x.requires_grad_() is x
    assert x.requires_grad
    assert x.is_leaf
    assert x.requires_grad_() is x  # tracked already: a no-op
    (x**3).sum().backward()
    np.testing.assert_allclose(x.grad, [3.0, 12.0])
    assert tf.tensor([1.0]).requires_grad_(False).requires_grad is False
    with pytest.raises(tf.UnsupportedError, match=r"requires_grad_: only a leaf.*detach"):
        (x * 2).requires_grad_(False)
    with pytest.raises(tf.DTypeError):
        tf.tensor([1, 2]).requires_grad_()
    for other in (tf.Tensor([1.0]), tf.traced(np.ones(1))):
        with pytest.raises(tf.ArgumentTypeError, match="EagerTensor"):
            other.requires_grad_()


def test_retain_grad_is_a_no_op_on_leaves_and_refused_on_intermediates():
    x = tf.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    y = x * 2
    with pytest.raises(tf.UnsupportedError, match=r"tape\.grad"):
        y.retain_grad()
    with pytest.raises(tf.UnsupportedError):
        tf.Tensor([1.0]).retain_grad()
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad, [8.0, 16.0])


def test_data_is_a_detached_view():
    x = tf.tensor([1.0, 3.0], requires_grad=True)
    y = x * x
    assert not y.data.requires_grad
    np.testing.assert_array_equal(y.data, [1.0, 9.0])
    (y * y.data).sum().backward()  # y.data is a constant: d/dx (x^2 * c) = 2 x c
    np.testing.assert_allclose(x.grad, [2.0, 54.0])
    plain = tf.Tensor([1.0])
    assert plain.data is plain
    with pytest.raises(tf.ArgumentTypeError, match="data"):
        _ = tf.traced(np.ones(2)).data


@given(
    hnp.arrays(
        np.complex128,
        hnp.array_shapes(min_dims=2, max_dims=4, max_side=3),
        elements=st.complex_numbers(max_magnitude=10),
    )
)
@fuzz_settings(25)
def test_transposes_follow_numpy_and_torch(a):
    for x in (tf.Tensor(a), tf.EagerTensor(a), tf.traced(a)):

        def value(t):
            return t.eval() if isinstance(t, tf.TracedTensor) else t

        np.testing.assert_array_equal(value(x.T), a.T)  # numpy: every axis reversed
        np.testing.assert_array_equal(value(x.mT), np.swapaxes(a, -1, -2))
        np.testing.assert_array_equal(value(x.mH), np.swapaxes(a, -1, -2).conj())
        if a.ndim == 2:
            np.testing.assert_array_equal(value(x.H), a.T.conj())
        else:
            with pytest.raises(tf.ShapeError, match="mH"):
                _ = x.H


@pytest.mark.parametrize("name", ["mT", "mH", "H"])
def test_matrix_transposes_need_a_matrix(name):
    with pytest.raises(tf.ShapeError, match="needs"):
        getattr(tf.Tensor(np.ones(3)), name)


def test_transposes_are_differentiable():
    a = np.array([[1.0 + 1j, 2.0], [0.5j, -1.0]])
    tf.testing.check_grads(lambda x: tf.sum(tf.abs(x.mH @ x) ** 2), (a,), order=2)


@pytest.mark.parametrize("operator", IN_PLACE)
def test_in_place_on_a_tracked_leaf_raises_like_torch(operator):
    x = tf.tensor(np.eye(2) + 1, requires_grad=True)
    namespace = {"x": x, "y": np.full((2, 2), 2.0)}
    with pytest.raises(tf.InPlaceError, match="in-place " + re.escape(operator)):
        exec(f"x {operator} y", namespace)
    assert namespace["x"] is x
    assert x.is_leaf


def test_setitem_raises_on_every_tensor_tracked_or_not():
    x = tf.tensor([1.0, 2.0], requires_grad=True)
    for immutable in (x, x * 1, tf.Tensor([1.0, 2.0]), tf.traced(np.ones(2))):
        with pytest.raises(TypeError, match="immutable"):
            immutable[0] = 3.0
    assert x.is_leaf
    np.testing.assert_array_equal(x, [1.0, 2.0])


@pytest.mark.parametrize("operator", IN_PLACE)
def test_in_place_elsewhere_is_out_of_place_and_keeps_the_gradient(operator):
    leaf = tf.tensor(np.eye(2) + 1, requires_grad=True)
    y = np.full((2, 2), 2.0)
    z = leaf * 1.5
    original = z
    namespace = {"z": z, "y": y}
    exec(f"z {operator} y", namespace)
    result = namespace["z"]
    assert result is not original
    assert not result.is_leaf
    np.testing.assert_array_equal(original, (np.eye(2) + 1) * 1.5)  # unchanged
    expected = eval(f"z {operator[:-1]} y", {"z": (np.eye(2) + 1) * 1.5, "y": y})
    np.testing.assert_allclose(result, expected)
    result.sum().backward()
    reference = tf.tensor(np.eye(2) + 1, requires_grad=True)
    eval(f"z {operator[:-1]} y", {"z": reference * 1.5, "y": y}).sum().backward()
    np.testing.assert_allclose(leaf.grad, reference.grad)


def test_format_spec_on_a_non_scalar_and_unknown_array_api_versions_raise_named_errors() -> None:
    x = tf.Tensor(np.ones((2, 3)))
    with pytest.raises(tf.ArgumentTypeError, match="format: unsupported format string"):
        f"{x:.3f}"
    with pytest.raises(TypeError):  # still a TypeError, as in PyTorch
        format(x, ".3f")
    with pytest.raises(tf.ParameterError, match=r"__array_namespace__: api_version '1999\.12'"):
        x.__array_namespace__(api_version="1999.12")
    assert x.__array_namespace__(api_version="2022.12") is tf.array_api


_X3 = np.array([0.3, -0.8, 1.1])


def test_in_place_operators_and_seeds() -> None:
    x = tf.EagerTensor(_X3, requires_grad=True)
    with pytest.raises(tf.InPlaceError):
        x += 1
    y = x * 1
    y += x  # rebinding a non-leaf is an ordinary add
    tf.sum(y).backward()
    np.testing.assert_array_equal(x.grad, [2.0, 2.0, 2.0])
    x = tf.EagerTensor(_X3, requires_grad=True)
    with pytest.raises(tf.NonScalarError):
        (x * 2).backward()
    with pytest.raises(tf.ShapeError):
        (x * 2).backward(np.ones(4))
    with pytest.raises(tf.DTypeError):
        (x * 2).backward(np.ones(3, np.float32))
    with pytest.raises(tf.DTypeError):
        tf.EagerTensor(np.arange(3), requires_grad=True)
    with pytest.raises(tf.TenferroError, match="float32"):
        x.grad = np.ones(3, np.float32)
