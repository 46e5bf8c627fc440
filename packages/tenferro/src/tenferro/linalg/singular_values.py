"""The singular value decomposition with AD: svd, svdvals, truncated_svd.

Three families carry the kernels and the rules: ``linalg.svd`` (the thin factors and
their JVP), ``linalg.svd_complement`` (the extra vectors of a full non-square SVD,
which have no derivative) and ``linalg.svd_truncate`` (the leading triplets, linear).
Conventions (numpy.linalg / torch.linalg):

* leading batch axes, ``[..., M, N]``; singular values real and descending;
* derivatives divide by the gaps between singular values through
  :mod:`tenferro.linalg.gaps`: two values closer than ``eps * S_max`` are tied (``eps``
  relative, default 64 machine epsilons of the operand's precision; it is not a solver
  tolerance and leaves values unchanged), a tied gap's reciprocal is 0 at every order,
  every other gap's is exact. Derivatives are therefore unchanged when the input is
  rescaled. At a tie the rotations inside the tied level get no derivative, while every
  quantity that does not depend on them (singular values and their symmetric
  functions, projectors onto complete tied levels, the polar factor ``U Vh``,
  ``U diag(f(S)) Vh``) keeps its exact derivative; the term over ``s_i + s_j`` is never
  regularised. A loss that needs what was left out gets a
  :class:`~tenferro.errors.DegenerateDerivativeWarning` from the reverse pass
  (:mod:`tenferro.linalg.degeneracy`);
* gauges (:mod:`tenferro.linalg.gauges`): ``gauge="raw"`` returns LAPACK's vectors;
  their complex phase derivative follows the convention ``diag(V^H dV) = 0`` with the
  phase carried by ``U``. ``gauge="canonical"`` makes the largest-magnitude entry of
  each column of ``U`` real and positive (compensating the rows of ``Vh``), which makes
  phase-dependent functions of the vectors well-defined and differentiable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, overload

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.algebra import (
    diag_embed,
    diagonal,
    diagonal_of_product,
    matmul,
    scale_columns,
    scale_rows,
)
from tenferro.concrete import Tensor
from tenferro.core.bind import bind
from tenferro.core.families import family
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import real_dtype
from tenferro.errors import LinAlgError, ParameterError
from tenferro.linalg import lapack, lowered
from tenferro.linalg._common import require_inexact
from tenferro.linalg.checks import (
    check_eps,
    check_finite,
    check_matrix,
    inexact_dtype,
    non_negative,
)
from tenferro.linalg.degeneracy import guard_ties
from tenferro.linalg.family import LinalgOp, matrix_operand
from tenferro.linalg.gaps import (
    DEFAULT_EPS,
    gap_scale,
    resolve_eps,
    spectral_block,
    tied_inverse,
)
from tenferro.linalg.gauges import canonicalize, check_gauge, phase_correction
from tenferro.meta import Meta
from tenferro.surface.dispatch import REPLAYABLE
from tenferro.surface.signatures import preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "SVDResult",
    "Svd",
    "SvdComplement",
    "SvdTruncate",
    "singular_value_tangent",
    "svd",
    "svd_factors",
    "svdvals",
    "truncated_svd",
]


class SVDResult(NamedTuple, Generic[TensorLikeT]):
    """``svd``'s result: ``a = U @ diag(S) @ Vh``."""

    U: TensorLikeT
    S: TensorLikeT
    Vh: TensorLikeT


def _numpy_svd(a: np.ndarray[Any, Any]) -> Any:
    return np.linalg.svd(a, full_matrices=False)


def svd_factors(op: str, a: Any) -> tuple[Any, Any, Any]:
    """The thin SVD ``(U, S, Vh)`` of the (batch of) finite matrices ``a``; errors name
    ``op``."""
    check_finite(op, a)
    try:
        factors: tuple[Any, Any, Any] = lapack.apply(lapack.svd, _numpy_svd, a)
        return factors
    except np.linalg.LinAlgError:
        where = lapack.first_failure(op, a, np.linalg.svd)
        raise LinAlgError(
            op, f"the SVD did not converge for the input of shape {a.shape}{where}"
        ) from None


