"""numpy's arrangement functions (diag, diagflat, roll, tile, repeat, hstack, vstack,
dstack, column_stack, atleast_1d/2d/3d, broadcast_arrays, meshgrid, diff, and the
joining functions concatenate and stack): random arguments, edge cases included (empty
sequences and argument lists, one array as the sequence of its rows, 0-d values, empty
arrays, negative and out-of-range axes), against numpy's values, dtypes, shapes and
result containers on every tensor kind (or numpy's refusal against a tenferro error),
derivatives against finite differences and the adjoint identity (real and complex), and
bad input raising a tenferro error that names the function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from transform_routes import check_every_derivative_route, check_per_example, per_example_cases

import tenferro as tf

KINDS = {
    "Tensor": tf.Tensor,
    "EagerTensor": lambda a: tf.EagerTensor(a, requires_grad=a.dtype.kind in "fc"),
    "TracedTensor": tf.traced,
}
DTYPES = st.sampled_from(["bool", "int32", "int64", "float32", "float64", "complex128"])


def _values(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(_values(v) for v in x)
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _same(actual: Any, expected: Any) -> None:
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected), (type(actual), type(expected))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _same(a, e)
        return
    got = np.asarray(actual)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


@st.composite
def arrays(draw: Any, min_dims: int = 0, max_dims: int = 3) -> np.ndarray[Any, Any]:
    dt = np.dtype(draw(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=4))
    values = draw(hnp.arrays(np.int64, shape, elements=st.integers(-9, 9)))
    return (values + (0.5j if dt.kind == "c" else 0)).astype(dt)


# Each generator draws (name, numpy call, tenferro call) on data it draws itself.
Draw = Callable[[Any], tuple[Callable[..., Any], Callable[..., Any], list[Any]]]


def _diag(data: Any) -> Any:
    x = data.draw(arrays(1, 2))
    k = data.draw(st.integers(-5, 5))
    return (lambda a: np.diag(a, k)), (lambda a: tf.diag(a, k)), [x]


def _diagflat(data: Any) -> Any:
    x = data.draw(arrays(0, 3))
    k = data.draw(st.integers(-3, 3))
    return (lambda a: np.diagflat(a, k)), (lambda a: tf.diagflat(a, k)), [x]


def _roll(data: Any) -> Any:
    """Shifts and axes as numbers or sequences, empty ones included, of lengths that
    broadcast (equal, one of them 1) or not; axes in range or one beyond."""
    x = data.draw(arrays(0, 3))
    if x.ndim == 0 or data.draw(st.booleans()):
        shift = data.draw(st.integers(-9, 9) | st.lists(st.integers(-9, 9), max_size=3))
        return (lambda a: np.roll(a, shift)), (lambda a: tf.roll(a, shift)), [x]
    axes = data.draw(st.lists(st.integers(-x.ndim - 1, x.ndim), max_size=3))
    length = data.draw(st.sampled_from([len(axes), 1, 0, 2]))
    shifts = data.draw(st.lists(st.integers(-9, 9), min_size=length, max_size=length))
    shift: Any = shifts[0] if length == 1 and data.draw(st.booleans()) else shifts
    axis: Any = axes[0] if len(axes) == 1 and data.draw(st.booleans()) else axes
    return (lambda a: np.roll(a, shift, axis)), (lambda a: tf.roll(a, shift, axis)), [x]


def _tile(data: Any) -> Any:
    x = data.draw(arrays(0, 3))
    reps: Any = data.draw(st.integers(0, 3) | st.lists(st.integers(0, 3), max_size=4))
    return (lambda a: np.tile(a, reps)), (lambda a: tf.tile(a, reps)), [x]


def _repeat(data: Any) -> Any:
    """Along no axis, an axis in range or one beyond; a 0-d value along an axis is
    1-d for numpy."""
    x = data.draw(arrays(0, 3))
    ndim = max(x.ndim, 1)
    axis = None if data.draw(st.booleans()) else data.draw(st.integers(-ndim - 1, ndim))
    if axis is None or not -ndim <= axis < ndim:
        extent = x.size
    else:
        extent = np.atleast_1d(x).shape[axis]
    repeats: Any = data.draw(
        st.integers(0, 3)
        | st.lists(st.integers(0, 3), min_size=extent, max_size=extent)
        | st.lists(st.integers(0, 3), min_size=1, max_size=1)
    )
    return (lambda a: np.repeat(a, repeats, axis)), (lambda a: tf.repeat(a, repeats, axis)), [x]


def _one_array_or_none(name: str, data: Any, **options: Any) -> Any:
    """Sometimes an edge case of a function of a sequence of arrays: one array (the
    sequence of its rows, given as a tensor of the test's kind) or an empty list."""
    case = data.draw(st.sampled_from(["sequence", "sequence", "one array", "empty list"]))
    numpy_function, function = getattr(np, name), getattr(tf, name)
    if case == "one array":
        x = data.draw(arrays(0, 4))
        return (lambda a: numpy_function(a, **options)), (lambda a: function(a, **options)), [x]
    if case == "empty list":
        return (lambda: numpy_function([], **options)), (lambda: function([], **options)), []
    return None


def _stacking(name: str) -> Draw:
    def draw(data: Any) -> Any:
        edge = _one_array_or_none(name, data)
        if edge is not None:
            return edge
        first = data.draw(arrays(0, 3))
        count = data.draw(st.integers(1, 3))
        axis = {"vstack": 0, "dstack": 2}.get(name, 1)
        rank = {"vstack": 2, "dstack": 3}.get(name, 1)
        shape = list(np.atleast_3d(first).shape if rank == 3 else first.shape)
        if name == "vstack":
            shape = list(np.atleast_2d(first).shape)
        if name == "column_stack" and first.ndim < 2:
            shape, axis = [first.size], None
        if name == "hstack" and first.ndim <= 1:
            axis = 0
            shape = [np.atleast_1d(first).shape[0]]
        others = []
        for _ in range(count - 1):
            other_shape = list(shape)
            if axis is not None:
                other_shape[axis] = data.draw(st.integers(0, 3))
            others.append(np.ones(other_shape, first.dtype))
        arrays_ = [first, *others]
        return (
            lambda *a: getattr(np, name)(list(a)),
            lambda *a: getattr(tf, name)(list(a)),
            arrays_,
        )

    return draw


def _atleast(name: str) -> Draw:
    def draw(data: Any) -> Any:
        xs = [data.draw(arrays(0, 4)) for _ in range(data.draw(st.integers(0, 3)))]
        return (lambda *a: getattr(np, name)(*a)), (lambda *a: getattr(tf, name)(*a)), xs

    return draw


def _broadcast_arrays(data: Any) -> Any:
    count = data.draw(st.integers(0, 3))
    if count == 0:
        return np.broadcast_arrays, tf.broadcast_arrays, []
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_side=3))
    xs = [np.arange(int(np.prod(s)), dtype=np.float64).reshape(s) for s in shapes.input_shapes]
    return np.broadcast_arrays, tf.broadcast_arrays, xs


