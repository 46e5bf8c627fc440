"""Spectral decompositions with AD: svd, svdvals, truncated_svd, eigh, eigvalsh, eig,
eigvals (``pinv`` is :mod:`tenferro.linalg.pseudo_inverse`).

Three extension families carry the kernels and the JVP rules (``linalg.svd``,
``linalg.eigh``, ``linalg.eig``); everything else composes them with differentiable
operations. Conventions (numpy.linalg / torch.linalg):

* leading batch axes, ``[..., M, N]``; singular values real and descending,
  ``eigh`` eigenvalues real and ascending, ``eig`` outputs complex;
* derivatives regularise spectral gaps with the Lorentzian ``F = g / (g**2 + eps**2)``
  (``eps`` > 0, default 1e-12; it is not a solver tolerance and leaves values
  unchanged). At an exactly degenerate spectrum the rotations inside a degenerate
  subspace get no derivative (``F = 0`` there) while every gauge-invariant quantity
  (singular/eigen values, projectors onto complete degenerate subspaces,
  ``U diag(f(S)) Vh``) keeps its exact, finite derivative. A loss that weights
  tied values differently has no derivative there: the reverse pass warns
  (:mod:`tenferro.linalg.degeneracy`);
* gauges: ``gauge="raw"`` returns LAPACK's vectors; their complex phase derivative
  follows the convention ``diag(V^H dV) = 0`` with the phase carried by ``U`` (SVD)
  and ``diag(V^H dV) = 0`` (eigh). ``gauge="canonical"`` makes the largest-magnitude
  entry of each singular/eigen vector real and positive (compensating the partner
  vector of an SVD), which makes phase-dependent functions of the vectors
  well-defined and differentiable;
* ``eig`` eigenvectors have unit norm (LAPACK's scaling, as numpy and torch); their
  derivative is torch's: ``dV = V (F o (V^-1 dA V))`` with ``Re diag(V^H dV) = 0``.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.algebra import (
    adjoint,
    diag_embed,
    diagonal,
    eye_like,
    matmul,
    scale_columns,
    scale_rows,
)
from tenferro.concrete import Tensor
from tenferro.core.bind import bind
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int
from tenferro.core.primitive import RuleValue
from tenferro.errors import LinAlgError, ParameterError
from tenferro.extension import register
from tenferro.linalg import lapack, lowered
from tenferro.linalg.checks import (
    check_eps,
    check_finite,
    check_matrix,
    check_square,
    failing_batch,
    inexact_dtype,
    non_negative,
)
from tenferro.linalg.degeneracy import guard_ties
from tenferro.linalg.family import LinalgOp, matrix_operand
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.surface.dispatch import REPLAYABLE

__all__ = [
    "EigResult",
    "EighResult",
    "SVDResult",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "svd",
    "svdvals",
    "truncated_svd",
]

DEFAULT_EPS = 1e-12
GAUGES = ("raw", "canonical")

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


# ---------------------------------------------------------------------- kernel helpers


def _real_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    return np.empty(0, dt).real.dtype


def _complex_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    return np.result_type(dt, np.complex64)


def _numpy_svd(a: np.ndarray[Any, Any]) -> Any:
    return np.linalg.svd(a, full_matrices=False)


def svd_factors(op: str, a: Any) -> tuple[Any, Any, Any]:
    """The thin SVD ``(U, S, Vh)`` of the (batch of) finite matrices ``a``; errors name
    ``op``."""
    check_finite(op, a)
    try:
        return lapack.apply(lapack.svd, _numpy_svd, a)
    except np.linalg.LinAlgError:
        where = _first_failure(op, a, np.linalg.svd)
        raise LinAlgError(
            op, f"the SVD did not converge for the input of shape {a.shape}{where}"
        ) from None


def eigh_factors(op: str, a: Any, lower: bool) -> tuple[Any, Any]:
    """Eigenvalues (ascending) and eigenvectors of the (batch of) finite Hermitian
    matrices read from one triangle of ``a``; errors name ``op``."""
    check_finite(op, a)
    try:
        if a.ndim == 2 and a.size:
            return lapack.eigh(a, lower)
        return lapack.apply(
            lambda m: lapack.eigh(m, lower),
            lambda m: np.linalg.eigh(m, UPLO="L" if lower else "U"),
            a,
            batched=lambda m: lapack.eigh_batch(m, lower),
        )
    except np.linalg.LinAlgError:
        where = _first_failure(op, a, np.linalg.eigh)
        raise LinAlgError(
            op, f"the eigensolver did not converge for the input of shape {a.shape}{where}"
        ) from None


def _first_failure(op: str, a: np.ndarray[Any, Any], kernel: Any) -> str:
    """Where a batched LAPACK call failed: re-run matrix by matrix (error path only)."""
    batch = a.shape[:-2]
    bad = np.zeros(batch, dtype=bool)
    for index in np.ndindex(*batch):
        try:
            kernel(a[index])
        except np.linalg.LinAlgError:
            bad[index] = True
            break
    return failing_batch(bad)


def _canonicalize(
    vectors: np.ndarray[Any, Any], partner_rows: np.ndarray[Any, Any] | None
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None, np.ndarray[Any, Any]]:
    """Make each column's largest-magnitude entry (the first, on ties) real positive;
    multiply the matching rows of ``partner_rows`` by the inverse phase. Returns the new
    arrays and the one-hot pivot mask (bool, the shape of ``vectors``)."""
    if vectors.shape[-2] == 0:  # no entries to pivot on
        return vectors, partner_rows, np.zeros(vectors.shape, dtype=bool)
    pivot = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    mask = np.zeros(vectors.shape, dtype=bool)
    if vectors.size:
        np.put_along_axis(mask, pivot, True, axis=-2)
    value = np.take_along_axis(vectors, pivot, axis=-2)[..., 0, :]
    magnitude = np.abs(value)
    phase = np.where(magnitude == 0, 1, value / np.where(magnitude == 0, 1, magnitude))
    vectors = (vectors * np.conj(phase)[..., None, :]).astype(vectors.dtype, copy=False)
    if partner_rows is not None:
        k = min(partner_rows.shape[-2], phase.shape[-1])
        partner_rows = partner_rows.copy()
        partner_rows[..., :k, :] *= phase[..., :k, None]
    return vectors, partner_rows, mask


# ---------------------------------------------------------------------- rule helpers


def _to(x: Any, dt: np.dtype[Any]) -> Any:
    return x if x.meta.dtype == dt else lax.convert_element_type(x, dt)


def _grid(v: Any, axis: int) -> Any:
    """``[..., K] -> [..., K, K]``: entry ``(i, j)`` is ``v[j]`` (axis -1) or ``v[i]`` (-2)."""
    ndim = v.meta.ndim + 1
    shape = (*v.meta.shape, v.meta.shape[-1])
    keep = ndim - 1 if axis == -1 else ndim - 2
    return lax.broadcast_in_dim(v, shape, (*range(ndim - 2), keep))


def _lorentzian_slope(g: Any, eps: float) -> Any:
    """The derivative of ``L = g / d``, ``d = g**2 + eps**2``: ``(1 - 2 g L) / d`` (never
    ``d**2``, which underflows in float32 where ``g`` is tiny)."""
    denominator = lax.add(lax.mul(g, g), lax.full_like(g, eps * eps))
    twice = lax.add(g, g)
    one = lax.full_like(g, 1)
    return lax.div(lax.sub(one, lax.mul(twice, lax.div(g, denominator))), denominator)


@register("linalg.lorentzian")
class Lorentzian(LinalgOp):
    """``x / (x**2 + eps**2)`` elementwise for real ``x``: ``1/x`` away from 0, 0 at 0
    (the regularised inverse of singular values in the SVD derivative)."""

    extent_generic = True  # elementwise
    eps: float

    def any_extent_kernel(self) -> Any:
        return self.impl  # elementwise

    def infer(self) -> list[Meta]:
        return [self.inputs[0]]

    def impl(self, x: Any) -> Any:
        if type(x) is not np.ndarray or not x.ndim:
            return x / (x * x + self.eps * self.eps)
        out = np.multiply(x, x)  # x / (x * x + eps**2), in place as in GapInverse
        out += self.eps * self.eps
        return np.divide(x, out, out=out)

    def lower(self, lo: Any, x: Any) -> Any:
        return x / (x * x + self.eps * self.eps)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (x,), (dx,) = xs, ts
        return [None if dx is None else lax.mul(_lorentzian_slope(x, self.eps), dx)]


@register("linalg.gap_inverse")
class GapInverse(LinalgOp):
    """``F[..., i, j] = g / (g**2 + eps**2)`` of the gaps ``g = p_j - p_i`` of a real
    spectrum ``v`` (``p = v**2`` when ``squared``: singular values; else ``p = v``:
    eigenvalues), ``[..., K] -> [..., K, K]``, with its diagonal exactly 0.

    The diagonal gap is identically 0, where the Lorentzian's slope is ``1/eps**2``;
    masking it (rather than relying on ``0 * 1/eps**2`` cancelling between the two
    grid terms) keeps reverse-over-reverse derivatives free of rounding blow-up. One
    primitive: the first-order derivative programs of svd and eigh read it as one
    instruction."""

    extent_generic = True  # its rules read ranks only
    eps: float
    squared: bool

    def any_extent_kernel(self) -> Any:
        return self.impl  # reads the spectrum's length from the array

    def infer(self) -> list[Meta]:
        (v,) = self.inputs
        return [v.with_(shape=(*v.shape, v.shape[-1]))]

    def impl(self, v: Any) -> Any:
        p = v * v if self.squared else v
        g = p[..., None, :] - p[..., :, None]
        # g / (g * g + eps**2), the denominator built in place and the quotient written
        # over it (the same operations as the expression, two temporaries fewer).
        f = np.multiply(g, g)
        f += self.eps * self.eps
        np.divide(g, f, out=f)
        k = v.shape[-1]
        f.reshape((*v.shape[:-1], k * k))[..., :: k + 1] = 0  # the diagonal
        return f

    def lower(self, lo: Any, v: Any) -> Any:
        jnp = lo.jnp
        p = v * v if self.squared else v
        g = p[..., None, :] - p[..., :, None]
        f = g / (g * g + self.eps * self.eps)
        k = v.shape[-1]
        return jnp.where(jnp.eye(k, dtype=bool), jnp.zeros((), f.dtype), f)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (v,), (dv,) = xs, ts
        if dv is None:
            return [None]
        p, dp = v, dv
        if self.squared:
            p, dp = lax.mul(v, v), lax.mul(lax.add(v, v), dv)
        gap = lax.sub(_grid(p, -1), _grid(p, -2))
        dgap = lax.sub(_grid(dp, -1), _grid(dp, -2))
        eye = eye_like(gap)
        off_diagonal = lax.sub(lax.full_like(gap, 1), eye)
        # The slope is used off the diagonal only; on it the gap is exactly 0, replaced
        # by 1 so that no order of derivative meets 1/eps**2 (inf in float32) times 0.
        slope = _lorentzian_slope(lax.add(gap, eye), self.eps)
        return [lax.mul(lax.mul(slope, off_diagonal), dgap)]


def _gap_inverse(v: Any, eps: float, squared: bool) -> Any:
    return GapInverse.bind(v, eps=eps, squared=squared)


def _regularised_inverse(s: Any, eps: float) -> Any:
    return Lorentzian.bind(s, eps=eps)


def _pick(mask: Any, x: Any) -> Any:
    """``[..., M, K] -> [..., K]``: the entry of each column where ``mask`` is set."""
    picked = lax.select(mask, x, lax.zeros_like(x))
    return lax.reduce_sum(picked, (x.meta.ndim - 2,))


def _phase_correction(mask: Any, vectors: Any, tangent: Any) -> Any:
    """``i * Im(dv_p) / v_p`` per column (``p`` the pivot, where ``v_p`` is real > 0):
    subtracting ``vectors * that`` from a tangent keeps the pivot entries real."""
    pivot = lax.real(_pick(mask, vectors))
    rate = lax.div(lax.imag(_pick(mask, tangent)), pivot)
    return lax.complex(lax.zeros_like(rate), rate)


def singular_value_tangent(op: str, u: Any, s: Any, vh: Any, da: Any, eps: float) -> Any:
    """``dS = Re diag(U^H dA V)`` alone (of the thin SVD ``u, s, vh``; :func:`_svd_tangents`
    computes it beside ``dU`` and ``dVh``), ties guarded as there, warnings naming ``op``."""
    if da.meta.shape[-1] > s.meta.shape[-1]:  # wide
        dpd = _row_diagonal(_adjoint_times(u, da), vh)
    else:
        dpd = _diagonal_of_product(u, _times_adjoint(da, vh))
    return guard_ties(op, s, lax.real(dpd) if u.meta.dtype.kind == "c" else dpd, eps)


def _svd_tangents(u: Any, s: Any, vh: Any, da: Any, eps: float, mask: Any) -> tuple[Any, Any, Any]:
    """JVP of the thin SVD (spec section 4.5), in the gauge ``diag(V^H dV) = 0`` with the
    phase in ``U`` (complex), or the canonical gauge when ``mask`` marks the pivots.

    With ``dP = U^H dA V``, ``F`` the regularised gap inverse (real, antisymmetric) and
    ``S^-1`` the regularised inverse of ``S``::

        dS  = Re diag(dP)
        dU  = U (F o (dP S + S dP^H) - dP S^-1) + dA V S^-1      (the last two: M > K)
        dVh = -(F o (S dP + dP^H S) + S^-1 dP) Vh + S^-1 U^H dA   (the last two: N > K)

    ``dVh`` is ``dV^H`` of ``dV = V (F o (S dP + dP^H S)) + (I - V V^H) dA^H U S^-1``
    written row-wise: ``F o (S dP + dP^H S)`` is anti-Hermitian (``F`` antisymmetric, the
    bracket Hermitian), so no adjoint of a tangent is formed, and the projector's two
    products share one with ``Vh``. For a wide matrix ``dP`` is ``(U^H dA) V``, whose left
    factor is ``dVh``'s extra term; else ``U^H (dA V)``, whose right factor is ``dU``'s.
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
        dpd = _diagonal_of_product(u, dav)
    ds = guard_ties("linalg.svd", s, lax.real(dpd) if complex_ else dpd, eps)
    f = _to(_gap_inverse(s, eps, squared=True), dt)
    sc = _to(s, dt)
    sinv = _to(_regularised_inverse(s, eps), dt)
    dps = scale_columns(dp, sc)
    inner_u = lax.mul(f, lax.add(dps, adjoint(dps)))
    if complex_:
        gauge = lax.mul(lax.sub(dpd, lax.conj(dpd)), lax.full_like(dpd, 0.5))  # i Im diag dP
        inner_u = lax.add(inner_u, diag_embed(lax.mul(gauge, sinv)))
    if dav is not None and m > k:
        du = lax.add(matmul(u, lax.sub(inner_u, scale_columns(dp, sinv))), scale_columns(dav, sinv))
    else:
        du = matmul(u, inner_u)
    sdp = scale_rows(sc, dp)  # S dP
    inner_v = lax.mul(f, lax.add(sdp, adjoint(sdp)))
    if w is not None:
        dvh = lax.sub(scale_rows(sinv, w), matmul(lax.add(inner_v, scale_rows(sinv, dp)), vh))
    else:
        dvh = lax.neg(matmul(inner_v, vh))
    if mask is not None and complex_:
        rotation = _phase_correction(mask, u, du)
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
    product (see :func:`_diagonal_of_product`)."""
    if vh.meta.dtype.kind == "c":
        vh = lax.conj(vh)
    return lax.reduce_sum(lax.mul(rows, vh), (vh.meta.ndim - 1,))


def _diagonal_of_product(left: Any, right: Any) -> Any:
    """``diag(left^H right)`` of ``[..., M, K]`` stacks as column sums of the elementwise
    product: a derivative that needs only this diagonal (singular values or eigenvalues
    alone) then holds one matrix product fewer (the full ``left^H right`` is pruned)."""
    if left.meta.dtype.kind == "c":
        left = lax.conj(left)
    return lax.reduce_sum(lax.mul(left, right), (left.meta.ndim - 2,))


def hermitian_of_triangle(da: Any, uplo: str) -> Any:
    """The Hermitian matrix ``eigh`` reads from one triangle of ``da`` (the real part of
    its diagonal): linear, so also the tangent of what it reads from ``a``."""
    part = lax.tril(da, -1) if uplo == "L" else lax.triu(da, 1)
    d = diagonal(da)
    if da.meta.dtype.kind == "c":
        d = _to(lax.real(d), da.meta.dtype)
    return lax.add(lax.add(part, adjoint(part)), diag_embed(d))


# ---------------------------------------------------------------------- families


@register("linalg.svd")
class Svd(LinalgOp):
    """The thin ``A = U diag(S) Vh``; outputs ``U, S, Vh`` and, with the canonical
    gauge, the pivot mask of ``U``'s columns (bool, internal)."""

    extent_generic = True  # its JVP branches on which of M, N exceed K only
    eps: float
    gauge: str

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_matrix(self.name, a)
        *batch, m, n = a.shape
        k = min(m, n)
        dt = a.dtype
        u = Meta((*batch, m, k), dt)
        outs = [u, Meta((*batch, k), _real_dtype(dt)), Meta((*batch, k, n), dt)]
        if self.gauge == "canonical":
            outs.append(Meta(u.shape, np.dtype(bool)))
        return outs

    def impl(self, a: Any) -> Any:
        u, s, vh = svd_factors(self.name, a)
        if self.gauge != "canonical":
            return u, s, vh
        u, partner, mask = _canonicalize(u, vh)
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
        du, ds, dvh = _svd_tangents(u, s, vh, da, self.eps, mask)
        return [du, ds, dvh] + [None] * (count - 3)


