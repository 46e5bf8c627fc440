"""A caller's numpy arrays are read without a copy, and writing into them afterwards never
changes a result, a later backward pass or a later call of a derivative function.

Operations consume a numpy argument uncopied (a borrowed operand); what would keep a view
of it beyond the call copies it then: results that alias an operand (reshape, transpose,
slices, ``real`` of real data, identity shortcuts, ``asarray`` itself), tapes and traces.
Each test writes into every argument after the call and compares the results with the
values they had."""

from __future__ import annotations

import inspect
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.concrete import Borrowed


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _snapshot(result: Any) -> list[np.ndarray[Any, Any]]:
    return [np.array(leaf, copy=True) for leaf in _leaves(result) if isinstance(leaf, tf.Tensor)]


def _scribble(arrays: list[np.ndarray[Any, Any]]) -> None:
    """Write new values into every argument (as a caller reusing its buffers does)."""
    for array in arrays:
        if array.dtype.kind == "c":
            array[...] = 7.5 - 2.5j
        else:
            array[...] = 7 if array.dtype.kind in "biu" else 7.5


def _assert_unchanged(result: Any, before: list[np.ndarray[Any, Any]]) -> None:
    after = [leaf for leaf in _leaves(result) if isinstance(leaf, tf.Tensor)]
    assert len(after) == len(before)
    for tensor, expected in zip(after, before, strict=True):
        assert type(tensor) is tf.Tensor, "a borrowed operand escaped as a result"
        np.testing.assert_array_equal(np.asarray(tensor), expected)


def _check(run: Callable[..., Any], *arrays: np.ndarray[Any, Any]) -> Any:
    """``run(*arrays)``; then the arguments are overwritten and its results must not move."""
    result = run(*arrays)
    before = _snapshot(result)
    assert before, "the operation returned no tensor to check"
    _scribble(list(arrays))
    _assert_unchanged(result, before)
    return result


def _matrix(dtype: Any = np.float64) -> np.ndarray[Any, Any]:
    values = np.eye(3) + 0.1 * np.arange(9.0).reshape(3, 3)
    if np.dtype(dtype).kind == "c":
        values = values + 0.5j * values.T
    return values.astype(dtype)


ALIASING: dict[str, Callable[..., Any]] = {
    "reshape": lambda x: tf.reshape(x, (9,)),
    "reshape to the same shape": lambda x: tf.reshape(x, (3, 3)),
    "transpose": tf.transpose,
    "identity permutation": lambda x: tf.permute_dims(x, (0, 1)),
    "asarray": tf.asarray,
    "asarray of the same dtype": lambda x: tf.asarray(x, dtype=x.dtype),
    "getitem on the result of asarray": lambda x: tf.asarray(x)[1:],
    "a basic slice": lambda x: tf.take(x, 1, axis=0),
    "squeeze without unit axes": tf.squeeze,
    "expand_dims": lambda x: tf.expand_dims(x, 0),
    "broadcast_to the same shape": lambda x: tf.broadcast_to(x, (3, 3)),
    "broadcast_to a larger shape": lambda x: tf.broadcast_to(x, (2, 3, 3)),
    "moveaxis": lambda x: tf.moveaxis(x, 0, 1),
    "diagonal": tf.diagonal,
    "real": tf.real,
    "conj": tf.conj,
    "positive": tf.positive,
    "astype to the same dtype": lambda x: tf.astype(x, x.dtype),
    "ravel": tf.ravel,
    "atleast_2d": tf.atleast_2d,
    "split": lambda x: tf.split(x, 3),
    "einsum transpose": lambda x: tf.einsum("ij->ji", x),
    "einsum identity": lambda x: tf.einsum("ij->ij", x),
    "einsum diagonal": lambda x: tf.einsum("ii->i", x),
    "jit of the identity": tf.jit(lambda x: x),
    "jit of a reshape": tf.jit(lambda x: tf.reshape(x, (9,))),
    "jvp of the identity": lambda x: tf.jvp(lambda y: y, (x,), (x,)),
}

NOT_ALIASING: dict[str, Callable[..., Any]] = {
    "add": lambda x: tf.add(x, x),
    "a tensor plus an array": lambda x: tf.ones((3, 3), dtype=x.dtype) + x,
    "exp": tf.exp,
    "matmul": lambda x: tf.matmul(x, x),
    "sum": tf.sum,
    "einsum contraction": lambda x: tf.einsum("ij,jk->ik", x, x),
    "svd": tf.linalg.svd,
    "grad": tf.grad(lambda x: tf.sum(tf.real(x * tf.conj(x)))),
    "value_and_grad": tf.value_and_grad(lambda x: tf.sum(tf.real(x * tf.conj(x)))),
}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("name", sorted({**ALIASING, **NOT_ALIASING}))
def test_writing_into_an_argument_never_changes_a_result(name: str, dtype: Any) -> None:
    run = {**ALIASING, **NOT_ALIASING}[name]
    _check(run, _matrix(dtype))


def _public_functions() -> list[tuple[str, Callable[..., Any]]]:
    found = []
    for module, prefix in ((tf, "tf."), (tf.linalg, "tf.linalg.")):
        for name in sorted(dir(module)):
            value = getattr(module, name)
            if name.startswith("_") or inspect.isclass(value) or inspect.ismodule(value):
                continue
            if callable(value):
                found.append((prefix + name, value))
    return found


