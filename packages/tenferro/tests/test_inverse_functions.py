"""The inverse trigonometric and hyperbolic functions, arctan2, angle and the degree
conversions on the numpy-style surface: numpy's values and dtypes for every dtype and
tensor kind (special values included), numpy's and the Array API's names, derivatives
of the composites against finite differences, the conventions at the origin, and bad
input. The primitives' own rules are checked in test_primitive_rules (rule_cases) and
against the oracle database (test_oracles)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st
from transform_routes import check_every_derivative_route, check_per_example, per_example_cases

import tenferro as tf

KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.EagerTensor(a, requires_grad=a.dtype.kind in "fc"),
    "TracedTensor": tf.traced,
}

UNARY = {
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "arcsinh": np.arcsinh,
    "arccosh": np.arccosh,
    "arctanh": np.arctanh,
    "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg,
    "radians": np.radians,
    "degrees": np.degrees,
    "angle": np.angle,
}
REAL_ONLY = {"deg2rad", "rad2deg", "radians", "degrees"}
DTYPES = ["bool", "int32", "int64", "float32", "float64", "complex64", "complex128"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, np.inf, -np.inf, np.nan]
INVERSE = ["arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]


def _numpy_input(x: Any) -> Any:
    """numpy computes booleans in float16, a dtype tenferro does not have: tenferro
    computes them in float64 (as integers), so numpy is asked for that."""
    return x.astype(np.float64) if np.asarray(x).dtype == bool else x


def _values(x: Any) -> np.ndarray[Any, Any]:
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _same(actual: Any, expected: Any) -> None:
    got = _values(actual)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    tol = 1e-6 if expected.dtype in (np.float32, np.complex64) else 1e-14
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)


@st.composite
def arrays(draw: Any, dtypes: list[str] = DTYPES) -> np.ndarray[Any, Any]:
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    real = st.floats(-3, 3) | st.sampled_from(SPECIAL)
    values = draw(hnp.arrays(np.float64, shape, elements=real))
    if dt.kind == "c":
        parts = np.empty(shape, np.complex128)
        parts.real, parts.imag = values, draw(hnp.arrays(np.float64, shape, elements=real))
        values = parts
    if dt.kind in "bi":
        values = np.nan_to_num(values, nan=0.0, posinf=3.0, neginf=-3.0).round()
    with np.errstate(all="ignore"):
        return values.astype(dt)


@fuzz_settings(80)
@given(
    arrays(),
    st.sampled_from(sorted(UNARY)),
    st.sampled_from(sorted(KINDS)),
)
def test_unary_functions_are_numpys_for_every_dtype_and_kind(x: Any, name: str, kind: str) -> None:
    reference = UNARY[name]
    function = getattr(tf, name)
    if name in REAL_ONLY and x.dtype.kind == "c":
        with pytest.raises(TypeError):
            reference(x)
        with pytest.raises(tf.DTypeError, match=name):
            function(KINDS[kind](x))
        return
    with np.errstate(all="ignore"):
        expected = reference(_numpy_input(x))
    _same(function(KINDS[kind](x)), expected)


@fuzz_settings(60)
@given(arrays(["bool", "int32", "int64", "float32", "float64"]), st.data())
def test_arctan2_broadcasts_and_promotes_like_numpy(y: Any, data: Any) -> None:
    shape = data.draw(hnp.broadcastable_shapes(y.shape, min_side=0, max_side=3))
    x = data.draw(arrays(["bool", "int32", "int64", "float32", "float64"])).ravel()
    x = np.resize(x, shape) if x.size else np.zeros(shape, x.dtype)
    kind = KINDS[data.draw(st.sampled_from(sorted(KINDS)))]
    reference_y, reference_x = _numpy_input(y), _numpy_input(x)
    if y.dtype == bool and x.dtype == bool:
        reference_y = y.astype(np.float64)
    elif y.dtype == bool:
        reference_y = y.astype(x.dtype if x.dtype.kind == "f" else np.float64)
    elif x.dtype == bool:
        reference_x = x.astype(y.dtype if y.dtype.kind == "f" else np.float64)
    _same(tf.arctan2(kind(y), kind(x)), np.arctan2(reference_y, reference_x))
    _same(tf.arctan2(kind(y), 2.5), np.arctan2(_numpy_input(y), 2.5))


def test_arctan2_keeps_the_signs_of_zeros_and_refuses_complex() -> None:
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0])
    x = np.array([-1.0, -1.0, 0.0, -0.0, np.inf, -np.inf])
    _same(tf.arctan2(y, x), np.arctan2(y, x))
    with pytest.raises(tf.DTypeError, match="arctan2"):
        tf.arctan2(np.array([1j]), np.array([1.0]))


def test_numpy_2_and_array_api_names_are_the_same_functions() -> None:
    pairs = {
        "asin": "arcsin",
        "acos": "arccos",
        "atan": "arctan",
        "asinh": "arcsinh",
        "acosh": "arccosh",
        "atanh": "arctanh",
        "atan2": "arctan2",
    }
    xp = tf.array_api
    for short, long in pairs.items():
        assert getattr(tf, short) is getattr(tf, long)
        assert getattr(xp, short) is getattr(tf, long)
        assert short not in xp.not_covered()


def test_python_scalars_give_float64_like_numpy() -> None:
    for name in ("arcsin", "arctan", "arcsinh", "deg2rad", "angle"):
        result = getattr(tf, name)(0.5)
        assert result.dtype == np.float64
        np.testing.assert_allclose(float(result), UNARY[name](0.5), rtol=1e-15)
    assert tf.arctan2(1, 2).dtype == np.float64


# ---------------------------------------------------------------------- derivatives


COMPLEX_POINTS = np.array([0.3 + 0.4j, -1.2 + 0.7j, -0.5 - 2.0j, 2.0 - 0.1j])


@pytest.mark.parametrize("name", INVERSE)
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_derivatives_match_finite_differences_in_every_quadrant(name: str, dt: Any) -> None:
    """Points in all four quadrants off the branch cuts (the rule cases sample near the
    real axis); second order included."""
    tf.testing.check_grads(getattr(tf, name), [COMPLEX_POINTS.astype(dt)], order=2)


@pytest.mark.parametrize("dt", [np.complex128, np.float64, np.float32, np.complex64])
def test_angle_derivatives_match_finite_differences(dt: Any) -> None:
    z = COMPLEX_POINTS if np.dtype(dt).kind == "c" else np.array([0.3, -1.2, 2.0, -0.1])
    tf.testing.check_grads(lambda v: tf.angle(v, deg=True), [z.astype(dt)], order=2)


def test_angle_derivative_is_the_closed_form() -> None:
    """The gradient of sum(angle(z)), ``angle = atan2(y, x)`` for ``z = x + iy``, is
    ``d/dx + i d/dy`` in tenferro's (PyTorch's) convention."""
    z = COMPLEX_POINTS
    (grad,) = tf.grad(lambda v: tf.sum(tf.angle(v)), argnums=(0,))(z)
    # d/dx = -y / |z|^2, d/dy = x / |z|^2
    r2 = np.abs(z) ** 2
    np.testing.assert_allclose(np.asarray(grad), (-z.imag + 1j * z.real) / r2, rtol=1e-13)


def test_real_angle_has_zero_derivative_and_degrees_scale() -> None:
    x = np.array([-2.0, 3.0])
    grad = tf.grad(lambda v: tf.sum(tf.angle(v)))(x)
    np.testing.assert_array_equal(np.asarray(grad), [0.0, 0.0])
    grad = tf.grad(lambda v: tf.sum(tf.rad2deg(v) + tf.radians(v)))(x)
    np.testing.assert_allclose(np.asarray(grad), np.full(2, 180 / np.pi + np.pi / 180))


def test_arctan2_derivatives_with_broadcasting_and_the_origin_convention() -> None:
    y, x = np.array([[0.3], [-1.0]]), np.array([0.5, -2.0, 1.5])
    tf.testing.check_grads(tf.arctan2, [y, x], order=2)
    origin = np.zeros(1)
    gy, gx = tf.grad(lambda a, b: tf.sum(tf.arctan2(a, b)), argnums=(0, 1))(origin, origin)
    assert np.asarray(gy).tolist() == [0.0]
    assert np.asarray(gx).tolist() == [0.0]
    hessian = tf.hessian(lambda a: tf.sum(tf.arctan2(a, origin)))(origin)
    assert np.isfinite(np.asarray(hessian)).all()


def test_out_of_domain_values_and_derivatives_are_nan_like_numpys_value() -> None:
    x = tf.tensor([2.0, 0.5], requires_grad=True)
    y = tf.arcsin(x)
    assert np.isnan(np.asarray(y)[0])
    assert not np.isnan(np.asarray(y)[1])
    tf.sum(y).backward()
    grad = np.asarray(x.grad)
    assert np.isnan(grad[0])
    np.testing.assert_allclose(grad[1], 1 / np.sqrt(0.75))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", INVERSE)
def test_real_derivatives_are_nan_exactly_where_numpys_value_is(name: str, dt: Any) -> None:
    """On the real line, including the branch points and the infinities: NaN where the
    value is NaN (out of the domain), else a number (infinite at a branch point, 0 at
    an infinity)."""
    x = np.concatenate([np.linspace(-3, 3, 25), [np.inf, -np.inf, 1.0, -1.0, 0.0]]).astype(dt)
    with np.errstate(all="ignore"):
        value = getattr(np, name)(x)
    _, tangent = tf.jvp(getattr(tf, name), (x,), (np.ones_like(x),))
    slope = np.asarray(tangent)
    np.testing.assert_array_equal(np.isnan(slope), np.isnan(value))
    infinite = np.isinf(x) & ~np.isnan(value)
    np.testing.assert_array_equal(slope[infinite], 0.0)


def test_on_the_tape_under_vmap_and_through_numpy() -> None:
    x = tf.tensor([0.1, -0.4], requires_grad=True)
    y = np.arcsin(x) + np.arctan2(x, 2.0) + np.angle(x + 1j)
    assert isinstance(y, tf.EagerTensor)
    tf.sum(y).backward()
    v = np.array([0.1, -0.4])
    expected = 1 / np.sqrt(1 - v**2) + 2 / (4 + v**2) - 1 / (1 + v**2)
    np.testing.assert_allclose(np.asarray(x.grad), expected, rtol=1e-13)
    batched = tf.vmap(tf.arctan2, in_axes=(0, None))(np.ones((3, 2)), np.array([1.0, -1.0]))
    np.testing.assert_allclose(np.asarray(batched), np.arctan2(np.ones((3, 2)), [1.0, -1.0]))


def test_bad_input_names_the_function() -> None:
    with pytest.raises(tf.TenferroError, match="arcsin"):
        tf.arcsin("x")
    with pytest.raises(tf.TenferroError, match="angle"):
        tf.angle(np.ones(2), deg="yes")
    with pytest.raises(tf.ShapeError):
        tf.arctan2(np.ones(2), np.ones(3))


# ---------------------------------------------------------------------- branch cuts, infinities

INVERSE_ON_IMAGINARY_CUTS = {"arctan", "arcsinh"}
"""The functions whose branch cuts lie on the imaginary axis (the others' lie on the
real axis)."""


BESIDE_THE_CUT = [0.0, -0.0, 1e-300, -1e-300, 1e-9, -1e-9, 0.3, -0.7]
"""The other part of the points tested along a cut's axis: on the cut (either signed
zero; 1e-300 is a signed zero in complex64), next to it, off it."""


def _on_cut_axis(name: str, along: Any, other: Any, dt: Any) -> np.ndarray[Any, Any]:
    """The points ``along`` ``name``'s cut axis, the other parts ``other`` exactly (a
    signed zero stays signed: ``along + 1j * other`` would lose ``-0.0``)."""
    along, other = np.broadcast_arrays(along, other)
    z = np.empty(along.shape, dt)
    if name in INVERSE_ON_IMAGINARY_CUTS:
        z.real, z.imag = other, along
    else:
        z.real, z.imag = along, other
    return z


def _slopes_along_the_cut(name: str, z: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """numpy's ``f'(z)`` and ``f''(z)`` from central differences of its values along
    the cut's axis: the moved points keep ``z``'s other part, so they stay on the side
    of the cut that ``z``'s value takes."""
    f = getattr(np, name)
    direction = 1j if name in INVERSE_ON_IMAGINARY_CUTS else 1.0

    def at(step: float) -> Any:
        moved = z.astype(np.complex128)
        if direction == 1j:
            moved.imag += step
        else:
            moved.real += step
        return f(moved)

    h1, h2 = 1e-6, 1e-4
    first = (at(h1) - at(-h1)) / (2 * h1 * direction)
    second = (at(h2) - 2 * at(0.0) + at(-h2)) / (h2 * direction) ** 2
    return first, second