@register("linalg.svd_complement")
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
            where = _first_failure(self.name, a, np.linalg.svd)
            raise LinAlgError(
                self.name, f"the SVD did not converge for the input of shape {a.shape}{where}"
            ) from None
        if self.side == "left":
            extra = u[..., :, k:]
            return _canonicalize(extra, None)[0] if self.gauge == "canonical" else extra
        extra = np.swapaxes(vh[..., k:, :], -1, -2).conj()
        if self.gauge == "canonical":
            extra = _canonicalize(extra, None)[0]
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


@register("linalg.svd_truncate")
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


@register("linalg.eigh")
class Eigh(LinalgOp):
    """``A = V diag(w) V^H`` from the ``uplo`` triangle of ``A``; outputs ``w``
    (ascending, real), ``V`` and, with the canonical gauge, the pivot mask (internal)."""

    extent_generic = True  # its rules read ranks, flags and the eigenvalue count only
    uplo: str
    eps: float
    gauge: str

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_square(self.name, a)
        outs = [Meta(a.shape[:-1], _real_dtype(a.dtype)), Meta(a.shape, a.dtype)]
        if self.gauge == "canonical":
            outs.append(Meta(a.shape, np.dtype(bool)))
        return outs

    def impl(self, a: Any) -> Any:
        w, v = eigh_factors(self.name, a, self.uplo == "L")
        if self.gauge != "canonical":
            return w, v
        v, _, mask = _canonicalize(v, None)
        return w, v, mask

    def lower(self, lo: Any, a: Any) -> Any:
        if a.shape[-1] == 0:
            jnp = lo.jnp
            w, v = (jnp.zeros(meta.shape, meta.dtype) for meta in self.outputs[:2])
        else:  # ascending eigenvalues, from one triangle
            v, w = lo.linalg.eigh(a, lower=self.uplo == "L", symmetrize_input=False)
        if self.gauge != "canonical":
            return w, v
        v, _, mask = lowered.canonicalize(lo, v, None)
        return w, v, mask

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (da,) = ts
        count = len(self.outputs)
        if da is None:
            return [None] * count
        w, v = ys[0], ys[1]
        assert w is not None
        assert v is not None
        dt = v.meta.dtype
        xv = matmul(hermitian_of_triangle(da, self.uplo), v)
        dp = matmul(adjoint(v), xv)
        dpd = _diagonal_of_product(v, xv)  # diag(dP) without dP: a derivative of w alone
        dw = guard_ties(self.name, w, lax.real(dpd) if dt.kind == "c" else dpd, self.eps)
        f = _to(_gap_inverse(w, self.eps, squared=False), dt)
        dv = matmul(v, lax.mul(f, dp))
        if count == 3 and dt.kind == "c":
            dv = lax.sub(dv, scale_columns(v, _phase_correction(ys[2], v, dv)))
        return [dw, dv] + [None] * (count - 2)