def singular_value_tangent(
    op: str, u: Any, s: Any, vh: Any, da: Any, eps: float | None = None
) -> Any:
    """``dS = Re diag(U^H dA V)`` alone (of the thin SVD ``u, s, vh``; :func:`_svd_tangents`
    computes it beside ``dU`` and ``dVh``), ties guarded as there, warnings naming ``op``."""
    if da.meta.shape[-1] > s.meta.shape[-1]:  # wide
        dpd = _row_diagonal(_adjoint_times(u, da), vh)
    else:
        dpd = diagonal_of_product(u, _times_adjoint(da, vh))
    eps = resolve_eps(eps, s.meta.dtype)
    return guard_ties(op, s, lax.real(dpd) if u.meta.dtype.kind == "c" else dpd, eps, True)


def _svd_tangents(
    a: Any, u: Any, s: Any, vh: Any, da: Any, eps: float, mask: Any
) -> tuple[Any, Any, Any]:
    """JVP of the thin SVD, in the gauge ``diag(V^H dV) = 0`` with the phase in ``U``
    (complex), or the canonical gauge when ``mask`` marks the pivots.

    With ``dP = U^H dA V`` split into its Hermitian part ``H`` and anti-Hermitian part
    ``A``, ``E = 1/(s_j - s_i)`` and ``D = 1/(s_j + s_i)`` the gap and sum reciprocals of
    :mod:`tenferro.linalg.gaps` (``E`` cut at ties, ``D`` exact except between zeros), and
    ``S^-1`` the inverse singular values (cut at zero)::

        dS  = Re diag(dP)
        dU  = U (E o H + D o A + G - dP S^-1) + dA V S^-1      (the last two: M > K)
        dVh = -(E o H - D o A + G + S^-1 dP) Vh + S^-1 U^H dA   (the last two: N > K)

    ``G = diag(D o A)`` moves the phase ``i Im dP_ii / s_i`` into ``U`` (complex only).
    This is the textbook ``F o (dP S + S dP^H)`` with ``F = 1/(s_j^2 - s_i^2)`` split into
    its part singular at a tie (over ``s_j - s_i``, regularised) and its part over
    ``s_j + s_i`` (finite at a tie of non-zero values, exact): quantities such as the
    polar factor ``U Vh`` depend on the second part only and keep exact derivatives, of
    every order, at repeated singular values. ``dVh`` is ``dV^H`` written row-wise (the
    bracket is anti-Hermitian), so no adjoint of a tangent is formed. For a wide matrix
    ``dP`` is ``(U^H dA) V``, whose left factor is ``dVh``'s extra term; else
    ``U^H (dA V)``, whose right factor is ``dU``'s.
    """
    dt = u.meta.dtype
    complex_ = dt.kind == "c"
    m, n = da.meta.shape[-2], da.meta.shape[-1]
    k = s.meta.shape[-1]
    w = dav = None
    if n > k:  # wide: M = K
        w = _adjoint_times(u, da)
        dp = _times_adjoint(w, vh)
        dpd = _row_diagonal(w, vh)  # diag(dP) without dP: a derivative of S alone
    else:
        dav = _times_adjoint(da, vh)
        dp = _adjoint_times(u, dav)
        dpd = diagonal_of_product(u, dav)
    ds = guard_ties("linalg.svd", s, lax.real(dpd) if complex_ else dpd, eps, nonnegative=True)
    # B carries diag(S) with the derivative of its tied blocks (tenferro.linalg.gaps):
    # every order of these rules is then exact at ties. Each part enters dU and dV
    # (paired: the reverse pass checks the sum of the two cotangents, which cancel for
    # gauge-invariant losses, against their own scale).
    b = spectral_block("svd", s, (a, u, vh), eps)
    rotation_u, rotation_v = gap_scale(
        "linalg.svd", s, b, dp, eps, kind="difference", pre="hermitian", pair=1
    )
    relative_u, relative_v = gap_scale(
        "linalg.svd", s, b, dp, eps, kind="sum", pre="antihermitian", pair=-1
    )
    inner_u = lax.add(rotation_u, relative_u)
    inner_v = lax.add(rotation_v, relative_v)
    if complex_:
        phase = diag_embed(diagonal(relative_u))
        inner_u = lax.add(inner_u, phase)
        inner_v = lax.add(inner_v, phase)
    sinv = None
    if (dav is not None and m > k) or w is not None:
        sinv = tied_inverse(s, b, eps)
    if dav is not None and m > k:
        du = lax.add(matmul(u, lax.sub(inner_u, matmul(dp, sinv))), matmul(dav, sinv))
    else:
        du = matmul(u, inner_u)
    if w is not None:
        dvh = lax.sub(matmul(sinv, w), matmul(lax.add(inner_v, matmul(sinv, dp)), vh))
    else:
        dvh = lax.neg(matmul(inner_v, vh))
    if mask is not None and complex_:
        rotation = phase_correction(mask, u, du)
        du = lax.sub(du, scale_columns(u, rotation))
        dvh = lax.sub(dvh, scale_rows(lax.conj(rotation), vh))
    return du, ds, dvh