def _along(name: str, data: Any) -> list[float]:
    """Positions along ``name``'s cut axis on its cuts, 0.05 or more away from the
    branch points (where the derivative is infinite): both signs for the cuts beyond
    ``+-1`` (or ``+-i``)."""
    if name == "arccosh":  # its cut is (-inf, 1]
        inside = st.floats(-4, 0.95).filter(lambda t: abs(t + 1) > 0.05)
        return data.draw(st.lists(inside, min_size=4, max_size=4))
    beyond = data.draw(st.lists(st.floats(1.05, 4), min_size=2, max_size=2))
    return [sign * t for t in beyond for sign in (1.0, -1.0)]


TORCH = importlib.util.find_spec("torch") is not None


@fuzz_settings(30)
@given(st.sampled_from(INVERSE), st.sampled_from([np.complex64, np.complex128]), st.data())
def test_derivatives_on_and_near_the_branch_cuts_take_the_side_of_numpys_value(
    name: str, dt: Any, data: Any
) -> None:
    """JVP, VJP (the conjugate), the tape's gradient and the second derivative at
    points on every cut with either signed zero, beside it and off it: the one-sided
    central differences of numpy's values on the side the value takes; PyTorch's
    gradient off the cuts where torch is installed (on them torch's derivative is the
    other side's)."""
    along = np.array(_along(name, data))[:, None]
    z = _on_cut_axis(name, along, np.array(BESIDE_THE_CUT), dt).ravel()
    f = getattr(tf, name)
    ones = np.ones_like(z)
    with np.errstate(all="ignore"):
        first, second = _slopes_along_the_cut(name, z)
    rtol, atol = (2e-5, 1e-6) if dt == np.complex64 else (1e-6, 1e-9)
    _, tangent = tf.jvp(f, (z,), (ones,))
    np.testing.assert_allclose(np.asarray(tangent), first, rtol=rtol, atol=atol)
    _, pullback = tf.vjp(f, z)
    (cotangent,) = pullback(ones)
    np.testing.assert_allclose(np.asarray(cotangent), np.conj(first), rtol=rtol, atol=atol)
    leaf = tf.tensor(z, requires_grad=True)
    tf.sum(tf.real(f(leaf))).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), np.conj(first), rtol=rtol, atol=atol)
    _, curvature = tf.jvp(lambda v: tf.jvp(f, (v,), (ones,))[1], (z,), (ones,))
    np.testing.assert_allclose(np.asarray(curvature), second, rtol=100 * rtol, atol=1e-5)
    if TORCH:
        import torch

        off = (z.imag if name not in INVERSE_ON_IMAGINARY_CUTS else z.real) != 0
        torch_leaf = torch.tensor(z[off], requires_grad=True)
        torch_f = getattr(torch, name.replace("arc", "a"))
        (expected,) = torch.autograd.grad(
            torch_f(torch_leaf), torch_leaf, torch.ones_like(torch_leaf)
        )
        np.testing.assert_allclose(
            np.asarray(cotangent)[off], expected.numpy(), rtol=rtol, atol=atol
        )