@register("linalg.eig")
class Eig(LinalgOp):
    """``A V = V diag(w)``, complex outputs ``w, V`` (unit-norm columns) and ``V^-1``
    (internal: the eigenvalue derivative needs it; NaN when ``V`` is singular)."""

    eps: float

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_square(self.name, a)
        dt = _complex_dtype(a.dtype)
        return [Meta(a.shape[:-1], dt), Meta(a.shape, dt), Meta(a.shape, dt)]

    def impl(self, a: Any) -> Any:
        check_finite(self.name, a)
        dt = _complex_dtype(a.dtype)
        try:
            w, v = np.linalg.eig(a)
        except np.linalg.LinAlgError:
            where = _first_failure(self.name, a, np.linalg.eig)
            raise LinAlgError(
                self.name,
                f"the eigensolver did not converge for the input of shape {a.shape}{where}",
            ) from None
        v = v.astype(dt, copy=False)
        try:
            vinv = np.linalg.inv(v)
        except np.linalg.LinAlgError:  # defective: eigenvalue derivatives do not exist
            vinv = np.full(v.shape, np.nan, dtype=dt)
        return w.astype(dt, copy=False), v, vinv

    def lower(self, lo: Any, a: Any) -> Any:
        if not lo.on_cpu:
            raise lo.refuse(
                self,
                f"XLA computes non-Hermitian eigendecompositions on CPU only, not on "
                f"{lo.platform}; pass arrays on a CPU device (jax.devices('cpu'))",
            )
        jnp = lo.jnp
        dt = self.outputs[0].dtype
        if a.shape[-1] == 0:
            return tuple(jnp.zeros(meta.shape, meta.dtype) for meta in self.outputs)
        w, v = lo.linalg.eig(a, compute_left_eigenvectors=False)
        v = v.astype(dt)
        return w.astype(dt), v, jnp.linalg.inv(v)  # NaN/Inf where V is singular (defective A)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (da,) = ts
        if da is None:
            return [None, None, None]
        w, v, vinv = ys
        assert w is not None
        assert v is not None
        assert vinv is not None
        dt = v.meta.dtype
        dp = matmul(vinv, matmul(_to(da, dt), v))
        dw = diagonal(dp)
        gap = lax.sub(_grid(w, -1), _grid(w, -2))
        size = lax.real(lax.mul(gap, lax.conj(gap)))
        denominator = lax.add(size, lax.full_like(size, self.eps * self.eps))
        off_diagonal = lax.sub(lax.full_like(denominator, 1), eye_like(denominator))
        f = lax.div(lax.mul(lax.conj(gap), _to(off_diagonal, dt)), _to(denominator, dt))
        dv = matmul(v, lax.mul(f, dp))
        norm_rate = lax.real(diagonal(matmul(adjoint(v), dv)))
        dv = lax.sub(dv, scale_columns(v, _to(norm_rate, dt)))
        dvinv = lax.neg(matmul(vinv, matmul(dv, vinv)))
        return [dw, dv, dvinv]


