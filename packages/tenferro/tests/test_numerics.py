"""The common numerics (softmax family, relu, erf, ordering, scans, split, kron, cross,
NaN-ignoring reductions) against numpy/scipy, their derivatives, bad input, and
``tf.random``. The primitives' rules are checked in test_primitive_rules (rule_cases)."""

from __future__ import annotations

import contextlib
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import scipy.special
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

KINDS = [
    pytest.param(tf.Tensor, id="Tensor"),
    pytest.param(lambda a: tf.EagerTensor(a, requires_grad=a.dtype.kind in "fc"), id="Eager"),
    pytest.param(tf.traced, id="Traced"),
]


def _values(x: Any) -> np.ndarray[Any, Any]:
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _close(actual: Any, expected: Any, dt: Any = np.float64) -> None:
    expected = np.asarray(expected)
    tol = 1e-5 if np.dtype(dt) in (np.float32, np.complex64) else 1e-12
    actual = _values(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


FLOAT_DTYPES = st.sampled_from([np.float32, np.float64])


@st.composite
def array_and_axis(draw: Any, dtypes: Any = FLOAT_DTYPES) -> Any:
    dt = draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    # Ties (repeated small values) as well as spread values.
    elements = st.floats(-20, 20, width=32) | st.sampled_from([-3.0, 0.0, 1.0])
    values = draw(hnp.arrays(np.float64, shape, elements=elements)).astype(dt)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return values, axis


# ---------------------------------------------------------------------- values vs numpy/scipy


@fuzz_settings(25)
@given(array_and_axis(), st.booleans())
def test_softmax_family_matches_scipy(case: Any, keepdims: bool) -> None:
    x, axis = case
    t = tf.asarray(x)
    _close(
        tf.logsumexp(t, axis, keepdims),
        scipy.special.logsumexp(x, axis, keepdims=keepdims),
        x.dtype,
    )
    if x.size:
        _close(tf.softmax(t, axis), scipy.special.softmax(x, axis), x.dtype)
        _close(tf.log_softmax(t, axis), scipy.special.log_softmax(x, axis), x.dtype)


def test_softmax_is_stable_and_handles_infinities() -> None:
    x = np.array([1000.0, 1000.0, -1000.0])
    _close(tf.softmax(x), [0.5, 0.5, 0.0])
    _close(tf.log_softmax(x), [-np.log(2), -np.log(2), -2000 - np.log(2)])
    assert float(tf.logsumexp(np.array([-np.inf, -np.inf]))) == -np.inf
    assert float(tf.logsumexp(np.array([np.inf, 1.0]))) == np.inf
    assert float(tf.logsumexp(np.zeros((0,)))) == -np.inf
    z = np.array([1 + 2j, 800 - 1j, 799.5 + 0.5j])
    _close(tf.logsumexp(z), scipy.special.logsumexp(z), np.complex128)


@fuzz_settings(25)
@given(array_and_axis(st.sampled_from([np.float64, np.int32, np.int64])), st.booleans())
def test_ordering_and_scans_match_numpy(case: Any, descending: bool) -> None:
    x, axis = case
    t = tf.asarray(x)
    _close(tf.sort(t, axis), np.sort(x, axis), x.dtype)
    np.testing.assert_array_equal(_values(tf.argsort(t, axis)), np.argsort(x, axis, stable=True))
    expected = np.flip(np.sort(np.flip(x, axis), axis, stable=True), axis)
    _close(tf.sort(t, axis, descending=descending), expected if descending else np.sort(x, axis))
    for function in ("cumsum", "cumprod"):
        reference = getattr(np, function)
        for ax in (axis, None):
            result = getattr(tf, function)(t, ax)
            assert result.dtype == reference(x, ax).dtype
            _close(result, reference(x, ax), x.dtype)
    if x.shape[axis]:
        for function in ("argmax", "argmin"):
            reference = getattr(np, function)
            for keepdims in (False, True):
                result = getattr(tf, function)(t, axis, keepdims=keepdims)
                assert result.dtype == np.int64
                np.testing.assert_array_equal(
                    _values(result), reference(x, axis, keepdims=keepdims)
                )
    if x.size:
        np.testing.assert_array_equal(_values(tf.argmax(t)), np.argmax(x))
        np.testing.assert_array_equal(
            _values(tf.argmin(t, keepdims=True)), np.argmin(x, keepdims=True)
        )


def test_descending_argsort_is_stable_and_nans_order_like_numpy() -> None:
    x = np.array([2.0, 1.0, 2.0, np.nan, 1.0])
    np.testing.assert_array_equal(_values(tf.argsort(x, descending=True)), [3, 0, 2, 1, 4])
    np.testing.assert_array_equal(_values(tf.argsort(x)), [1, 4, 0, 2, 3])
    assert int(tf.argmax(x)) == 3 == np.argmax(x)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_erf_matches_scipy(dt: Any) -> None:
    x = np.linspace(-6, 6, 25).astype(dt)
    if np.dtype(dt).kind == "c":
        x = (x + 0.3j * np.linspace(-1, 1, 25)).astype(dt)
    for name in ("erf", "erfc"):
        result = getattr(tf, name)(x)
        assert result.dtype == dt
        _close(result, getattr(scipy.special, name)(x), dt)
    assert float(tf.erfc(np.array(10.0))) == scipy.special.erfc(10.0) > 0  # no cancellation
    _close(tf.erf(np.array([0, 1])), scipy.special.erf([0.0, 1.0]))  # integers: float64


@fuzz_settings(25)
@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=3), elements=st.floats(-5, 5)),
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=3), elements=st.floats(-5, 5)),
)
def test_kron_matches_numpy(a: Any, b: Any) -> None:
    _close(tf.kron(a, b), np.kron(a, b))


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "kwargs"),
    [
        ((3,), (3,), {}),
        ((4, 3), (1, 3), {}),
        ((3, 4), (4, 3), {"axisa": 0}),
        ((2, 3, 5), (3, 5), {"axisa": 1, "axisb": 0, "axisc": 0}),
        ((5, 3, 2), (5, 3, 2), {"axis": 1}),
        ((4, 2), (4, 3), {}),
        ((4, 3), (2,), {}),
    ],
)
def test_cross_matches_numpy(a_shape: Any, b_shape: Any, kwargs: Any) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    c = a + 1j * rng.standard_normal(a_shape)
    # numpy 2.0-2.4 deprecate 2-vectors and 2.5 refuses them; their meaning (z = 0) is
    # numpy's cross of the vectors padded to 3 components, which every version computes.
    pad = _as_3_vectors if not kwargs else (lambda v: v)  # 2-vectors only on the last axis
    expected = np.cross(pad(a), pad(b), **kwargs)
    expected_complex = np.cross(pad(c), pad(b), **kwargs)
    _close(tf.cross(a, b, **kwargs), expected)
    _close(tf.cross(c, b, **kwargs), expected_complex, np.complex128)


