"""s21 review, area 1: the new numpy functions (inverse trigonometric/hyperbolic
functions, arctan2, angle, degree conversions; diag, diagflat, roll, tile, repeat, the
stacking functions, atleast_*d, broadcast_arrays, meshgrid, diff).

Oracles: numpy's values bit for bit on and near the branch cuts (signed zeros), the
one-sided derivative along each cut taken from numpy's own values by central
differences in the direction of the cut (the value's branch decides the derivative),
finite differences for every derivative route (``grad``, ``jit``, ``vjp``, ``vmap``,
the eager tape with ``backward``/``grad``/``hvp``/``create_graph``, traced ``.grad``,
``hvp``), per-example numpy under ``vmap``/``jit``, and PyTorch's gradients (tenferro's
convention) where torch is installed. The bugs this review pinned as strict xfails
(derivatives on the wrong side of a branch cut and NaN at complex infinity; roll with
empty sequences, argument-less broadcast_arrays/meshgrid, stacking one array, repeating
a 0-d value along an axis) are fixed; their tests now pass as plain tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from derivative_routes import (
    assert_close,
    fd_gradient,
    fd_hvp,
    gradients_in_every_mode,
    hvps_in_every_mode,
    loss_of,
    numpy_loss,
    values,
    weights_for,
)
from fuzz_support import fuzz_settings
from hypothesis import assume, given
from hypothesis import strategies as st

import tenferro as tf

INVERSE = ["arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]
REAL_AXIS_CUTS = {"arcsin", "arccos", "arccosh", "arctanh"}
"""The functions whose branch cuts lie on the real axis (arctan's and arcsinh's lie on
the imaginary axis)."""


def _complex(re: float, im: float, dtype: Any = np.complex128) -> np.ndarray[Any, Any]:
    """One complex number with exactly these parts (signed zeros kept: ``re + 1j * im``
    would turn an imaginary ``-0.0`` into ``+0.0``)."""
    z = np.empty(1, dtype)
    z.real, z.imag = re, im
    return z


def _cut_points(name: str) -> list[tuple[float, float]]:
    """Points on ``name``'s branch cuts, on both signed-zero sides."""
    beyond = [-3.0, -2.0, -1.5, 1.5, 2.0, 3.0]
    if name == "arccosh":  # its cut is (-inf, 1]
        along = [-3.0, -2.0, -1.5, -0.5, 0.0, 0.5]
        return [(x, s) for x in along for s in (0.0, -0.0)]
    if name in REAL_AXIS_CUTS:
        return [(x, s) for x in beyond for s in (0.0, -0.0)]
    return [(s, y) for y in beyond for s in (0.0, -0.0)]


def _along_cut(name: str, z: np.ndarray[Any, Any], step: float) -> np.ndarray[Any, Any]:
    """``z`` moved by ``step`` parallel to ``name``'s cuts (signed zeros kept)."""
    if name in REAL_AXIS_CUTS:
        return _complex(z.real[0] + step, z.imag[0], z.dtype)
    return _complex(z.real[0], z.imag[0] + step, z.dtype)


def _one_sided_slope(name: str, z: np.ndarray[Any, Any]) -> Any:
    """numpy's ``f'(z)`` on the side of the cut ``z``'s signed zero selects: the central
    difference along the cut (which stays on that side)."""
    f = getattr(np, name)
    h = 1e-7
    direction = 1.0 if name in REAL_AXIS_CUTS else 1j
    return (f(_along_cut(name, z, h)) - f(_along_cut(name, z, -h))) / (2 * h * direction)


# ---------------------------------------------------------------------- values at the cuts


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", INVERSE)
def test_values_on_and_near_the_branch_cuts_are_numpys_bit_for_bit(name: str, dtype: Any) -> None:
    points = _cut_points(name)
    near = [
        (re + d, im) if name not in REAL_AXIS_CUTS else (re, im + d)
        for re, im in points
        for d in (1e-9, -1e-9)
    ]
    specials = [np.inf, -np.inf, np.nan, 1.0, -1.0, 0.0, -0.0]
    grid = [(a, b) for a in specials for b in specials]
    z = np.concatenate([_complex(re, im, dtype) for re, im in points + near + grid])
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(z)
    got = np.asarray(getattr(tf, name)(tf.Tensor(z)))
    assert got.dtype == expected.dtype
    for part in ("real", "imag"):
        np.testing.assert_array_equal(getattr(got, part), getattr(expected, part))
        np.testing.assert_array_equal(
            np.signbit(getattr(got, part)), np.signbit(getattr(expected, part))
        )


