"""The Moore-Penrose pseudo-inverse with the derivative of ``A^+`` itself: ``pinv`` (the
family ``linalg.pinv``) and ``A^+ b``, ``lstsq``'s solution (``linalg.pinv_solve``).

``A^+`` is smooth wherever the numerical rank is constant, also where singular values
repeat (the identity, an isometry, ``diag(1, 1, 2)``): going through the SVD's
derivative would meet its regularised gaps ``1/(s_i^2 - s_j^2)``, 0 inside a tied
level, and lose the terms that cancel there. So both families' JVPs are Golub and
Pereyra's differential of the pseudo-inverse at constant rank (SIAM J. Numer. Anal.
10(2), 1973; JAX's ``pinv`` JVP)::

    dA^+ = -A^+ dA A^+ + A^+ A^+^H dA^H (I - A A^+) + (I - A^+ A) dA^H A^+^H A^+

written with matrix products of ``A``, ``A^+`` (or ``A^+ b``: the family's output)
and ``dA``: every mode (tape, transforms, vmap) and every order of derivative (the
products' rules and, for ``dA^+``, these rules again) come from one definition. The values are the
truncated pseudo-inverse of a thin SVD (or of ``eigh`` with ``hermitian=True``):
values of magnitude at or below ``rtol * max`` count as zero, and the projectors
``A A^+`` and ``A^+ A`` are those onto the kept singular vectors, so the derivative is
that of the kept part (the truncation's, at a constant numerical rank).

At full rank the formula is the exact derivative at every point near ``A``, so every
order is exact (and forward-over-reverse equals reverse-over-reverse). Where values are
cut off, the first derivative is exact for an exactly rank-deficient ``A`` (and within
the dropped values' size otherwise), while higher orders are those of the formula
(JAX's and PyTorch's convention): transverse to the rank-``r`` matrices they are not the
truncation's, whose second derivative needs the dropped singular vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint, matmul
from tenferro.core.families import family
from tenferro.core.flags import check_flag
from tenferro.core.primitive import extent_pattern
from tenferro.core.rules import RuleValue
from tenferro.dtypes import is_complex
from tenferro.errors import LinAlgError, ParameterError
from tenferro.linalg import lapack, lowered
from tenferro.linalg.checks import check_finite, check_matrix, check_square, non_negative
from tenferro.linalg.family import LinalgOp, matrix_operand
from tenferro.linalg.gaps import hermitian_part
from tenferro.linalg.hermitian_eigen import eigh_factors, hermitian_of_triangle
from tenferro.linalg.singular_values import singular_value_tangent, svd, svd_factors
from tenferro.meta import Meta
from tenferro.surface.signatures import preserving

__all__ = ["Lstsq", "Pinv", "PinvSolve", "pinv"]

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


@family("linalg.pinv")
class Pinv(LinalgOp):
    """``A^+`` (``[..., N, M]``) of ``a`` (``[..., M, N]``), from its thin SVD, or with
    ``hermitian`` from ``eigh`` of the Hermitian matrix of its lower triangle: ``A^+ =
    V diag(1/s) U^H`` over the values with ``|s| > rtol * max|s|``, the others treated
    as zero. One node: the factorization is its evaluation, not an operand."""

    single_output = True
    extent_generic = True  # its JVP reads ranks and whether M >= N (in its extent facts)
    rtol: float
    hermitian: bool

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        if self.hermitian:
            check_square(self.name, a)
        else:
            check_matrix(self.name, a)
        return [Meta((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype)]

    def extent_facts(self) -> Any:
        (a,) = self.inputs
        return (extent_pattern((a, *self.outputs)), a.shape[-2] >= a.shape[-1])

    def impl(self, a: Any) -> Any:
        if not min(a.shape[-2:]):
            return np.zeros((*a.shape[:-2], a.shape[-1], a.shape[-2]), a.dtype)
        if self.hermitian:
            s, u = eigh_factors(self.name, a, lower=True)
            vh = _adjoint(u)
        else:
            u, s, vh = svd_factors(self.name, a)
        inverse = _kept_inverse(s, self.rtol, self.hermitian, a.dtype)
        return np.matmul(_adjoint(vh) * inverse[..., None, :], _adjoint(u))

    def lower(self, lo: Any, a: Any) -> Any:
        if not min(a.shape[-2:]):
            return lo.jnp.zeros(self.outputs[0].shape, a.dtype)
        if self.hermitian:
            s, u = lo.linalg.eigh(a, lower=True, symmetrize_input=False)[::-1]
            vh = lowered.adjoint(lo, u)
        else:
            u, s, vh = lo.linalg.svd(a, full_matrices=False)
        keep = lowered.kept(lo, s, self.rtol, self.hermitian)
        inverse = lowered.inverse_where(lo, s, keep, a.dtype)
        return lowered.matmul(
            lo, lowered.adjoint(lo, vh) * inverse[..., None, :], lowered.adjoint(lo, u)
        )

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (a,), (da,) = xs, ts
        if da is None:
            return [None]
        p = ys[0]
        assert p is not None
        if self.hermitian:
            # The value reads the lower triangle; the input is differentiated as Hermitian.
            a, da = hermitian_of_triangle(a, "L"), hermitian_part(da)
        m, n = self.inputs[0].shape[-2:]
        return [_pinv_differential(a, p, da, tall=m >= n)]


@family("linalg.pinv_solve")
class PinvSolve(LinalgOp):
    """``A^+ b`` (``[..., N, K]``) of ``a`` (``[..., M, N]``) and ``b`` (``[..., M,
    K]``), inputs ``(a, b, u, s, vh)`` with ``(u, s, vh)`` the thin SVD of ``a`` (a
    cache of ``lstsq``'s factorization, whose singular values it also returns: zero
    derivative by contract), computed as ``vh^H (S^+
    (u^H b))`` with :class:`Pinv`'s cut-off: ``lstsq``'s solution.

    Its JVP is Golub-Pereyra's applied to ``b``, with ``x = A^+ b``, ``r = b - A x``,
    ``y = A^+^H x`` and ``z = dA^H y``::

        dx = A^+ (db - dA x + A^+^H dA^H r - A z) + z

    where ``A^+ c`` is this family again and ``A^+^H c`` is this family on ``A^H``
    (factors ``(vh^H, s, u^H)``): products with ``K`` columns only, never an ``N x M``
    matrix, and every order of derivative from this rule. Linear in ``b``: its
    transpose is ``A^+^H``.
    """

    single_output = True
    extent_generic = True  # its rules read ranks only
    rtol: float

    def infer(self) -> list[Meta]:
        a, b, u, s, vh = self.inputs
        _check_factors(self.name, a, u, s, vh)
        *batch, m, n = a.shape
        if b.ndim != a.ndim or b.shape[:-1] != (*batch, m) or b.dtype != a.dtype:
            raise ParameterError(
                self.name, f"needs b [..., {m}, K] of {a.describe()}, got {b.describe()}"
            )
        return [Meta((*batch, n, b.shape[-1]), a.dtype)]

    def impl(self, a: Any, b: Any, u: Any, s: Any, vh: Any) -> Any:
        if not s.shape[-1]:
            return np.zeros((*a.shape[:-2], a.shape[-1], b.shape[-1]), a.dtype)
        inverse = _kept_inverse(s, self.rtol, False, a.dtype)
        return np.matmul(_adjoint(vh), inverse[..., :, None] * np.matmul(_adjoint(u), b))

    def lower(self, lo: Any, a: Any, b: Any, u: Any, s: Any, vh: Any) -> Any:
        if not s.shape[-1]:
            return lo.jnp.zeros(self.outputs[0].shape, a.dtype)
        inverse = lowered.inverse_where(lo, s, lowered.kept(lo, s, self.rtol, False), a.dtype)
        projected = lowered.matmul(lo, lowered.adjoint(lo, u), b)
        return lowered.matmul(lo, lowered.adjoint(lo, vh), inverse[..., :, None] * projected)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (a, b, u, s, vh), (da, db, *_) = xs, ts  # the factors' tangents: zero by contract
        x = ys[0]
        assert x is not None
        return [_solution_tangent(a, b, x, (u, s, vh), da, db, self.rtol)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the matrix")
        (ct,), (a, _, u, s, vh) = cts, xs
        if ct is None or not active[1]:
            return [None] * 5
        return [None, self._apply(adjoint(a), ct, adjoint(vh), s, adjoint(u)), None, None, None]

    def _apply(self, a: Any, b: Any, u: Any, s: Any, vh: Any) -> Any:
        return PinvSolve.bind(a, b, u, s, vh, rtol=self.rtol)


def _solution_tangent(
    a: Any, b: Any, x: Any, factors: tuple[Any, Any, Any], da: Any, db: Any, rtol: float
) -> Any:
    """The tangent of ``x = A^+ b`` (:class:`PinvSolve`'s JVP; ``factors``: the thin SVD
    of ``a``, without derivative), ``None`` when both tangents are."""
    u, s, vh = factors

    def apply(a: Any, b: Any, u: Any, s: Any, vh: Any) -> Any:
        return PinvSolve.bind(a, b, u, s, vh, rtol=rtol)

    if da is None and db is None:
        return None
    if da is None:
        return apply(a, db, u, s, vh)
    transposed = (adjoint(a), adjoint(vh), s, adjoint(u))  # A^H and its SVD
    dah = adjoint(da)
    z = matmul(dah, apply(transposed[0], x, *transposed[1:]))
    misfit = lax.sub(b, matmul(a, x))
    rhs = lax.sub(
        apply(transposed[0], matmul(dah, misfit), *transposed[1:]),
        lax.add(matmul(da, x), matmul(a, z)),
    )
    rhs = lax.add_tangents(db, rhs)
    return lax.add(apply(a, rhs, u, s, vh), z)


@family("linalg.lstsq")
class Lstsq(LinalgOp):
    """``lstsq``'s solution ``x = A^+ b`` (``[..., N, K]``), residuals ``sum_rows |A x -
    b|^2`` (``[..., K]``, real), numerical rank (int64 ``[...]``) and singular values
    (``[..., min(M, N)]``, real, descending) of ``a`` (``[..., M, N]``) and ``b``
    (``[..., M, K]``), from one thin SVD of ``a`` with :class:`Pinv`'s cut-off: one node
    for a call's whole result.

    JVP: ``dx`` is :class:`PinvSolve`'s (the SVD factors it needs are recomputed from
    ``a``, only when differentiating); the residuals' tangent is
    ``2 Re sum_rows(conj(m) (dA x + A dx - db))`` with ``m = A x - b``; the singular
    values' is the SVD's ``Re diag(U^H dA V)`` (ties guarded as there); the rank has
    none (an integer).
    """

    extent_generic = True  # its rules read ranks only
    rtol: float

    def infer(self) -> list[Meta]:
        a, b = self.inputs
        check_matrix(self.name, a)
        *batch, m, n = a.shape
        if b.ndim != a.ndim or b.shape[:-1] != (*batch, m) or b.dtype != a.dtype:
            raise ParameterError(
                self.name, f"needs b [..., {m}, K] of {a.describe()}, got {b.describe()}"
            )
        real = np.empty(0, a.dtype).real.dtype
        k = b.shape[-1]
        return [
            Meta((*batch, n, k), a.dtype),
            Meta((*batch, k), real),
            Meta(tuple(batch), np.dtype(np.int64)),
            Meta((*batch, min(m, n)), real),
        ]

    def impl(self, a: Any, b: Any) -> tuple[Any, Any, Any, Any]:
        *batch, m, n = a.shape
        if not min(m, n):
            x = np.zeros((*batch, n, b.shape[-1]), a.dtype)
            rank = np.zeros(tuple(batch), np.int64)
            s = np.zeros((*batch, 0), np.empty(0, a.dtype).real.dtype)
        elif not batch and b.shape[-1]:  # one matrix and right-hand side: LAPACK's driver
            check_finite(self.name, a)  # (b may hold NaN: NaN solutions, as batches give)
            try:
                x, s, found = lapack.lstsq(a, b, self.rtol)
            except np.linalg.LinAlgError:
                raise LinAlgError(
                    self.name, f"the SVD did not converge for the input of shape {a.shape}"
                ) from None
            rank = np.asarray(found, np.int64)
        else:
            u, s, vh = svd_factors(self.name, a)
            keep = _kept(s, self.rtol, False)
            inverse = _inverse_where(s, keep, a.dtype)
            x = np.matmul(_adjoint(vh), inverse[..., :, None] * np.matmul(_adjoint(u), b))
            rank = keep.sum(axis=-1, dtype=np.int64)
        misfit = np.matmul(a, x) - b
        squares = misfit.real**2 + misfit.imag**2 if misfit.dtype.kind == "c" else misfit**2
        return x, np.sum(squares, axis=-2), np.asarray(rank, np.int64), s

    def lower(self, lo: Any, a: Any, b: Any) -> Any:
        jnp = lo.jnp
        x_meta, _, rank_meta, s_meta = self.outputs
        if not min(a.shape[-2:]):
            x = jnp.zeros(x_meta.shape, a.dtype)
            rank = jnp.zeros(rank_meta.shape, "int64")
            s = jnp.zeros(s_meta.shape, s_meta.dtype)
        else:  # the SVD formula (the numpy kernel's for batches; LAPACK's gelsd agrees)
            u, s, vh = lo.linalg.svd(a, full_matrices=False)
            keep = lowered.kept(lo, s, self.rtol, False)
            inverse = lowered.inverse_where(lo, s, keep, a.dtype)
            projected = lowered.matmul(lo, lowered.adjoint(lo, u), b)
            x = lowered.matmul(lo, lowered.adjoint(lo, vh), inverse[..., :, None] * projected)
            rank = jnp.sum(keep, axis=-1, dtype="int64")
        misfit = lowered.matmul(lo, a, x) - b
        if jnp.iscomplexobj(misfit):
            squares = lo.lax.real(misfit) ** 2 + lo.lax.imag(misfit) ** 2
        else:
            squares = misfit**2
        return x, jnp.sum(squares, axis=-2), rank, s

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (a, b), (da, db) = xs, ts
        if da is None and db is None:
            return [None, None, None, None]
        x = ys[0]
        assert x is not None
        # Differentiable factors: ds reads U and V, so its own derivative needs theirs;
        # PinvSolve ignores its factors' tangents (its value is a function of a and b).
        u, s, vh = svd(a, full_matrices=False)
        ds = None
        if da is not None and s.meta.shape[-1]:
            ds = singular_value_tangent(self.name, u, s, vh, da)
        dx = _solution_tangent(a, b, x, (u, s, vh), da, db, self.rtol)
        change = matmul(a, dx)  # d(A x - b) = dA x + A dx - db
        if da is not None:
            change = lax.add(change, matmul(da, x))
        if db is not None:
            change = lax.sub(change, db)
        misfit = lax.sub(matmul(a, x), b)
        if is_complex(misfit.meta.dtype):
            product = lax.real(lax.mul(lax.conj(misfit), change))
        else:
            product = lax.mul(misfit, change)
        axis = misfit.meta.ndim - 2
        dres = lax.reduce_sum(lax.add(product, product), (axis,))
        return [dx, dres, None, ds]


def _check_factors(op: str, a: Meta, u: Meta, s: Meta, vh: Meta) -> None:
    """``u``, ``s``, ``vh`` have the shapes and dtypes of the thin SVD of ``a``."""
    check_matrix(op, a)
    *batch, m, n = a.shape
    k = min(m, n)
    expected = ((*batch, m, k), (*batch, k), (*batch, k, n))
    if (u.shape, s.shape, vh.shape) != expected or not u.dtype == vh.dtype == a.dtype:
        raise ParameterError(
            op,
            f"needs factors U {expected[0]}, S {expected[1]} and Vh {expected[2]} of "
            f"{a.describe()}, got {u.describe()}, {s.describe()} and {vh.describe()}",
        )


def _kept(s: Any, rtol: float, signed: bool) -> Any:
    """Where ``|s| > rtol * max|s|`` (``[..., K]``, K > 0): the values kept."""
    magnitude = np.abs(s) if signed else s
    return magnitude > np.max(magnitude, axis=-1, keepdims=True) * rtol


def _inverse_where(s: Any, keep: Any, dtype: Any) -> Any:
    """``1/s`` where ``keep``, else 0, in ``dtype``."""
    return np.divide(1, s, out=np.zeros_like(s), where=keep).astype(dtype, copy=False)


def _kept_inverse(s: Any, rtol: float, signed: bool, dtype: Any) -> Any:
    """``1/s`` where ``|s| > rtol * max|s|``, else 0, in ``dtype`` (``[..., K]``, K > 0)."""
    return _inverse_where(s, _kept(s, rtol, signed), dtype)


def _adjoint(x: Any) -> Any:
    swapped = np.swapaxes(x, -1, -2)
    return np.conj(swapped) if x.dtype.kind == "c" else swapped


def _pinv_differential(a: Any, p: Any, da: Any, tall: bool) -> Any:
    """Golub-Pereyra's ``dA^+`` (module documentation), its products ordered so that
    every intermediate is at most ``max(M, N) x min(M, N)`` (JAX's order)."""
    dah = adjoint(da)
    ph = adjoint(p)
    if tall:  # M >= N: the N x N products first
        s = matmul(matmul(p, ph), dah)
        t = matmul(matmul(dah, ph), p)
        pa = matmul(p, a)
        first = matmul(matmul(p, da), p)
        range_part = lax.sub(s, matmul(matmul(s, a), p))
        null_part = lax.sub(t, matmul(pa, t))
    else:  # M < N: the M x M products first
        s = matmul(p, matmul(ph, dah))
        t = matmul(dah, matmul(ph, p))
        ap = matmul(a, p)
        first = matmul(p, matmul(da, p))
        range_part = lax.sub(s, matmul(s, ap))
        null_part = lax.sub(t, matmul(p, matmul(a, t)))
    return lax.add(lax.sub(range_part, first), null_part)


@preserving
def pinv(a: Any, rtol: float | None = None, hermitian: bool = False) -> Any:
    """Moore-Penrose pseudo-inverse ``[..., N, M]`` of ``a`` (``[..., M, N]``).

    Singular values (eigenvalue magnitudes with ``hermitian=True``, which reads the
    lower triangle for the value and differentiates the input as Hermitian, as
    :func:`~tenferro.linalg.eigh`) at or below ``rtol * S_max`` are treated as zero; ``rtol``
    defaults to ``eps(dtype) * max(M, N)`` (numpy 2 / torch). Differentiable to any
    order wherever the numerical rank is constant, repeated singular values included
    (the derivative of the kept part; module documentation).
    """
    op = "linalg.pinv"
    hermitian = check_flag(op, "hermitian", hermitian)
    x = matrix_operand(op, a)
    m, n = x.meta.shape[-2:]
    real = np.empty(0, x.meta.dtype).real.dtype
    if rtol is None:
        rtol = float(np.finfo(real).eps) * max(m, n, 1)
    else:
        rtol = non_negative(op, "rtol", rtol)
    return Pinv.bind(x, rtol=float(rtol), hermitian=hermitian)