def _as_3_vectors(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    if v.shape[-1] != 2:
        return v
    return np.concatenate([v, np.zeros_like(v[..., :1])], axis=-1)


def test_cross_of_two_2_vectors_is_the_z_component() -> None:
    a, b = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.5, 4.0], [2.0, 2.0]])
    _close(tf.cross(a, b), a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])


@pytest.mark.parametrize(
    ("shape", "spec", "axis"),
    [((6, 2), 3, 0), ((2, 6), [1, 4], 1), ((5,), [2, -1, 9], 0), ((4, 3), [], 0), ((0,), 2, 0)],
)
def test_split_matches_numpy(shape: Any, spec: Any, axis: int) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    pieces = tf.split(x, spec, axis)
    expected = np.split(x, spec, axis)
    assert len(pieces) == len(expected)
    for piece, reference in zip(pieces, expected, strict=True):
        _close(piece, reference)


@fuzz_settings(25)
@given(array_and_axis(st.sampled_from([np.float32, np.float64])), st.booleans())
def test_nan_reductions_match_numpy(case: Any, keepdims: bool) -> None:
    x, axis = case
    x = x.copy()
    x.reshape(-1)[::3] = np.nan
    t = tf.asarray(x)
    _close(tf.nansum(t, axis, keepdims), np.nansum(x, axis, keepdims=keepdims), x.dtype)
    with (
        np.errstate(all="ignore"),
        pytest.warns(RuntimeWarning) if _has_all_nan(x, axis) else contextlib.nullcontext(),
    ):
        expected = np.nanmean(x, axis, keepdims=keepdims)
    _close(tf.nanmean(t, axis, keepdims), expected, x.dtype)


def _has_all_nan(x: Any, axis: int) -> bool:
    return bool(np.any(np.all(np.isnan(x), axis=axis))) or x.shape[axis] == 0


