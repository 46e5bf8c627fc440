"""Eigen-decomposition of Hermitian matrices with AD: eigh, eigvalsh.

The family ``linalg.eigh`` carries the kernel and the JVP. Conventions (numpy.linalg /
torch.linalg):

* leading batch axes, ``[..., N, N]``; eigenvalues real and ascending;
* ``eigh`` and ``eigvalsh`` read one triangle for their values and differentiate the
  input as Hermitian: tangents enter through their Hermitian part, so gradients are
  Hermitian (as torch, JAX and :func:`~tenferro.linalg.cholesky`);
* derivatives divide by eigenvalue gaps through :mod:`tenferro.linalg.gaps` (ties
  relative to ``max|w|``, as for the SVD in :mod:`tenferro.linalg.singular_values`): at
  a tie the rotations inside the tied level get no derivative while eigenvalues,
  their symmetric functions and projectors onto complete tied levels keep exact
  derivatives;
* gauges (:mod:`tenferro.linalg.gauges`): ``gauge="raw"`` returns LAPACK's vectors, whose
  complex phase derivative follows ``diag(V^H dV) = 0``; ``gauge="canonical"`` makes
  the largest-magnitude entry of each eigenvector real and positive.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, overload

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.algebra import (
    adjoint,
    diag_embed,
    diagonal,
    diagonal_of_product,
    matmul,
    scale_columns,
    to_dtype,
)
from tenferro.concrete import Tensor
from tenferro.core.families import family
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import real_dtype
from tenferro.errors import LinAlgError, ParameterError
from tenferro.linalg import lapack, lowered
from tenferro.linalg.checks import check_eps, check_finite
from tenferro.linalg.degeneracy import guard_ties
from tenferro.linalg.family import SquareMatrixOp, matrix_operand
from tenferro.linalg.gaps import (
    DEFAULT_EPS,
    gap_scale,
    hermitian_part,
    resolve_eps,
    spectral_block,
)
from tenferro.linalg.gauges import canonicalize, check_gauge, phase_correction
from tenferro.meta import Meta
from tenferro.surface.signatures import preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Eigh", "EighResult", "eigh", "eigh_factors", "eigvalsh", "hermitian_of_triangle"]


class EighResult(NamedTuple, Generic[TensorLikeT]):
    """``eigh``'s result: ``a = V @ diag(w) @ V^H``."""

    eigenvalues: TensorLikeT
    eigenvectors: TensorLikeT


def eigh_factors(op: str, a: Any, lower: bool) -> tuple[Any, Any]:
    """Eigenvalues (ascending) and eigenvectors of the (batch of) finite Hermitian
    matrices read from one triangle of ``a``; errors name ``op``."""
    check_finite(op, a)
    try:
        if a.ndim == 2 and a.size:
            return lapack.eigh(a, lower)
        factors: tuple[Any, Any] = lapack.apply(
            lambda m: lapack.eigh(m, lower),
            lambda m: np.linalg.eigh(m, UPLO="L" if lower else "U"),
            a,
            batched=lambda m: lapack.eigh_batch(m, lower),
        )
        return factors
    except np.linalg.LinAlgError:
        where = lapack.first_failure(op, a, np.linalg.eigh)
        raise LinAlgError(
            op, f"the eigensolver did not converge for the input of shape {a.shape}{where}"
        ) from None


def hermitian_of_triangle(da: Any, uplo: str) -> Any:
    """The Hermitian matrix ``eigh`` reads from one triangle of ``da`` (the real part of
    its diagonal): linear, so also the tangent of what it reads from ``a``."""
    part = lax.tril(da, -1) if uplo == "L" else lax.triu(da, 1)
    d = diagonal(da)
    if da.meta.dtype.kind == "c":
        d = to_dtype(lax.real(d), da.meta.dtype)
    return lax.add(lax.add(part, adjoint(part)), diag_embed(d))


