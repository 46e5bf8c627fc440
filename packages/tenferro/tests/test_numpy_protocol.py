"""Every numpy function and ufunc tenferro answers for tensors, generated from the
dispatch tables themselves (``numpy_api.supported_functions()`` / ``supported_ufuncs()``):
on random inputs, the numpy call on each tensor kind gives numpy's values and dtype, a
tensor of that kind, and the gradient through it equals the gradient of the tenferro call
(on the tape, in traced mode and under ``tf.grad``). A numpy function added to the
dispatch without a case here fails the coverage test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.surface import numpy_api
from tenferro.surface.numpy_api import _qualified_name

Make = Callable[[np.random.Generator], tuple[np.ndarray[Any, Any], ...]]


def matrix(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(0.5, 2.0, (3, 4)),)


def vector(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(0.5, 2.0, (4,)),)


def matrix_vector(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (*matrix(rng), *vector(rng))


def cube(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(0.5, 2.0, (2, 3, 4)),)


def square(rng: np.random.Generator, n: int = 3) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(-1.0, 1.0, (n, n)) + n * np.eye(n),)


def square_rhs(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (*square(rng), rng.uniform(-1.0, 1.0, (3, 2)))


def hermitian(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    a = rng.uniform(-1.0, 1.0, (3, 3)) + 1j * rng.uniform(-1.0, 1.0, (3, 3))
    return (a @ a.conj().T + np.eye(3),)


def complex_pair(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    a, b = (rng.uniform(-1.0, 1.0, (2, 4)) for _ in range(2))
    return (a + 1j * b, b - 2j * a)


def tensor_six(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    (a,) = square(rng, 6)
    return (a.reshape(6, 2, 3), rng.uniform(-1.0, 1.0, (6,)))


@dataclass(frozen=True)
class Case:
    make: Make
    numpy: Callable[..., Any]
    tenferro: Callable[..., Any]
    differentiable: bool = True
    compare_values: bool = True
    always_complex: bool = False
    """tenferro's result is complex whatever the data (``eig``: a dtype that does not
    depend on values, as in PyTorch), where numpy returns real arrays when it can."""


CASES: dict[str, Case] = {
    "numpy.sum": Case(
        matrix, lambda x: np.sum(x, axis=1, keepdims=True), lambda x: tf.sum(x, 1, True)
    ),
    "numpy.prod": Case(matrix, lambda x: np.prod(x, axis=0), lambda x: tf.prod(x, 0)),
    "numpy.mean": Case(matrix, lambda x: np.mean(x, axis=-1), lambda x: tf.mean(x, -1)),
    "numpy.var": Case(matrix, lambda x: np.var(x, ddof=1), lambda x: tf.var(x, ddof=1)),
    "numpy.std": Case(
        matrix, lambda x: np.std(x, axis=0, keepdims=True), lambda x: tf.std(x, 0, True)
    ),
    "numpy.max": Case(matrix, lambda x: np.max(x, axis=1), lambda x: tf.max(x, 1)),
    "numpy.amax": Case(matrix, lambda x: np.amax(x), tf.amax),
    "numpy.min": Case(matrix, lambda x: np.min(x, axis=0), lambda x: tf.min(x, 0)),
    "numpy.amin": Case(
        matrix, lambda x: np.amin(x, keepdims=True), lambda x: tf.amin(x, None, True)
    ),
    "numpy.all": Case(
        matrix, lambda x: np.all(x > 1.0, axis=0), lambda x: tf.all(x > 1.0, 0), False
    ),
    "numpy.any": Case(matrix, lambda x: np.any(x > 1.5), lambda x: tf.any(x > 1.5), False),
    "numpy.round": Case(matrix, lambda x: np.round(x * 3, 1), lambda x: tf.round(x * 3, 1)),
    "numpy.around": Case(matrix, lambda x: np.around(x * 3), lambda x: tf.round(x * 3)),
    "numpy.astype": Case(
        matrix, lambda x: np.astype(x, np.complex128), lambda x: tf.astype(x, tf.complex128)
    ),
    "numpy.broadcast_to": Case(
        vector, lambda v: np.broadcast_to(v, (3, 4)), lambda v: tf.broadcast_to(v, (3, 4))
    ),
    "numpy.clip": Case(matrix, lambda x: np.clip(x, 0.8, 1.5), lambda x: tf.clip(x, 0.8, 1.5)),
    "numpy.concatenate": Case(
        matrix,
        lambda x: np.concatenate([x, x * 2], axis=1),
        lambda x: tf.concatenate([x, x * 2], 1),
    ),
    "numpy.vstack": Case(
        matrix_vector, lambda x, v: np.vstack([x, v]), lambda x, v: tf.vstack([x, v])
    ),
    "numpy.hstack": Case(matrix, lambda x: np.hstack([x, 2 * x]), lambda x: tf.hstack([x, 2 * x])),
    "numpy.dstack": Case(matrix, lambda x: np.dstack([x, -x]), lambda x: tf.dstack([x, -x])),
    "numpy.column_stack": Case(
        matrix_vector,
        lambda x, v: np.column_stack([x.T, v]),
        lambda x, v: tf.column_stack([x.T, v]),
    ),
    "numpy.atleast_1d": Case(vector, lambda v: np.atleast_1d(v[0]), lambda v: tf.atleast_1d(v[0])),
    "numpy.atleast_2d": Case(
        matrix_vector, lambda x, v: np.atleast_2d(v, x), lambda x, v: tf.atleast_2d(v, x)
    ),
    "numpy.atleast_3d": Case(matrix, np.atleast_3d, tf.atleast_3d),
    "numpy.broadcast_arrays": Case(
        matrix_vector, np.broadcast_arrays, lambda x, v: tf.broadcast_arrays(x, v)
    ),
    "numpy.meshgrid": Case(
        matrix_vector,
        lambda x, v: np.meshgrid(x[0], v, indexing="ij"),
        lambda x, v: tf.meshgrid(x[0], v, indexing="ij"),
    ),
    "numpy.diag": Case(vector, lambda v: np.diag(v, -1), lambda v: tf.diag(v, -1)),
    "numpy.diagflat": Case(matrix, np.diagflat, tf.diagflat),
    "numpy.roll": Case(matrix, lambda x: np.roll(x, 2, axis=1), lambda x: tf.roll(x, 2, 1)),
    "numpy.tile": Case(matrix, lambda x: np.tile(x, (2, 1)), lambda x: tf.tile(x, (2, 1))),
    "numpy.repeat": Case(
        matrix, lambda x: np.repeat(x, [2, 0, 1], axis=0), lambda x: tf.repeat(x, [2, 0, 1], 0)
    ),
    "numpy.angle": Case(complex_pair, lambda a, b: np.angle(a * b), lambda a, b: tf.angle(a * b)),
    "numpy.stack": Case(matrix, lambda x: np.stack([x, x], axis=1), lambda x: tf.stack([x, x], 1)),
    "numpy.copy": Case(matrix, np.copy, lambda x: x),
    "numpy.diagonal": Case(matrix, lambda x: np.diagonal(x, 1), lambda x: tf.diagonal(x, 1)),
    "numpy.dot": Case(matrix_vector, np.dot, tf.dot),
    "numpy.vdot": Case(complex_pair, np.vdot, tf.vdot),
    "numpy.inner": Case(matrix, lambda x: np.inner(x, x), lambda x: tf.inner(x, x)),
    "numpy.outer": Case(vector, lambda v: np.outer(v, v), lambda v: tf.outer(v, v)),
    "numpy.tensordot": Case(
        matrix,
        lambda x: np.tensordot(x, x, axes=([0], [0])),
        lambda x: tf.tensordot(x, x, ([0], [0])),
    ),
    "numpy.einsum": Case(
        matrix_vector,
        lambda x, v: np.einsum("ij,j,kj->ik", x, v, x),
        lambda x, v: tf.einsum("ij,j,kj->ik", x, v, x),
    ),
    "numpy.empty_like": Case(  # numpy's values are whatever memory held
        matrix, lambda x: np.empty_like(x), tf.zeros_like, False, compare_values=False
    ),
    "numpy.zeros_like": Case(
        matrix, lambda x: np.zeros_like(x) + x, lambda x: tf.zeros_like(x) + x
    ),
    "numpy.ones_like": Case(matrix, lambda x: np.ones_like(x) * x, lambda x: tf.ones_like(x) * x),
    "numpy.full_like": Case(
        matrix, lambda x: np.full_like(x, 2.5) * x, lambda x: tf.full_like(x, 2.5) * x
    ),
    "numpy.expand_dims": Case(
        matrix, lambda x: np.expand_dims(x, 0), lambda x: tf.expand_dims(x, 0)
    ),
    "numpy.squeeze": Case(
        matrix,
        lambda x: np.squeeze(np.expand_dims(x, 1), axis=1),
        lambda x: tf.squeeze(tf.expand_dims(x, 1), 1),
    ),
    "numpy.flip": Case(matrix, lambda x: np.flip(x, axis=0), lambda x: tf.flip(x, 0)),
    "numpy.real": Case(complex_pair, lambda a, b: np.real(a * b), lambda a, b: tf.real(a * b)),
    "numpy.imag": Case(complex_pair, lambda a, b: np.imag(a * b), lambda a, b: tf.imag(a * b)),
    "numpy.matrix_transpose": Case(cube, np.matrix_transpose, lambda x: x.mT),
    "numpy.moveaxis": Case(cube, lambda x: np.moveaxis(x, 0, -1), lambda x: tf.moveaxis(x, 0, -1)),
    "numpy.swapaxes": Case(cube, lambda x: np.swapaxes(x, 0, 2), lambda x: tf.swapaxes(x, 0, 2)),
    "numpy.transpose": Case(
        cube, lambda x: np.transpose(x, (1, 0, 2)), lambda x: tf.transpose(x, (1, 0, 2))
    ),
    "numpy.pad": Case(
        matrix, lambda x: np.pad(x, ((1, 0), (0, 2))), lambda x: tf.pad(x, ((1, 0), (0, 2)))
    ),
    "numpy.ravel": Case(cube, np.ravel, tf.ravel),
    "numpy.reshape": Case(matrix, lambda x: np.reshape(x, (2, 6)), lambda x: tf.reshape(x, (2, 6))),
    "numpy.take": Case(
        matrix, lambda x: np.take(x, [0, 2], axis=1), lambda x: tf.take(x, np.array([0, 2]), 1)
    ),
    "numpy.trace": Case(square, np.trace, tf.trace),
    "numpy.tril": Case(square, lambda x: np.tril(x, -1), lambda x: tf.tril(x, -1)),
    "numpy.triu": Case(square, lambda x: np.triu(x, 1), lambda x: tf.triu(x, 1)),
    "numpy.where": Case(
        matrix, lambda x: np.where(x > 1.0, x, -x), lambda x: tf.where(x > 1.0, x, -x)
    ),
    # numerics: numpy's names, run as tenferro's function of the same name
    "numpy.argmax": Case(matrix, lambda x: np.argmax(x, axis=1), lambda x: tf.argmax(x, 1), False),
    "numpy.argmin": Case(matrix, np.argmin, tf.argmin, False),
    "numpy.sort": Case(matrix, lambda x: np.sort(x, axis=0), lambda x: tf.sort(x, 0)),
    "numpy.cumsum": Case(matrix, lambda x: np.cumsum(x, axis=1), lambda x: tf.cumsum(x, 1)),
    "numpy.diff": Case(matrix, lambda x: np.diff(x, 2), lambda x: tf.diff(x, 2)),
    "numpy.cumprod": Case(matrix, lambda x: np.cumprod(x, axis=0), lambda x: tf.cumprod(x, 0)),
    "numpy.kron": Case(matrix_vector, np.kron, tf.kron),
    "numpy.cross": Case(
        matrix, lambda x: np.cross(x[:, :3], x[::-1, 1:]), lambda x: tf.cross(x[:, :3], x[::-1, 1:])
    ),
    "numpy.linalg.cross": Case(
        matrix,
        lambda x: np.linalg.cross(x[:, :3], x[::-1, 1:]),
        lambda x: tf.cross(x[:, :3], x[::-1, 1:]),
    ),
    "numpy.split": Case(
        matrix, lambda x: tuple(np.split(x, 2, axis=1)), lambda x: tuple(tf.split(x, 2, 1))
    ),
    "numpy.nansum": Case(matrix, lambda x: np.nansum(x, axis=0), lambda x: tf.nansum(x, 0)),
    "numpy.nanmean": Case(
        matrix, lambda x: np.nanmean(x, keepdims=True), lambda x: tf.nanmean(x, None, True)
    ),
    # metadata answers (Python values, not tensors)
    "numpy.shape": Case(cube, np.shape, lambda x: x.shape, False),
    "numpy.ndim": Case(cube, np.ndim, lambda x: x.ndim, False),
    "numpy.size": Case(cube, lambda x: np.size(x, 1), lambda x: x.shape[1], False),
    "numpy.iscomplexobj": Case(
        complex_pair, lambda a, b: np.iscomplexobj(a), lambda a, b: True, False
    ),
    "numpy.isrealobj": Case(matrix, np.isrealobj, lambda x: True, False),
    # numpy.linalg
    "numpy.linalg.cholesky": Case(hermitian, np.linalg.cholesky, tf.linalg.cholesky),
    "numpy.linalg.cond": Case(square, np.linalg.cond, tf.linalg.cond),
    "numpy.linalg.det": Case(square, np.linalg.det, tf.linalg.det),
    "numpy.linalg.slogdet": Case(square, np.linalg.slogdet, tf.linalg.slogdet),
    "numpy.linalg.diagonal": Case(
        cube,
        lambda x: np.linalg.diagonal(x, offset=1),
        lambda x: tf.diagonal(x, 1, -2, -1),
    ),
    "numpy.linalg.trace": Case(
        cube, lambda x: np.linalg.trace(x, offset=-1), lambda x: tf.trace(x, -1, -2, -1)
    ),
    "numpy.linalg.eig": Case(square, np.linalg.eig, tf.linalg.eig, always_complex=True),
    "numpy.linalg.eigvals": Case(square, np.linalg.eigvals, tf.linalg.eigvals, always_complex=True),
    "numpy.linalg.eigh": Case(hermitian, np.linalg.eigh, tf.linalg.eigh),
    "numpy.linalg.eigvalsh": Case(
        hermitian, lambda h: np.linalg.eigvalsh(h, UPLO="U"), lambda h: tf.linalg.eigvalsh(h, "U")
    ),
    "numpy.linalg.inv": Case(square, np.linalg.inv, tf.linalg.inv),
    "numpy.linalg.lstsq": Case(
        matrix,
        lambda x: np.linalg.lstsq(x.T, x.T[:, 0])[0],
        lambda x: tf.linalg.lstsq(x.T, x.T[:, 0])[0],
    ),
    "numpy.linalg.matrix_rank": Case(
        matrix, np.linalg.matrix_rank, tf.linalg.matrix_rank, differentiable=False
    ),
    "numpy.linalg.pinv": Case(matrix, np.linalg.pinv, tf.linalg.pinv),
    "numpy.linalg.solve": Case(square_rhs, np.linalg.solve, tf.linalg.solve),
    "numpy.linalg.matmul": Case(matrix, lambda x: np.linalg.matmul(x, x.T), lambda x: x @ x.T),
    "numpy.linalg.outer": Case(vector, lambda v: np.linalg.outer(v, v), lambda v: tf.outer(v, v)),
    "numpy.linalg.vecdot": Case(
        matrix, lambda x: np.linalg.vecdot(x, x, axis=0), lambda x: tf.vecdot(x, x, 0)
    ),
    "numpy.linalg.tensordot": Case(
        matrix,
        lambda x: np.linalg.tensordot(x, x, axes=([1], [1])),
        lambda x: tf.tensordot(x, x, ([1], [1])),
    ),
    "numpy.linalg.matrix_transpose": Case(cube, np.linalg.matrix_transpose, lambda x: x.mT),
    "numpy.linalg.matrix_power": Case(
        square, lambda x: np.linalg.matrix_power(x, 3), lambda x: tf.linalg.matrix_power(x, 3)
    ),
    "numpy.linalg.multi_dot": Case(
        matrix,
        lambda x: np.linalg.multi_dot([x, x.T, x]),
        lambda x: tf.linalg.multi_dot([x, x.T, x]),
    ),
    "numpy.linalg.norm": Case(
        matrix, lambda x: np.linalg.norm(x, axis=1), lambda x: tf.linalg.norm(x, axis=1)
    ),
    "numpy.linalg.vector_norm": Case(
        matrix,
        lambda x: np.linalg.vector_norm(x, ord=3, axis=0),
        lambda x: tf.linalg.vector_norm(x, 3, 0),
    ),
    "numpy.linalg.matrix_norm": Case(
        cube,
        lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True),
        lambda x: tf.linalg.matrix_norm(x, "nuc", keepdims=True),
    ),
    "numpy.linalg.qr": Case(matrix, lambda x: np.linalg.qr(x.T), lambda x: tf.linalg.qr(x.T)),
    "numpy.linalg.svd": Case(
        matrix,
        lambda x: np.linalg.svd(x, full_matrices=False),
        lambda x: tf.linalg.svd(x, full_matrices=False),
    ),
    "numpy.linalg.svd[compute_uv=False]": Case(
        matrix, lambda x: np.linalg.svd(x, compute_uv=False), tf.linalg.svdvals
    ),
    "numpy.linalg.svdvals": Case(matrix, np.linalg.svdvals, tf.linalg.svdvals),
    "numpy.linalg.tensorinv": Case(
        tensor_six,
        lambda a, b: np.linalg.tensorinv(a, ind=1),
        lambda a, b: tf.linalg.tensorinv(a, ind=1),
    ),
    "numpy.linalg.tensorsolve": Case(tensor_six, np.linalg.tensorsolve, tf.linalg.tensorsolve),
}

BOOLEAN_UFUNCS = {"logical_and", "logical_or", "logical_xor", "logical_not"}
BOOLEAN_RESULTS = {
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "isnan",
    "isinf",
    "isfinite",
}


def unit_matrix(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(-0.9, 0.9, (3, 4)),)


def large_matrix(rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    return (rng.uniform(1.5, 3.0, (3, 4)),)


DOMAINS = {"arcsin": unit_matrix, "arccos": unit_matrix, "arctanh": unit_matrix}
"""Inputs inside the real domain of ufuncs defined on part of the line."""
DOMAINS["arccosh"] = large_matrix


def _ufunc_case(name: str) -> Case:
    ufunc = getattr(np, name)
    function = getattr(tf, {"absolute": "abs", "conjugate": "conj"}.get(name, name))
    if name in ("matmul", "vecdot"):
        return Case(
            matrix,
            lambda x: ufunc(x, x.T if name == "matmul" else x),
            lambda x: function(x, x.T if name == "matmul" else x),
        )
    if name in BOOLEAN_UFUNCS:
        if ufunc.nin == 1:
            return Case(matrix, lambda x: ufunc(x > 1.0), lambda x: function(x > 1.0), False)
        return Case(
            matrix,
            lambda x: ufunc(x > 1.0, x < 1.5),
            lambda x: function(x > 1.0, x < 1.5),
            False,
        )
    differentiable = name not in BOOLEAN_RESULTS
    if ufunc.nin == 1:
        return Case(DOMAINS.get(name, matrix), ufunc, function, differentiable)
    return Case(
        matrix_vector, ufunc, function, differentiable
    )  # broadcasting a (4,) against a (3, 4)


UFUNC_CASES = {f"numpy.{name}": _ufunc_case(name) for name in numpy_api.supported_ufuncs()}


def _key(name: str) -> str:
    return name.split("[")[0]


def test_every_supported_numpy_function_has_a_case():
    supported = {_qualified_name(f) for f in numpy_api.supported_functions()}
    assert sorted(supported - {_key(k) for k in CASES}) == []
    assert sorted({_key(k) for k in CASES} - supported) == []
    assert "numpy.exp" in UFUNC_CASES


def test_every_numpy_linalg_function_runs_as_a_tenferro_function():
    public = [
        name
        for name in dir(np.linalg)
        if callable(getattr(np.linalg, name))
        and not isinstance(getattr(np.linalg, name), type)  # LinAlgError
        and getattr(getattr(np.linalg, name), "__module__", "") == "numpy.linalg"
        and name != "test"  # numpy's test runner
    ]
    supported = {_qualified_name(f) for f in numpy_api.supported_functions()}
    assert (
        sorted(f"numpy.linalg.{name}" for name in public if f"numpy.linalg.{name}" not in supported)
        == []
    )


def _kinds(data: np.ndarray[Any, Any], tracked: bool) -> dict[str, Any]:
    return {
        "Tensor": tf.Tensor(data),
        "EagerTensor": tf.EagerTensor(data, requires_grad=tracked and data.dtype.kind in "fc"),
        "TracedTensor": tf.traced(data),
    }


def _leaves(result: Any) -> list[Any]:
    return list(result) if isinstance(result, tuple) else [result]


def _value(result: Any) -> Any:
    if isinstance(result, tf.TracedTensor):
        return np.asarray(result.eval())
    if isinstance(result, tf.Tensor):
        return np.asarray(result)
    return result


ALL_CASES = {**CASES, **UFUNC_CASES}


@pytest.mark.parametrize("name", sorted(ALL_CASES))
@fuzz_settings(3)
@given(seed=st.integers(0, 2**32 - 1))
def test_numpy_call_on_tensors_gives_numpys_values_on_each_kind(name, seed):
    case = ALL_CASES[name]
    inputs = case.make(np.random.default_rng(seed))
    expected = _leaves(case.numpy(*inputs))
    for kind in ("Tensor", "EagerTensor", "TracedTensor"):
        tensors = [_kinds(x, tracked=True)[kind] for x in inputs]
        results = _leaves(case.numpy(*tensors))
        assert len(results) == len(expected)
        for result, reference in zip(results, expected, strict=True):
            if isinstance(reference, np.ndarray | np.generic):
                assert type(result) is type(tensors[0]), (kind, type(result))
                got = _value(result)
                wanted = np.asarray(reference).dtype
                if case.always_complex:
                    wanted = np.result_type(wanted, np.complex64)
                assert got.dtype == wanted, (kind, got.dtype)
                assert got.shape == np.shape(reference)
                if case.compare_values:
                    np.testing.assert_allclose(got, reference, rtol=1e-10, atol=1e-12)
            else:
                assert result == reference, (kind, result, reference)


ROWS_CALLS: dict[str, Callable[[Any], Any]] = {
    "concatenate": lambda a: np.concatenate(a, axis=-1),
    "concatenate flat": lambda a: np.concatenate(a, axis=None),
    "concatenate float32": lambda a: np.concatenate(a, dtype=np.float32),
    "stack": lambda a: np.stack(a, axis=1),
    "stack complex": lambda a: np.stack(a, dtype=np.complex128),
    "hstack": np.hstack,
    "vstack float32": lambda a: np.vstack(a, dtype=np.float32),
    "dstack": np.dstack,
    "column_stack": np.column_stack,
}


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
@pytest.mark.parametrize("name", sorted(ROWS_CALLS))
def test_a_tensor_given_to_numpys_joining_functions_is_the_sequence_of_its_rows(
    name: str, kind: str
) -> None:
    """As numpy reads an array there: the values, dtype and kind of numpy's result on the
    rows, and the gradient through the call that of the rows joined by hand."""
    call = ROWS_CALLS[name]
    x = np.arange(24.0).reshape(2, 3, 4) / 7
    tensor = _kinds(x, tracked=True)[kind]
    result = call(tensor)
    assert type(result) is type(tensor)
    expected = call(x)
    got = _value(result)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    weights = np.cos(np.arange(expected.size)).reshape(expected.shape)
    grad = tf.grad(lambda v: tf.sum(tf.real(call(v) * weights)))(x)
    by_hand = tf.grad(lambda v: tf.sum(tf.real(call([v[0], v[1]]) * weights)))(x)
    np.testing.assert_allclose(np.asarray(grad), np.asarray(by_hand), rtol=1e-15)


def _loss(
    call: Callable[..., Any], weights: list[np.ndarray[Any, Any]], rest: tuple[Any, ...]
) -> Callable[[Any], Any]:
    def loss(x: Any) -> Any:
        total = 0.0
        for output, weight in zip(_leaves(call(x, *rest)), weights, strict=True):
            if output.dtype.kind in "fc":
                total = total + tf.sum(tf.real(output * weight))
        return total

    return loss


DIFFERENTIABLE = sorted(name for name, case in ALL_CASES.items() if case.differentiable)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@fuzz_settings(2)
@given(seed=st.integers(0, 2**32 - 1))
def test_gradient_through_a_numpy_call_is_the_tenferro_calls(name, seed):
    case = ALL_CASES[name]
    rng = np.random.default_rng(seed)
    first, *others = case.make(rng)
    rest = tuple(others)
    weights = [rng.uniform(-1.0, 1.0, np.shape(o)) for o in _leaves(case.numpy(first, *rest))]
    reference = np.asarray(tf.grad(_loss(case.tenferro, weights, rest))(first))
    leaf = tf.EagerTensor(first, requires_grad=True)
    _loss(case.numpy, weights, rest)(leaf).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), reference, rtol=1e-9, atol=1e-12)
    traced = np.asarray(tf.grad(_loss(case.numpy, weights, rest))(first))
    np.testing.assert_allclose(traced, reference, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_ndarray_operators_in_both_orders_keep_the_kind(kind):
    a = np.arange(1.0, 5.0)
    x = _kinds(a * 0.5, tracked=True)[kind]
    for result, expected in (
        (a + x, a + a * 0.5),
        (x + a, a * 0.5 + a),
        (a * x, a * a * 0.5),
        (a - x, a - a * 0.5),
        (x / a, a * 0.5 / a),
        (np.add(a, x), a + a * 0.5),
        (a @ x, a @ (a * 0.5)),
    ):
        assert type(result) is type(x)
        np.testing.assert_allclose(_value(result), expected)


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (lambda x: np.sum(x, out=np.zeros(())), ["numpy.sum", "out="]),
        (lambda x: np.exp(x, out=np.zeros((3, 4))), ["numpy.exp", "out="]),
        (lambda x: np.exp(x, where=np.ones((3, 4), bool)), ["numpy.exp", "where"]),
        (lambda x: np.linalg.multi_dot([x, x.T], out=np.zeros((3, 3))), ["multi_dot", "out="]),
        (lambda x: np.linalg.svd(x, hermitian=True), ["numpy.linalg.svd", "hermitian"]),
        (lambda x: np.linalg.pinv(x, rcond=0.1, rtol=0.1), ["numpy.linalg.pinv", "not both"]),
        (lambda x: np.linalg.eigh(x[:3, :3], UPLO="X"), ["eigh", "UPLO"]),
        (
            lambda x: (
                np.cumsum(x, out=np.zeros((3, 4)))
                if hasattr(tf, "cumsum")
                else np.sum(x, out=np.zeros(()))
            ),
            ["out="],
        ),
        (lambda x: np.spacing(x), ["numpy.spacing", "no counterpart"]),
    ],
)
@pytest.mark.parametrize("kind", ["Tensor", "EagerTensor", "TracedTensor"])
def test_unsupported_numpy_options_raise_naming_the_numpy_function(call, fragments, kind):
    x = _kinds(np.random.default_rng(1).uniform(0.5, 2.0, (3, 4)), tracked=True)[kind]
    with pytest.raises(tf.TenferroError) as info:
        call(x)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_ufunc_keyword_dtype_and_reductions():
    x = tf.tensor(np.array([[0.5, 1.0], [2.0, 3.0]]), requires_grad=True)
    y = np.exp(x, dtype=np.float32)
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y), np.exp(np.asarray(x)).astype(np.float32))
    total = np.add.reduce(np.multiply(x, x), axis=0, keepdims=True)
    assert total.shape == (1, 2)
    np.sum(total).backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.asarray(x))