def _adjoint_times(a: Any, b: Any) -> Any:
    """``a^H @ b`` as one contraction over the rows of both (no transposed operand: the
    reverse pass's products then need no transposes either)."""
    ndim = a.meta.ndim
    batch = tuple(range(ndim - 2))
    if a.meta.dtype.kind == "c":
        a = lax.conj(a)
    return lax.dot_general(a, b, (ndim - 2,), (ndim - 2,), batch, batch)


def _times_adjoint(a: Any, b: Any) -> Any:
    """``a @ b^H`` as one contraction over the columns of both (see :func:`_adjoint_times`)."""
    ndim = a.meta.ndim
    batch = tuple(range(ndim - 2))
    if b.meta.dtype.kind == "c":
        b = lax.conj(b)
    return lax.dot_general(a, b, (ndim - 1,), (ndim - 1,), batch, batch)


def _row_diagonal(rows: Any, vh: Any) -> Any:
    """``diag(rows vh^H)`` of ``[..., K, N]`` stacks as row sums of the elementwise
    product (see :func:`~tenferro.algebra.diagonal_of_product`)."""
    if vh.meta.dtype.kind == "c":
        vh = lax.conj(vh)
    return lax.reduce_sum(lax.mul(rows, vh), (vh.meta.ndim - 1,))


@family("linalg.svd")
class Svd(LinalgOp):
    """The thin ``A = U diag(S) Vh``; outputs ``U, S, Vh`` and, with the canonical
    gauge, the pivot mask of ``U``'s columns (bool, internal)."""

    extent_generic = True  # its JVP branches on which of M, N exceed K only
    eps: float | None
    gauge: str

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix(self.name, a)
        require_inexact(self.name, a)
        *batch, m, n = a.shape
        k = min(m, n)
        dt = a.dtype
        u = Meta((*batch, m, k), dt)
        outs = [u, Meta((*batch, k), real_dtype(dt)), Meta((*batch, k, n), dt)]
        if self.gauge == "canonical":
            outs.append(Meta(u.shape, np.dtype(bool)))
        return outs

    def impl(self, a: Any) -> Any:
        u, s, vh = svd_factors(self.name, a)
        if self.gauge != "canonical":
            return u, s, vh
        u, partner, mask = canonicalize(u, vh)
        return u, s, partner, mask

    def lower(self, lo: Any, a: Any) -> Any:
        if 0 in a.shape[-2:]:
            jnp = lo.jnp
            u, s, vh = (jnp.zeros(meta.shape, meta.dtype) for meta in self.outputs[:3])
        else:
            u, s, vh = lo.linalg.svd(a, full_matrices=False)
        if self.gauge != "canonical":
            return u, s, vh
        u, partner, mask = lowered.canonicalize(lo, u, vh)
        return u, s, partner, mask

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (da,) = ts
        count = len(self.outputs)
        if da is None:
            return [None] * count
        u, s, vh = ys[0], ys[1], ys[2]
        assert u is not None
        assert s is not None
        assert vh is not None
        mask = ys[3] if count == 4 else None
        eps = resolve_eps(self.eps, s.meta.dtype)
        du, ds, dvh = _svd_tangents(xs[0], u, s, vh, da, eps, mask)
        return [du, ds, dvh] + [None] * (count - 3)


