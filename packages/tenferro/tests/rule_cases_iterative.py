"""Rule-test cases of the iterative solvers' families (joined to the core table by
test_primitive_rules.py): each solver applied to its operands, in every inexact dtype.

Operators are built inside the case functions from the operands (``X X^H + n I`` for
conjugate gradients, a dominant diagonal for GMRES and BiCGSTAB, the Hermitian part for
eigsh, a positive matrix for eigs) so that finite-difference steps keep them in the
solver's domain; tolerances are tight for the dtype so that finite differences of the
solution are meaningful. Eigenvector outputs are phase-invariant (``|v|^2``): an
eigenvector's phase is a gauge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rule_cases import Case
from tenferro_support import sample

import tenferro as tf
from tenferro.algebra import adjoint, eye_like, matmul

SHAPES = ((4,),)  # the dimension of the vector space


def tight(dt: Any) -> float:
    """A solver tolerance near the precision of ``dt``."""
    return 1e-6 if np.dtype(dt) in (np.dtype("float32"), np.dtype("complex64")) else 1e-13


def _spd(x: Any) -> Any:
    x = tf.asarray(x)
    return matmul(x, adjoint(x)) + float(x.shape[-1]) * eye_like(x)


def _dominant(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> Any:
    n = shape[-1]
    return (sample((n, n), dt, rng) + 2.0 * n * np.eye(n)).astype(dt)


def _linear(solver: Callable[..., Any], spd: bool) -> Any:
    def build(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        (n,) = shape
        a = sample((n, n), dt, rng) if spd else _dominant(shape, dt, rng)
        rtol = tight(dt)

        def f(a: Any, b: Any) -> Any:
            return solver(_spd(a) if spd else a, b, rtol=rtol)[0]

        return f, [a, sample((n,), dt, rng)]

    return build


def _matrix_free(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """GMRES on an operator closing over a parameter, the unknown a pair of tensors."""
    (n,) = shape
    base = _dominant(shape, dt, rng)
    rtol = tight(dt)

    def f(theta: Any, b: Any) -> Any:
        def operator(v: Any) -> Any:
            x, y = v
            return (tf.asarray(base) @ x + theta * y, 3.0 * y - theta * x)

        x, y = tf.linalg.gmres(operator, (b, b * 2.0), rtol=rtol)[0]
        return tf.concatenate([x, y])

    return f, [sample((n,), dt, rng), sample((n,), dt, rng)]


def _fixed_point(solver: str) -> Any:
    def build(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        (n,) = shape
        w = sample((n, n), dt, rng) * (0.3 / n)
        tol = tight(dt)

        def f(w: Any, c: Any) -> Any:
            return tf.fixed_point(
                lambda x, w, c: tf.tanh(w @ x) + c, tf.zeros_like(c), w, c, solver=solver, tol=tol
            )

        return f, [w, sample((n,), dt, rng)]

    return build


def _newton(f: Any, x: Any) -> Any:
    for _ in range(60):
        x = x - f(x) / (3.0 * x * x)
    return x


def _custom_root(tangent: bool) -> Any:
    def build(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        a = sample(shape, dt, rng, positive=True) + 1.0

        def f(a: Any) -> Any:
            solve = (lambda g, y: y / g(tf.ones_like(y))) if tangent else None
            return tf.custom_root(lambda x: x * x * x - a, tf.ones_like(a), _newton, solve)

        return f, [a]

    return build


def _eigsh(which: str) -> Any:
    def build(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        (n,) = shape
        tol = tight(dt)

        def f(a: Any) -> Any:
            w, v = tf.linalg.eigsh(a, k=2, which=which, tol=tol)
            return w, tf.abs(v) ** 2

        return f, [sample((n, n), dt, rng)]

    return build


def _eigs(dt: Any, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    (n,) = shape
    positive = rng.uniform(0.2, 1.0, (n, n)) + (
        0.2j * rng.standard_normal((n, n)) if np.dtype(dt).kind == "c" else 0
    )
    tol = tight(dt)

    def f(a: Any) -> Any:
        w, v = tf.linalg.eigs(a, k=1, tol=tol)
        return w, tf.abs(v) ** 2

    return f, [positive.astype(dt)]


CASES: list[Case] = [
    Case("linalg_cg", _linear(tf.linalg.cg, spd=True), shapes=SHAPES),
    Case("linalg_gmres", _linear(tf.linalg.gmres, spd=False), shapes=SHAPES),
    Case("linalg_bicgstab", _linear(tf.linalg.bicgstab, spd=False), shapes=SHAPES),
    Case("linalg_gmres_matrix_free_pytree", _matrix_free, shapes=SHAPES),
    Case("fixed_point", _fixed_point("iterate"), shapes=SHAPES),
    Case("fixed_point_anderson", _fixed_point("anderson"), shapes=SHAPES),
    Case("custom_root", _custom_root(tangent=False), shapes=((3,),)),
    Case("custom_root_tangent_solve", _custom_root(tangent=True), shapes=((3,),)),
    Case("linalg_eigsh", _eigsh("SA"), shapes=((5,),)),
    Case("linalg_eigsh_largest", _eigsh("LA"), shapes=((5,),)),
    Case("linalg_eigs", _eigs, shapes=((5,),)),
]

EXEMPT: dict[str, str] = {
    "solvers.eigsh_boundary_check": "the identity on eigsh's eigenvalue derivatives, bound "
    "only by its JVP rule (every eigsh case runs it in all modes); "
    "test_iterative_eigensolvers checks its warning",
    "solvers.eigs_gap_check": "the identity on eigs' derivatives, bound only by its JVP "
    "rule (every eigs case runs it in all modes); test_iterative_eigensolvers checks its "
    "warning",
}
"""Families bound only inside derivative rules, with the reason."""
