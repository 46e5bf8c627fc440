"""numpy functions added for completeness, each against numpy on random arguments (edge
cases included) on every tensor kind, and differentiable ones against finite differences
and the adjoint identity: ``pad`` in every mode, ``r_``/``c_``, ``gradient``, the split
family, ``sinc`` (every derivative at 0), ``nan_to_num``, ``fmax``/``fmin``, ``select``,
``searchsorted``, ``nonzero``/one-argument ``where``, ``unique_*``, ``count_nonzero``,
the bitwise functions and shifts, ``copysign``/``signbit``/``nextafter``,
``linalg.svd(compute_uv=False)``, ``fabs``, ``logaddexp2``, ``rollaxis``,
``partition``/``argpartition``, ``array`` of tensors and ``linspace`` of tensors."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tenferro_support import plain

import tenferro as tf

KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.tensor(a, requires_grad=np.asarray(a).dtype.kind in "fc"),
    "TracedTensor": tf.traced,
}
CONCRETE = {k: v for k, v in KINDS.items() if k != "TracedTensor"}


def _same(got: Any, expected: Any) -> None:
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _same(g, e)
        return
    value = plain(got)
    expected = np.asarray(expected)
    assert value.dtype == expected.dtype, (value.dtype, expected.dtype)
    assert value.shape == expected.shape, (value.shape, expected.shape)
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


def _agree(numpy_call: Any, tenferro_call: Any, args: list[Any], kinds: Any = KINDS) -> None:
    """numpy's value, or numpy's refusal against a tenferro error, on every kind (arrays
    become tensors of the kind; Python numbers stay numbers)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = numpy_call(*args)
    except (ValueError, TypeError, IndexError, ZeroDivisionError):
        for make in kinds.values():
            with pytest.raises(tf.TenferroError):
                tenferro_call(*[_as(make, a) for a in args])
        return
    for make in kinds.values():
        _same(tenferro_call(*[_as(make, a) for a in args]), expected)


def _as(make: Any, value: Any) -> Any:
    return make(value) if isinstance(value, np.ndarray) else value


arrays = hnp.arrays(
    st.sampled_from([np.float64, np.int64, np.complex128]),
    hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
    elements=st.integers(-9, 9),
)

MODES = [
    ("constant", {}),
    ("constant", {"constant_values": 2}),
    ("constant", {"constant_values": (1, -3)}),
    ("edge", {}),
    ("wrap", {}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}),
    ("symmetric", {"reflect_type": "odd"}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (5, -2)}),
    ("maximum", {}),
    ("minimum", {"stat_length": 2}),
    ("mean", {}),
    ("mean", {"stat_length": (1, 3)}),
    ("median", {}),
]


@fuzz_settings(150)
@given(x=arrays, mode=st.sampled_from(MODES), data=st.data())
def test_pad_is_numpys_in_every_mode(x: Any, mode: Any, data: Any) -> None:
    name, options = mode
    if x.dtype.kind == "c" and name in ("maximum", "minimum", "median"):
        x = x.real
    widths = data.draw(
        st.integers(0, 9)
        | st.tuples(st.integers(0, 9), st.integers(0, 9))
        | st.lists(
            st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=x.ndim, max_size=x.ndim
        )
    )
    _agree(
        lambda a: np.pad(a, widths, name, **options),
        lambda a: tf.pad(a, widths, name, **options),
        [x],
    )


@pytest.mark.parametrize(("name", "options"), MODES)
def test_pad_is_differentiable_in_every_mode(name: str, options: dict[str, Any]) -> None:
    x = np.random.default_rng(1).standard_normal((3, 2)) + 0.1 * np.arange(6).reshape(3, 2)
    tf.testing.check_grads(lambda a: tf.pad(a, ((4, 2), (1, 3)), name, **options), [x], order=2)


