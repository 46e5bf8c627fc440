"""Factorizations: ``qr``, ``cholesky``, ``lu``, ``lu_factor``, ``lu_solve``.

Families (shape rule, LAPACK kernel and JVP side by side; the JVPs take their
triangular sub-steps through ``linalg.solve_triangular``, so that reverse mode and
higher orders come from the machinery):

* ``linalg.qr`` A -> (Q, R), tall and wide, ``gauge="raw"`` (LAPACK's, diag(R) real)
  or ``"positive"`` (diag(R) real positive);
* ``linalg.cholesky`` A -> L (or U = L^H); the derivative treats A as Hermitian (the
  tangent's Hermitian part is used, torch's convention);
* ``linalg.lu`` A -> (P, L, U) with A = P L U (scipy/torch); P has no derivative;
* ``linalg.lu_factor`` A -> (LU, pivots), scipy's packed form and 0-based LAPACK pivots;
* ``linalg.pivot_rows`` B -> P^T B (or P B) from pivots: the row interchanges, linear.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, overload

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.algebra import adjoint, diag_embed, diagonal, eye_like, matmul, matrix_transpose
from tenferro.concrete import Tensor
from tenferro.core.bind import bind, bind1
from tenferro.core.families import family
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int
from tenferro.core.rules import RuleValue
from tenferro.errors import DTypeError, ParameterError, ShapeError
from tenferro.linalg import lapack, lowered
from tenferro.linalg._common import (
    broadcast_batch,
    inexact_operands,
    matrix_slice,
    raise_per_matrix,
    require_inexact,
    scipy_linalg,
)
from tenferro.linalg.checks import check_finite, check_matrix, check_square
from tenferro.linalg.family import LinalgOp, SquareMatrixOp, matrix_operand
from tenferro.linalg.solvers import triangular_solve
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.surface.signatures import preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "LUFactorResult",
    "LUResult",
    "QRResult",
    "cholesky",
    "lu",
    "lu_factor",
    "lu_solve",
    "qr",
]


class QRResult(NamedTuple, Generic[TensorLikeT]):
    """``qr``'s result: ``a = Q @ R``."""

    Q: TensorLikeT
    R: TensorLikeT


_as_result = tuple.__new__
"""``_as_result(QRResult, (q, r))``: the result tuple made without the namedtuple's
Python-level ``__new__``."""


class LUResult(NamedTuple, Generic[TensorLikeT]):
    """``lu``'s result: ``a = P @ L @ U``."""

    P: TensorLikeT
    L: TensorLikeT
    U: TensorLikeT


class LUFactorResult(NamedTuple, Generic[TensorLikeT]):
    """``lu_factor``'s result: the packed factors and the row interchanges (int32)."""

    LU: TensorLikeT
    pivots: TensorLikeT


def _half_diagonal(s: Any) -> Any:
    """``diag(s) / 2`` as a matrix."""
    d = diagonal(s)
    return diag_embed(lax.mul(d, lax.full_like(d, 0.5)))


def _is_empty(meta: Meta) -> bool:
    return 0 in meta.shape


def _zero_tangent(da: RuleValue, y: RuleValue) -> RuleValue:
    """The (zero) tangent of output ``y`` of an empty matrix's factorization: ``y`` times
    the sum of ``da``'s no elements. It is built from ``da`` and ``y`` as the tangent of a
    non-empty matrix is, so a gradient taken with ``create_graph=True`` depends on the
    input and can be differentiated again (values are exactly zero)."""
    total = lax.reduce_sum(da, tuple(range(da.meta.ndim)))
    return lax.mul(y, lax.broadcast_in_dim(total, y.meta.shape, ()))


# ---------------------------------------------------------------------- QR