@fuzz_settings(40)
@given(
    st.sampled_from(INVERSE),
    st.floats(-4, 4).filter(lambda t: min(abs(t - 1), abs(t + 1)) > 0.05),
    st.sampled_from([np.float32, np.float64]),
)
def test_real_values_cast_to_complex_have_the_derivatives_of_numpys_complex_values(
    name: str, x: float, dt: Any
) -> None:
    """``f(complex(x))`` lies at ``x + 0j``, on the upper side of a cut on the real
    axis: the gradients of its real and imaginary parts with respect to real ``x`` are
    the central differences of numpy's values at ``x +- h + 0j``."""
    point = np.array([x], dt)
    complex_dt = np.complex64 if dt == np.float32 else np.complex128
    f = getattr(tf, name)
    h = 1e-6
    with np.errstate(all="ignore"):
        plus, minus = (getattr(np, name)(np.complex128(float(point[0]) + s)) for s in (h, -h))
    slope = (plus - minus) / (2 * h)
    rtol, atol = (2e-5, 1e-6) if dt == np.float32 else (1e-6, 1e-9)
    for part, expected in ((tf.real, slope.real), (tf.imag, slope.imag)):
        grad = tf.grad(lambda v, p=part: tf.sum(p(f(tf.astype(v, complex_dt)))))(point)
        assert np.asarray(grad).dtype == dt
        np.testing.assert_allclose(np.asarray(grad), [expected], rtol=rtol, atol=atol)