@family("linalg.svd_complement")
class SvdComplement(LinalgOp):
    """The extra singular vectors of a full non-square SVD: the last ``M - K`` columns
    of the full ``U`` (``side="left"``) or last ``N - K`` rows of the full ``Vh``
    (``"right"``). They are any orthonormal basis of a null space, so they have no
    derivative (it raises, pointing to ``full_matrices=False``)."""

    side: str
    gauge: str

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix(self.name, a)
        *batch, m, n = a.shape
        k = min(m, n)
        shape = (*batch, m, m - k) if self.side == "left" else (*batch, n - k, n)
        return [Meta(shape, a.dtype)]

    def impl(self, a: Any) -> Any:
        check_finite(self.name, a)
        k = min(a.shape[-2:])
        try:
            u, _, vh = np.linalg.svd(a, full_matrices=True)
        except np.linalg.LinAlgError:
            where = lapack.first_failure(self.name, a, np.linalg.svd)
            raise LinAlgError(
                self.name, f"the SVD did not converge for the input of shape {a.shape}{where}"
            ) from None
        if self.side == "left":
            extra = u[..., :, k:]
            return canonicalize(extra, None)[0] if self.gauge == "canonical" else extra
        extra = np.swapaxes(vh[..., k:, :], -1, -2).conj()
        if self.gauge == "canonical":
            extra = canonicalize(extra, None)[0]
        return np.swapaxes(extra, -1, -2).conj()

    def lower(self, lo: Any, a: Any) -> Any:
        jnp = lo.jnp
        (out,) = self.outputs
        if 0 in out.shape:
            return jnp.zeros(out.shape, out.dtype)
        k = min(a.shape[-2:])
        u, _, vh = lo.linalg.svd(a, full_matrices=True)
        if self.side == "left":
            extra = u[..., :, k:]
            return lowered.canonicalize(lo, extra, None)[0] if self.gauge == "canonical" else extra
        extra = lowered.adjoint(lo, vh[..., k:, :])
        if self.gauge == "canonical":
            extra = lowered.canonicalize(lo, extra, None)[0]
        return lowered.adjoint(lo, extra)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (da,) = ts
        if da is None:
            return [None]
        reason = "the extra singular vectors of a full non-square SVD; use full_matrices=False"
        return [
            lax.no_derivative(
                "linalg.svd", 0 if self.side == "left" else 2, da, self.outputs[0], reason
            )
        ]