def test_pad_refuses_what_numpy_refuses_and_unknown_modes() -> None:
    with pytest.raises(tf.ParameterError, match="unknown mode 'banana'"):
        tf.pad(np.ones(2), 1, "banana")
    with pytest.raises(tf.ParameterError, match="does not take stat_length"):
        tf.pad(np.ones(2), 1, "edge", stat_length=1)
    with pytest.raises(tf.ShapeError, match="empty axis"):
        tf.pad(np.ones((0, 2)), 1, "wrap")
    with pytest.raises(tf.UnsupportedError, match="immutable"):
        tf.pad(np.ones(2), 1, lambda *a: None)


INDEX_TRICKS = [
    lambda m: m.r_[1:4, [7, 8], 2.5],
    lambda m: m.r_[0:1:5j],
    lambda m: m.r_[-2:3, 0:1:3j, [0] * 2, 6],
    lambda m: m.c_[np.array([1, 2, 3]), np.array([4, 5, 6])],
    lambda m: m.c_[np.ones((2, 2)), [7, 8]],
    lambda m: m.r_["-1", np.ones((2, 2)), np.zeros((2, 1))],
    lambda m: m.r_["0,2", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["0,2,0", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["1,2,0", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["0,3,-1", np.ones((2, 2)), np.zeros((2, 2))],
    lambda m: m.c_[np.array([[1, 2, 3]]), 0, 0, np.array([[4, 5, 6]])],
]


@pytest.mark.parametrize("index", range(len(INDEX_TRICKS)))
def test_index_tricks_are_numpys(index: int) -> None:
    build = INDEX_TRICKS[index]
    expected = build(np)
    _same(build(tf), expected)


def test_index_tricks_keep_the_kind_and_the_gradient() -> None:
    x = tf.tensor([1.0, 2.0], requires_grad=True)
    joined = tf.r_[x, 3.0, x * 2]
    assert joined.requires_grad
    tf.sum(joined**2).backward()
    np.testing.assert_allclose(x.grad, 2 * np.array([1.0, 2.0]) + 8 * np.array([1.0, 2.0]))
    g = tf.grad(lambda v: tf.sum(tf.c_[v, v * v]))(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, [3.0, 7.0])
    with pytest.raises(tf.UnsupportedError, match="matrix"):
        tf.r_["r", [1]]
    with pytest.raises(tf.ParameterError, match="first entry"):
        tf.r_[[1], "0"]


@fuzz_settings(80)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
    edge_order=st.sampled_from([1, 2]),
    spacing=st.sampled_from(["none", "scalar", "coordinates", "axis"]),
    seed=st.integers(0, 99),
)
def test_gradient_is_numpys(shape: Any, edge_order: int, spacing: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(shape)
    if spacing == "none":
        args: tuple[Any, ...] = ()
        options: dict[str, Any] = {}
    elif spacing == "scalar":
        args, options = (0.3,), {}
    elif spacing == "coordinates":
        args = tuple(np.cumsum(rng.uniform(0.2, 1.0, n)) for n in shape)
        options = {}
    else:
        args, options = (np.cumsum(rng.uniform(0.2, 1.0, shape[-1])),), {"axis": -1}
    _agree(
        lambda a: np.gradient(a, *args, edge_order=edge_order, **options),
        lambda a: tf.gradient(a, *args, edge_order=edge_order, **options),
        [f],
    )
    if min(shape) > edge_order:
        tf.testing.check_grads(
            lambda a: tf.gradient(a, *args, edge_order=edge_order, **options), [f], order=1
        )


@fuzz_settings(80)
@given(
    x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)),
    name=st.sampled_from(["split", "array_split", "hsplit", "vsplit", "dsplit"]),
    sections=st.integers(-1, 6) | st.lists(st.integers(-6, 7), max_size=3),
    axis=st.integers(-3, 2),
)
def test_the_split_family_is_numpys(x: Any, name: str, sections: Any, axis: int) -> None:
    options = {"axis": axis} if name in ("split", "array_split") else {}
    _agree(
        lambda a: tuple(getattr(np, name)(a, sections, **options)),
        lambda a: tuple(getattr(tf, name)(a, sections, **options)),
        [x],
        CONCRETE,
    )


def test_sinc_is_exact_to_every_order_at_zero() -> None:
    z = np.array([0.0, 1e-9, 0.05, 0.5, -2.5, 7.0])
    _same(tf.sinc(z), np.sinc(z))
    second = tf.grad(tf.grad(tf.sinc))
    assert float(tf.grad(tf.sinc)(0.0)) == 0.0
    assert float(second(0.0)) == pytest.approx(-(np.pi**2) / 3, rel=1e-14)
    assert float(tf.grad(second)(0.0)) == 0.0
    tf.testing.check_grads(tf.sinc, [np.array([0.0, 0.02, 0.09, 0.11, 1.3])], order=2)


SPECIALS = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan])