@family("linalg.qr")
class QR(LinalgOp):
    """A = Q R; ``complete``: Q is MxM and R is MxN, else Q is MxK, R is KxN (K = min)."""

    extent_generic = True  # its rules branch on which of M, N is larger only
    complete: bool
    positive: bool

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix("qr", a)
        require_inexact("qr", a)
        m, n = a.shape[-2:]
        k = m if self.complete else min(m, n)
        batch = a.shape[:-2]
        return [a.with_(shape=(*batch, m, k)), a.with_(shape=(*batch, k, n))]

    def impl(self, a: Any) -> Any:
        check_finite("qr", a)
        plan = self._prepared  # this instance's kernel plan (its matrices' shape, dtype)
        if plan is not None and a.ndim == 2:  # the common case: one matrix, planned
            q, r = lapack.planned_qr(plan, a)
        else:
            q, r = self._factor(a)
        if self.positive and r.size:
            d = np.diagonal(r, axis1=-2, axis2=-1)
            magnitude = np.abs(d)
            phase = np.where(magnitude == 0, 1, d / np.where(magnitude == 0, 1, magnitude))
            k = d.shape[-1]
            q = q.copy()
            q[..., :, :k] *= phase[..., None, :]
            r = r.copy()
            r[..., :k, :] *= np.conj(phase)[..., :, None]  # complete tall R: rows past K are 0
        return q, r

    def lower(self, lo: Any, a: Any) -> Any:
        q, r = lo.linalg.qr(a, full_matrices=self.complete)
        if self.positive and 0 not in a.shape:
            jnp = lo.jnp
            d = jnp.diagonal(r, axis1=-2, axis2=-1)
            magnitude = jnp.abs(d)
            phase = jnp.where(magnitude == 0, 1, d / jnp.where(magnitude == 0, 1, magnitude))
            phase = phase.astype(a.dtype)
            k = d.shape[-1]
            q = jnp.concatenate([q[..., :, :k] * phase[..., None, :], q[..., :, k:]], axis=-1)
            rows = r[..., :k, :] * jnp.conj(phase)[..., :, None]
            r = jnp.concatenate([rows, r[..., k:, :]], axis=-2)
        return q, r

    def _factor(self, a: Any) -> tuple[Any, Any]:
        """Q and R of one matrix or a batch (their plan made on first use)."""
        complete = self.complete
        m, n = a.shape[-2:]
        if not a.size or (a.ndim > 2 and a.size // (m * n) > lapack.LOOP_LIMIT):
            q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")  # numpy's batch
            return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)
        plan = self._prepared
        if plan is None:
            plan = lapack.qr_plan(m, n, a.dtype, complete)
            object.__setattr__(self, "_prepared", plan)
        if a.ndim == 2:
            return lapack.planned_qr(plan, a)
        return lapack.planned_qr_batch(plan, a)  # a small batch: the kernel, looped

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (q, r), (da,) = xs, ys, ts
        m, n = a.meta.shape[-2:]
        if da is None:
            return [None, None]
        if _is_empty(a.meta):
            return [_zero_tangent(da, q), _zero_tangent(da, r)]
        if self.complete and m > n:
            # Q's leading columns as A R1^-1, so that no derivative flows through Q.
            r1 = matrix_slice(r, (0, n), (0, n))
            q1 = triangular_solve(r1, a, upper=True, left=False, caller="qr")
            _, dr = _qr_tangents(q1, r1, da)
            nd = a.meta.ndim
            dr = lax.pad(dr, (0,) * nd, (0,) * (nd - 2) + (m - n, 0), (0,) * nd)
            reason = (
                "the extra columns of a complete QR of a tall matrix are not unique; "
                "use mode='reduced'"
            )
            return [lax.no_derivative("linalg.qr", 0, da, q.meta, reason), dr]
        return list(_qr_tangents(q, r, da))


def _qr_tangents(q: Any, r: Any, da: Any) -> tuple[Any, Any]:
    """(dQ, dR) of the thin QR A = Q R (diag(R) real), tall or wide."""
    m, n = da.meta.shape[-2:]
    k = min(m, n)
    r1 = matrix_slice(r, (0, k), (0, k))
    da1 = matrix_slice(da, (0, m), (0, k))
    x = triangular_solve(r1, da1, upper=True, left=False, caller="qr")  # dA1 R1^-1
    c = matmul(adjoint(q), x)
    sym = lax.add(c, adjoint(c))
    dr_hat = lax.add(lax.triu(sym, 1), _half_diagonal(sym))
    dq = lax.sub(x, matmul(q, dr_hat))
    dr1 = matmul(dr_hat, r1)
    if n <= m:
        return dq, dr1
    r2 = matrix_slice(r, (0, k), (k, n))
    da2 = matrix_slice(da, (0, m), (k, n))
    dr2 = lax.sub(matmul(adjoint(q), da2), matmul(lax.sub(c, dr_hat), r2))
    return dq, lax.concatenate([dr1, dr2], da.meta.ndim - 1)