@family("linalg.svd_truncate")
class SvdTruncate(LinalgOp):
    """The leading ``rank`` singular triplets of a thin SVD ``(U, S, Vh)``: U's first
    columns, S's first values and Vh's first rows, one node for the three (eager
    ``truncated_svd``). Linear: its transpose pads each cotangent back with zeros."""

    rank: int
    linear = True
    extent_generic = True  # the rank is an extent: the output extents give it back
    extent_params = ("rank",)
    reads_extent_coincidences = False  # its rules slice and pad to its metas

    @classmethod
    def remake(
        cls, inputs: tuple[Meta, ...], outputs: tuple[Meta, ...], params: dict[str, Any]
    ) -> SvdTruncate:
        return cls.make(inputs, rank=outputs[1].shape[-1])

    def infer(self) -> list[Meta]:
        u, s, vh = self.inputs
        *batch, m, k = u.shape
        if (
            tuple(s.shape) != (*batch, k)
            or tuple(vh.shape[:-1]) != (*batch, k)
            or not 0 <= self.rank <= k
            or not u.dtype == vh.dtype
        ):
            raise ParameterError(
                self.name,
                f"needs U [..., M, K], S [..., K] and Vh [..., K, N] of one batch and a rank "
                f"in [0, K], got {u.describe()}, {s.describe()}, {vh.describe()} and rank "
                f"{self.rank}",
            )
        r, n = self.rank, vh.shape[-1]
        return [
            Meta((*batch, m, r), u.dtype),
            Meta((*batch, r), s.dtype),
            Meta((*batch, r, n), vh.dtype),
        ]

    def impl(self, u: Any, s: Any, vh: Any) -> Any:
        r = self.rank
        return u[..., :r], s[..., :r], vh[..., :r, :]

    def lower(self, lo: Any, u: Any, s: Any, vh: Any) -> Any:
        r = self.rank
        return u[..., :r], s[..., :r], vh[..., :r, :]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        missing = self.inputs[1].shape[-1] - self.rank
        result: list[RuleValue | None] = []
        for ct, axis, wanted in zip(cts, (-1, -1, -2), active, strict=True):
            if ct is None or not wanted:
                result.append(None)
                continue
            nd = ct.meta.ndim
            high = [0] * nd
            high[nd + axis] = missing
            result.append(lax.pad(ct, (0,) * nd, high, (0,) * nd))
        return result