def test_nan_ignoring_extrema_and_nan_to_num_are_numpys() -> None:
    x, y = np.meshgrid(SPECIALS, SPECIALS)
    for name in ("fmax", "fmin", "copysign", "nextafter"):
        _agree(getattr(np, name), getattr(tf, name), [x, y])
    for name in ("signbit", "nan_to_num"):
        _agree(getattr(np, name), getattr(tf, name), [x])
    z = np.empty(x.shape, np.complex128)
    z.real, z.imag = x, y
    _agree(np.nan_to_num, tf.nan_to_num, [z])
    _agree(
        lambda a: np.nan_to_num(a, nan=-1.0, posinf=2.0, neginf=-3.0),
        lambda a: tf.nan_to_num(a, nan=-1.0, posinf=2.0, neginf=-3.0),
        [x],
    )
    # derivatives: the chosen operand's (fmax), abs's (copysign), 1 (nextafter)
    a, b = np.array([1.0, np.nan, 3.0]), np.array([2.0, 5.0, np.nan])
    np.testing.assert_allclose(tf.grad(lambda u: tf.sum(tf.fmax(u, b)))(a), [0.0, 0.0, 1.0])
    finite = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(
        tf.grad(lambda u: tf.sum(tf.copysign(u, -1.0)))(finite), [-1.0, 1.0, -1.0]
    )
    np.testing.assert_allclose(tf.grad(lambda u: tf.sum(tf.nextafter(u, 9.0)))(finite), 1.0)


@fuzz_settings(60)
@given(
    sorted_values=hnp.arrays(
        np.float64, st.integers(0, 6), elements=st.sampled_from([0.0, 1.0, 2.5, np.nan])
    ),
    values=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=0, max_dims=2),
        elements=st.sampled_from([-1.0, 0.0, 1.0, 3.0, np.nan]),
    ),
    side=st.sampled_from(["left", "right"]),
)
def test_searchsorted_is_numpys(sorted_values: Any, values: Any, side: str) -> None:
    ordered = np.sort(sorted_values)
    _agree(
        lambda a, v: np.searchsorted(a, v, side=side),
        lambda a, v: tf.searchsorted(a, v, side=side),
        [ordered, values],
    )
    order = np.argsort(sorted_values, kind="stable")
    _agree(
        lambda a, v: np.searchsorted(a, v, side=side, sorter=order),
        lambda a, v: tf.searchsorted(a, v, side=side, sorter=order),
        [sorted_values, values],
    )


