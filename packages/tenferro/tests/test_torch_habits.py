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
from tenferro_support import plain

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


def test_retain_grad_fills_the_grad_of_intermediates_as_in_pytorch():
    x = tf.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()  # a leaf keeps its .grad already
    y = x * 2
    z = tf.sin(y)
    y.retain_grad()
    z.retain_grad()
    assert y.grad is None
    (z * z).sum().backward(retain_graph=True)
    np.testing.assert_allclose(
        x.grad, 4 * np.sin(2 * x.detach().numpy()) * np.cos(2 * x.detach().numpy())
    )
    np.testing.assert_allclose(z.grad, 2 * np.sin([2.0, 4.0]))
    np.testing.assert_allclose(y.grad, 2 * np.sin([2.0, 4.0]) * np.cos([2.0, 4.0]))
    (z * z).sum().backward(retain_graph=True)  # accumulates, as leaves' gradients do
    np.testing.assert_allclose(y.grad, 4 * np.sin([2.0, 4.0]) * np.cos([2.0, 4.0]))
    unused = x * 3
    unused.retain_grad()
    (y * y).sum().backward()
    assert unused.grad is None
    for untracked in (tf.Tensor([1.0]), tf.tensor([1.0]), tf.traced(np.ones(1))):
        with pytest.raises(tf.UnsupportedError, match="does not require grad"):
            untracked.retain_grad()


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
    np.testing.assert_array_equal(x.detach(), [1.0, 2.0])


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
    np.testing.assert_array_equal(original.detach(), (np.eye(2) + 1) * 1.5)  # unchanged
    expected = eval(f"z {operator[:-1]} y", {"z": (np.eye(2) + 1) * 1.5, "y": y})
    np.testing.assert_allclose(result.detach(), expected)
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


# ---------------------------------------------------------------------- PyTorch names

TORCH_AXIS = {"dim": "axis", "keepdim": "keepdims", "dims": "axis", "correction": "ddof"}
"""PyTorch's parameter names and the numpy names they stand for."""

AXIS_ALIAS_EXEMPT = {
    "max": "torch.max(x, dim=...) returns (values, indices): dim= refused with guidance",
    "min": "torch.min(x, dim=...) returns (values, indices): dim= refused with guidance",
    "amax": "the same function as max",
    "amin": "the same function as min",
    "sort": "torch.sort returns (values, indices): dim= refused with guidance",
    "split": "torch.split takes chunk sizes, numpy's split section counts: no alias",
    "array_split": "numpy's section counts (torch.tensor_split is another function)",
    "cross": "numpy's axisa/axisb/axisc (tf.linalg.cross takes torch.linalg.cross's axis)",
    "diff": "numpy's n and prepend/append semantics",
    "dynamic_truncate": "tenferro's own",
    "pad_to_match": "tenferro's own",
    "permute_dims": "an axes permutation (x.permute(*dims) is the PyTorch method)",
    "transpose": "an axes permutation (torch.transpose swaps two: tf.swapaxes)",
    "tensordot": "numpy's axes (torch's dims argument has another meaning)",
    "vecdot": "the Array API's axis",
    "repeat": "numpy's repeat (torch.repeat_interleave)",
    "roll": "numpy's shift/axis pairs",
    "take": "numpy's take along an axis (torch.take flattens; torch.index_select)",
    "gradient": "numpy's gradient (torch.gradient's spacing/dim differ)",
    "append": "numpy's append (torch has no append)",
    "partition": "numpy's partition (torch has none: torch.kthvalue/topk differ)",
    "argpartition": "numpy's argpartition (torch has none)",
    "rollaxis": "numpy's rollaxis (torch.movedim: tf.moveaxis)",
}


def _axis_functions() -> list[str]:
    import inspect

    found = []
    for name in tf.__all__:
        function = getattr(tf, name)
        if not callable(function) or isinstance(function, type):
            continue
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        if "axis" in parameters:
            found.append(name)
    return sorted(found)


@pytest.mark.parametrize("name", _axis_functions())
def test_functions_with_an_axis_take_pytorchs_dim_or_say_why_not(name: str) -> None:
    import inspect

    parameters = inspect.signature(getattr(tf, name)).parameters
    aliases = {"dim", "dims"} & set(parameters)
    if name in AXIS_ALIAS_EXEMPT:
        return
    assert aliases, f"tf.{name} takes axis= but not PyTorch's dim= (nor says why not)"
    (alias,) = aliases
    function = getattr(tf, name)
    x = np.arange(24.0).reshape(2, 3, 4) / 7 + 0.5
    if name == "squeeze":
        x = x.reshape(1, 24, 1)
    joins = name in ("concatenate", "stack", "cat")
    args = ([x[0], x[0]],) if joins else (x,)
    for axis in (0, -1):
        by_numpy = function(*args, axis=axis)
        by_torch = function(*args, **{alias: axis})
        np.testing.assert_array_equal(plain(by_torch), plain(by_numpy))
    default = parameters["axis"].default
    with pytest.raises(tf.ParameterError, match="not both"):
        function(*args, axis=-1 if default != -1 else 0, **{alias: 0})