# ---------------------------------------------------------------------- public functions


def _operand(op: str, a: Any) -> Any:
    """``a`` as a tensor of an inexact dtype (integers and bool promote to float64)."""
    x = asarray(a)
    target = inexact_dtype(op, x.meta)
    if x.meta.dtype != target:
        x = lax.convert_element_type(x, target)
    check_matrix(op, x.meta)
    return x


def _check_gauge(op: str, gauge: str) -> str:
    if gauge not in GAUGES:
        raise ParameterError(op, f"gauge must be one of {GAUGES}, got {gauge!r}")
    return gauge


def svd(
    a: Any, full_matrices: bool = True, *, eps: float = DEFAULT_EPS, gauge: str = "raw"
) -> SVDResult:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` (numpy.linalg.svd).

    ``full_matrices=True`` (numpy's default) gives square ``U`` (``[..., M, M]``) and
    ``Vh`` (``[..., N, N]``); ``False`` the thin factors with ``K = min(M, N)``
    columns/rows. ``S`` is real and descending. Derivatives: every output of the thin
    SVD; for a full non-square SVD, ``S`` and the square-sized partner, while a
    derivative through the factor with extra vectors raises :class:`tidu.ADRuleError`
    (those vectors are arbitrary; use ``full_matrices=False``). ``eps`` regularises
    the spectral gaps of the derivative (module documentation); ``gauge`` is
    ``"raw"`` or ``"canonical"``.
    """
    full_matrices = check_flag("linalg.svd", "full_matrices", full_matrices)
    x = matrix_operand("linalg.svd", a)
    if eps is not DEFAULT_EPS:
        eps = check_eps("linalg.svd", eps)
    if gauge != "raw":
        gauge = _check_gauge("linalg.svd", gauge)
    m, n = x.meta.shape[-2:]
    outs = Svd.bind(x, eps=eps, gauge=gauge)
    u, s, vh = outs[0], outs[1], outs[2]
    if full_matrices and m != n:
        side = "left" if m > n else "right"
        (extra,) = bind(SvdComplement.make((x.meta,), side=side, gauge=gauge), [x])
        if side == "left":
            u = lax.concatenate([u, extra], u.meta.ndim - 1)
        else:
            vh = lax.concatenate([vh, extra], vh.meta.ndim - 2)
    return SVDResult(u, s, vh)


def svdvals(a: Any, *, eps: float = DEFAULT_EPS) -> Any:
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


def truncated_svd(
    a: Any,
    *,
    max_rank: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    eps: float = DEFAULT_EPS,
) -> SVDResult:
    """The thin SVD keeping the singular values above ``max(atol, rtol * S_max)`` (at
    most ``max_rank`` of them): the truncation of tensor-network sweeps.

    Without ``rtol`` and ``atol`` the tolerance is numpy's ``matrix_rank`` default
    (``eps(dtype) * max(M, N) * S_max``). The rank is read from the data: concrete
    (an ordinary shape) for ``Tensor``/``EagerTensor``, a data-dependent extent
    (``dynamic_truncate``) in traced code. For a batch, every matrix keeps the largest
    rank over the batch. Derivatives are those of the kept singular triplets (the
    truncation point is locally constant).
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
    u, s, vh = svd(a, full_matrices=False, eps=eps)
    m, n = u.meta.shape[-2], vh.meta.shape[-1]
    k = s.meta.shape[-1]
    cap = k if max_rank is None else min(k, int(max_rank))
    if isinstance(s, Tensor):
        rank = _concrete_rank(s._value, (m, n), rtol, atol, cap)
        if rank == k:
            return SVDResult(u, s, vh)
        return SVDResult(*SvdTruncate.bind(u, s, vh, rank=rank))
    rank_value = _traced_rank(s, (m, n), rtol, atol, cap)
    batch = s.meta.ndim - 1
    return SVDResult(
        lax.dynamic_truncate(u, rank_value, batch + 1),
        lax.dynamic_truncate(s, rank_value, batch),
        lax.dynamic_truncate(vh, rank_value, batch),
    )


def _concrete_truncated_svd(
    a: Any, max_rank: int | None, rtol: float | None, atol: float | None
) -> SVDResult:
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


def eigh(a: Any, UPLO: str = "L", *, eps: float = DEFAULT_EPS, gauge: str = "raw") -> EighResult:  # noqa: N803  (numpy.linalg name)
    """Eigen-decomposition of a Hermitian (real symmetric) matrix, read from the lower
    (``UPLO="L"``) or upper triangle: ``(eigenvalues, eigenvectors)``, eigenvalues real
    ascending. The derivative is that of the function of the read triangle (the
    tangent is made Hermitian from it, as LAPACK reads it); ``eps`` regularises the
    gaps, ``gauge`` is ``"raw"`` or ``"canonical"``.
    """
    op = _eigh_call(a, UPLO, eps, gauge)
    if op is None:
        a, op = _eigh_op(a, UPLO, eps, gauge)
    outs = type(a)._bind(op, (a,))  # (w, V) or, with the canonical gauge, (w, V, mask)
    return tuple.__new__(EighResult, outs if len(outs) == 2 else outs[:2])


def eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  (numpy.linalg name)
    """The eigenvalues of a Hermitian matrix, real ascending (see :func:`eigh`)."""
    op = _eigh_call(a, UPLO, DEFAULT_EPS, "raw")
    if op is None:
        a, op = _eigh_op(a, UPLO, DEFAULT_EPS, "raw")
    return type(a)._bind(op, (a,))[0]


def _eigh_call(a: Any, uplo: Any, eps: Any, gauge: Any) -> Eigh | None:
    """The Eigh instance an earlier call with these arguments bound, if any: a tensor
    whose meta was found a valid operand then (the fast lane of repeated calls)."""
    if not isinstance(a, Tensor):
        return None
    try:
        return _EIGH_CALLS.get((a.meta, uplo, eps, gauge))
    except TypeError:  # unhashable arguments: refused by _eigh_op
        return None


def _eigh_op(a: Any, uplo: Any, eps: Any, gauge: Any) -> tuple[Any, Eigh]:
    """The operand (a float/complex square matrix tensor) and the Eigh instance of a
    call, validating its arguments; remembered for :func:`_eigh_call`."""
    op = "linalg.eigh"
    x = matrix_operand(op, a, square=True)
    if uplo not in ("L", "U"):
        raise ParameterError(op, f"UPLO must be 'L' or 'U', got {uplo!r}")
    checked_eps = eps if eps is DEFAULT_EPS else check_eps(op, eps)
    checked_gauge = gauge if gauge == "raw" else _check_gauge(op, gauge)
    made = Eigh.make((x.meta,), uplo=uplo, eps=checked_eps, gauge=checked_gauge)
    if x is a:  # a tensor used as given: later calls with it may skip the checks
        with contextlib.suppress(TypeError):  # an unhashable (valid) eps: not remembered
            _EIGH_CALLS.put((x.meta, uplo, eps, gauge), made)
    return x, made


_EIGH_CALLS: DictCache[tuple[Any, ...], Eigh] = DictCache(1024, "linalg.eigh calls")
"""(operand meta, UPLO, eps, gauge) -> the Eigh instance a call binds (structure only)."""


def eig(a: Any, *, eps: float = DEFAULT_EPS) -> EigResult:
    """Eigen-decomposition of a general square matrix: complex ``(eigenvalues,
    eigenvectors)``, eigenvectors of unit norm (numpy's/LAPACK's scaling). Both are
    differentiable (torch's convention for the eigenvectors: ``Re diag(V^H dV) = 0``);
    a defective matrix gives NaN derivatives.
    """
    op = "linalg.eig"
    x = _operand(op, a)
    check_square(op, x.meta)
    outs = bind(Eig.make((x.meta,), eps=check_eps(op, eps)), [x])
    return EigResult(outs[0], outs[1])


def eigvals(a: Any) -> Any:
    """The (complex) eigenvalues of a general square matrix (see :func:`eig`)."""
    return eig(a).eigenvalues