@fuzz_settings(60)
@given(
    x=hnp.arrays(
        st.sampled_from([np.float64, np.int32, np.bool_]),
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
        elements=st.sampled_from([0, 1]),
    ),
    axis=st.none() | st.integers(-3, 2),
)
def test_data_dependent_functions_are_numpys_on_concrete_kinds(x: Any, axis: Any) -> None:
    _agree(np.nonzero, tf.nonzero, [x], CONCRETE)
    _agree(np.nonzero, tf.where, [x], CONCRETE)
    _agree(lambda a: np.count_nonzero(a, axis=axis), lambda a: tf.count_nonzero(a, axis), [x])
    # numpy 2.3+ leaves unique_values unsorted (the Array API does not fix the order)
    _agree(lambda a: np.sort(np.unique_values(a)), tf.unique_values, [x], CONCRETE)
    for name in ("unique_counts", "unique_inverse", "unique_all"):
        _agree(getattr(np, name), getattr(tf, name), [x], CONCRETE)
    with pytest.raises(tf.UnsupportedError, match="depends on the data"):
        tf.jit(lambda a: tf.unique_values(a))(x)


def test_unique_values_keep_their_derivative_on_the_tape() -> None:
    x = tf.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    (tf.unique_values(x) * np.array([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_allclose(x.grad, [100.0, 1.0, 0.0, 10.0])  # first occurrences


INTEGERS = hnp.arrays(
    st.sampled_from([np.int32, np.int64]),
    hnp.array_shapes(max_dims=2, max_side=4),
    elements=st.integers(-100, 100),
)


@fuzz_settings(80)
@given(
    x=INTEGERS,
    y=INTEGERS | st.integers(0, 9) | st.booleans(),
    name=st.sampled_from(
        ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"]
    ),
)
def test_bitwise_functions_and_operators_are_numpys(x: Any, y: Any, name: str) -> None:
    if name in ("left_shift", "right_shift"):
        y = np.abs(np.asarray(y)).astype(np.int64) % 8
    if name == "invert":
        _agree(np.invert, tf.invert, [x])
        _agree(np.invert, lambda a: ~a, [x])
        return
    _agree(getattr(np, name), getattr(tf, name), [x, y])
    operator = {
        "bitwise_and": "&",
        "bitwise_or": "|",
        "bitwise_xor": "^",
        "left_shift": "<<",
        "right_shift": ">>",
    }[name]
    _agree(
        lambda a, b: eval(f"a {operator} b", {"a": a, "b": b}),
        lambda a, b: eval(f"a {operator} b", {"a": a, "b": b}),
        [x, y],
        CONCRETE,
    )


def test_bitwise_functions_refuse_floats_and_shifts_refuse_bools() -> None:
    with pytest.raises(tf.DTypeError, match="bitwise_and: float64"):
        tf.ones(2) & 1
    with pytest.raises(tf.DTypeError, match="left_shift"):
        tf.ones(2) << 1


def test_svd_without_factors_is_numpys_and_differentiable() -> None:
    a = np.random.default_rng(3).standard_normal((2, 4, 3))
    _same(tf.linalg.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False))
    _same(tf.linalg.svd(a, False, False), np.linalg.svd(a, False, False))
    tf.testing.check_grads(lambda m: tf.linalg.svd(m, compute_uv=False), [a], order=2)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_fabs_is_numpys_and_refuses_complex(kind: str, dtype: str) -> None:
    x = np.array([[-1.5, 0.0], [2.0, -0.25]]).astype(dtype)
    expected = np.fabs(x)  # bool gives numpy's float16, not a tenferro dtype: float64
    _same(tf.fabs(KINDS[kind](x)), expected.astype(np.float64) if dtype == "bool" else expected)
    with pytest.raises(tf.DTypeError, match=r"tf\.abs"):
        tf.fabs(KINDS[kind](x + 1j))


@fuzz_settings(20)
@given(
    x=hnp.arrays(np.float64, (3,), elements=st.floats(-30, 30)),
    y=hnp.arrays(np.float64, (3,), elements=st.floats(-30, 30)),
)
def test_logaddexp2_is_numpys_and_differentiable(x: Any, y: Any) -> None:
    _same(tf.logaddexp2(x, y), np.logaddexp2(x, y))
    tf.testing.check_grads(tf.logaddexp2, [x, y + 0.5], order=2)


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), (2, 1, 3, 2)])
def test_rollaxis_is_numpys_for_every_axis_and_start(shape: Any) -> None:
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    n = len(shape)
    for axis in range(-n, n):
        for start in range(-n, n + 1):
            _same(tf.rollaxis(x, axis, start), np.rollaxis(x, axis, start))
    with pytest.raises(tf.AxisError):
        tf.rollaxis(x, 0, n + 1)
    with pytest.raises(tf.AxisError):
        tf.rollaxis(x, n, 0)


