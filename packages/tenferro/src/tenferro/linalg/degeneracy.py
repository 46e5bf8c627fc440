"""Where spectral derivatives are not defined: tied eigen/singular values.

At a degenerate level (``w[i] == w[j]``) the regularised gap ``F`` is 0, so the
derivative of ``eigh``/``svd`` ignores how a perturbation mixes the tied vectors.
Losses that treat the level as a whole (sums over it, projectors onto it, a weight
that is equal on tied values) are exact. A loss that weights tied values
differently is not: its derivative depends on how the perturbation splits the
level (``w[0]`` of a degenerate ground state is not differentiable), or needs the
mixing term the spectral rule cannot supply (``Tr(f(H) O)``). Such a loss shows
itself in reverse mode as an eigen/singular-value cotangent that differs between
tied values; the reverse pass then warns (:class:`DegenerateDerivativeWarning`)
instead of returning a wrong number silently.

Two linear primitives carry the check, both the identity on their second operand:
``tie_guard(w, dw)`` (what the JVP rules emit; no check, forward tangents are
fine) and ``tie_check(w, ct)`` (its transpose: checks the cotangent). They
transpose into each other, so reverse passes at every order keep the check.

Known gap: second derivatives at a tie are not exact even for whole-level losses
(``Tr(exp(-H))``: the within-level ``f''`` term is dropped with the mixing). A
reverse pass over the gradient (``hessian``, ``hvp``) sees uneven cotangents on the
level and warns; forward over forward (``jacfwd(jacfwd(f))``) checks nothing.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tenferro.core.primitive import RuleValue
from tenferro.errors import DegenerateDerivativeWarning
from tenferro.extension import register
from tenferro.linalg.family import LinalgOp

__all__ = ["guard_ties", "tied", "uneven_on_ties"]

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


def tied(values: np.ndarray[Any, Any], eps: float) -> np.ndarray[Any, Any]:
    """Which adjacent pairs of the sorted ``values`` (last axis) the spectral rules
    treat as tied: gaps where the Lorentzian ``g / (g**2 + eps**2)`` is far from
    ``1/g`` (``g <= 10 eps``) or within rounding of the values' scale."""
    gaps = np.abs(np.diff(values, axis=-1))
    scale = np.max(np.abs(values), axis=-1, keepdims=True) if values.size else 0.0
    rounding = 64 * np.finfo(values.dtype).eps * scale
    return gaps <= np.maximum(10 * eps, rounding)


def uneven_on_ties(
    values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> np.ndarray[Any, Any]:
    """Adjacent tied pairs whose cotangents differ beyond rounding."""
    ties = tied(values, eps)
    if not ties.any():
        return ties
    steps = np.abs(np.diff(cotangent, axis=-1))
    scale = np.max(np.abs(cotangent), axis=-1, keepdims=True)
    return ties & (steps > np.sqrt(np.finfo(cotangent.dtype).eps) * scale)


def _warn(
    family: str, values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> None:
    bad = uneven_on_ties(values, cotangent, eps)
    if not bad.any():
        return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    *batch, i = where
    at = f"[{', '.join(map(str, batch))}]" if batch else ""
    noun = "singular values" if family == "linalg.svd" else "eigenvalues"
    warnings.warn(
        f"{family}: {noun}{at} {i} and {i + 1} are tied ({values[where]:.6g} and "
        f"{values[(*batch, i + 1)]:.6g}, within eps={eps:g} or rounding) and the loss "
        f"weights them differently (cotangents {cotangent[where]:.6g} and "
        f"{cotangent[(*batch, i + 1)]:.6g}); its derivative there depends on how a "
        f"perturbation splits the level, so the gradient returned is not the derivative. "
        f"Make the loss treat the level as a whole, or lift the degeneracy (a smooth "
        f"function of the matrix such as Tr(f(H) O) is differentiable, but not through "
        f"{noun} alone)",
        DegenerateDerivativeWarning,
        stacklevel=2,
    )


class _TieIdentity(LinalgOp):
    """The identity on ``x`` of the shape of the sorted ``values``; ``values`` only
    locates the ties."""

    extent_generic = True  # identities: their rules read no extent
    family_name: str
    eps: float

    def infer(self) -> list[Any]:
        return [self.inputs[1]]

    def impl(self, values: Any, x: Any) -> Any:
        return x

    def _params(self) -> dict[str, Any]:
        return {"family_name": self.family_name, "eps": self.eps}


@register("linalg.tie_guard")
class TieGuard(_TieIdentity):
    """Forward-mode tangents of tied values pass unchecked (a tangent that splits a
    level is an ordinary direction; the loss decides whether it matters)."""

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[1] is None else TieGuard.bind(xs[0], ts[1], **self._params())]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None]
        return [None, TieCheck.bind(xs[0], cts[0], **self._params())]


@register("linalg.tie_check")
class TieCheck(_TieIdentity):
    """Cotangents of tied values, checked: uneven ones warn."""

    def impl(self, values: Any, x: Any) -> Any:
        _warn(self.family_name, np.asarray(values), np.asarray(x), self.eps)
        return x

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[1] is None else TieCheck.bind(xs[0], ts[1], **self._params())]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None]
        return [None, TieGuard.bind(xs[0], cts[0], **self._params())]


def guard_ties(family: str, values: RuleValue, tangent: RuleValue, eps: float) -> RuleValue:
    """``tangent`` (of the sorted ``values``) marked so that the reverse pass checks
    its cotangent at ties."""
    return TieGuard.bind(values, tangent, family_name=family, eps=eps)