_SPECIAL_PARTS = [np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5, np.nan]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", INVERSE)
def test_derivatives_at_complex_infinity_are_their_limit_zero(name: str, dt: Any) -> None:
    """Every point with an infinite part (the other part anything, NaN included, as C99
    and numpy count it): first and second derivatives (forward over forward, reverse
    over reverse) exactly 0, the limit of the
    derivatives there (they decay like ``1/z``), which the derivatives at far finite
    points approach; a NaN point without an infinite part stays NaN."""
    parts = [(a, b) for a in _SPECIAL_PARTS for b in _SPECIAL_PARTS]
    z = np.empty(len(parts), dt)
    z.real, z.imag = np.array(parts).T
    infinite = np.isinf(z.real) | np.isinf(z.imag)
    f = getattr(tf, name)
    ones = np.ones_like(z)
    _, first = tf.jvp(f, (z,), (ones,))
    _, second = tf.jvp(lambda v: tf.jvp(f, (v,), (ones,))[1], (z,), (ones,))
    _, pullback = tf.vjp(f, z)
    (cotangent,) = pullback(ones)
    gradient = tf.grad(lambda u: tf.sum(tf.real(f(u))))
    reverse_over_reverse = tf.grad(lambda v: tf.sum(tf.real(gradient(v))))(z)
    for got in (first, second, cotangent, reverse_over_reverse):
        np.testing.assert_array_equal(np.asarray(got)[infinite], 0)
    nan = np.isnan(z) & ~infinite
    assert np.isnan(np.asarray(first)[nan]).all()
    far = 1e30 if dt == np.complex64 else 1e150
    finite = np.nan_to_num(z[infinite], nan=1.0, posinf=far, neginf=-far)
    _, slope = tf.jvp(f, (finite,), (np.ones_like(finite),))
    assert np.all(np.abs(np.asarray(slope)) <= 10 / far)