@fuzz_settings(25)
@given(
    x=hnp.arrays(
        np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)), elements=st.floats(-9, 9)
    ),
    data=st.data(),
)
def test_partition_meets_numpys_contract_at_every_kth(x: Any, data: Any) -> None:
    axis = data.draw(st.sampled_from([0, 1, -1, None]))
    extent = x.size if axis is None else x.shape[axis]
    kth = data.draw(st.integers(-extent, extent - 1))
    got = plain(tf.partition(x, kth, axis))
    reference = np.partition(x, kth, axis)
    flat = axis is None
    moved = got.reshape(-1) if flat else np.moveaxis(got, axis, -1)
    wanted = reference.reshape(-1) if flat else np.moveaxis(reference, axis, -1)
    k = kth % extent
    np.testing.assert_array_equal(moved[..., k], wanted[..., k])  # the kth value in place
    assert np.all(moved[..., :k] <= moved[..., k : k + 1])
    assert np.all(moved[..., k + 1 :] >= moved[..., k : k + 1])
    order = plain(tf.argpartition(x, kth, axis))
    source = x.reshape(-1) if flat else x
    taken = source[order] if flat else np.take_along_axis(source, order, axis)
    np.testing.assert_array_equal(taken, got)
    with pytest.raises(tf.AxisError, match="kth"):
        tf.partition(x, extent, axis)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_array_of_a_tensor_keeps_its_kind_and_derivative(kind: str) -> None:
    x = KINDS[kind](np.array([1.0, 2.0]))
    assert type(tf.array(x)) is type(x)
    assert plain(tf.array(x, "float32")).dtype == np.float32
    np.testing.assert_allclose(plain(tf.grad(lambda v: tf.sum(tf.array(v) ** 2))(3.0)), 6.0)


@pytest.mark.parametrize("num", [0, 1, 2, 5])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_linspace_of_tensor_end_points_is_numpys_and_differentiable(
    num: int, endpoint: bool, kind: str
) -> None:
    for start, stop in [(1.2, 3.4), (1.2, -3.4), (1.2, 1.2), ([0.0, 1.0], [1.0, 3.0])]:
        got = tf.linspace(KINDS[kind](np.asarray(start)), stop, num, endpoint=endpoint)
        _same(got, np.linspace(start, stop, num, endpoint=endpoint))
        tf.testing.check_grads(
            lambda a, b: tf.linspace(a, b, num, endpoint=endpoint),
            [np.asarray(start), np.asarray(stop)],
        )
    _same(tf.linspace(tf.asarray(1.0 + 1j), 2.0, 3), np.linspace(1.0 + 1j, 2.0, 3))


def test_check_grads_takes_pytree_arguments() -> None:
    rng = np.random.default_rng(0)
    tf.testing.check_grads(tf.concatenate, [(rng.random(1), rng.random(3))])
    tf.testing.check_grads(lambda d: d["a"] * tf.sum(d["b"]), [{"a": 1.5, "b": rng.random(2)}])
    with pytest.raises(AssertionError):
        tf.testing.check_grads(_wrong_rule, [{"a": rng.random(2)}])


@tf.custom_jvp
def _wrong_rule(d: Any) -> Any:
    return tf.sin(d["a"])


_wrong_rule.defjvp(lambda p, t: (_wrong_rule(p[0]), t[0]["a"] * 2.0))