@family("linalg.eigh")
class Eigh(SquareMatrixOp):
    """``A = V diag(w) V^H`` from the ``uplo`` triangle of ``A``; outputs ``w``
    (ascending, real), ``V`` and, with the canonical gauge, the pivot mask (internal)."""

    extent_generic = True  # its rules read ranks, flags and the eigenvalue count only
    uplo: str
    eps: float | None
    gauge: str

    def square_outputs(self, a: Meta) -> list[Meta]:
        outs = [Meta(a.shape[:-1], real_dtype(a.dtype)), Meta(a.shape, a.dtype)]
        if self.gauge == "canonical":
            outs.append(Meta(a.shape, np.dtype(bool)))
        return outs

    def impl(self, a: Any) -> Any:
        w, v = eigh_factors(self.name, a, self.uplo == "L")
        if self.gauge != "canonical":
            return w, v
        v, _, mask = canonicalize(v, None)
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
        eps = resolve_eps(self.eps, w.meta.dtype)
        xv = matmul(hermitian_part(da), v)  # the input differentiated as Hermitian
        dp = matmul(adjoint(v), xv)
        dpd = diagonal_of_product(v, xv)  # diag(dP) without dP: a derivative of w alone
        dw = guard_ties(self.name, w, lax.real(dpd) if dt.kind == "c" else dpd, eps)
        b = spectral_block("eigh", w, (xs[0], v), eps)
        dv = matmul(v, gap_scale(self.name, w, b, dp, eps, pre="hermitian"))
        if count == 3 and dt.kind == "c":
            dv = lax.sub(dv, scale_columns(v, phase_correction(ys[2], v, dv)))
        return [dw, dv] + [None] * (count - 2)


@overload
def eigh(
    a: TensorLikeT,
    UPLO: str = "L",  # noqa: N803  (numpy.linalg name)
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> EighResult[TensorLikeT]: ...
@overload
def eigh(
    a: ArrayLike,
    UPLO: str = "L",  # noqa: N803  (numpy.linalg name)
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> EighResult[Tensor]: ...
def eigh(
    a: Any,
    UPLO: str = "L",  # noqa: N803  (numpy.linalg name)
    *,
    eps: float | None = DEFAULT_EPS,
    gauge: str = "raw",
) -> EighResult[Any]:
    """Eigen-decomposition of a Hermitian (real symmetric) matrix, read from the lower
    (``UPLO="L"``) or upper triangle: ``(eigenvalues, eigenvectors)``, eigenvalues real
    ascending. The input is differentiated as Hermitian (tangents enter through their
    Hermitian part, gradients are Hermitian, as torch and JAX); ``eps`` is the relative
    tie tolerance of the derivative (eigenvalues closer than ``eps * max|w|`` are tied;
    default 64 machine epsilons), ``gauge`` is ``"raw"`` or ``"canonical"``.
    """
    op = _eigh_call(a, UPLO, eps, gauge)
    if op is None:
        a, op = _eigh_op(a, UPLO, eps, gauge)
    outs = type(a)._bind(op, (a,))  # (w, V) or, with the canonical gauge, (w, V, mask)
    return tuple.__new__(EighResult, outs if len(outs) == 2 else outs[:2])


@preserving
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
    checked_gauge = gauge if gauge == "raw" else check_gauge(op, gauge)
    made = Eigh.make((x.meta,), uplo=uplo, eps=checked_eps, gauge=checked_gauge)
    if x is a:  # a tensor used as given: later calls with it may skip the checks
        with contextlib.suppress(TypeError):  # an unhashable (valid) eps: not remembered
            _EIGH_CALLS.put((x.meta, uplo, eps, gauge), made)
    return x, made


_EIGH_CALLS: DictCache[tuple[Any, ...], Eigh] = DictCache(1024, "linalg.eigh calls")
"""(operand meta, UPLO, eps, gauge) -> the Eigh instance a call binds (structure only)."""