def _cut_grid(name: str) -> list[tuple[float, float]]:
    """Points ``(along, other)`` on ``name``'s cuts (the position along the cut's axis,
    the other part a signed zero), on both signed-zero sides."""
    if name == "arccosh":  # its cut is (-inf, 1]
        along = [-3.0, -2.0, -1.5, -0.5, 0.0, 0.5]
    else:
        along = [-3.0, -2.0, -1.5, 1.5, 2.0, 3.0]
    return [(a, side) for a in along for side in (0.0, -0.0)]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", INVERSE)
def test_values_on_and_near_the_branch_cuts_are_numpys_bit_for_bit(name: str, dtype: Any) -> None:
    on = np.array(_cut_grid(name))
    near = np.array([(a, side + d) for a, side in on for d in (1e-9, -1e-9)])
    points = np.concatenate([on, near])
    z = _on_cut_axis(name, points[:, 0], points[:, 1], dtype)
    specials = [np.inf, -np.inf, np.nan, 1.0, -1.0, 0.0, -0.0]
    grid = np.empty(len(specials) ** 2, dtype)
    grid.real, grid.imag = np.array([(a, b) for a in specials for b in specials]).T
    z = np.concatenate([z, grid])
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(z)
    got = np.asarray(getattr(tf, name)(tf.Tensor(z)))
    assert got.dtype == expected.dtype
    for part in ("real", "imag"):
        np.testing.assert_array_equal(getattr(got, part), getattr(expected, part))
        np.testing.assert_array_equal(
            np.signbit(getattr(got, part)), np.signbit(getattr(expected, part))
        )