def _meshgrid(data: Any) -> Any:
    xs = [data.draw(arrays(0, 2)) for _ in range(data.draw(st.integers(0, 3)))]
    indexing = data.draw(st.sampled_from(["xy", "ij"]))
    sparse = data.draw(st.booleans())
    return (
        lambda *a: np.meshgrid(*a, indexing=indexing, sparse=sparse),
        lambda *a: tf.meshgrid(*a, indexing=indexing, sparse=sparse),
        xs,
    )


def _diff(data: Any) -> Any:
    x = data.draw(arrays(1, 3))
    n = data.draw(st.integers(0, 4))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    extra = {}
    for side in ("prepend", "append"):
        choice = data.draw(st.sampled_from(["none", "scalar", "array"]))
        if choice == "scalar":
            extra[side] = x.dtype.type(1)
        elif choice == "array":
            shape = list(x.shape)
            shape[axis] = data.draw(st.integers(0, 2))
            extra[side] = np.ones(shape, x.dtype)
    return (
        lambda a: np.diff(a, n, axis, **extra),
        lambda a: tf.diff(a, n, axis, **extra),
        [x],
    )


def _joining(name: str) -> Draw:
    """``concatenate``/``stack``: arrays that fit (or not) along an axis in range or one
    beyond, one array, or an empty list."""

    def draw(data: Any) -> Any:
        axis = data.draw(st.integers(-4, 3))
        edge = _one_array_or_none(name, data, axis=axis)
        if edge is not None:
            return edge
        first = data.draw(arrays(0, 3))
        others = []
        for _ in range(data.draw(st.integers(0, 2))):
            shape = list(first.shape)
            if shape and name == "concatenate" and data.draw(st.booleans()):
                shape[axis % len(shape)] = data.draw(st.integers(0, 3))
            others.append(np.ones(shape, data.draw(DTYPES)))
        return (
            lambda *a: getattr(np, name)(list(a), axis=axis),
            lambda *a: getattr(tf, name)(list(a), axis=axis),
            [first, *others],
        )

    return draw


