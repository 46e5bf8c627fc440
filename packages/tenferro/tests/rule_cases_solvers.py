"""Rule-test cases of the tf.linalg solvers families (joined to the core table by
test_primitive_rules.py).

Shapes are batch shapes: each builder makes matrices ``[*batch, M, N]``. Inputs are
well conditioned (diagonally dominant, or Gram matrices plus a multiple of the identity)
so that finite differences of float32 stay meaningful and LU pivots do not change under
the finite-difference steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rule_cases import Case
from tenferro_support import sample

import tenferro as tf
from tenferro import linalg
from tenferro.algebra import adjoint, eye_like, matmul
from tenferro.core.bind import bind
from tenferro.linalg import lapack
from tenferro.linalg.adjugate import Adjugate, AdjugateDerivative
from tenferro.linalg.functions import expm_frechet
from tenferro.linalg.solvers import Solve, solve_with_factors

BATCHES = ((2,),)  # batched kernels; unbatched matrices in the cases with shapes=((),)


def dominant(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """A random square matrix stack with a dominant diagonal (nonsingular, stable pivots)."""
    n = shape[-1]
    return (sample(shape, dt, rng) + 2.0 * n * np.eye(n)).astype(dt)


def _square(fn: Callable[..., Any], n: int = 4) -> Any:
    return lambda dt, batch, rng: (fn, [dominant((*batch, n, n), dt, rng)])


def _rank_deficient(rank: int, n: int = 4) -> Any:
    """Square matrices of rank ``rank`` (below ``n``: singular) in random bases, singular
    values well separated: ``det`` is a polynomial, smooth there too."""

    def build(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
        levels = np.array([2.5, 1.5, 1.0, 0.6][:n])
        levels[rank:] = 0.0
        out = np.empty((*batch, n, n), dt)
        for index in np.ndindex(*batch):
            q1, _ = np.linalg.qr(sample((n, n), dt, rng).astype(np.complex128))
            q2, _ = np.linalg.qr(sample((n, n), dt, rng).astype(np.complex128))
            if dt.kind != "c":
                q1, q2 = q1.real, q2.real
                q1, _ = np.linalg.qr(q1)
                q2, _ = np.linalg.qr(q2)
            out[index] = ((q1 * levels) @ np.conj(q2.T)).astype(dt)
        return linalg.det, [out]

    return build


def _adjugate(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
    """``adj(A)`` (the gradient of det) at rank-deficient matrices."""
    return (lambda x: Adjugate.bind(x)), _rank_deficient(3)(dt, batch, rng)[1]


def _adjugate_derivative(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
    """``D adj(A)[E]`` at a rank-deficient ``A`` (the second derivative of det), as a
    function of both: its derivatives are the third and fourth of det."""
    a = _rank_deficient(2)(dt, batch, rng)[1][0]
    return (lambda x, e: AdjugateDerivative.bind(x, e)), [a, sample(a.shape, dt, rng)]


def _solve_like(fn: Callable[..., Any], n: int = 4, k: int = 3) -> Any:
    def build(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
        return fn, [dominant((*batch, n, n), dt, rng), sample((*batch, n, k), dt, rng)]

    return build


def _general(fn: Callable[..., Any], m: int, n: int) -> Any:
    def build(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
        a = sample((*batch, m, n), dt, rng)
        k = min(m, n)
        a[..., :k, :k] += 2.0 * k * np.eye(k, dtype=dt)  # well-conditioned leading block
        return fn, [a]

    return build


def _gram_cholesky(upper: bool) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        x = tf.asarray(x)
        spd = matmul(x, adjoint(x)) + 4.0 * eye_like(x)
        return linalg.cholesky(spd, upper=upper)

    return f


def _lu_solve(trans: int) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        return linalg.lu_solve(linalg.lu_factor(a), b, trans=trans)

    return f


def _with_factors(adjoint: bool) -> Callable[[Any, Any], Any]:
    """``linalg.solve_with_factors`` on the factors ``linalg.solve`` made of the same A
    (the only use of that family: its contract needs A's own factors)."""

    def f(a: Any, b: Any) -> Any:
        a, b = tf.asarray(a), tf.asarray(b)
        _, factors, pivots = bind(Solve.make((a.meta, b.meta), caller="solve"), (a, b))
        return solve_with_factors(a, factors, pivots, b, adjoint=adjoint, caller="solve")

    return f


def _frechet(dt: Any, batch: tuple[int, ...], rng: np.random.Generator) -> Any:
    a = 0.5 * sample((*batch, 3, 3), dt, rng)
    e = sample((*batch, 3, 3), dt, rng)
    return (lambda a, e: expm_frechet(tf.asarray(a), tf.asarray(e))), [a.astype(dt), e]


def _lu_thin(a: Any) -> Any:
    result = linalg.lu(a)
    return result.L, result.U


CASES: list[Case] = [
    Case("linalg_solve", _solve_like(linalg.solve), shapes=BATCHES),
    *(
        Case(f"linalg_solve_with_factors{'_adjoint' if h else ''}", _solve_like(_with_factors(h)))
        for h in (False, True)
    ),
    # more matrices than the kernels loop over: numpy's batched solver, no saved factors
    Case(
        "linalg_solve_large_batch",
        _solve_like(linalg.solve, n=2, k=1),
        shapes=((lapack.LOOP_LIMIT + 1,),),
    ),
    Case("linalg_solve_vector", _solve_like(lambda a, b: linalg.solve(a, b[..., 0])), shapes=((),)),
    *(
        Case(
            f"linalg_solve_triangular_{'upper' if up else 'lower'}_{side}{'_unit' if unit else ''}",
            _solve_like(
                (
                    lambda a, b, up=up, unit=unit: linalg.solve_triangular(
                        a, b, upper=up, unitriangular=unit
                    )
                )
                if side == "left"
                else (
                    lambda a, b, up=up, unit=unit: linalg.solve_triangular(
                        a, adjoint(tf.asarray(b)), upper=up, left=False, unitriangular=unit
                    )
                ),
                k=4,
            ),
            shapes=BATCHES,
        )
        for up in (True, False)
        for side in ("left", "right")
        for unit in (False, True)
    ),
    Case("linalg_inv", _square(linalg.inv), shapes=BATCHES),
    Case("linalg_det", _square(linalg.det), shapes=BATCHES),
    Case("linalg_det_rank_3_of_4", _rank_deficient(3), shapes=((), (2,))),
    Case("linalg_det_rank_2_of_4", _rank_deficient(2), shapes=((),)),
    Case("linalg_det_rank_1_of_4", _rank_deficient(1), shapes=((),)),
    Case("linalg_adjugate", _adjugate, shapes=((), (2,))),
    Case("linalg_adjugate_derivative", _adjugate_derivative, shapes=((),)),
    Case("linalg_slogdet", _square(linalg.slogdet), shapes=BATCHES),
    Case("linalg_qr_tall", _general(linalg.qr, 5, 3), shapes=BATCHES),
    Case("linalg_qr_wide", _general(linalg.qr, 3, 5), shapes=BATCHES),
    Case("linalg_qr_square_positive", _general(lambda a: linalg.qr(a, gauge="positive"), 4, 4)),
    Case("linalg_qr_wide_positive", _general(lambda a: linalg.qr(a, gauge="positive"), 2, 4)),
    Case("linalg_qr_r", _general(lambda a: linalg.qr(a, mode="r"), 5, 3), shapes=((),)),
    Case(
        "linalg_qr_complete_tall_r",
        _general(lambda a: linalg.qr(a, mode="complete").R, 5, 3),
        shapes=((),),
    ),
    Case("linalg_cholesky", _general(_gram_cholesky(False), 4, 4), shapes=BATCHES),
    Case("linalg_cholesky_upper", _general(_gram_cholesky(True), 4, 4), shapes=((),)),
    Case("linalg_lu_square", _general(_lu_thin, 4, 4), shapes=BATCHES),
    Case("linalg_lu_tall", _general(_lu_thin, 5, 3), shapes=((),)),
    Case("linalg_lu_wide", _general(_lu_thin, 3, 5), shapes=((),)),
    Case("linalg_lu_factor", _general(lambda a: linalg.lu_factor(a).LU, 4, 4), shapes=BATCHES),
    Case("linalg_lu_factor_tall", _general(lambda a: linalg.lu_factor(a).LU, 5, 3), shapes=((),)),
    Case("linalg_lu_factor_wide", _general(lambda a: linalg.lu_factor(a).LU, 3, 5), shapes=((),)),
    *(Case(f"linalg_lu_solve_{t}", _solve_like(_lu_solve(t)), shapes=BATCHES) for t in (0, 1, 2)),
    Case(
        "linalg_matrix_exp",
        _general(lambda a: linalg.matrix_exp(0.1 * tf.asarray(a)), 3, 3),
        shapes=BATCHES,
    ),
    Case("linalg_expm_frechet", _frechet, shapes=BATCHES),
    *(
        Case(
            f"linalg_matrix_power_{n}",
            _square(lambda a, n=n: linalg.matrix_power(a, n), 3),
            shapes=((),),
        )
        for n in (-2, 0, 3)
    ),
]