def test_relu_values() -> None:
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.nan])
    _close(tf.relu(x), [0.0, 0.0, 0.0, 3.0, np.nan])
    assert tf.relu(np.array([-1, 2])).dtype == np.int64


# ---------------------------------------------------------------------- every tensor kind


@pytest.mark.parametrize("make", KINDS)
def test_functions_and_methods_on_every_kind(make: Any) -> None:
    x = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
    t = make(x)
    _close(t.argmax(), np.argmax(x))
    _close(t.argmin(1), np.argmin(x, 1))
    _close(t.sort(0), np.sort(x, 0))
    _close(t.argsort(), np.argsort(x))
    _close(t.cumsum(), np.cumsum(x))
    _close(t.cumprod(1), np.cumprod(x, 1))
    _close(tf.softmax(t), scipy.special.softmax(x, -1))
    _close(tf.split(t, 3, axis=1)[2], x[:, 2:])
    _close(tf.kron(t, t), np.kron(x, x))
    _close(tf.cross(t, t[::-1]), np.cross(x, x[::-1]))
    _close(tf.nansum(t, 1), np.nansum(x, 1))
    for result in (tf.relu(t), tf.erf(t), tf.sort(t), tf.log_softmax(t)):
        assert type(result) is type(t)


# ---------------------------------------------------------------------- derivatives

COMPOSITES = {
    "logsumexp": lambda x: tf.logsumexp(x, axis=1),
    "logsumexp_all": lambda x: tf.logsumexp(x),
    "softmax": lambda x: tf.softmax(x, axis=0),
    "log_softmax": lambda x: tf.log_softmax(x),
    "relu": tf.relu,
    "cumsum_flat": tf.cumsum,
    "cumprod": lambda x: tf.cumprod(x, 1),
    "sort_flat": lambda x: tf.sort(x, axis=None),
    "split": lambda x: tf.split(x, [1], axis=1),
    "kron": lambda x: tf.kron(x, x[:1]),
    "cross": lambda x: tf.cross(x[:, :3], x[:, 1:]),
    "nansum": lambda x: tf.nansum(x, 0),
    "nanmean": lambda x: tf.nanmean(x, 1, keepdims=True),
    "erf": tf.erf,
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_composite_derivatives(name: str, dt: Any) -> None:
    if name in ("relu",) and dt == np.complex128:
        pytest.skip("real-only function")
    rng = np.random.default_rng(len(name))
    x = rng.permutation(12).reshape(3, 4) * 0.3 + rng.uniform(0, 0.1, (3, 4))
    x = x - 1.7  # negative and positive entries, none at relu's kink
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal((3, 4))
    tf.testing.check_grads(COMPOSITES[name], [x.astype(dt)], order=2)


def test_logsumexp_gradient_is_the_softmax_at_ties() -> None:
    x = np.array([[2.0, 2.0, 1.0], [5.0, 5.0, 5.0]])
    gradient = tf.grad(lambda v: tf.sum(tf.logsumexp(v, axis=1)))(x)
    _close(gradient, scipy.special.softmax(x, axis=1))
    tf.testing.check_grads(lambda v: tf.logsumexp(v, axis=1), [x], order=2)


def test_relu_derivative_at_zero_is_zero_and_nan_propagates() -> None:
    x = np.array([-1.0, 0.0, 2.0])
    _close(tf.grad(lambda v: tf.sum(tf.relu(v)))(x), [0.0, 0.0, 1.0])
    e = tf.EagerTensor(x, requires_grad=True)
    tf.sum(tf.relu(e)).backward()
    _close(e.grad, [0.0, 0.0, 1.0])


def test_cumprod_derivative_exact_with_zeros() -> None:
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    # d cumprod_i / d x_j = prod_{k <= i, k != j} x_k
    expected = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1):
            expected[i, j] = np.prod([x[k] for k in range(i + 1) if k != j])
    columns = [tf.jvp(tf.cumprod, (x,), (np.eye(5)[j],))[1] for j in range(5)]
    _close(np.stack([_values(c) for c in columns], axis=1), expected)
    e = tf.EagerTensor(x, requires_grad=True)
    tf.sum(tf.cumprod(e)).backward()
    _close(e.grad, expected.sum(axis=0))
    assert np.all(np.isfinite(_values(e.grad)))


