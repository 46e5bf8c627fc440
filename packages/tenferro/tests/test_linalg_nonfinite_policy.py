"""One NaN/Inf policy across ``tf.linalg``: every function that factorizes a matrix raises
``LinAlgError`` ("holds NaN or Inf", naming the operation and the first failing batch
index) when that matrix holds NaN or Inf; right-hand sides and the arithmetic functions
carry NaN and Inf through as data. The table covers every public function of the module
(a new one fails the completeness test until it is classified)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf

Call = Callable[[Any], Any]

GOOD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])
ONES = np.ones((3, 3))

FACTORIZING: dict[str, Call] = {
    "cholesky": tf.linalg.cholesky,
    "cond": tf.linalg.cond,
    "det": tf.linalg.det,
    "eig": tf.linalg.eig,
    "eigh": tf.linalg.eigh,
    "eigvals": tf.linalg.eigvals,
    "eigvalsh": tf.linalg.eigvalsh,
    "inv": tf.linalg.inv,
    "lstsq": lambda a: tf.linalg.lstsq(a, ONES),
    "lu": tf.linalg.lu,
    "lu_factor": tf.linalg.lu_factor,
    "matrix_exp": tf.linalg.matrix_exp,
    "matrix_norm": lambda a: tf.linalg.matrix_norm(a, ord=2),
    "matrix_power": lambda a: tf.linalg.matrix_power(a, -2),
    "matrix_rank": tf.linalg.matrix_rank,
    "norm": lambda a: tf.linalg.norm(a, ord="nuc", axis=(-2, -1)),
    "pinv": tf.linalg.pinv,
    "qr": tf.linalg.qr,
    "slogdet": tf.linalg.slogdet,
    "solve": lambda a: tf.linalg.solve(a, ONES),
    "solve_triangular": lambda a: tf.linalg.solve_triangular(a, ONES, upper=True),
    "svd": tf.linalg.svd,
    "svdvals": tf.linalg.svdvals,
    "tensorinv": lambda a: tf.linalg.tensorinv(a, ind=1),
    "tensorsolve": lambda a: tf.linalg.tensorsolve(a, ONES[0]),
    "truncated_svd": lambda a: tf.linalg.truncated_svd(a, max_rank=2),
}
"""Functions given the non-finite matrix as the matrix they factorize."""

DATA: dict[str, Call] = {
    "cross": lambda a: tf.linalg.cross(a, ONES),
    "lu_solve": lambda a: tf.linalg.lu_solve(tf.linalg.lu_factor(GOOD), a),
    "lstsq": lambda a: tf.linalg.lstsq(GOOD, a).solution,
    "matrix_norm": lambda a: tf.linalg.matrix_norm(a, ord=1),
    "matrix_power": lambda a: tf.linalg.matrix_power(a, 2),
    "multi_dot": lambda a: tf.linalg.multi_dot([a, ONES, a]),
    "norm": tf.linalg.norm,
    "solve": lambda a: tf.linalg.solve(GOOD, a),
    "vector_norm": tf.linalg.vector_norm,
}
"""Functions given the non-finite matrix as data (a right-hand side, an arithmetic
operand): the result holds a non-finite value, no error."""


def _public_functions() -> set[str]:
    return {
        name
        for name in tf.linalg.__all__
        if callable(getattr(tf.linalg, name)) and not inspect.isclass(getattr(tf.linalg, name))
    }


ITERATIVE: dict[str, Call] = {
    "bicgstab": lambda a: tf.linalg.bicgstab(a, np.ones(a.shape[-1]))[0],
    "cg": lambda a: tf.linalg.cg(a, np.ones(a.shape[-1]))[0],
    "eigs": lambda a: tf.linalg.eigs(a, k=1)[0],
    "eigsh": lambda a: tf.linalg.eigsh(a, k=1)[0],
    "gmres": lambda a: tf.linalg.gmres(a, np.ones(a.shape[-1]))[0],
}
"""The iterative solvers: a non-finite matrix or right-hand side raises (an iteration
cannot converge on NaN), naming the operand."""


def test_every_public_linalg_function_is_classified() -> None:
    assert _public_functions() == set(FACTORIZING) | set(DATA) | set(ITERATIVE)


@pytest.mark.parametrize("name", sorted(ITERATIVE))
@pytest.mark.parametrize("where", ["matrix", "right-hand side"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_iterative_solvers_raise_on_non_finite_operands(
    name: str, where: str, value: float
) -> None:
    if where == "matrix":
        a, call = _poisoned(value, "float64", False), ITERATIVE[name]
    elif name in ("eigs", "eigsh"):
        a = GOOD
        start = np.ones(3)
        start[1] = value
        call = lambda m: getattr(tf.linalg, name)(m, k=1, v0=start)[0]  # noqa: E731
    else:
        a, rhs = GOOD, np.array([1.0, value, 1.0])
        call = lambda m: getattr(tf.linalg, name)(m, rhs)[0]  # noqa: E731
    for run in (call, tf.jit(call), lambda m: call(tf.tensor(m, requires_grad=True))):
        with pytest.raises(tf.LinAlgError, match=rf"linalg.{name}: operand .*holds NaN or Inf"):
            run(a)


def _poisoned(value: float, dtype: str, batched: bool) -> np.ndarray[Any, Any]:
    a = GOOD.astype(dtype)
    if batched:
        a = np.stack([a, a, a])
        a[1, 2, 0] = value
        a[1, 0, 2] = value
    else:
        a[2, 0] = a[0, 2] = value
    return a


CASES = [
    pytest.param(
        name, value, dtype, batched, id=f"{name}-{value}-{dtype}-{'batch' if batched else 'one'}"
    )
    for name in sorted(FACTORIZING)
    for value in (np.nan, np.inf, -np.inf)
    for dtype in ("float64", "complex64")
    for batched in (False, True)
    if not (batched and name in ("tensorinv", "tensorsolve"))
]


@pytest.mark.parametrize(("name", "value", "dtype", "batched"), CASES)
def test_factorizing_functions_raise_on_non_finite_matrices(
    name: str, value: float, dtype: str, batched: bool
) -> None:
    a = _poisoned(value, dtype, batched)
    with pytest.raises(tf.LinAlgError, match="holds NaN or Inf") as caught:
        FACTORIZING[name](a)
    if batched:
        assert "batch index (1,)" in str(caught.value)
    # the same in a traced program and on the tape
    with pytest.raises(tf.LinAlgError, match="holds NaN or Inf"):
        tf.jit(FACTORIZING[name])(a)
    with pytest.raises(tf.LinAlgError, match="holds NaN or Inf"):
        FACTORIZING[name](tf.tensor(a, requires_grad=True))


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_arithmetic_and_right_hand_sides_carry_non_finite_values(name: str, value: float) -> None:
    a = _poisoned(value, "float64", False)
    result = np.asarray(DATA[name](a))
    assert not np.all(np.isfinite(result))


def test_det_of_a_nan_matrix_no_longer_returns_a_number() -> None:
    with pytest.raises(tf.LinAlgError, match=r"det: .*NaN or Inf"):
        tf.linalg.det(np.array([[np.nan, 1.0], [1.0, 1.0]]))


@pytest.mark.parametrize("upper", [True, False])
def test_a_triangular_solve_checks_only_the_triangle_it_reads(upper: bool) -> None:
    a = GOOD.copy()
    unread = (2, 0) if upper else (0, 2)
    a[unread] = np.nan
    x = tf.linalg.solve_triangular(a, ONES, upper=upper)
    expected = np.linalg.solve(np.triu(GOOD) if upper else np.tril(GOOD), ONES)
    np.testing.assert_allclose(x, expected)
    a[unread[::-1]] = np.nan
    with pytest.raises(tf.LinAlgError, match="holds NaN or Inf"):
        tf.linalg.solve_triangular(a, ONES, upper=upper)