# ---------------------------------------------------------------------- derivatives at the cuts


def _cut_cases() -> list[Any]:
    return [
        pytest.param(name, re, im, id=f"{name}({re!r},{im!r})")
        for name in INVERSE
        for re, im in _cut_points(name)
    ]


@pytest.mark.parametrize(("name", "re", "im"), _cut_cases())
def test_derivative_on_the_cut_is_that_of_the_branch_the_value_takes(
    name: str, re: float, im: float
) -> None:
    """On a cut, the signed zero selects numpy's value (one side); the JVP must be the
    derivative of that side, i.e. the slope of numpy's values along the cut."""
    z = _complex(re, im)
    with np.errstate(all="ignore"):
        expected = _one_sided_slope(name, z)
        _, tangent = tf.jvp(getattr(tf, name), (z,), (np.ones(1, np.complex128),))
    np.testing.assert_allclose(np.asarray(tangent), expected, rtol=1e-6, atol=1e-8)


def test_gradient_of_arcsin_beyond_one_through_a_complex_cast() -> None:
    x = np.array([1.5, 3.0])
    grad = np.asarray(tf.grad(lambda v: tf.sum(tf.imag(tf.arcsin(tf.astype(v, tf.complex128)))))(x))
    np.testing.assert_allclose(grad, 1 / np.sqrt(x**2 - 1), rtol=1e-12)


def test_arccosh_derivative_at_complex_infinity_is_zero() -> None:
    z = _complex(np.inf, 0.0)
    with np.errstate(all="ignore"):
        _, tangent = tf.jvp(tf.arccosh, (z,), (np.ones(1, np.complex128),))
    np.testing.assert_array_equal(np.asarray(tangent), np.zeros(1, np.complex128))