@overload
def svd(
    a: TensorLikeT,
    full_matrices: bool = True,
    compute_uv: Literal[True] = True,
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> SVDResult[TensorLikeT]: ...
@overload
def svd(
    a: ArrayLike,
    full_matrices: bool = True,
    compute_uv: Literal[True] = True,
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> SVDResult[Tensor]: ...
@overload
def svd(
    a: Any,
    full_matrices: bool,
    compute_uv: Literal[False],
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> Any: ...
@overload
def svd(
    a: Any,
    full_matrices: bool = True,
    *,
    compute_uv: Literal[False],
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> Any: ...
def svd(
    a: Any,
    full_matrices: bool = True,
    compute_uv: bool = True,
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> Any:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (numpy.linalg.svd); with
    ``compute_uv=False`` the singular values alone (numpy's, ``svdvals``).

    ``full_matrices=True`` (numpy's default) gives square ``U`` (``[..., M, M]``) and
    ``Vh`` (``[..., N, N]``); ``False`` the thin factors with ``K = min(M, N)``
    columns/rows. ``S`` is real and descending. Derivatives: every output of the thin
    SVD; for a full non-square SVD, ``S`` and the square-sized partner, while a
    derivative through the factor with extra vectors raises :class:`tidu.ADRuleError`
    (those vectors are arbitrary; use ``full_matrices=False``). ``eps`` is the relative
    tie tolerance of the derivative (values closer than ``eps * S_max`` are tied;
    default 64 machine epsilons; module documentation); ``gauge`` is ``"raw"`` or
    ``"canonical"``.
    """
    full_matrices = check_flag("linalg.svd", "full_matrices", full_matrices)
    if not check_flag("linalg.svd", "compute_uv", compute_uv):
        return svdvals(a, eps=eps)
    x, sizes = _static_operand("linalg.svd", a, full_matrices)
    if eps is not DEFAULT_EPS:
        eps = check_eps("linalg.svd", eps)
    if gauge != "raw":
        gauge = check_gauge("linalg.svd", gauge)
    m, n = x.meta.shape[-2:]
    outs = Svd.bind(x, eps=eps, gauge=gauge)
    u, s, vh = outs[0], outs[1], outs[2]
    if sizes is not None:  # back to the data-dependent extents of the operand
        return SVDResult(*_cut_factors(u, s, vh, sizes, None))
    if full_matrices and m != n:
        side = "left" if m > n else "right"
        (extra,) = bind(SvdComplement.make((x.meta,), side=side, gauge=gauge), [x])
        if side == "left":
            u = lax.concatenate([u, extra], u.meta.ndim - 1)
        else:
            vh = lax.concatenate([vh, extra], vh.meta.ndim - 2)
    return SVDResult(u, s, vh)


def _static_operand(op: str, a: Any, full_matrices: bool = False) -> tuple[Any, Any]:
    """``(matrix, sizes)``: a matrix operand, and for one with data-dependent extents
    (a traced truncation's: only on the matrix axes) that matrix zero-padded to their
    static bounds, with ``sizes``, the run-time ``(rows, columns)`` (``None`` where
    static). Padding adds zero singular values only: the SVD of the padded matrix, cut
    back (:func:`_cut_factors`), is the operand's."""
    meta = getattr(a, "meta", None)
    if meta is None or not meta.dynamic:
        return matrix_operand(op, a), None
    nd = meta.ndim
    if nd < 2 or any(axis < nd - 2 for axis in meta.dynamic) or full_matrices:
        check_matrix(op, meta)  # raises: static batch axes and thin factors only
    x = a
    if x.meta.dtype.kind not in "fc":
        x = lax.convert_element_type(x, inexact_dtype(op, x.meta))
    sizes: list[Any] = []
    for axis in (nd - 2, nd - 1):
        if axis in meta.dynamic:
            sizes.append(lax.shape_of(x, axis))
            bound = tuple(n if i == axis else 1 for i, n in enumerate(meta.shape))
            x = lax.pad_to_match(x, lax.full(Meta(bound, x.meta.dtype), 0, x), axis)
        else:
            sizes.append(None)
    return x, tuple(sizes)


def _cut_factors(u: Any, s: Any, vh: Any, sizes: Any, rank: Any) -> tuple[Any, Any, Any]:
    """The thin factors of a zero-padded matrix cut back to its data-dependent rows and
    columns (``sizes``) and to ``rank`` values (default ``min(rows, columns)``): the
    padding's singular values are zeros, last, and its rows of the kept vectors are 0."""
    rows, columns = sizes
    nd = u.meta.ndim
    if rank is None:
        m, n = u.meta.shape[-2], vh.meta.shape[-1]
        rows_value = rows if rows is not None else lax.full(Meta((), np.dtype(np.float64)), m, s)
        cols_value = (
            columns if columns is not None else lax.full(Meta((), np.dtype(np.float64)), n, s)
        )
        rank = lax.min(rows_value, cols_value)
    if rows is not None:
        u = lax.dynamic_truncate(u, rows, nd - 2)
    if columns is not None:
        vh = lax.dynamic_truncate(vh, columns, nd - 1)
    return (
        lax.dynamic_truncate(u, rank, nd - 1),
        lax.dynamic_truncate(s, rank, nd - 2),
        lax.dynamic_truncate(vh, rank, nd - 2),
    )


@preserving
def svdvals(a: Any, *, eps: float | None = DEFAULT_EPS) -> Any:
    """The singular values of ``a``, real and descending (``[..., K]``)."""
    if eps is not DEFAULT_EPS:
        check_eps("linalg.svdvals", eps)
    return svd(a, full_matrices=False, eps=eps).S


def _rank_threshold(
    s: np.ndarray[Any, Any], shape: tuple[int, ...], rtol: float | None, atol: float | None
) -> np.ndarray[Any, Any]:
    """numpy/torch ``matrix_rank`` tolerance: ``max(atol, rtol * S_max)``; without both,
    ``rtol = eps(dtype) * max(M, N)``."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(s.dtype).eps) * max(shape)
    top = s[..., :1] if s.shape[-1] else np.zeros((*s.shape[:-1], 1), s.dtype)
    return np.maximum(0.0 if atol is None else atol, rtol * top)


@overload
def truncated_svd(
    a: TensorLikeT,
    *,
    max_rank: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = DEFAULT_EPS,
) -> SVDResult[TensorLikeT]: ...
@overload
def truncated_svd(
    a: ArrayLike,
    *,
    max_rank: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = DEFAULT_EPS,
) -> SVDResult[Tensor]: ...
def truncated_svd(
    a: Any,
    *,
    max_rank: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float | None = DEFAULT_EPS,
) -> SVDResult[Any]:
    """The thin SVD keeping the singular values above ``max(atol, rtol * S_max)`` (at
    most ``max_rank`` of them): the truncation of tensor-network sweeps.

    Without ``rtol`` and ``atol`` the tolerance is numpy's ``matrix_rank`` default
    (``eps(dtype) * max(M, N) * S_max``). The rank is read from the data: concrete
    (an ordinary shape) for ``Tensor``/``EagerTensor``, a data-dependent extent
    (``dynamic_truncate``) in traced code, at most ``max_rank`` (its static bound):
    broadcasting (with numbers, and with tensors of the same truncation), reshapes
    that keep that axis leading its group, einsum, slicing other axes and
    concatenation along other axes accept it, so one truncation code runs eagerly and
    traced. For a batch, every matrix keeps the largest rank over the batch.
    Derivatives are those of the kept singular triplets (the truncation point is
    locally constant).
    """
    op = "linalg.truncated_svd"
    if max_rank is not None:
        max_rank = as_int(op, "max_rank", max_rank)
    if max_rank is not None and max_rank < 0:
        raise ParameterError(op, f"max_rank must be a non-negative integer, got {max_rank!r}")
    rtol = None if rtol is None else non_negative(op, "rtol", rtol)
    atol = None if atol is None else non_negative(op, "atol", atol)
    if eps is not DEFAULT_EPS:
        check_eps(op, eps)
    if type(a) in REPLAYABLE and eps is DEFAULT_EPS and a.meta.dtype.kind in "fc":
        meta = a.meta
        if meta.ndim >= 2 and not meta.dynamic:
            return _concrete_truncated_svd(a, max_rank, rtol, atol)
    x, sizes = _static_operand(op, a)
    if sizes is not None:  # rows or columns data-dependent: the padded matrix's SVD
        outs = Svd.bind(x, eps=eps, gauge="raw")
        u, s, vh = outs[0], outs[1], outs[2]
    else:
        u, s, vh = svd(x, full_matrices=False, eps=eps)
    m, n = u.meta.shape[-2], vh.meta.shape[-1]
    k = s.meta.shape[-1]
    cap = k if max_rank is None else min(k, int(max_rank))
    if isinstance(s, Tensor):
        rank = _concrete_rank(s._value, (m, n), rtol, atol, cap)
        if rank == k:
            return SVDResult(u, s, vh)
        return SVDResult(*SvdTruncate.bind(u, s, vh, rank=rank))
    rank_value = _traced_rank(s, (m, n), rtol, atol, cap)  # the padding's zeros never count
    batch = s.meta.ndim - 1
    if cap < k:  # max_rank bounds the static extent of the factors
        u = lax.slice(u, [0] * u.meta.ndim, (*u.meta.shape[:-1], cap))
        s = lax.slice(s, [0] * s.meta.ndim, (*s.meta.shape[:-1], cap))
        vh = lax.slice(vh, [0] * vh.meta.ndim, (*vh.meta.shape[:-2], cap, n))
    if sizes is not None:
        return SVDResult(*_cut_factors(u, s, vh, sizes, rank_value))
    return SVDResult(
        lax.dynamic_truncate(u, rank_value, batch + 1),
        lax.dynamic_truncate(s, rank_value, batch),
        lax.dynamic_truncate(vh, rank_value, batch),
    )


def _concrete_truncated_svd(
    a: Any, max_rank: int | None, rtol: float | None, atol: float | None
) -> SVDResult[Any]:
    """:func:`truncated_svd` of a concrete float/complex matrix stack (the default
    ``eps``): the two nodes the general path binds (the SVD, then the truncation), bound
    directly through the tensor's kind, with the truncation instances kept on the SVD
    instance by rank (structure only: at most K + 1 of them)."""
    svd_op = _SVD_CALLS.get(a.meta)
    if svd_op is None:
        svd_op = Svd.make((a.meta,), eps=DEFAULT_EPS, gauge="raw")
        _SVD_CALLS.put(a.meta, svd_op)
    kind = type(a)
    u, s, vh = kind._bind(svd_op, (a,))
    m, k = svd_op.outputs[0].shape[-2:]
    cap = k if max_rank is None else min(k, int(max_rank))
    rank = _concrete_rank(s._value, (m, svd_op.outputs[2].shape[-1]), rtol, atol, cap)
    if rank == k:
        return SVDResult(u, s, vh)
    truncations = svd_op._prepared
    if truncations is None:
        truncations = {}
        object.__setattr__(svd_op, "_prepared", truncations)
    truncate = truncations.get(rank)
    if truncate is None:
        truncate = SvdTruncate.make(svd_op.outputs, rank=rank)
        truncations[rank] = truncate
    return SVDResult(*kind._bind(truncate, (u, s, vh)))


def _concrete_rank(
    s: np.ndarray[Any, Any],
    shape: tuple[int, int],
    rtol: float | None,
    atol: float | None,
    cap: int,
) -> int:
    """How many singular values (descending, ``[..., K]``) exceed the tolerance, the
    largest count over a batch, at most ``cap``."""
    if s.ndim == 1:  # one matrix: the threshold in Python floats
        cap = min(cap, s.shape[0])
        if cap <= 0:
            return 0
        if rtol is None:
            rtol = 0.0 if atol is not None and atol > 0 else _EPS[s.dtype] * max(shape)
        threshold = max(0.0 if atol is None else atol, rtol * float(s[0]))
        if float(s[cap - 1]) > threshold:  # descending: the first cap values all do
            return cap
        return min(cap, int(np.count_nonzero(s > threshold)))
    counts = (s > _rank_threshold(s, shape, rtol, atol)).sum(axis=-1)
    return min(cap, int(counts.max(initial=0)))


_SVD_CALLS: DictCache[Meta, Svd] = DictCache(256, "linalg truncated SVD instances")
"""Operand meta -> the Svd instance :func:`truncated_svd` binds for it (structure)."""


_EPS = {np.dtype(t): float(np.finfo(t).eps) for t in (np.float32, np.float64)}
"""Machine epsilon of the real dtypes singular values have."""


def _traced_rank(
    s: Any, shape: tuple[int, int], rtol: float | None, atol: float | None, cap: int
) -> Any:
    """The truncation rank as a float64 scalar tensor computed from ``s`` in the graph."""
    real = s.meta.dtype
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(real).eps) * max(shape)
    k = s.meta.shape[-1]
    last = s.meta.ndim - 1
    if k == 0:
        return lax.full(Meta((), np.dtype(np.float64)), 0, s)
    top = lax.slice(s, [0] * s.meta.ndim, (*s.meta.shape[:-1], 1))
    threshold = lax.mul(lax.full_like(top, rtol), top)
    if atol is not None:
        threshold = lax.max(threshold, lax.full_like(top, atol))
    threshold = lax.broadcast_in_dim(threshold, s.meta.shape, tuple(range(s.meta.ndim)))
    kept = lax.convert_element_type(lax.compare(s, threshold, "gt"), np.dtype(np.float64))
    counts = lax.reduce_sum(kept, (last,))
    if not counts.meta.size:  # an empty batch keeps nothing (the largest of no counts)
        return lax.full(Meta((), np.dtype(np.float64)), 0, s)
    if counts.meta.ndim:
        counts = lax.reduce_max(counts, tuple(range(counts.meta.ndim)))
    return lax.min(counts, lax.full_like(counts, cap))