GENERATORS: dict[str, Draw] = {
    "diag": _diag,
    "diagflat": _diagflat,
    "roll": _roll,
    "tile": _tile,
    "repeat": _repeat,
    **{name: _stacking(name) for name in ("hstack", "vstack", "dstack", "column_stack")},
    **{name: _atleast(name) for name in ("atleast_1d", "atleast_2d", "atleast_3d")},
    "broadcast_arrays": _broadcast_arrays,
    "meshgrid": _meshgrid,
    "diff": _diff,
    "concatenate": _joining("concatenate"),
    "stack": _joining("stack"),
}


def test_every_arrangement_function_has_a_generator() -> None:
    from tenferro.surface import arrangement

    assert sorted(GENERATORS) == sorted([*arrangement.__all__, "concatenate", "stack"])


@pytest.mark.parametrize("name", sorted(GENERATORS))
@fuzz_settings(30)
@given(st.sampled_from(sorted(KINDS)), st.data())
def test_arrangement_functions_are_numpys(name: str, kind: str, data: Any) -> None:
    reference, function, args = GENERATORS[name](data)
    try:
        expected = reference(*args)
    except (ValueError, TypeError, IndexError):  # numpy refuses: so must we
        with pytest.raises(tf.TenferroError):
            function(*[KINDS[kind](a) for a in args])
        return
    _same(_values(function(*[KINDS[kind](a) for a in args])), expected)


# ---------------------------------------------------------------------- derivatives


