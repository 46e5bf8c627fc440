"""Where spectral derivatives are not defined: tied eigen/singular values, and the one
warning that says so.

Two values of a spectrum ``v`` are *tied* when ``|v_i - v_j| <= eps * max|v|``
(:mod:`tenferro.linalg.gaps`; ``eps`` relative, default 64 machine epsilons). At a tie
the decomposition's vectors inside the tied level are arbitrary, so derivatives leave
their mutual rotation out (the gap reciprocal is 0 there, at every order). Losses that
treat the level as a whole (sums over it, projectors onto it, the polar factor, a weight
equal on tied values) keep their exact derivatives, to every order. A loss that weights
tied values differently has none, and one that depends on the rotation inside the level
needs a term the decomposition cannot supply: the reverse pass warns
(:class:`~tenferro.errors.DegenerateDerivativeWarning`) instead of returning a wrong
number silently.

**The rule.** A warning is raised only when the part left out is significant relative to
the result: on a tied pair, the cotangent's component that the left-out term would
carry must exceed ``sqrt(machine epsilon)`` of the cotangent's largest entry (below that
it is rounding). For eigen/singular values that is ``|c_i - c_j| > sqrt(eps_m) max|c|``;
for vectors, the component along the rotation of the pair
(:class:`~tenferro.linalg.gaps.GapScale`). Resolved but close gaps whose reciprocal
powers would amplify rounding beyond ``eps_m ** (1/4)`` warn that the derivative loses
precision (naming the ``eps`` that would tie them).

**Once per call.** Within one backward pass or one transformed call (``tf.grad``,
``tf.hvp``, ``tape.grad``, ``backward()``, ...) the first such finding is reported, once,
naming the operation and the tied values: eager and traced evaluations of the same
mathematics warn alike.

Two linear primitives carry the value check, both the identity on their second operand:
``tie_guard(w, dw)`` (what the JVP rules emit; no check: a tangent that splits a level
is an ordinary direction) and ``tie_check(w, ct)`` (its transpose: checks the
cotangent). They transpose into each other, so reverse passes at every order keep the
check; in a forward pass over a reverse pass (``hvp``, ``hessian``) the tangent of the
cotangent is checked the same way, which catches the second derivative of a function
that is not linear across a tied level along directions that split it (such a second
derivative needs the function's own second derivative inside the level). Forward mode
alone (``jvp``, ``jacfwd``) never sees the loss, so it checks nothing: its tangents
follow the convention above.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from tenferro.core.families import family
from tenferro.core.rules import RuleValue
from tenferro.errors import DegenerateDerivativeWarning, warn_once_per_call
from tenferro.linalg import lowered
from tenferro.linalg.family import LinalgOp

__all__ = [
    "clusters",
    "guard_ties",
    "report",
    "tied_pairs",
    "uneven_on_ties",
]

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


# ---------------------------------------------------------------------- reporting


def report(family: str, text: str) -> None:
    """Report a finding of ``family`` (once per evaluation: the first finding of a
    backward pass or transformed call is warned, at its end)."""
    warn_once_per_call(DegenerateDerivativeWarning, f"{family}: {text}")


# ---------------------------------------------------------------------- value ties


def _machine_eps(dtype: Any) -> float:
    return float(np.finfo(dtype).eps)


def clusters(
    values: np.ndarray[Any, Any], eps: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The tied clusters of ``values`` (last axis; real or complex, any order): ``(same,
    at_zero)``, ``same[..., i, j]`` when ``i`` and ``j`` are in one cluster (the
    connected groups of ``|v_i - v_j| <= eps * max|v|``; the diagonal is set),
    ``at_zero[..., i]`` when ``i``'s cluster holds a value within ``eps * max|v|`` of 0."""
    k = values.shape[-1]
    if not k:
        return np.zeros((*values.shape, 0), bool), np.zeros(values.shape, bool)
    magnitude = np.abs(values)
    bound = eps * np.max(magnitude, axis=-1, keepdims=True)
    steps = np.diff(values, axis=-1)
    if values.dtype.kind != "c" and (np.all(steps >= 0) or np.all(steps <= 0)):
        # Sorted (svd, eigh): a cluster is a run of neighbours at most the bound apart.
        label = np.concatenate(
            [np.zeros((*values.shape[:-1], 1), int), np.cumsum(np.abs(steps) > bound, -1)], -1
        )
        same = label[..., :, None] == label[..., None, :]
    else:
        same = np.abs(values[..., None, :] - values[..., :, None]) <= bound[..., None]
        for _ in range(max(1, int(k).bit_length())):  # transitive closure by squaring
            same = np.matmul(same.astype(np.int64), same.astype(np.int64)) > 0
    near_zero = magnitude <= bound
    at_zero = np.any(same & near_zero[..., None, :], axis=-1)
    return same, at_zero