def test_sort_gradient_is_the_permuted_cotangent_and_ties_follow_stable_order() -> None:
    x = np.array([3.0, 1.0, 3.0, 2.0])
    weights = np.array([1.0, 10.0, 100.0, 1000.0])
    gradient = tf.grad(lambda v: tf.sum(tf.sort(v) * weights))(x)
    # sorted order (stable): x[1], x[3], x[0], x[2]
    _close(gradient, [100.0, 1.0, 1000.0, 10.0])
    gradient = tf.grad(lambda v: tf.sum(tf.sort(v, descending=True) * weights))(x)
    # descending, stable: x[0], x[2], x[3], x[1]
    _close(gradient, [1.0, 1000.0, 10.0, 100.0])


def test_cumsum_transpose_is_the_reverse_cumsum() -> None:
    ct = np.array([1.0, 2.0, 3.0, 4.0])
    _, pullback = tf.vjp(lambda v: tf.cumsum(v), np.zeros(4))
    _close(pullback(ct)[0], np.cumsum(ct[::-1])[::-1])


def test_nan_entries_get_zero_gradient() -> None:
    x = np.array([1.0, np.nan, 3.0])
    _close(tf.grad(lambda v: tf.nansum(v))(x), [1.0, 0.0, 1.0])
    _close(tf.grad(lambda v: tf.nanmean(v))(x), [0.5, 0.0, 0.5])


def test_integer_outputs_carry_no_tangent() -> None:
    x = np.array([[0.3, 2.0, -1.0], [1.0, 0.2, 5.0]])

    def picked(v: Any) -> Any:
        index = tf.argmax(v, axis=1, keepdims=True)
        order = tf.argsort(v, axis=1)
        assert index.dtype == order.dtype == np.int64
        return tf.sum(tf.take(tf.ravel(v), tf.ravel(index + np.array([[0], [3]])))) + tf.sum(
            order.astype(tf.float64) * 0
        )

    _close(tf.grad(picked)(x), [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    _, tangent = tf.jvp(lambda v: tf.argmin(v, axis=0).astype(tf.float64), (x,), (np.ones_like(x),))
    _close(tangent, np.zeros(3))


@pytest.mark.parametrize("name", ["softmax", "cumprod", "sort_flat", "cross", "nanmean"])
def test_eager_backward_equals_traced_grad(name: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    weights = rng.standard_normal(np.shape(_values(COMPOSITES[name](tf.Tensor(x)))))

    def loss(v: Any) -> Any:
        return tf.sum(COMPOSITES[name](v) * weights)

    e = tf.EagerTensor(x, requires_grad=True)
    loss(e).backward()
    _close(e.grad, _values(tf.grad(loss)(x)))


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: tf.softmax(np.ones((2, 3)), axis=2), tf.AxisError),
        (lambda: tf.logsumexp(np.ones(3), axis=(0, 0)), tf.AxisError),
        (lambda: tf.argmax(np.ones((2, 0)), axis=1), tf.ShapeError),
        (lambda: tf.argmax(np.ones(3) + 1j), tf.DTypeError),
        (lambda: tf.argmin(np.ones(3), axis=1), tf.AxisError),
        (lambda: tf.sort(np.ones(()), axis=0), tf.AxisError),
        (lambda: tf.argsort(np.ones((2, 2)), axis=-3), tf.AxisError),
        (lambda: tf.cumsum(np.ones((2, 2)), axis=2), tf.AxisError),
        (lambda: tf.cumprod(np.ones(()), axis=0), tf.AxisError),
        (lambda: tf.split(np.ones(5), 2), tf.ShapeError),
        (lambda: tf.split(np.ones(5), 0), tf.ShapeError),
        (lambda: tf.split(np.ones(5), True), tf.ParameterError),
        (lambda: tf.split(np.ones(5), "ab"), tf.ParameterError),
        (lambda: tf.split(np.ones(5), 5, axis=1), tf.AxisError),
        (lambda: tf.cross(np.ones(4), np.ones(3)), tf.ShapeError),
        (lambda: tf.cross(np.ones(3), np.ones(())), tf.ShapeError),
        (lambda: tf.cross(np.ones((2, 3)), np.ones((2, 3)), axisa=2), tf.AxisError),
        (lambda: tf.relu(np.ones(2) + 1j), tf.DTypeError),
        (lambda: tf.erf(np.array(["a"])), tf.DTypeError),
        (
            lambda: tf.lax.apply_permutation(tf.asarray(np.ones(3)), tf.asarray(np.ones(3)), 0),
            tf.DTypeError,
        ),
        (lambda: tf.lax.sort(tf.asarray(np.ones(3)), 1), tf.AxisError),
    ],
)
def test_bad_input_raises_named_errors(call: Any, error: type) -> None:
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, tf.TenferroError)