@pytest.mark.parametrize(
    ("name", "along", "side"),
    [
        pytest.param(name, along, side, id=f"{name}({along!r},{side!r})")
        for name in INVERSE
        for along, side in _cut_grid(name)
    ],
)
def test_derivative_on_a_cut_is_that_of_the_side_numpys_value_takes(
    name: str, along: float, side: float
) -> None:
    """On a cut, the signed zero selects numpy's value (one side); the JVP is the
    derivative of that side by two oracles: the central difference of numpy's values
    along the cut (which stays on that side) and the one-sided difference stepping off
    the cut into the half-plane the zero's sign names. The gradient is the JVP's
    conjugate, and complex64 gives complex128's slope."""
    z = _on_cut_axis(name, np.array([along]), np.array([side]), np.complex128)
    f = getattr(tf, name)
    with np.errstate(all="ignore"):
        along_the_cut, _ = _slopes_along_the_cut(name, z)
        _, tangent = tf.jvp(f, (z,), (np.ones(1, np.complex128),))
    slope = np.asarray(tangent)
    np.testing.assert_allclose(slope, along_the_cut, rtol=1e-6, atol=1e-8)
    h = -1e-6 if np.signbit(side) else 1e-6
    f0, f1, f2 = (
        getattr(np, name)(_on_cut_axis(name, np.array([along]), np.array([side + k * h]), z.dtype))
        for k in (0, 1, 2)
    )
    off = 1.0 if name in INVERSE_ON_IMAGINARY_CUTS else 1j
    one_sided = (-3 * f0 + 4 * f1 - f2) / (2 * h * off)
    np.testing.assert_allclose(slope, one_sided, rtol=1e-6)
    gradient = np.asarray(tf.grad(lambda v: tf.sum(tf.real(f(v))))(z))
    np.testing.assert_allclose(gradient, np.conj(slope), rtol=1e-14)
    single = tf.jvp(f, (z.astype(np.complex64),), (np.ones(1, np.complex64),))[1]
    np.testing.assert_allclose(np.asarray(single), slope, rtol=1e-4)


def test_gradient_of_arcsin_beyond_one_through_a_complex_cast() -> None:
    x = np.array([1.5, 3.0])
    grad = np.asarray(tf.grad(lambda v: tf.sum(tf.imag(tf.arcsin(tf.astype(v, tf.complex128)))))(x))
    np.testing.assert_allclose(grad, 1 / np.sqrt(x**2 - 1), rtol=1e-12)


def _on_a_cut(name: str, z: complex) -> bool:
    """Whether ``z`` lies exactly on one of ``name``'s branch cuts."""
    if name == "arccosh":
        return z.imag == 0 and z.real < 1
    if name not in INVERSE_ON_IMAGINARY_CUTS:
        return z.imag == 0 and abs(z.real) > 1
    return z.real == 0 and abs(z.imag) > 1


