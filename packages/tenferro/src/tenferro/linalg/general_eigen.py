"""Eigen-decomposition of general square matrices with AD: eig, eigvals.

The family ``linalg.eig`` carries the kernel and the JVP. Outputs are complex;
eigenvectors have unit norm (LAPACK's scaling, as numpy and torch), and their derivative
is torch's: ``dV = V (F o (V^-1 dA V))`` with ``Re diag(V^H dV) = 0`` and
``F = 1/(w_j - w_i)`` cut at ties (relative to ``max|w|``) by
:mod:`tenferro.linalg.gaps`. A defective matrix gives NaN derivatives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, NamedTuple, overload

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint, diagonal, matmul, scale_columns, to_dtype
from tenferro.core.bind import bind
from tenferro.core.families import family
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import complex_dtype
from tenferro.errors import LinAlgError
from tenferro.linalg import lapack
from tenferro.linalg.checks import (
    check_eps,
    check_finite,
    check_matrix,
    check_square,
    inexact_dtype,
)
from tenferro.linalg.degeneracy import guard_ties
from tenferro.linalg.family import SquareMatrixOp
from tenferro.linalg.gaps import DEFAULT_EPS, gap_scale, resolve_eps, spectral_block
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.surface.signatures import preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from tenferro.concrete import Tensor

__all__ = ["Eig", "EigResult", "eig", "eigvals"]


class EigResult(NamedTuple, Generic[TensorLikeT]):
    """``eig``'s result: ``a @ V = V @ diag(w)``, complex."""

    eigenvalues: TensorLikeT
    eigenvectors: TensorLikeT


@family("linalg.eig")
class Eig(SquareMatrixOp):
    """``A V = V diag(w)``, complex outputs ``w, V`` (unit-norm columns) and ``V^-1``
    (internal: the eigenvalue derivative needs it; NaN when ``V`` is singular)."""

    eps: float | None

    def square_outputs(self, a: Meta) -> list[Meta]:
        dt = complex_dtype(a.dtype)
        return [Meta(a.shape[:-1], dt), Meta(a.shape, dt), Meta(a.shape, dt)]

    def impl(self, a: Any) -> Any:
        check_finite(self.name, a)
        dt = complex_dtype(a.dtype)
        try:
            w, v = np.linalg.eig(a)
        except np.linalg.LinAlgError:
            where = lapack.first_failure(self.name, a, np.linalg.eig)
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
        dp = matmul(vinv, matmul(to_dtype(da, dt), v))
        eps = resolve_eps(self.eps, w.meta.dtype)
        dw = guard_ties(self.name, w, diagonal(dp), eps)
        b = spectral_block("eig", w, (xs[0], v, vinv), eps)
        f_dp = gap_scale(self.name, w, b, dp, eps)
        dv = matmul(v, f_dp)
        norm_rate = lax.real(diagonal(matmul(adjoint(v), dv)))
        dv = lax.sub(dv, scale_columns(v, to_dtype(norm_rate, dt)))
        dvinv = lax.neg(matmul(vinv, matmul(dv, vinv)))
        return [dw, dv, dvinv]


def _operand(op: str, a: Any) -> Any:
    """``a`` as a tensor of an inexact dtype (integers and bool promote to float64)."""
    x = asarray(a)
    target = inexact_dtype(op, x.meta)
    if x.meta.dtype != target:
        x = lax.convert_element_type(x, target)
    check_matrix(op, x.meta)
    return x


@overload
def eig(a: TensorLikeT, *, eps: float | None = DEFAULT_EPS) -> EigResult[TensorLikeT]: ...
@overload
def eig(a: ArrayLike, *, eps: float | None = DEFAULT_EPS) -> EigResult[Tensor]: ...
def eig(a: Any, *, eps: float | None = DEFAULT_EPS) -> EigResult[Any]:
    """Eigen-decomposition of a general square matrix: complex ``(eigenvalues,
    eigenvectors)``, eigenvectors of unit norm (numpy's/LAPACK's scaling). Both are
    differentiable (torch's convention for the eigenvectors: ``Re diag(V^H dV) = 0``);
    a defective matrix gives NaN derivatives.
    """
    op = "linalg.eig"
    x = _operand(op, a)
    check_square(op, x.meta)
    if eps is not DEFAULT_EPS:
        eps = check_eps(op, eps)
    outs = bind(Eig.make((x.meta,), eps=eps), [x])
    return EigResult(outs[0], outs[1])


@preserving
def eigvals(a: Any) -> Any:
    """The (complex) eigenvalues of a general square matrix (see :func:`eig`)."""
    return eig(a).eigenvalues