def _on_a_cut(name: str, z: complex) -> bool:
    """Whether ``z`` lies exactly on one of ``name``'s branch cuts (pinned above)."""
    if name == "arccosh":
        return z.imag == 0 and z.real < 1
    if name in REAL_AXIS_CUTS:
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
    """Random points, some 1e-9 from a cut: the JVP along the cut direction equals the
    slope of numpy's values there, and the VJP is its conjugate (tenferro's convention)."""
    if offset is not None and name in REAL_AXIS_CUTS:
        im = offset
    elif offset is not None:
        re = offset
    z = _complex(re, im)
    assume(not _on_a_cut(name, complex(z[0])))
    # away from the branch points, where the derivative is infinite
    assume(min(abs(z[0] - 1), abs(z[0] + 1), abs(z[0] - 1j), abs(z[0] + 1j)) > 1e-3)
    with np.errstate(all="ignore"):
        expected = _one_sided_slope(name, z)
        _, tangent = tf.jvp(getattr(tf, name), (z,), (np.ones(1, np.complex128),))
        _, pullback = tf.vjp(getattr(tf, name), z)
        (cotangent,) = pullback(np.ones(1, np.complex128))
    np.testing.assert_allclose(np.asarray(tangent), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(cotangent), np.conj(expected), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", INVERSE)
def test_complex_gradients_equal_pytorchs(name: str) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    rng = np.random.default_rng(7)
    z = rng.uniform(-3, 3, 12) + 1j * rng.uniform(-3, 3, 12)
    z[:4] = z[:4].real + 1e-9j  # next to the real axis
    z[4:8] = 1e-9 + 1j * z[4:8].imag  # next to the imaginary axis
    ct = np.exp(1j * np.arange(z.size))
    _, pullback = tf.vjp(getattr(tf, name), z)
    (got,) = pullback(ct)
    leaf = torch.tensor(z, requires_grad=True)
    torch_name = name.replace("arc", "a")
    (expected,) = torch.autograd.grad(getattr(torch, torch_name)(leaf), leaf, torch.tensor(ct))
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- every derivative route


def _unit(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> Any:
    values_ = rng.uniform(-0.8, 0.8, shape)
    if np.dtype(dtype).kind == "c":
        values_ = values_ + 1j * rng.uniform(-0.8, 0.8, shape)
    return values_.astype(dtype)


FUNCTIONS: dict[str, tuple[Callable[[Any], Any], tuple[int, ...], bool]] = {
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
    "diag_embed": (lambda x: tf.diag(x * x, 1), (3,), False),
    "diag_extract": (lambda x: tf.diag(x * x, -1), (3, 4), False),
    "diagflat": (lambda x: tf.diagflat(tf.sin(x), -2), (2, 2), False),
    "roll": (lambda x: tf.roll(x * x, (1, -2), (0, 1)), (3, 4), False),
    "roll_flat": (lambda x: tf.roll(x * x, 5), (3, 4), False),
    "tile": (lambda x: tf.tile(x * x, (2, 1, 2)), (3, 2), False),
    "repeat_counts": (lambda x: tf.repeat(x * x, [1, 0, 2], axis=0), (3, 2), False),
    "repeat_flat": (lambda x: tf.repeat(x * x, 2), (3, 2), False),
    "hstack": (lambda x: tf.hstack([x, x * x]), (3, 2), False),
    "vstack": (lambda x: tf.vstack([x * x, x[0]]), (3, 2), False),
    "dstack": (lambda x: tf.dstack([x, x * x]), (3, 2), False),
    "column_stack": (lambda x: tf.column_stack([x[:, 0] * x[:, 1], x]), (3, 2), False),
    "atleast_3d": (lambda x: tf.atleast_3d(x * x), (3, 2), False),
    "broadcast_arrays": (lambda x: tf.broadcast_arrays(x * x, x[0:1]), (3, 2), False),
    "meshgrid": (lambda x: tf.meshgrid(x[:, 0], x[:, 1] * x[:, 1]), (3, 2), False),
    "meshgrid_sparse": (
        lambda x: tf.meshgrid(x[:, 0], x[:, 1], x[:2, 0] ** 2, sparse=True, indexing="ij"),
        (3, 2),
        False,
    ),
    "diff": (lambda x: tf.diff(x * x, 2, axis=0, prepend=x[:1], append=1.5), (3, 2), False),
}


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        (name, dtype)
        for name, (_, _, real_only) in sorted(FUNCTIONS.items())
        for dtype in ([np.float64] if real_only else [np.float64, np.complex128])
    ],
)
def test_every_derivative_route_equals_finite_differences(name: str, dtype: Any) -> None:
    function, shape, _ = FUNCTIONS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    x = _unit(shape, dtype, rng)
    w = weights_for(function, x, rng)
    expected = fd_gradient(numpy_loss(function, w), x)
    for route, got in gradients_in_every_mode(function, x, w).items():
        assert got.dtype == x.dtype, (route, got.dtype)
        assert_close(got, expected, 1e-6, 1e-7, f"{name} gradient by {route}")
    v = _unit(shape, dtype, rng)
    loss = loss_of(function, w)
    expected = fd_hvp(lambda a: values(tf.grad(loss)(a)), x, v)
    for route, got in hvps_in_every_mode(function, x, w, v).items():
        assert_close(got, expected, 1e-5, 1e-6, f"{name} Hessian-vector product by {route}")


# ---------------------------------------------------------------------- vmap and jit