@pytest.mark.parametrize("name", ["max", "min", "sort"])
def test_dim_on_functions_returning_values_and_indices_in_pytorch_is_refused(name: str) -> None:
    with pytest.raises(tf.ParameterError, match=r"\(values, indices\).*argmax|argsort|argmin"):
        getattr(tf, name)(np.ones((2, 3)), dim=1)
    with pytest.raises(tf.ParameterError, match=r"\(values, indices\)"):
        getattr(tf.ones((2, 3)), name)(dim=1)


def test_keepdim_and_correction_are_pytorchs_names_for_keepdims_and_ddof() -> None:
    x = np.arange(12.0).reshape(3, 4) ** 1.5
    t = tf.tensor(x, requires_grad=True)
    for name in ("sum", "prod", "mean", "any", "all", "count_nonzero", "logsumexp", "nansum"):
        function = getattr(tf, name)
        np.testing.assert_array_equal(
            plain(function(t, dim=1, keepdim=True)), plain(function(t, axis=1, keepdims=True))
        )
    for name in ("var", "std"):
        np.testing.assert_allclose(
            plain(getattr(t, name)(dim=0, correction=1)), getattr(np, name)(x, axis=0, ddof=1)
        )
    np.testing.assert_array_equal(plain(t.max(axis=1, keepdim=True)), x.max(1, keepdims=True))


def test_tensor_methods_with_pytorchs_names() -> None:
    x = tf.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    assert x.size == 6
    assert isinstance(x.size, int)
    assert x.size() == (2, 3)
    assert x.size(-1) == 3
    assert x.dim() == 2
    assert x.numel() == 6
    assert x.view(3, 2).shape == x.view((3, 2)).shape == x.view(-1, 2).shape == (3, 2)
    assert x.permute(1, 0).shape == x.permute((1, 0)).shape == (3, 2)
    assert x.unsqueeze(0).shape == (1, 2, 3)
    assert x[:, :1].expand(4, -1, 5).shape == (4, 2, 5)
    assert x.t().shape == (3, 2)
    assert x.flatten().shape == (6,)
    assert x.reshape(2, 3, 1).flatten(1).shape == (2, 3)
    conversions = {
        "double": "float64",
        "float": "float32",
        "long": "int64",
        "int": "int32",
        "bool": "bool",
        "cfloat": "complex64",
        "cdouble": "complex128",
    }
    for method, dtype in conversions.items():
        assert getattr(x, method)().dtype == np.dtype(dtype), method
    assert x.to(tf.float32).dtype == np.float32
    assert x.to(tf.tensor([1], dtype=tf.complex64)).dtype == np.complex64
    assert x.to("cpu") is x
    assert x.to("cpu", tf.float32).dtype == np.float32
    assert x.clone() is x
    assert x.contiguous() is x
    assert x.block_until_ready() is x
    (x.view(-1) * x.permute(1, 0).flatten()).sum().backward()
    by_numpy_names = tf.grad(lambda v: tf.sum(tf.reshape(v, -1) * tf.ravel(tf.transpose(v))))
    np.testing.assert_allclose(x.grad, by_numpy_names(plain(x)))
    for refused, error in (
        (lambda: x.to("cuda"), tf.ParameterError),
        (lambda: x.half(), tf.DTypeError),
        (lambda: x.view(tf.float32), tf.DTypeError),
        (lambda: x.t() if False else tf.ones((2, 2, 2)).t(), tf.ShapeError),
        (lambda: x.size(5), tf.AxisError),
        (lambda: x.flatten(1, 0), tf.AxisError),
        (lambda: x.expand(3), tf.ShapeError),
    ):
        with pytest.raises(error):
            refused()


@pytest.mark.parametrize(
    "name", sorted(__import__("tenferro.surface.torch_habits", fromlist=["IN_PLACE"]).IN_PLACE)
)
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_pytorchs_in_place_methods_raise_naming_the_functional_form(name: str, kind: str) -> None:
    from tenferro.surface.torch_habits import IN_PLACE

    x = {"Tensor": tf.Tensor, "EagerTensor": tf.tensor, "TracedTensor": tf.traced}[kind](np.ones(2))
    with pytest.raises(tf.InPlaceError, match=rf"{name}: .*immutable.*{IN_PLACE[name].split()[0]}"):
        getattr(x, name)(1.0)
    np.testing.assert_array_equal(plain(x), np.ones(2))


def test_cat_is_pytorchs_concatenate() -> None:
    a, b = tf.tensor([[1.0, 2.0]], requires_grad=True), np.array([[3.0, 4.0]])
    np.testing.assert_array_equal(plain(tf.cat([a, b])), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(plain(tf.cat([a, b], dim=1)), [[1, 2, 3, 4]])
    tf.sum(tf.cat([a, a], 1) ** 2).backward()
    np.testing.assert_allclose(a.grad, [[4.0, 8.0]])


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