@overload
def qr(a: TensorLikeT, mode: Literal["r"], *, gauge: str = "raw") -> TensorLikeT: ...
@overload
def qr(a: ArrayLike, mode: Literal["r"], *, gauge: str = "raw") -> Tensor: ...
@overload
def qr(
    a: TensorLikeT, mode: Literal["reduced", "complete"] = "reduced", *, gauge: str = "raw"
) -> QRResult[TensorLikeT]: ...
@overload
def qr(
    a: ArrayLike, mode: Literal["reduced", "complete"] = "reduced", *, gauge: str = "raw"
) -> QRResult[Tensor]: ...
@overload
def qr(a: Any, mode: str = "reduced", *, gauge: str = "raw") -> Any: ...
def qr(a: Any, mode: str = "reduced", *, gauge: str = "raw") -> Any:
    """The QR decomposition ``a = Q R`` of ``[..., M, N]`` (numpy.linalg.qr's modes).

    * ``mode="reduced"`` (default): ``QRResult(Q [..., M, K], R [..., K, N])``, K = min(M, N);
    * ``mode="complete"``: ``Q [..., M, M]``, ``R [..., M, N]``; for M > N the extra columns
      of Q are not unique, so a derivative through Q raises ``ADRuleError`` (R's is fine);
    * ``mode="r"``: only R (numpy's convention), differentiable.

    ``gauge="raw"`` keeps LAPACK's factors (diag(R) real, any sign); ``gauge="positive"``
    makes diag(R) real positive (compensating Q), which makes the factorization unique
    for full-rank A. Derivatives (tall and wide) need the leading KxK block of R to be
    nonsingular. NaN/Inf input raises :class:`~tenferro.errors.LinAlgError`.
    """
    try:  # a repeated call with a tensor: its operand's meta was checked then
        op = _QR_CALLS.get((a.meta, mode, gauge)) if isinstance(a, Tensor) else None
    except TypeError:  # an unhashable mode or gauge: refused below
        op = None
    if op is None:
        a = matrix_operand("qr", a)
        key = (a.meta, mode, gauge)
        if mode not in ("reduced", "complete", "r"):
            raise ParameterError("qr", f"mode must be 'reduced', 'complete' or 'r', got {mode!r}")
        if gauge not in ("raw", "positive"):
            raise ParameterError("qr", f"gauge must be 'raw' or 'positive', got {gauge!r}")
        op = QR.make((a.meta,), complete=mode == "complete", positive=gauge == "positive")
        _QR_CALLS.put(key, op)
    outs = type(a)._bind(op, (a,))  # bind() for one operand: the tuple (Q, R)
    return outs[1] if mode == "r" else _as_result(QRResult, outs)


_QR_CALLS: DictCache[tuple[Meta, str, str], QR] = DictCache(1024, "linalg.qr calls")
"""(operand meta, mode, gauge) -> the QR instance a call binds (structure only)."""


# ---------------------------------------------------------------------- Cholesky


def _not_positive_definite(m: np.ndarray[Any, Any]) -> bool:
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return True
    return False