def tied_pairs(values: np.ndarray[Any, Any], eps: float) -> np.ndarray[Any, Any]:
    """``[..., K, K]``: which pairs ``i < j`` of ``values`` are in one tied cluster
    (:func:`clusters`)."""
    same, _ = clusters(values, eps)
    k = values.shape[-1]
    return same & np.triu(np.ones((k, k), dtype=bool), 1)


def uneven_on_ties(
    values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> np.ndarray[Any, Any]:
    """Tied pairs (:func:`tied_pairs`) whose cotangents differ by more than
    ``sqrt(machine epsilon)`` of the largest cotangent magnitude."""
    ties = tied_pairs(values, eps)
    if not ties.any():
        return ties
    steps = np.abs(cotangent[..., None, :] - cotangent[..., :, None])
    scale = np.max(np.abs(cotangent), axis=-1)[..., None, None]
    return ties & (steps > math.sqrt(_machine_eps(np.abs(cotangent[..., :0]).dtype)) * scale)


def _first_uneven(
    values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> tuple[int, ...] | None:
    """The index ``(..., i, j)`` of the first pair :func:`uneven_on_ties` flags, or None.
    A short spectrum (one matrix's) is scanned in Python floats first: no tie, the
    common case, costs less than the numpy calls."""
    if values.ndim == 1 and values.shape[0] <= _SHORT and values.dtype.kind != "c":
        v = values.tolist()
        if len(v) < 2:
            return None
        bound = eps * max(map(abs, v))
        steps = [b - a for a, b in itertools.pairwise(v)]
        if all(d > bound for d in steps) or all(-d > bound for d in steps):
            return None  # sorted with every neighbour resolved: no cluster
    bad = uneven_on_ties(values, cotangent, eps)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


_SHORT = 32
"""Spectra up to this length are first checked in Python floats."""


def _check_values(
    family: str,
    values: np.ndarray[Any, Any],
    cotangent: np.ndarray[Any, Any],
    eps: float,
    nonnegative: bool = False,
) -> None:
    if nonnegative and values.shape[-1] and _check_at_zero(family, values, cotangent, eps):
        return
    where = _first_uneven(values, cotangent, eps)
    if where is None:
        return
    *batch, i, j = where
    at = f"[{', '.join(map(str, batch))}]" if batch else ""
    row, ct = values[tuple(batch)], cotangent[tuple(batch)]
    noun = "singular values" if "svd" in family else "eigenvalues"
    report(
        family,
        f"{noun}{at} {i} and {j} are tied ({_fmt(row[i])} and {_fmt(row[j])}, within "
        f"eps={eps:.3g} of the largest) and the loss weights them differently "
        f"(cotangents {_fmt(ct[i])} and {_fmt(ct[j])}); its derivative there depends on how a "
        f"perturbation splits the level, so the gradient returned is not the derivative. "
        f"Make the loss treat the level as a whole, or lift the degeneracy (a smooth "
        f"function of the matrix such as Tr(f(H) O) is differentiable, but not through "
        f"{noun} alone)",
    )


def _check_at_zero(
    family: str, values: np.ndarray[Any, Any], cotangent: np.ndarray[Any, Any], eps: float
) -> bool:
    """Singular values at zero (within ``eps * max``) have a kink (``|t x|``): a
    significant cotangent there has no derivative. Reports and returns True if found."""
    if values.ndim == 1:  # one spectrum: in Python floats
        listed = values.tolist()
        if min(listed) > eps * max(map(abs, listed)):
            return False
    top = np.max(np.abs(values), axis=-1, keepdims=True)
    if not np.any(values <= eps * top):
        return False
    limit = math.sqrt(_machine_eps(np.abs(cotangent[..., :0]).dtype))
    scale = np.max(np.abs(cotangent), axis=-1, keepdims=True)
    bad = (values <= eps * top) & (np.abs(cotangent) > limit * scale)
    if not np.any(bad):
        return False
    *batch, i = tuple(int(k) for k in np.argwhere(bad)[0])
    at = f"[{', '.join(map(str, batch))}]" if batch else ""
    report(
        family,
        f"singular value{at} {i} is zero ({_fmt(values[(*batch, i)])}, within eps={eps:.3g} "
        f"of the largest) and the loss depends on it (cotangent "
        f"{_fmt(cotangent[(*batch, i)])}); a singular value is |t| near zero, with no "
        f"derivative there, so the gradient returned is one subgradient",
    )
    return True


def _fmt(x: Any) -> str:
    return f"{complex(x):.6g}" if np.iscomplexobj(x) else f"{float(x):.6g}"


class _TieIdentity(LinalgOp):
    """The identity on ``x`` of the shape of the spectrum ``values``; ``values`` only
    locates the ties."""

    single_output = True
    extent_generic = True  # identities: their rules read no extent
    family_name: str
    eps: float
    nonnegative: bool = False  # singular values: a kink at zero

    def infer(self) -> list[Any]:
        return [self.inputs[1]]

    def impl(self, values: Any, x: Any) -> Any:
        return x

    def any_extent_kernel(self) -> Any:
        return self.impl  # the identity (a check of the arrays it is given)

    def lower(self, lo: Any, values: Any, x: Any) -> Any:
        return x

    def _params(self) -> dict[str, Any]:
        return {"family_name": self.family_name, "eps": self.eps, "nonnegative": self.nonnegative}


@family("linalg.tie_guard")
class TieGuard(_TieIdentity):
    """Forward-mode tangents of tied values pass unchecked (a tangent that splits a
    level is an ordinary direction; the loss decides whether it matters)."""

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[1] is None else TieGuard.bind(xs[0], ts[1], **self._params())]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None]
        return [None, TieCheck.bind(xs[0], cts[0], **self._params())]