BATCHED: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], tuple[int, ...]]] = {
    "diag_embed": (lambda z: tf.diag(z, 1), lambda z: np.diag(z, 1), (3,)),
    "diag_extract": (lambda z: tf.diag(z, -1), lambda z: np.diag(z, -1), (3, 4)),
    "diagflat": (lambda z: tf.diagflat(z, 1), lambda z: np.diagflat(z, 1), (2, 2)),
    "roll": (
        lambda z: tf.roll(z, (1, -2), (0, -1)),
        lambda z: np.roll(z, (1, -2), (0, -1)),
        (3, 4),
    ),
    "roll_flat": (lambda z: tf.roll(z, 5), lambda z: np.roll(z, 5), (3, 4)),
    "tile": (lambda z: tf.tile(z, (2, 1, 2)), lambda z: np.tile(z, (2, 1, 2)), (3, 2)),
    "repeat": (
        lambda z: tf.repeat(z, [1, 0, 2], axis=0),
        lambda z: np.repeat(z, [1, 0, 2], axis=0),
        (3, 2),
    ),
    "repeat_last": (lambda z: tf.repeat(z, 2, axis=-1), lambda z: np.repeat(z, 2, axis=-1), (3, 2)),
    "hstack_1d": (lambda z: tf.hstack([z, z]), lambda z: np.hstack([z, z]), (3,)),
    "vstack_1d": (lambda z: tf.vstack([z, z]), lambda z: np.vstack([z, z]), (3,)),
    "dstack": (lambda z: tf.dstack([z, z]), lambda z: np.dstack([z, z]), (3, 2)),
    "column_stack": (lambda z: tf.column_stack([z, z]), lambda z: np.column_stack([z, z]), (3,)),
    "atleast_1d": (tf.atleast_1d, np.atleast_1d, ()),
    "atleast_3d": (tf.atleast_3d, np.atleast_3d, (3,)),
    "broadcast_arrays": (
        lambda z: tf.broadcast_arrays(z, np.ones((2, 1, 1))),
        lambda z: np.broadcast_arrays(z, np.ones((2, 1, 1))),
        (3,),
    ),
    "meshgrid": (lambda z: tf.meshgrid(z, z[:2]), lambda z: np.meshgrid(z, z[:2]), (3,)),
    "diff": (
        lambda z: tf.diff(z, 2, axis=0, prepend=0.5),
        lambda z: np.diff(z, 2, axis=0, prepend=0.5),
        (3, 2),
    ),
    "angle": (tf.angle, np.angle, (3,)),
    "arcsinh": (tf.arcsinh, np.arcsinh, (3,)),
}


@fuzz_settings(30)
@given(
    st.sampled_from(sorted(BATCHED)),
    st.sampled_from([np.float64, np.complex128]),
    st.sampled_from(["vmap", "jit(vmap)", "vmap(jit)"]),
    st.booleans(),
)
def test_vmap_and_jit_equal_numpy_example_by_example(
    name: str, dtype: Any, mode: str, last: bool
) -> None:
    function, reference, shape = BATCHED[name]
    rng = np.random.default_rng(3)
    batch = _unit((4, *shape), dtype, rng)
    axis = -1 if last and shape else 0
    argument = np.moveaxis(batch, 0, axis)
    mapped = {
        "vmap": lambda: tf.vmap(function, in_axes=axis),
        "jit(vmap)": lambda: tf.jit(tf.vmap(function, in_axes=axis)),
        "vmap(jit)": lambda: tf.vmap(tf.jit(function), in_axes=axis),
    }[mode]()
    got = mapped(argument)
    expected = [reference(b) for b in batch]
    outs = list(got) if isinstance(got, (tuple, list)) else [got]
    if isinstance(expected[0], (tuple, list)):
        wants = [np.stack([e[i] for e in expected]) for i in range(len(outs))]
    else:
        wants = [np.stack(expected)]
    assert len(outs) == len(wants)
    for out, want in zip(outs, wants, strict=True):
        value = values(out)
        assert value.dtype == want.dtype
        assert_close(value, want, 1e-12, 1e-12, f"{name} under {mode}")


# ---------------------------------------------------------------------- argument handling


ARRAYS = {
    "0d": np.array(3.0),
    "empty": np.zeros((0,)),
    "vector": np.arange(3.0),
    "matrix": np.arange(6.0).reshape(2, 3),
    "no_rows": np.zeros((0, 3)),
    "int32": np.arange(3, dtype=np.int32),
    "bool": np.array([True, False, True]),
    "complex": np.arange(3) + 1j,
}
INTEGERS = [0, 1, -1, 5, -5, np.int64(1), np.int32(-2), np.array(1)]
"""Integer parameters in numpy's sense (bools and floats are refused by design)."""

INTEGER = st.sampled_from(INTEGERS)
SHIFTS = st.sampled_from([0, 1, -7, (1, 2), [1], (), np.array([1, 2]), np.int32(2)])
AXES = st.sampled_from([None, 0, -1, (0, 1), (0, 0), [1], (), 2, -3, np.int64(0)])
REPS = st.sampled_from([0, 2, (), (2,), (2, 0), (1, 2, 3), [2, 1], np.array([2, 1]), np.int8(2)])
REPEATS = st.sampled_from([0, 2, [2], [1, 0, 2], np.array([1, 0, 2]), np.int32(2), np.array(2)])