@family("linalg.cholesky")
class Cholesky(SquareMatrixOp):
    """A = L L^H (lower L; ``upper``: returns U = L^H with A = U^H U)."""

    single_output = True

    upper: bool

    subject = "cholesky"

    def impl(self, a: Any) -> Any:
        if a.size == 0:
            return np.zeros(a.shape, a.dtype)
        check_finite("cholesky", a)
        try:
            if a.ndim == 2:
                factor = lapack.cholesky(a)
            else:
                factor = lapack.apply(
                    lapack.cholesky, np.linalg.cholesky, a, batched=lapack.cholesky_batch
                )
        except np.linalg.LinAlgError:
            raise_per_matrix("cholesky", a, _not_positive_definite, "not positive definite")
            raise  # pragma: no cover
        return np.conj(np.swapaxes(factor, -1, -2)) if self.upper else factor

    def lower(self, lo: Any, a: Any) -> Any:
        if 0 in a.shape:
            return a
        factor = lo.linalg.cholesky(a, symmetrize_input=False)  # reads the lower triangle
        return lowered.adjoint(lo, factor) if self.upper else factor

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (y,), (da,) = ys, ts
        if da is None:
            return [None]
        if _is_empty(y.meta):
            return [_zero_tangent(da, y)]
        lower = adjoint(y) if self.upper else y
        dh = lax.mul(lax.add(da, adjoint(da)), lax.full_like(da, 0.5))
        left = triangular_solve(lower, dh, upper=False, caller="cholesky")  # L^-1 dA
        s = triangular_solve(adjoint(lower), left, upper=True, left=False, caller="cholesky")
        phi = lax.add(lax.tril(s, -1), _half_diagonal(s))
        dl = matmul(lower, phi)
        return [adjoint(dl) if self.upper else dl]


@preserving
def cholesky(a: Any, upper: bool = False) -> Any:
    """The Cholesky factor of Hermitian positive-definite matrices: lower L with
    ``a = L L^H`` (``upper=True``: U with ``a = U^H U``). Only the lower triangle of
    ``a`` is read; the derivative treats ``a`` as Hermitian (the tangent's Hermitian
    part is differentiated, as in torch). A matrix that is not positive definite raises
    :class:`~tenferro.errors.LinAlgError` naming the first failing batch index."""
    if isinstance(a, Tensor) and (upper is False or upper is True):
        op = _CHOLESKY_CALLS.get((a.meta, upper))  # a repeated call: a's meta was checked
        if op is not None:
            return type(a)._bind(op, (a,))[0]
    upper = check_flag("linalg.cholesky", "upper", upper)
    a = matrix_operand("cholesky", a, square=True)
    op = Cholesky.make((a.meta,), upper=upper)
    _CHOLESKY_CALLS.put((a.meta, op.upper), op)
    return type(a)._bind(op, (a,))[0]


_CHOLESKY_CALLS: DictCache[tuple[Meta, bool], Cholesky] = DictCache(1024, "linalg.cholesky calls")
"""(operand meta, upper) -> the Cholesky instance a call binds (structure only)."""


# ---------------------------------------------------------------------- LU


def _lu_tangents(ptda: Any, lower: Any, upper: Any) -> tuple[Any, Any]:
    """(dL, dU) of P^T A = L U (L unit lower MxK, U upper KxN), ``ptda`` = P^T dA."""
    m, n = ptda.meta.shape[-2:]
    k = min(m, n)
    nd = ptda.meta.ndim
    l1 = matrix_slice(lower, (0, k), (0, k))
    u1 = matrix_slice(upper, (0, k), (0, k))
    b1 = matrix_slice(ptda, (0, k), (0, k))
    x = triangular_solve(l1, b1, upper=False, unit=True, caller="lu")
    x = triangular_solve(u1, x, upper=True, left=False, caller="lu")
    dl1 = matmul(l1, lax.tril(x, -1))
    ux = lax.triu(x)
    du1 = matmul(ux, u1)
    if m > n:
        l2 = matrix_slice(lower, (k, m), (0, k))
        b2 = matrix_slice(ptda, (k, m), (0, n))
        dl2 = lax.sub(triangular_solve(u1, b2, upper=True, left=False, caller="lu"), matmul(l2, ux))
        return lax.concatenate([dl1, dl2], nd - 2), du1
    if n > m:
        u2 = matrix_slice(upper, (0, k), (k, n))
        b2 = matrix_slice(ptda, (0, m), (k, n))
        du2 = triangular_solve(
            l1, lax.sub(b2, matmul(dl1, u2)), upper=False, unit=True, caller="lu"
        )
        return dl1, lax.concatenate([du1, du2], nd - 1)
    return dl1, du1