@family("linalg.tie_check")
class TieCheck(_TieIdentity):
    """Cotangents of tied values, checked: uneven ones warn (module documentation)."""

    def impl(self, values: Any, x: Any) -> Any:
        _check_values(
            self.family_name, np.asarray(values), np.asarray(x), self.eps, self.nonnegative
        )
        return x

    def lower(self, lo: Any, values: Any, x: Any) -> Any:
        """The identity; after a run whose values have a tie (or, for singular values, a
        value at zero), as the device finds, the host checks the values and the
        cotangent as :meth:`impl` does."""
        jnp = lo.jnp
        k = values.shape[-1]
        if k == 0 or 0 in x.shape:
            return x
        same, at_zero = lowered.clusters(lo, values, self.eps)
        tied = jnp.any(same & ~jnp.eye(k, dtype=bool))
        if self.nonnegative:
            tied = tied | jnp.any(at_zero)
        lo.check(self._check_after_run, values, x, when=tied)
        return x

    def _check_after_run(self, values: Any, x: Any) -> None:
        _check_values(
            self.family_name, np.asarray(values), np.asarray(x), self.eps, self.nonnegative
        )

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[1] is None else TieCheck.bind(xs[0], ts[1], **self._params())]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None]
        return [None, TieGuard.bind(xs[0], cts[0], **self._params())]


def guard_ties(
    family: str, values: RuleValue, tangent: RuleValue, eps: float, nonnegative: bool = False
) -> RuleValue:
    """``tangent`` (of the spectrum ``values``) marked so that the reverse pass checks
    its cotangent at ties (and, for singular values, ``nonnegative``, at zero)."""
    params = {"family_name": family, "eps": float(eps)}
    if nonnegative:
        params["nonnegative"] = True
    return TieGuard.bind(values, tangent, **params)