@fuzz_settings(60)
@given(
    st.sampled_from(INVERSE),
    st.floats(-3, 3),
    st.floats(-3, 3),
    st.sampled_from([None, 1e-9, -1e-9]),
)
def test_derivatives_off_and_next_to_the_cuts_match_numpys_slopes(
    name: str, re: float, im: float, offset: float | None
) -> None:
    """Random points of the plane, some 1e-9 from a cut: the JVP equals the slope of
    numpy's values along the cut's axis there, and the VJP is its conjugate."""
    if offset is not None and name not in INVERSE_ON_IMAGINARY_CUTS:
        im = offset
    elif offset is not None:
        re = offset
    z = np.empty(1, np.complex128)
    z.real, z.imag = re, im
    assume(not _on_a_cut(name, complex(z[0])))
    # away from the branch points, where the derivative is infinite
    assume(min(abs(z[0] - 1), abs(z[0] + 1), abs(z[0] - 1j), abs(z[0] + 1j)) > 1e-3)
    with np.errstate(all="ignore"):
        expected, _ = _slopes_along_the_cut(name, z)
        _, tangent = tf.jvp(getattr(tf, name), (z,), (np.ones(1, np.complex128),))
        _, pullback = tf.vjp(getattr(tf, name), z)
        (cotangent,) = pullback(np.ones(1, np.complex128))
    np.testing.assert_allclose(np.asarray(tangent), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(cotangent), np.conj(expected), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", INVERSE)
def test_complex_gradients_beside_the_axes_equal_pytorchs(name: str) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    rng = np.random.default_rng(7)
    z = rng.uniform(-3, 3, 12) + 1j * rng.uniform(-3, 3, 12)
    z[:4] = z[:4].real + 1e-9j  # next to the real axis
    z[4:8] = 1e-9 + 1j * z[4:8].imag  # next to the imaginary axis
    ct = np.exp(1j * np.arange(z.size))
    _, pullback = tf.vjp(getattr(tf, name), z)
    (got,) = pullback(ct)
    leaf = torch.tensor(z, requires_grad=True)
    (expected,) = torch.autograd.grad(
        getattr(torch, name.replace("arc", "a"))(leaf), leaf, torch.tensor(ct)
    )
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- every route


ROUTES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], bool]] = {
    # name: (function of one tensor, input shape, real inputs only)
    "arcsin": (tf.arcsin, (3,), False),
    "arccos": (tf.arccos, (3,), False),
    "arctan": (tf.arctan, (3,), False),
    "arcsinh": (tf.arcsinh, (3,), False),
    "arccosh": (lambda x: tf.arccosh(x + 2.0), (3,), False),
    "arctanh": (tf.arctanh, (3,), False),
    "asin_chain": (lambda x: tf.asin(tf.sin(x) * 0.5) * tf.atanh(x * 0.3), (3,), False),
    "angle": (lambda x: tf.angle(x + 0.1), (3,), False),
    "angle_deg": (lambda x: tf.angle(x * x + 0.2, deg=True), (3,), False),
    "arctan2": (lambda x: tf.arctan2(x[0], x[1] + 0.1), (2, 3), True),
    "arctan2_broadcast": (lambda x: tf.arctan2(x[0:1], x[1:2].T), (3, 3), True),
    "degrees": (
        lambda x: tf.deg2rad(x) * tf.rad2deg(x) * tf.radians(x) * tf.degrees(x),
        (3,),
        True,
    ),
}


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        (name, dtype)
        for name, (_, _, real_only) in sorted(ROUTES.items())
        for dtype in ([np.float64] if real_only else [np.float64, np.complex128])
    ],
)
def test_every_derivative_route_equals_finite_differences(name: str, dtype: Any) -> None:
    function, shape, _ = ROUTES[name]
    check_every_derivative_route(name, function, shape, dtype)


@fuzz_settings(10)
@given(per_example_cases(["angle", "arcsinh"]))
def test_vmap_and_jit_equal_numpy_example_by_example(case: tuple[str, Any, str, bool]) -> None:
    name, dtype, mode, last = case
    check_per_example(name, getattr(tf, name), getattr(np, name), (3,), dtype, mode, last)
