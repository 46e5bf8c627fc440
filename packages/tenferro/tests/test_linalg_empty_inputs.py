"""Every tf.linalg function on empty and trivial inputs of a tracked tensor.

Results computed without reading the input's entries (the pseudo-inverse of an empty
matrix, ``matrix_power(x, 0)``'s identity) must stay results of the input: a fresh
constant is detached from the tape, and ``backward()`` refused it while ``tf.grad`` and
PyTorch give zeros (the s21 review). For each function and empty shape (no rows, no
columns, no matrices in a batch) and each dtype: values are numpy's, and the gradient
of a loss of every differentiable output is zeros of the input's shape in the eager
tape (``backward()`` and ``tape.grad``) and in ``tf.grad``; where numpy raises (the
smallest of no singular values, the condition number of an empty matrix), a tenferro
error names the function, never an internal primitive; second derivatives (the tape's
``create_graph``, ``grad`` of ``grad``) are zeros too. A completeness gate keeps the
table covering ``tf.linalg``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sampling import first_value, sample_product

import tenferro as tf
from tenferro.algebra import adjoint

L = tf.linalg
SHAPES = [(0, 0), (0, 3), (3, 0), (2, 0, 0), (2, 0, 3), (0, 3, 3), (0, 2, 4)]
DTYPES = ["float64", "complex128"]


def _rhs(x: Any) -> np.ndarray[Any, Any]:
    return np.ones((*x.shape[:-1], 2))


def _square(shape: tuple[int, ...]) -> bool:
    return shape[-1] == shape[-2]


def _matrix(shape: tuple[int, ...]) -> bool:
    return len(shape) == 2


Function = Callable[[Any], Any]
TABLE: dict[str, tuple[Function, Callable[[tuple[int, ...]], bool]]] = {
    "svd": (lambda x: L.svd(x, full_matrices=False), lambda s: True),
    "svd full": (L.svd, _square),
    "svdvals": (L.svdvals, lambda s: True),
    "truncated_svd": (lambda x: _truncated_reconstruction(x), lambda s: True),
    "eigh": (L.eigh, _square),
    "eigvalsh": (L.eigvalsh, _square),
    "eig": (L.eig, _square),
    "eigvals": (L.eigvals, _square),
    "pinv": (L.pinv, lambda s: True),
    "pinv hermitian": (lambda x: L.pinv(x, hermitian=True), _square),
    "lstsq": (lambda x: L.lstsq(x, _rhs(x)).solution, lambda s: True),
    "lstsq singular values": (lambda x: L.lstsq(x, _rhs(x)).singular_values, lambda s: True),
    "lstsq residuals": (lambda x: L.lstsq(x, _rhs(x)).residuals, lambda s: True),
    "qr": (L.qr, lambda s: True),
    "lu": (lambda x: L.lu(x)[1:], lambda s: True),
    "lu_factor": (lambda x: L.lu_factor(x).LU, lambda s: True),
    "lu_solve": (lambda x: L.lu_solve(L.lu_factor(x), _rhs(x)), _square),
    "cholesky": (L.cholesky, _square),
    "inv": (L.inv, _square),
    "det": (L.det, _square),
    "slogdet": (lambda x: L.slogdet(x).logabsdet, _square),
    "solve": (lambda x: L.solve(x, _rhs(x)), _square),
    "solve_triangular": (lambda x: L.solve_triangular(x, _rhs(x), upper=False), _square),
    "matrix_exp": (L.matrix_exp, _square),
    "matrix_power 0": (lambda x: L.matrix_power(x, 0), _square),
    "matrix_power 1": (lambda x: L.matrix_power(x, 1), _square),
    "matrix_power 3": (lambda x: L.matrix_power(x, 3), _square),
    "matrix_power -2": (lambda x: L.matrix_power(x, -2), _square),
    "multi_dot": (lambda x: L.multi_dot([x, np.ones((x.shape[-1], 2))]), _matrix),
    "tensorinv": (lambda x: L.tensorinv(x, ind=1), lambda s: _matrix(s) and _square(s)),
    "tensorsolve": (
        lambda x: L.tensorsolve(x, np.ones(x.shape[:1])),
        lambda s: _matrix(s) and _square(s),
    ),
    "norm": (L.norm, lambda s: True),
    "vector_norm": (L.vector_norm, lambda s: True),
    **{
        f"matrix_norm {order}": (lambda x, o=order: L.matrix_norm(x, o), lambda s: True)
        for order in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)
    },
    "cond": (L.cond, lambda s: True),
    "cond 1": (lambda x: L.cond(x, 1), _square),
    **{
        solver: (
            lambda x, name=solver: getattr(L, name)(x, np.ones(x.shape[-1]))[0],
            lambda s: _matrix(s) and _square(s),
        )
        for solver in ("cg", "gmres", "bicgstab")
    },
}
"""Each function, as a map from the tracked input to its differentiable outputs (``lu``
without its permutation, ``lu_factor`` without pivots, ``slogdet``'s log), and which
shapes it takes."""

NUMPY: dict[str, Callable[[Any], Any]] = {
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
    "eigvalsh": np.linalg.eigvalsh,
    "pinv": np.linalg.pinv,
    "pinv hermitian": lambda a: np.linalg.pinv(a, hermitian=True),
    "lstsq": lambda a: np.zeros((*a.shape[:-2], a.shape[-1], 2), a.dtype),
    "inv": np.linalg.inv,
    "det": np.linalg.det,
    "matrix_power 0": lambda a: np.linalg.matrix_power(a, 0),
    "matrix_power 3": lambda a: np.linalg.matrix_power(a, 3),
    "matrix_exp": lambda a: np.zeros(a.shape, a.dtype),
    "norm": np.linalg.norm,
    "vector_norm": np.linalg.vector_norm,
    **{
        f"matrix_norm {order}": lambda a, o=order: np.linalg.matrix_norm(a, ord=o)
        for order in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)
    },
    "cond": np.linalg.cond,
    "cond 1": lambda a: np.linalg.cond(a, 1),
    **{solver: lambda a: np.zeros(a.shape[-1], a.dtype) for solver in ("cg", "gmres", "bicgstab")},
}
"""numpy's value (or its refusal) for the functions where numpy has one on empties."""

EXEMPT = {
    "matrix_rank": "an integer (no derivative): test_linalg_least_squares checks empties",
    "eigsh": "k >= 1 eigenpairs of an operator of dimension 0 do not exist: refused below",
    "eigs": "k >= 1 eigenpairs of an operator of dimension 0 do not exist: refused below",
}


def _truncated_reconstruction(x: Any) -> Any:
    """The projections of ``x`` onto the kept singular vectors (traced, the kept extent
    is data-dependent: contractions over it give static shapes)."""
    u, _, vh = L.truncated_svd(x, max_rank=1)
    return tf.matmul(u, tf.matmul(adjoint(u), x)), tf.matmul(tf.matmul(x, adjoint(vh)), vh)


def _values(x: Any) -> Any:
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def _loss(function: Function) -> Function:
    """``Σ Re`` of every output (a real scalar)."""

    def loss(x: Any) -> Any:
        out = function(x)
        total: Any = None
        for o in out if isinstance(out, tuple) else (out,):
            term = tf.sum(tf.real(o) if o.dtype.kind == "c" else o)
            total = term if total is None else total + term
        return total

    return loss


def test_the_table_covers_tf_linalg() -> None:
    functions = {name for name in L.__all__ if not name[0].isupper()}
    covered = {name.split()[0] for name in TABLE} | set(EXEMPT)
    assert functions <= covered, f"untested on empty inputs: {sorted(functions - covered)}"


CASES = sample_product(
    (
        pytest.param(name, shape, dtype, id=f"{name}-{shape}-{dtype}")
        for name, (_, takes) in TABLE.items()
        for shape in SHAPES
        if takes(shape)
        for dtype in DTYPES
    ),
    per=first_value,
)


@pytest.mark.parametrize(("name", "shape", "dtype"), CASES)
def test_linalg_on_empty_inputs_of_a_tracked_tensor(
    name: str, shape: tuple[int, ...], dtype: str
) -> None:
    function, _ = TABLE[name]
    data = np.zeros(shape, dtype)
    reference = NUMPY.get(name)
    if reference is not None:
        try:
            expected = reference(data)
        except (ValueError, np.linalg.LinAlgError):  # numpy refuses: so do we, by name
            with pytest.raises(tf.TenferroError) as info:
                function(tf.Tensor(data))
            message = str(info.value)
            assert name.split()[0] in message
            assert "reduce_" not in message
            return
        got = _values(function(tf.Tensor(data)))
        assert got.shape == np.shape(expected)
        np.testing.assert_allclose(got, expected)
    _check_gradients(function, data)


@pytest.mark.parametrize("name", ["eigsh", "eigs"])
def test_eigensolvers_refuse_an_empty_operator_naming_k(name: str) -> None:
    with pytest.raises(tf.ParameterError, match=f"linalg.{name}: k must be between 1"):
        getattr(L, name)(tf.EagerTensor(np.zeros((0, 0)), requires_grad=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2])
def test_matrix_power_zero_keeps_the_identity_on_the_tape(n: int, dtype: str) -> None:
    data = (np.arange(n * n).reshape(n, n) + 1).astype(dtype)
    _check_gradients(lambda x: L.matrix_power(x, 0), data)
    np.testing.assert_array_equal(_values(L.matrix_power(tf.traced(data), 0)), np.eye(n))
    infinite = np.full((2, 2), np.inf, dtype)  # the entries are never read
    np.testing.assert_array_equal(_values(L.matrix_power(infinite, 0)), np.eye(2))


def _check_gradients(function: Function, data: np.ndarray[Any, Any]) -> None:
    """Zeros of ``data``'s shape from ``backward()``, ``tape.grad`` and ``tf.grad``, and
    second derivatives too: the tape's ``create_graph`` gradient differentiated again,
    and ``tf.grad`` of ``tf.grad``."""
    loss = _loss(function)
    zeros = np.zeros(data.shape, data.dtype)
    leaf = tf.EagerTensor(data, requires_grad=True)
    loss(leaf).backward()
    np.testing.assert_array_equal(_values(leaf.grad), zeros)
    assert _values(leaf.grad).dtype == data.dtype
    tape = tf.Tape()
    x = tape.track(data)
    np.testing.assert_array_equal(_values(tape.grad(loss(x), x)), zeros)
    np.testing.assert_array_equal(_values(tf.grad(loss)(data)), zeros)
    x = tape.track(data)
    first = tape.grad(loss(x), x, create_graph=True)
    second = tape.grad(tf.sum(tf.real(first)), x, allow_unused=True)
    if second is not None:  # a gradient independent of x: PyTorch's None
        np.testing.assert_array_equal(_values(second), zeros)
    traced = tf.grad(lambda y: tf.sum(tf.real(tf.grad(loss)(y))))(data)
    np.testing.assert_array_equal(_values(traced), zeros)