DERIVATIVES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]] = {
    "diag vector": (lambda v: tf.diag(v, -1), [(3,)]),
    "diag matrix": (lambda m: tf.diag(m, 1), [(3, 4)]),
    "diagflat": (lambda m: tf.diagflat(m, 2), [(2, 2)]),
    "roll": (lambda m: tf.roll(m, (1, -2), (0, 1)), [(3, 4)]),
    "roll flat": (lambda m: tf.roll(m, 5), [(3, 4)]),
    "tile": (lambda m: tf.tile(m, (2, 1, 3)), [(2, 3)]),
    "repeat": (lambda m: tf.repeat(m, 2, axis=1), [(2, 3)]),
    "repeat counts": (lambda m: tf.repeat(m, [2, 0, 3], axis=1), [(2, 3)]),
    "hstack": (lambda a, b: tf.hstack([a, b]), [(2, 3), (2, 1)]),
    "vstack": (lambda a, b: tf.vstack([a, b]), [(3,), (2, 3)]),
    "dstack": (lambda a, b: tf.dstack([a, b]), [(2, 3), (2, 3)]),
    "column_stack": (lambda a, b: tf.column_stack([a, b]), [(3,), (3, 2)]),
    "hstack of one array": (lambda a: tf.hstack(a), [(2, 3, 2)]),
    "vstack of one array": (lambda a: tf.vstack(a), [(3, 2)]),
    "dstack of one array": (lambda a: tf.dstack(a), [(3, 2)]),
    "column_stack of one array": (lambda a: tf.column_stack(a), [(2, 3)]),
    "concatenate one array": (lambda a: tf.concatenate(a, axis=-1), [(2, 3, 2)]),
    "stack one array": (lambda a: tf.stack(a, axis=1), [(2, 3, 2)]),
    "repeat of a 0-d value": (lambda a: tf.repeat(a, 3, axis=-1), [()]),
    "roll with an empty axis sequence": (lambda a: tf.roll(a * a, 2, ()), [(3,)]),
    "atleast_3d": (lambda a: tf.atleast_3d(a), [(3,)]),
    "broadcast_arrays": (lambda a, b: tf.broadcast_arrays(a, b), [(3, 1), (4,)]),
    "meshgrid": (lambda a, b: tf.meshgrid(a, b), [(3,), (2,)]),
    "diff": (lambda m: tf.diff(m, 2, axis=0, prepend=m[:1] * 2, append=0.5), [(4, 3)]),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_arrangement_derivatives(name: str, dt: Any) -> None:
    function, shapes = DERIVATIVES[name]
    rng = np.random.default_rng(len(name))
    args = []
    for shape in shapes:
        values = rng.standard_normal(shape)
        if np.dtype(dt).kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        args.append(values.astype(dt))

    def outputs(*xs: Any) -> Any:
        result = function(*xs)
        return list(result) if isinstance(result, tuple) else result

    tf.testing.check_grads(outputs, args, order=1)


def test_repeat_needs_concrete_counts_inside_a_trace() -> None:
    x = np.arange(3.0)
    counts = np.array([1, 2, 0])
    grad = tf.grad(lambda v: tf.sum(tf.repeat(v, counts) ** 2))(x)
    np.testing.assert_allclose(np.asarray(grad), 2 * x * counts)
    with pytest.raises(tf.ParameterError, match=r"repeat: repeats must be concrete.*TracedTensor"):
        tf.grad(lambda v, c: tf.sum(tf.repeat(v, c)), argnums=0)(x, counts)


BAD: dict[str, Callable[[], Any]] = {
    "diag of a 3-D array": lambda: tf.diag(np.ones((2, 2, 2))),
    "diag with k=1.5": lambda: tf.diag(np.ones(2), 1.5),
    "diag with k=True": lambda: tf.diag(np.ones(2), True),
    "roll with a float shift": lambda: tf.roll(np.ones(3), 1.0),
    "roll with an axis out of range": lambda: tf.roll(np.ones(3), 1, 1),
    "roll with shift and axis of different lengths": lambda: tf.roll(
        np.ones((2, 2)), (1, 2, 3), (0, 1)
    ),
    "tile with negative reps": lambda: tf.tile(np.ones(3), -1),
    "tile with string reps": lambda: tf.tile(np.ones(3), "2"),
    "repeat with negative counts": lambda: tf.repeat(np.ones(3), -1),
    "repeat with float counts": lambda: tf.repeat(np.ones(3), 1.5),
    "repeat with the wrong number of counts": lambda: tf.repeat(np.ones(3), [1, 2]),
    "repeat with an axis out of range": lambda: tf.repeat(np.ones(3), 2, axis=1),
    "hstack of nothing": lambda: tf.hstack([]),
    "hstack of a 0-d value": lambda: tf.hstack(np.float64(1.0)),
    "hstack of an array without rows": lambda: tf.hstack(tf.Tensor(np.ones((0, 2)))),
    "vstack of a string": lambda: tf.vstack("ab"),
    "vstack of a generator": lambda: tf.vstack(np.ones(2) for _ in range(2)),
    "concatenate of a 0-d value": lambda: tf.concatenate(np.array(1.0)),
    "concatenate of the rows of a vector": lambda: tf.concatenate(np.ones(3)),
    "concatenate of a generator": lambda: tf.concatenate(np.ones(2) for _ in range(2)),
    "stack of an array without rows": lambda: tf.stack(np.ones((0, 2))),
    "stack of nothing": lambda: tf.stack(()),
    "roll with shift and axis of lengths 2 and 0": lambda: tf.roll(np.ones(2), (1, 2), ()),
    "repeat of a 0-d value along axis 1": lambda: tf.repeat(np.float64(1.0), 2, axis=1),
    "vstack of mismatched columns": lambda: tf.vstack([np.ones(2), np.ones(3)]),
    "meshgrid with indexing='zz'": lambda: tf.meshgrid(np.ones(2), indexing="zz"),
    "meshgrid with sparse='no'": lambda: tf.meshgrid(np.ones(2), sparse="no"),
    "broadcast_arrays of incompatible shapes": lambda: tf.broadcast_arrays(np.ones(2), np.ones(3)),
    "diff with n=-1": lambda: tf.diff(np.ones(3), -1),
    "diff of a 0-d value": lambda: tf.diff(np.float64(1.0)),
    "diff with a misshapen append": lambda: tf.diff(np.ones((2, 3)), append=np.ones((3, 3))),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_a_tenferro_error_naming_the_function(name: str) -> None:
    function = name.split()[0]
    with pytest.raises(tf.TenferroError) as info:
        BAD[name]()
    assert function in str(info.value) or info.value.op == function, str(info.value)


def test_roll_with_an_empty_shift_or_axis_sequence_is_the_identity() -> None:
    x = np.arange(6.0).reshape(2, 3)
    for shift, axis in [(1, ()), ((), 0), ((), ())]:
        np.testing.assert_array_equal(_values(tf.roll(x, shift, axis)), np.roll(x, shift, axis))


@pytest.mark.parametrize("name", ["broadcast_arrays", "meshgrid"])
def test_argument_less_calls_give_an_empty_tuple(name: str) -> None:
    assert getattr(tf, name)() == ()


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacking_one_array_stacks_its_rows(name: str) -> None:
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(_values(getattr(tf, name)(x)), getattr(np, name)(x))


def test_repeat_of_a_scalar_along_axis_zero() -> None:
    np.testing.assert_array_equal(_values(tf.repeat(np.array(3.0), 2, axis=0)), [3.0, 3.0])


# ---------------------------------------------------------------------- numpy's spellings


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
def _call(draw: Any) -> tuple[str, Callable[..., Any], list[Any]]:
    """(description, call on a module (numpy or tenferro), arrays): a call whose
    arguments (numpy integers, 0-d and 1-d arrays, empty sequences) numpy may accept or
    refuse."""
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
    what, call, arrays_ = case
    try:
        with np.errstate(all="ignore"):
            expected = call(np, *arrays_)
    except Exception:
        with pytest.raises(tf.TenferroError):
            call(tf, *[tf.Tensor(a) for a in arrays_])
        return
    value = _values(call(tf, *[tf.Tensor(a) for a in arrays_]))
    assert value.dtype == np.asarray(expected).dtype, what
    np.testing.assert_array_equal(value, expected, err_msg=what)


# ---------------------------------------------------------------------- every route


ROUTES: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    # name: (function of one tensor, input shape)
    "diag_embed": (lambda x: tf.diag(x * x, 1), (3,)),
    "diag_extract": (lambda x: tf.diag(x * x, -1), (3, 4)),
    "diagflat": (lambda x: tf.diagflat(tf.sin(x), -2), (2, 2)),
    "roll": (lambda x: tf.roll(x * x, (1, -2), (0, 1)), (3, 4)),
    "roll_flat": (lambda x: tf.roll(x * x, 5), (3, 4)),
    "tile": (lambda x: tf.tile(x * x, (2, 1, 2)), (3, 2)),
    "repeat_counts": (lambda x: tf.repeat(x * x, [1, 0, 2], axis=0), (3, 2)),
    "repeat_flat": (lambda x: tf.repeat(x * x, 2), (3, 2)),
    "hstack": (lambda x: tf.hstack([x, x * x]), (3, 2)),
    "vstack": (lambda x: tf.vstack([x * x, x[0]]), (3, 2)),
    "dstack": (lambda x: tf.dstack([x, x * x]), (3, 2)),
    "column_stack": (lambda x: tf.column_stack([x[:, 0] * x[:, 1], x]), (3, 2)),
    "atleast_3d": (lambda x: tf.atleast_3d(x * x), (3, 2)),
    "broadcast_arrays": (lambda x: tf.broadcast_arrays(x * x, x[0:1]), (3, 2)),
    "meshgrid": (lambda x: tf.meshgrid(x[:, 0], x[:, 1] * x[:, 1]), (3, 2)),
    "meshgrid_sparse": (
        lambda x: tf.meshgrid(x[:, 0], x[:, 1], x[:2, 0] ** 2, sparse=True, indexing="ij"),
        (3, 2),
    ),
    "diff": (lambda x: tf.diff(x * x, 2, axis=0, prepend=x[:1], append=1.5), (3, 2)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_derivative_route_equals_finite_differences(name: str, dtype: Any) -> None:
    """Gradients and Hessian-vector products (second order, which the derivative
    checks above leave out) by every route of the tape and the transforms."""
    function, shape = ROUTES[name]
    check_every_derivative_route(name, function, shape, dtype)


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
}


@fuzz_settings(30)
@given(per_example_cases(sorted(BATCHED)))
def test_vmap_and_jit_equal_numpy_example_by_example(case: tuple[str, Any, str, bool]) -> None:
    name, dtype, mode, last = case
    function, reference, shape = BATCHED[name]
    check_per_example(name, function, reference, shape, dtype, mode, last)