@st.composite
def _call(draw: Any) -> tuple[str, Callable[[Any], Any], list[Any]]:
    """(description, call on a module (numpy or tenferro), arrays): a numpy call of a new
    function whose arguments numpy might accept or refuse."""
    name = draw(st.sampled_from(["diag", "diagflat", "roll", "tile", "repeat", "stack", "diff"]))
    a = ARRAYS[draw(st.sampled_from(sorted(ARRAYS)))]
    if name in ("diag", "diagflat"):
        k = draw(INTEGER)
        return f"{name}(k={k!r})", lambda m, x: getattr(m, name)(x, k), [a]
    if name == "roll":
        shift, axis = draw(SHIFTS), draw(AXES)
        return f"roll({shift!r}, {axis!r})", lambda m, x: m.roll(x, shift, axis), [a]
    if name == "tile":
        reps = draw(REPS)
        return f"tile({reps!r})", lambda m, x: m.tile(x, reps), [a]
    if name == "repeat":
        repeats, axis = draw(REPEATS), draw(st.sampled_from([None, 0, -1, 1, np.int64(0)]))
        return f"repeat({repeats!r}, {axis!r})", lambda m, x: m.repeat(x, repeats, axis), [a]
    if name == "stack":
        function = draw(st.sampled_from(["hstack", "vstack", "dstack", "column_stack"]))
        others = [ARRAYS[n] for n in draw(st.lists(st.sampled_from(sorted(ARRAYS)), max_size=2))]
        if draw(st.booleans()):  # one array: the sequence of its rows
            return f"{function}(one array)", lambda m, x: getattr(m, function)(x), [a]
        return function, lambda m, *xs: getattr(m, function)(list(xs)), [a, *others]
    n = draw(st.sampled_from([0, 1, 2, 5, np.int64(2)]))
    axis = draw(st.sampled_from([-1, 0, 1, -3, np.int64(0)]))
    edge = draw(st.sampled_from([None, np.array([1.0]), np.zeros((2, 1)), np.zeros((1, 3))]))
    where = draw(st.sampled_from(["prepend", "append"]))
    options = {} if edge is None else {where: edge}
    return f"diff({n!r}, {axis!r}, {options})", lambda m, x: m.diff(x, n, axis, **options), [a]


@fuzz_settings(150)
@given(_call())
def test_arguments_numpy_accepts_give_numpys_values_and_the_others_a_tenferro_error(
    case: tuple[str, Callable[..., Any], list[Any]],
) -> None:
    """numpy ok: the same values, dtype and shape; numpy refuses: a tenferro error (no
    bare Python error, no silent acceptance). (Python-scalar edges and bools and floats
    as integers are left out: they are documented differences.)"""
    what, call, arrays = case
    try:
        with np.errstate(all="ignore"):
            expected = call(np, *arrays)
    except Exception:
        with pytest.raises(tf.TenferroError):
            call(tf, *[tf.Tensor(a) for a in arrays])
        return
    got = call(tf, *[tf.Tensor(a) for a in arrays])
    value = values(got)
    assert value.dtype == np.asarray(expected).dtype, what
    np.testing.assert_array_equal(value, expected, err_msg=what)


@pytest.mark.parametrize(("shift", "axis"), [(1, ()), ((), 0), ((), ())])
def test_roll_with_an_empty_shift_or_axis_sequence_is_the_identity(shift: Any, axis: Any) -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(values(tf.roll(x, shift, axis)), np.roll(x, shift, axis))


@pytest.mark.parametrize("name", ["broadcast_arrays", "meshgrid"])
def test_argument_less_calls_give_an_empty_tuple(name: str) -> None:
    assert getattr(tf, name)() == ()


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacking_one_array_stacks_its_rows(name: str) -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(values(getattr(tf, name)(x)), getattr(np, name)(x))


def test_repeat_of_a_scalar_along_axis_zero() -> None:
    np.testing.assert_array_equal(values(tf.repeat(np.array(3.0), 2, axis=0)), [3.0, 3.0])
