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

import math
import operator
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
    gaps = np.abs(values[..., 1:] - values[..., :-1])
    if not gaps.size:
        return np.zeros(gaps.shape, bool)
    scale = _largest(np.abs(values), axis=-1, keepdims=True)
    return np.less_equal(gaps, np.maximum(scale * _rounding(values.dtype), 10 * eps))


def uneven_on_ties(
    values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> np.ndarray[Any, Any]:
    """Adjacent tied pairs whose cotangents differ beyond rounding."""
    ties = tied(values, eps)
    if not _any(ties, axis=None):
        return ties
    steps = np.abs(np.diff(cotangent, axis=-1))
    scale = np.max(np.abs(cotangent), axis=-1, keepdims=True)
    return ties & (steps > np.sqrt(np.finfo(cotangent.dtype).eps) * scale)


_largest = np.maximum.reduce
_any = np.logical_or.reduce
"""``max`` and ``any`` without numpy's Python wrappers: the check runs in every reverse
pass through a spectral rule."""

_ROUNDING = {np.dtype(t): 64 * float(np.finfo(t).eps) for t in (np.float32, np.float64)}


def _rounding(dtype: np.dtype[Any]) -> float:
    """Rounding of a spectrum relative to its largest magnitude."""
    found = _ROUNDING.get(dtype)
    return 64 * float(np.finfo(dtype).eps) if found is None else found


def _warn(
    family: str, values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> None:
    where = _first_uneven(values, cotangent, eps)
    if where is None:
        return
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


def _first_uneven(
    values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> tuple[int, ...] | None:
    """The index of the first pair :func:`uneven_on_ties` flags, or ``None``. A short
    spectrum (one matrix's) is scanned in Python floats, which costs less than the
    numpy calls on a handful of values."""
    if values.ndim != 1 or values.shape[0] > _SHORT:
        bad = uneven_on_ties(values, cotangent, eps)
        return tuple(int(i) for i in np.argwhere(bad)[0]) if _any(bad, axis=None) else None
    v, c = values.tolist(), cotangent.tolist()
    if len(v) < 2:
        return None
    bound = max(_rounding(values.dtype) * max(map(abs, v)), 10 * eps)
    if min(map(abs, map(operator.sub, v[1:], v))) > bound:  # no tie: the common case
        return None
    step_bound = None
    for i in range(len(v) - 1):
        if abs(v[i + 1] - v[i]) <= bound:
            if step_bound is None:
                step_bound = math.sqrt(np.finfo(cotangent.dtype).eps) * max(map(abs, c))
            if abs(c[i + 1] - c[i]) > step_bound:
                return (i,)
    return None


_SHORT = 32
"""Spectra up to this length are checked in Python floats."""


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

    def any_extent_kernel(self) -> Any:
        return self.impl  # the identity (a check of the arrays it is given)

    def lower(self, lo: Any, values: Any, x: Any) -> Any:
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

    def lower(self, lo: Any, values: Any, x: Any) -> Any:
        """The identity; after each run the host reads whether any tied pair got uneven
        cotangents (one flag computed in the program) and warns as :meth:`impl` does."""
        lo.check(self._warn_after_run, _lowered_uneven(lo, values, x, self.eps), values, x)
        return x

    def _warn_after_run(self, flag: Any, values: Any, x: Any) -> None:
        if bool(flag):
            _warn(self.family_name, np.asarray(values), np.asarray(x), self.eps)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[1] is None else TieCheck.bind(xs[0], ts[1], **self._params())]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None]
        return [None, TieGuard.bind(xs[0], cts[0], **self._params())]


def _lowered_uneven(lo: Any, values: Any, cotangent: Any, eps: float) -> Any:
    """Whether :func:`uneven_on_ties` flags any pair, computed in JAX (a bool scalar)."""
    jnp = lo.jnp
    if values.shape[-1] < 2:
        return jnp.zeros((), bool)
    gaps = jnp.abs(values[..., 1:] - values[..., :-1])
    scale = jnp.max(jnp.abs(values), axis=-1, keepdims=True)
    ties = gaps <= jnp.maximum(scale * _rounding(np.dtype(values.dtype)), 10 * eps)
    steps = jnp.abs(jnp.diff(cotangent, axis=-1))
    size = jnp.max(jnp.abs(cotangent), axis=-1, keepdims=True)
    uneven = steps > np.sqrt(np.finfo(np.dtype(cotangent.dtype)).eps) * size
    return jnp.any(ties & uneven)


def guard_ties(family: str, values: RuleValue, tangent: RuleValue, eps: float) -> RuleValue:
    """``tangent`` (of the sorted ``values``) marked so that the reverse pass checks
    its cotangent at ties."""
    return TieGuard.bind(values, tangent, family_name=family, eps=eps)