# ---------------------------------------------------------------------- tf.random


def test_random_is_reproducible_and_matches_numpy_in_float64() -> None:
    a = tf.random.default_rng(42)
    b = tf.random.default_rng(42)
    for draw in ("normal", "uniform", "random", "standard_normal"):
        first, second = getattr(a, draw)(size=(3, 2)), getattr(b, draw)(size=(3, 2))
        np.testing.assert_array_equal(_values(first), _values(second))
    reference = np.random.default_rng(7)
    rng = tf.random.default_rng(7)
    np.testing.assert_array_equal(_values(rng.normal(1.0, 2.0, 5)), reference.normal(1.0, 2.0, 5))
    np.testing.assert_array_equal(
        _values(rng.uniform(-1, 3, (2, 2))), reference.uniform(-1, 3, (2, 2))
    )
    np.testing.assert_array_equal(_values(rng.integers(3, 9, 4)), reference.integers(3, 9, 4))
    np.testing.assert_array_equal(_values(rng.permutation(6)), reference.permutation(6))


@pytest.mark.parametrize("dt", [tf.float32, tf.float64, tf.complex64, tf.complex128])
def test_random_dtypes_and_moments(dt: Any) -> None:
    rng = tf.random.default_rng(0)
    z = rng.normal(size=20000, dtype=dt)
    u = rng.uniform(2.0, 3.0, size=20000, dtype=dt)
    assert z.dtype == dt
    assert u.dtype == dt
    assert z.shape == (20000,)
    values = _values(z)
    assert abs(np.mean(values)) < 0.03
    assert abs(np.mean(np.abs(values) ** 2) - 1) < 0.03  # E|z|^2 = 1, complex too
    if np.dtype(dt).kind == "c":
        assert abs(np.var(values.real) - 0.5) < 0.02
    parts = _values(u).real
    assert parts.min() >= 2.0
    assert parts.max() < 3.0
    assert abs(parts.mean() - 2.5) < 0.01


def test_random_tensors_for_every_use() -> None:
    rng = tf.random.default_rng(1)
    leaf = rng.normal(size=(3,), requires_grad=True)
    assert isinstance(leaf, tf.EagerTensor)
    assert leaf.requires_grad
    tf.sum(leaf * leaf).backward()
    _close(leaf.grad, 2 * _values(leaf))
    weights = rng.normal(size=(3,))
    assert type(weights) is tf.Tensor
    _close(tf.grad(lambda v: tf.sum(v * weights))(np.ones(3)), _values(weights))
    rows = rng.permutation(tf.traced(np.arange(6.0).reshape(3, 2)))
    assert sorted(_values(rows)[:, 0].tolist()) == [0.0, 2.0, 4.0]
    picks = rng.choice(10, size=(2, 3), replace=False)
    assert picks.dtype == np.int64
    assert picks.shape == (2, 3)
    assert len(set(_values(picks).ravel().tolist())) == 6
    spawned = rng.spawn(2)
    assert not np.array_equal(
        _values(spawned[0].normal(size=4)), _values(spawned[1].normal(size=4))
    )


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda r: r.normal(size=2, dtype=tf.int64), tf.DTypeError),
        (lambda r: r.integers(0, 5, dtype=tf.float64), tf.DTypeError),
        (lambda r: r.integers(5, 5), tf.ParameterError),
        (lambda r: r.normal(0.0, -1.0), tf.ParameterError),
        (lambda r: r.uniform(size=(-1,)), tf.ShapeError),
        (lambda r: r.choice(3, 5, replace=False), tf.ParameterError),
        (lambda r: r.uniform(2.0, 1.0), tf.ParameterError),
        (lambda r: r.permutation(-1), tf.ParameterError),
    ],
)
def test_random_bad_input(call: Any, error: type) -> None:
    with pytest.raises(error):
        call(tf.random.default_rng(0))


@pytest.mark.parametrize("seed", ["a", -1, 1.5, [1, "b"]])
def test_random_bad_seeds_raise_a_named_error(seed: Any) -> None:
    with pytest.raises(tf.ArgumentTypeError, match="default_rng: seed"):
        tf.random.default_rng(seed)