ARGUMENTS: list[Callable[[], list[np.ndarray[Any, Any]]]] = [
    lambda: [_matrix()],
    lambda: [_matrix(np.complex128)],
    lambda: [np.arange(3.0)],
    lambda: [np.arange(4, dtype=np.int64).reshape(2, 2)],
    lambda: [np.array(2.0)],
    lambda: [np.ones((1, 3, 1))],
    lambda: [_matrix(), np.arange(3.0)],
    lambda: [_matrix(), _matrix()],
]


def test_no_public_function_returns_a_view_of_a_numpy_argument() -> None:
    """Every public function of ``tf`` and ``tf.linalg``, called on numpy arrays of
    several dtypes and ranks: whatever it accepts, its results survive the caller
    overwriting the arguments, and no borrowed operand is returned."""
    checked = set()
    failures = []
    for name, function in _public_functions():
        for make in ARGUMENTS:
            arrays = make()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    result = function(*arrays)
                except Exception:
                    continue
            leaves = [leaf for leaf in _leaves(result) if isinstance(leaf, tf.Tensor)]
            if not leaves:
                continue
            checked.add(name)
            if any(type(leaf) is Borrowed for leaf in leaves):
                failures.append(f"{name}: returned a borrowed operand")
                continue
            before = [np.array(leaf, copy=True) for leaf in leaves]
            _scribble(arrays)
            for leaf, expected in zip(leaves, before, strict=True):
                if not np.array_equal(np.asarray(leaf), expected, equal_nan=True):
                    failures.append(f"{name}: its result changed with its argument")
                    break
    assert not failures, failures
    assert len(checked) > 150, sorted(checked)  # the sweep really ran the surface


def test_a_tape_keeps_its_own_copy_of_a_numpy_constant() -> None:
    x = _matrix()
    expected = x.copy()
    tape = tf.Tape()
    w = tape.track(tf.asarray(np.ones((3, 3))))
    loss = tf.sum(w * x)
    _scribble([x])
    (gradient,) = tape.grad(loss, [w])
    np.testing.assert_array_equal(np.asarray(gradient), expected)


def test_a_vjp_function_keeps_the_primals_it_was_made_with() -> None:
    x, y = _matrix(), _matrix() + 1.0
    expected = y.copy()
    _, vjp_fn = tf.vjp(lambda a, b: a * b, x, y)
    _scribble([x, y])
    ct = np.ones((3, 3))
    grad_x, _ = vjp_fn(ct)
    ct[...] = 3.0
    np.testing.assert_array_equal(np.asarray(grad_x), expected)


def test_a_vjp_of_the_identity_does_not_return_the_cotangent_buffer() -> None:
    _, vjp_fn = tf.vjp(lambda a: a, _matrix())
    ct = np.ones((3, 3))
    (grad_x,) = vjp_fn(ct)
    ct[...] = 3.0
    np.testing.assert_array_equal(np.asarray(grad_x), np.ones((3, 3)))


def test_a_linearized_function_keeps_the_primals_it_was_made_with() -> None:
    x = _matrix()
    expected = 2 * x
    _, jvp_fn = tf.linearize(lambda a: a * a, x)
    _scribble([x])
    np.testing.assert_allclose(np.asarray(jvp_fn(np.ones((3, 3)))), expected)


def test_a_gradient_of_a_closure_over_a_numpy_array_is_not_a_view_of_it() -> None:
    weights = _matrix()
    expected = weights.copy()
    gradient = tf.grad(lambda x: tf.sum(x * weights))(np.ones((3, 3)))
    _scribble([weights])
    np.testing.assert_array_equal(np.asarray(gradient), expected)


_FULL = tf.ones((500, 500))
_ROW = tf.ones(500)


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(tf.sum, id="sum"),
        pytest.param(lambda x: tf.einsum("ij,ij->", x, x), id="einsum"),
        pytest.param(lambda x: tf.exp(x)[0, 0], id="exp then index"),
        pytest.param(lambda x: _FULL + x, id="tensor plus array"),
        pytest.param(lambda x: x * _FULL, id="array times tensor"),
        pytest.param(lambda x: tf.maximum(_FULL, x), id="maximum of tensor and array"),
        pytest.param(lambda x: _ROW - x, id="broadcast tensor minus array"),
        pytest.param(lambda x: tf.where(_FULL > 0, x, _FULL), id="where"),
    ],
)
def test_an_operation_on_a_numpy_argument_does_not_copy_it(run: Callable[..., Any]) -> None:
    """An operation whose result does not alias its argument reads the caller's array in
    place: its peak allocation stays far below the argument's size (a copy would be
    all of it)."""
    x = np.ones((500, 500))
    run(x)  # plans, programs and caches made outside the measured call
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        run(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if run is tf.sum:
        assert peak < x.nbytes // 4, peak
    else:
        assert peak < x.nbytes * 1.5, peak  # one result (and a mask for where), no copy of x


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda p: p, id="the placeholder itself"),
        pytest.param(lambda p: tf.reshape(p, (3, 1)), id="a reshape"),
        pytest.param(lambda p: p * 2.0, id="a product"),
    ],
)
def test_a_placeholder_bound_to_a_numpy_array_gives_results_that_do_not_view_it(
    build: Callable[[Any], Any],
) -> None:
    placeholder = tf.placeholder((3,), np.float64)
    x = np.arange(3.0)
    _check(lambda a: build(placeholder).eval({placeholder: a}), x)