@family("linalg.lu")
class LU(LinalgOp):
    """A = P L U with partial pivoting (scipy_linalg().lu): P MxM permutation (in A's
    dtype), L MxK unit lower, U KxN upper; a fourth output holds the pivots (int32, as
    lu_factor's), which the JVP uses instead of P (so no derivative flows through P)."""

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix("lu", a)
        require_inexact("lu", a)
        m, n = a.shape[-2:]
        k = min(m, n)
        batch = a.shape[:-2]
        return [
            a.with_(shape=(*batch, m, m)),
            a.with_(shape=(*batch, m, k)),
            a.with_(shape=(*batch, k, n)),
            a.with_(shape=(*batch, k), dtype=np.dtype(np.int32)),
        ]

    def impl(self, a: Any) -> Any:
        m, n = a.shape[-2:]
        k = min(m, n)
        batch = a.shape[:-2]
        packed, pivots = LUFactor.make((Meta(a.shape, a.dtype),)).impl(a)
        perm = _permutation(pivots, m)
        p = np.zeros((*batch, m, m), a.dtype)
        np.put_along_axis(p, perm[..., :, None], 1, axis=-1)
        p = np.swapaxes(p, -1, -2)  # P[perm[i], i] = 1: A = P (P^T A) = P L U
        lower = np.tril(packed[..., :, :k], -1) + np.eye(m, k, dtype=a.dtype)
        upper = np.triu(packed[..., :k, :])
        return np.ascontiguousarray(p), lower, upper, pivots

    def lower(self, lo: Any, a: Any) -> Any:
        jnp = lo.jnp
        m, n = a.shape[-2:]
        k = min(m, n)
        packed, pivots, perm = _lowered_lu(lo, a)
        rows = lo.lax.broadcasted_iota("int32", (*a.shape[:-2], m, m), a.ndim - 1)
        p = jnp.swapaxes((perm[..., :, None] == rows).astype(a.dtype), -1, -2)
        lower = jnp.tril(packed[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
        upper = jnp.triu(packed[..., :k, :])
        return p, lower, upper, pivots

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (p, lower, upper, pivots), (da,) = xs, ys, ts
        if da is None:
            return [None, None, None, None]
        if _is_empty(a.meta):
            return [None, _zero_tangent(da, lower), _zero_tangent(da, upper), None]
        dl, du = _lu_tangents(pivot_rows(da, pivots, inverse=False), lower, upper)
        reason = "the permutation is piecewise constant in A (it jumps where pivots change)"
        return [lax.no_derivative("linalg.lu", 0, da, p.meta, reason), dl, du, None]


@overload
def lu(a: TensorLikeT) -> LUResult[TensorLikeT]: ...
@overload
def lu(a: ArrayLike) -> LUResult[Tensor]: ...
def lu(a: Any) -> LUResult[Any]:
    """LU decomposition with partial pivoting: ``LUResult(P, L, U)`` with
    **a = P @ L @ U** (scipy_linalg().lu's and torch.linalg.lu's convention).

    For ``[..., M, N]``: P ``[..., M, M]`` (a permutation matrix in a's dtype), L
    ``[..., M, K]`` unit lower triangular, U ``[..., K, N]`` upper, K = min(M, N).
    L and U are differentiable (the leading KxK block of U must be nonsingular); a
    derivative through P raises ``ADRuleError`` (it is piecewise constant).
    """
    (a,) = inexact_operands("lu", a)
    check_matrix("lu", a.meta)
    p, lower, upper, _ = bind(LU.make((a.meta,)), (a,))
    return LUResult(p, lower, upper)


def _permutation(pivots: np.ndarray[Any, Any], m: int) -> np.ndarray[Any, Any]:
    """Row order ``perm`` with ``(P^T B) = B[perm]`` for LAPACK's sequential interchanges."""
    batch = pivots.shape[:-1]
    perm = np.broadcast_to(np.arange(m), (*batch, m)).copy()
    index = np.indices(batch)
    for i in range(pivots.shape[-1]):
        j = pivots[..., i]
        here = perm[..., i].copy()
        perm[..., i] = perm[(*index, j)]
        perm[(*index, j)] = here
    return perm


@family("linalg.pivot_rows")
class PivotRows(LinalgOp):
    """``P^T B`` (or ``P B`` when ``inverse``) where ``pivots`` are LAPACK row interchanges
    (0-based; row i was swapped with row pivots[i], in order). Linear in B."""

    inverse: bool

    def infer(self) -> list[Meta]:
        b, pivots = self.inputs
        check_matrix("lu_solve", b)
        if pivots.dtype.kind not in "iu" or pivots.shape[:-1] != b.shape[:-2]:
            raise DTypeError(
                "lu_solve",
                f"pivots must be integers [..., K] batched like B {b.shape}, got "
                f"{pivots.describe()}",
            )
        if pivots.shape[-1] > b.shape[-2]:
            raise ShapeError("lu_solve", f"{pivots.shape[-1]} pivots for {b.shape[-2]} rows")
        return [b]

    def impl(self, b: Any, pivots: Any) -> Any:
        m = b.shape[-2]
        if pivots.size and (pivots.min() < 0 or pivots.max() >= m):
            raise ParameterError("lu_solve", f"pivots must lie in [0, {m}), got {pivots}")
        perm = _permutation(pivots, m)
        if self.inverse:
            perm = np.argsort(perm, axis=-1)
        return np.take_along_axis(b, perm[..., None], axis=-2)

    def lower(self, lo: Any, b: Any, pivots: Any) -> Any:
        perm = lowered.lu_permutation(lo, pivots.astype("int32"), b.shape[-2])
        if self.inverse:
            perm = lo.jnp.argsort(perm, axis=-1)
        return lo.jnp.take_along_axis(b, perm[..., :, None], axis=-2, mode="clip")

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (_, pivots), (db, _) = xs, ts
        return [None if db is None else pivot_rows(db, pivots, inverse=self.inverse)]

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        (ct,), (_, pivots) = cts, xs
        if ct is None:
            return [None, None]
        return [pivot_rows(ct, pivots, inverse=not self.inverse), None]


def pivot_rows(b: Any, pivots: Any, *, inverse: bool) -> Any:
    """Bind ``linalg.pivot_rows``."""
    return bind1(PivotRows.make((b.meta, pivots.meta), inverse=inverse), (b, pivots))


@family("linalg.lu_factor")
class LUFactor(LinalgOp):
    """scipy_linalg().lu_factor: packed LU (L strictly below the diagonal, U on and above)
    and 0-based int32 pivots (row i interchanged with row pivots[i])."""

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix("lu_factor", a)
        require_inexact("lu_factor", a)
        m, n = a.shape[-2:]
        return [a, a.with_(shape=(*a.shape[:-2], min(m, n)), dtype=np.dtype(np.int32))]

    def impl(self, a: Any) -> Any:
        m, n = a.shape[-2:]
        if a.size == 0:
            return np.zeros(a.shape, a.dtype), np.zeros((*a.shape[:-2], min(m, n)), np.int32)
        check_finite("lu_factor", a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy_linalg().LinAlgWarning)
            packed, pivots = scipy_linalg().lu_factor(a, check_finite=False)
        return packed.astype(a.dtype), pivots.astype(np.int32)

    def lower(self, lo: Any, a: Any) -> Any:
        packed, pivots, _ = _lowered_lu(lo, a)
        return packed, pivots

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (packed, pivots), (da,) = xs, ys, ts
        if da is None:
            return [None, None]
        if _is_empty(a.meta):
            return [_zero_tangent(da, packed), None]
        m, n = a.meta.shape[-2:]
        k = min(m, n)
        nd = a.meta.ndim
        square = matrix_slice(packed, (0, k), (0, k))
        lower = lax.add(lax.tril(matrix_slice(packed, (0, m), (0, k)), -1), _eye_rows(square, m))
        upper = lax.triu(matrix_slice(packed, (0, k), (0, n)))
        dl, du = _lu_tangents(pivot_rows(da, pivots, inverse=False), lower, upper)
        zeros = (0,) * nd
        dl = lax.pad(dl, zeros, (0,) * (nd - 1) + (n - k,), zeros)
        du = lax.pad(du, zeros, (0,) * (nd - 2) + (m - k, 0), zeros)
        return [lax.add(lax.tril(dl, -1), lax.triu(du)), None]


def _lowered_lu(lo: Any, a: Any) -> tuple[Any, Any, Any]:
    """JAX's packed LU factors, 0-based int32 pivots and row permutation of ``a`` (an empty
    matrix: zeros)."""
    m, n = a.shape[-2:]
    if 0 in a.shape:
        pivots = lo.jnp.zeros((*a.shape[:-2], min(m, n)), "int32")
        perm = lo.jnp.broadcast_to(lo.jnp.arange(m, dtype="int32"), (*a.shape[:-2], m))
        return a, pivots, perm
    packed, pivots, perm = lo.linalg.lu(a)
    return packed, pivots, perm


def _eye_rows(square: Any, m: int) -> Any:
    """The MxK matrix with ones on the main diagonal (K = ``square``'s size)."""
    eye = eye_like(square)
    k = square.meta.shape[-1]
    nd = square.meta.ndim
    zeros = (0,) * nd
    return lax.pad(eye, zeros, (0,) * (nd - 2) + (m - k, 0), zeros)


@overload
def lu_factor(a: TensorLikeT) -> LUFactorResult[TensorLikeT]: ...
@overload
def lu_factor(a: ArrayLike) -> LUFactorResult[Tensor]: ...
def lu_factor(a: Any) -> LUFactorResult[Any]:
    """``LUFactorResult(LU, pivots)`` as scipy_linalg().lu_factor (batched): L (unit
    diagonal not stored) below the diagonal of LU and U on and above it; pivots are
    0-based LAPACK row interchanges (int32; torch's are 1-based). LU is differentiable;
    pivots are integers (no tangent). A singular matrix is factored without error (its
    U has a zero on the diagonal; :func:`lu_solve` then raises)."""
    (a,) = inexact_operands("lu_factor", a)
    check_matrix("lu_factor", a.meta)
    return LUFactorResult(*bind(LUFactor.make((a.meta,)), (a,)))


@overload
def lu_solve(
    lu_and_piv: tuple[TensorLikeT, TensorLikeT],
    b: TensorLikeT | ArrayLike,
    trans: int = 0,
) -> TensorLikeT: ...
@overload
def lu_solve(lu_and_piv: Any, b: TensorLikeT, trans: int = 0) -> TensorLikeT: ...
@overload
def lu_solve(lu_and_piv: Any, b: ArrayLike, trans: int = 0) -> Tensor: ...
def lu_solve(lu_and_piv: Any, b: Any, trans: int = 0) -> Any:
    """Solve with a factorization from :func:`lu_factor` (scipy_linalg().lu_solve's
    signature): ``trans=0`` solves ``A x = b``, ``1`` solves ``A^T x = b``, ``2`` solves
    ``A^H x = b``. ``b`` is ``[..., N]`` (one axis: a vector) or ``[..., N, K]``.
    Differentiable in LU (hence in A through lu_factor) and b; a zero on U's diagonal
    raises :class:`~tenferro.errors.LinAlgError`."""
    trans = as_int("lu_solve", "trans", trans)
    if trans not in (0, 1, 2):
        raise ParameterError("lu_solve", f"trans must be 0, 1 or 2, got {trans!r}")
    packed, pivots = lu_and_piv
    packed, b = inexact_operands("lu_solve", packed, b)
    pivots = asarray(pivots)
    check_square("lu_solve", packed.meta)
    vector = b.meta.ndim == 1
    if vector:
        b = lax.reshape(b, (*b.meta.shape, 1))
    check_matrix("lu_solve", b.meta)
    if b.meta.shape[:-2] != packed.meta.shape[:-2]:
        packed, b = broadcast_batch("lu_solve", packed, b)
    pivots = lax.broadcast_in_dim(
        pivots,
        (*b.meta.shape[:-2], pivots.meta.shape[-1]),
        tuple(range(b.meta.ndim - 1 - pivots.meta.ndim, b.meta.ndim - 1)),
    )
    name = "lu_solve"
    if trans == 0:
        y = triangular_solve(
            packed, pivot_rows(b, pivots, inverse=False), upper=False, unit=True, caller=name
        )
        x = triangular_solve(packed, y, upper=True, caller=name)
    else:
        op = adjoint(packed) if trans == 2 else matrix_transpose(packed)
        y = triangular_solve(op, b, upper=False, caller=name)
        y = triangular_solve(op, y, upper=True, unit=True, caller=name)
        x = pivot_rows(y, pivots, inverse=True)
    return lax.reshape(x, x.meta.shape[:-1]) if vector else x
