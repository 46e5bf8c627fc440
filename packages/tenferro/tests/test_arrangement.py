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
from hypothesis import given, settings
from hypothesis import strategies as st
from tenferro_support import plain

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
    return plain(x)


def _same(actual: Any, expected: Any) -> None:
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected), (type(actual), type(expected))
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            _same(a, e)
        return
    got = plain(actual)
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


def _flip_updown(data: Any) -> Any:
    """numpy's own refusals (rank too low) included."""
    x = data.draw(arrays(0, 3))
    return np.flipud, tf.flipud, [x]


def _flip_leftright(data: Any) -> Any:
    x = data.draw(arrays(0, 3))
    return np.fliplr, tf.fliplr, [x]


def _rot90(data: Any) -> Any:
    """Any number of turns (negative too), axes in range, repeated or one beyond."""
    x = data.draw(arrays(0, 3))
    k = data.draw(st.integers(-5, 5))
    ndim = max(x.ndim, 1)
    axes = tuple(data.draw(st.lists(st.integers(-ndim - 1, ndim), min_size=2, max_size=2)))
    return (lambda a: np.rot90(a, k, axes)), (lambda a: tf.rot90(a, k, axes)), [x]


def _append(data: Any) -> Any:
    """Flattened (no axis) or along an axis, shapes that join or not."""
    x = data.draw(arrays(0, 3))
    axis = (
        None
        if x.ndim == 0 or data.draw(st.booleans())
        else data.draw(st.integers(-x.ndim, x.ndim - 1))
    )
    shape = list(x.shape)
    if axis is not None:
        shape[axis] = data.draw(st.integers(0, 3))
        if data.draw(st.booleans()):  # sometimes a shape that does not join
            shape = shape[1:]
    values = data.draw(arrays(0, 3)) if axis is None else np.ones(shape, x.dtype)
    return (lambda a, b: np.append(a, b, axis)), (lambda a, b: tf.append(a, b, axis)), [x, values]


GENERATORS: dict[str, Draw] = {
    "append": _append,
    "flipud": _flip_updown,
    "fliplr": _flip_leftright,
    "rot90": _rot90,
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
@settings(max_examples=30, deadline=None, derandomize=True)
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
    "append": (lambda a, b: tf.append(a, b, 0), [(2, 3), (1, 3)]),
    "append flat": (lambda a, b: tf.append(a, b), [(2, 3), (2,)]),
    "flipud": (lambda m: tf.flipud(m), [(3, 2)]),
    "fliplr": (lambda m: tf.fliplr(m), [(3, 2)]),
    "rot90": (lambda m: tf.rot90(m, -1, (2, 0)), [(2, 3, 2)]),
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
