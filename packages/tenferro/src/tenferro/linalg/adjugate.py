"""The adjugate and its derivatives of every order: what ``det``'s derivatives are made of.

``det`` is a polynomial, smooth everywhere; its derivative is ``d det = tr(adj(A) dA)``
with ``adj(A) = det(A) A^-1`` extended by continuity to singular matrices (where
``A^-1`` does not exist but ``adj(A)`` does: for rank ``n - 1`` it is rank one, below
that 0). Two primitives keep every order exact at singular matrices:

* ``linalg.adjugate``: ``adj(A)`` from the SVD ``A = U diag(s) V^H`` as
  ``det(U V^H) V diag(prod_{k != i} s_k) U^H`` (products of the other singular values,
  no division);
* ``linalg.adjugate_derivative``: the ``k``-th derivative ``D^k adj(A)[E_1, ..., E_k]``,
  symmetric and linear in each ``E``. For ``k = 1`` in the SVD basis (``X = U^H E V``)::

      D adj(S)[X]_ij = -X_ij prod_{l != i, j} s_l                 (i != j)
      D adj(S)[X]_ii = sum_{m != i} X_mm prod_{l != i, m} s_l

  and for ``k >= 2`` by polarization from ``adj(A + t u)``, a polynomial of degree
  ``n - 1`` in ``t``, read off at ``n`` points of a circle (its Taylor coefficients by a
  discrete Fourier transform; each point by the SVD formula, exact at singular points).
  Its derivative with respect to ``A`` is the same primitive with one more direction,
  with respect to each ``E`` the same primitive (linear), and its transpose in ``E_m``
  is ``(D^k adj[..., G^H, ...])^H``: every order of ``det`` stays in these two.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint
from tenferro.core.families import family
from tenferro.core.rules import RuleValue
from tenferro.linalg import lowered
from tenferro.linalg.checks import check_finite, check_square
from tenferro.linalg.family import LinalgOp
from tenferro.meta import Meta

__all__ = ["Adjugate", "AdjugateDerivative", "adjugate"]

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


def _adjoint(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    swapped = np.swapaxes(x, -1, -2)
    return swapped.conj() if x.dtype.kind == "c" else swapped


def _svd(a: np.ndarray[Any, Any]) -> tuple[Any, Any, Any, Any]:
    """``(U, s, Vh, det(U Vh))``."""
    u, s, vh = np.linalg.svd(a)
    phase = np.linalg.det(u) * np.linalg.det(vh)
    return u, s, vh, phase


def _others(s: np.ndarray[Any, Any], drop: int) -> np.ndarray[Any, Any]:
    """Products of all singular values but ``drop`` of them: ``[..., n]`` (drop 1) or
    ``[..., n, n]`` (drop 2; the diagonal is 0), by prefix and suffix products (no
    division, exact at zeros)."""
    n = s.shape[-1]
    one = np.ones((*s.shape[:-1], 1), s.dtype)
    prefix = np.cumprod(np.concatenate([one, s[..., :-1]], -1), -1)  # prod_{l < i}
    suffix = np.cumprod(np.concatenate([one, s[..., :0:-1]], -1), -1)[..., ::-1]  # l > i
    if drop == 1:
        return prefix * suffix
    out = np.zeros((*s.shape, n), s.dtype)
    for i in range(n):
        for j in range(i + 1, n):
            # prod_{l < i} * prod_{i < l < j} * prod_{l > j}
            middle = np.prod(s[..., i + 1 : j], axis=-1)
            out[..., i, j] = out[..., j, i] = prefix[..., i] * middle * suffix[..., j]
    return out


def adjugate_value(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``adj(a)`` of (a batch of) square matrices."""
    n = a.shape[-1]
    if n == 0:
        return np.zeros(a.shape, a.dtype)
    if n == 1:
        return np.ones(a.shape, a.dtype)
    u, s, vh, phase = _svd(a)
    others = _others(s, 1).astype(a.dtype)
    out = np.matmul(_adjoint(vh) * others[..., None, :], _adjoint(u))
    return (out * phase[..., None, None]).astype(a.dtype, copy=False)


def _first_derivative(a: np.ndarray[Any, Any], e: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``D adj(A)[E]`` by the SVD formula of the module documentation."""
    n = a.shape[-1]
    if n <= 1:
        return np.zeros(np.broadcast_shapes(a.shape, e.shape), np.result_type(a, e))
    u, s, vh, phase = _svd(a)
    pairs = _others(s, 2).astype(np.result_type(a, e))
    x = np.matmul(np.matmul(_adjoint(u), e), _adjoint(vh))
    diagonal = np.diagonal(x, axis1=-2, axis2=-1)
    inner = -pairs * x
    inner[..., np.arange(n), np.arange(n)] = np.einsum("...im,...m->...i", pairs, diagonal)
    out = np.matmul(np.matmul(_adjoint(vh), inner), _adjoint(u))
    return out * phase[..., None, None]


def _directional(a: np.ndarray[Any, Any], u: np.ndarray[Any, Any], k: int) -> Any:
    """``D^k adj(A)[u, ..., u] = k! [t^k] adj(A + t u)`` from ``n`` points of a circle."""
    n = a.shape[-1]
    if k > n - 1:
        return np.zeros(np.broadcast_shapes(a.shape, u.shape), np.result_type(a, u, 1j))
    # A circle on which |t u| is a fraction 1/n of |A| (or of |u| at A = 0): the
    # polynomial's terms stay within a factor e of each other there.
    size = np.linalg.norm(a, axis=(-2, -1))
    direction = np.linalg.norm(u, axis=(-2, -1))
    direction = np.where(direction > 0, direction, 1.0)  # u = 0: every coefficient is 0
    radius = ((size + direction) / (n * direction))[..., None, None]
    points = radius[None] * np.exp(2j * np.pi * np.arange(n) / n)[:, *([None] * a.ndim)]
    values = np.stack([adjugate_value(a + t * u) for t in points])  # [n, ..., n, n]
    coefficient = (
        np.mean(
            values * np.exp(-2j * np.pi * np.arange(n) * k / n).reshape((n,) + (1,) * a.ndim),
            axis=0,
        )
        / radius**k
    )
    return coefficient * math.factorial(k)


def adjugate_derivative_value(a: np.ndarray[Any, Any], es: list[Any]) -> np.ndarray[Any, Any]:
    """``D^k adj(A)[E_1, ..., E_k]`` (module documentation)."""
    k = len(es)
    dtype = np.result_type(a, *es)
    if k == 1:
        return _first_derivative(a, es[0]).astype(dtype, copy=False)
    total: Any = 0
    for signs in itertools.product((1.0, -1.0), repeat=k):  # polarization
        u = sum(sign * e for sign, e in zip(signs, es, strict=True))
        total = total + math.prod(signs) * _directional(a.astype(dtype), u, k)
    total = total / (2**k * math.factorial(k))
    return (total if dtype.kind == "c" else total.real).astype(dtype, copy=False)


# ---------------------------------------------------------------------- in JAX
# The same formulas for the XLA backend (``lo``: tenferro.ops.lowering.Lowering), with
# static shapes: the pair products by a cumulative product per row, the polarization
# and the circle's points as static loops and a batch of SVDs.


def _lowered_svd(lo: Any, a: Any) -> tuple[Any, Any, Any, Any]:
    """``(U, s, Vh, det(U Vh))`` of JAX values."""
    jnp = lo.jnp
    u, s, vh = lo.linalg.svd(a, full_matrices=True)
    return u, s, vh, jnp.linalg.det(u) * jnp.linalg.det(vh)


def _lowered_others(lo: Any, s: Any, drop: int) -> Any:
    """:func:`_others` of JAX values: for ``drop=2``, the products of the values
    strictly between ``i`` and ``j`` are a cumulative product along each row of ``s``
    masked to the values past ``i``."""
    jnp = lo.jnp
    n = s.shape[-1]
    one = jnp.ones((*s.shape[:-1], 1), s.dtype)
    prefix = jnp.cumprod(jnp.concatenate([one, s[..., :-1]], -1), -1)
    suffix = jnp.flip(jnp.cumprod(jnp.concatenate([one, jnp.flip(s[..., 1:], -1)], -1), -1), -1)
    if drop == 1:
        return prefix * suffix
    index = np.arange(n)
    past = index[None, :] > index[:, None]  # [i, l]: l > i
    # between[..., i, m] = prod_{i < l <= m} s_l, shifted one column: prod_{i < l < j}
    between = jnp.cumprod(jnp.where(past, s[..., None, :], 1), -1)
    ones = jnp.ones((*s.shape, 1), s.dtype)
    middle = jnp.concatenate([ones, between[..., :, :-1]], -1)
    upper = prefix[..., :, None] * middle * suffix[..., None, :]
    above = index[:, None] < index[None, :]
    return jnp.where(above, upper, jnp.where(above.T, jnp.swapaxes(upper, -1, -2), 0))


def _lowered_value(lo: Any, a: Any) -> Any:
    """:func:`adjugate_value` of JAX values."""
    jnp = lo.jnp
    n = a.shape[-1]
    if n == 0 or 0 in a.shape:
        return jnp.zeros(a.shape, a.dtype)
    if n == 1:
        return jnp.ones(a.shape, a.dtype)
    u, s, vh, phase = _lowered_svd(lo, a)
    others = _lowered_others(lo, s, 1).astype(a.dtype)
    out = lowered.matmul(lo, lowered.adjoint(lo, vh) * others[..., None, :], lowered.adjoint(lo, u))
    return (out * phase[..., None, None]).astype(a.dtype)


def _lowered_first(lo: Any, a: Any, e: Any, dtype: Any) -> Any:
    """:func:`_first_derivative` of JAX values."""
    jnp = lo.jnp
    n = a.shape[-1]
    shape = jnp.broadcast_shapes(a.shape, e.shape)
    if n <= 1 or 0 in shape:
        return jnp.zeros(shape, dtype)
    u, s, vh, phase = _lowered_svd(lo, a)
    pairs = _lowered_others(lo, s, 2).astype(dtype)
    x = lowered.matmul(lo, lowered.matmul(lo, lowered.adjoint(lo, u), e), lowered.adjoint(lo, vh))
    diagonal = jnp.diagonal(x, axis1=-2, axis2=-1)
    summed = jnp.einsum("...im,...m->...i", pairs, diagonal, precision="highest")
    inner = jnp.where(jnp.eye(n, dtype=bool), summed[..., :, None], -pairs * x)
    out = lowered.matmul(
        lo, lowered.matmul(lo, lowered.adjoint(lo, vh), inner), lowered.adjoint(lo, u)
    )
    return (out * phase[..., None, None]).astype(dtype)


def _lowered_directional(lo: Any, a: Any, u: Any, k: int, dtype: Any) -> Any:
    """:func:`_directional` of JAX values, in the complex type of ``dtype``'s precision."""
    jnp = lo.jnp
    n = a.shape[-1]
    shape = jnp.broadcast_shapes(a.shape, u.shape)
    complex_ = np.result_type(dtype, np.complex64)
    if k > n - 1:
        return jnp.zeros(shape, complex_)
    size = jnp.linalg.norm(a, axis=(-2, -1))
    direction = jnp.linalg.norm(u, axis=(-2, -1))
    direction = jnp.where(direction > 0, direction, 1.0)
    radius = ((size + direction) / (n * direction))[..., None, None]
    roots = np.exp(2j * np.pi * np.arange(n) / n).astype(complex_)
    points = radius[None] * jnp.asarray(roots).reshape((n,) + (1,) * a.ndim)
    values = _lowered_value(lo, (a[None] + points * u[None]).astype(complex_))
    weights = np.exp(-2j * np.pi * np.arange(n) * k / n).astype(complex_)
    coefficient = jnp.mean(values * jnp.asarray(weights).reshape((n,) + (1,) * a.ndim), axis=0)
    return coefficient / radius**k * math.factorial(k)


def _lowered_derivative(lo: Any, a: Any, es: list[Any], dtype: Any) -> Any:
    """:func:`adjugate_derivative_value` of JAX values."""
    k = len(es)
    if k == 1:
        return _lowered_first(lo, a, es[0], dtype)
    total: Any = 0
    for signs in itertools.product((1.0, -1.0), repeat=k):  # polarization
        u = sum(sign * e for sign, e in zip(signs, es, strict=True))
        total = total + math.prod(signs) * _lowered_directional(lo, a.astype(dtype), u, k, dtype)
    total = total / (2**k * math.factorial(k))
    return (total if np.dtype(dtype).kind == "c" else total.real).astype(dtype)


@family("linalg.adjugate")
class Adjugate(LinalgOp):
    """``adj(A)``, ``[..., N, N]`` (module documentation)."""

    single_output = True

    def infer(self) -> list[Meta]:
        (a,) = self.inputs
        check_square("det", a)
        return [a]

    def lower(self, lo: Any, a: Any) -> Any:
        return _lowered_value(lo, a)  # non-finite input: NaN (XLA does not raise)

    def impl(self, a: Any) -> Any:
        check_finite("det", a)
        return adjugate_value(np.asarray(a))

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        (a,), (da,) = xs, ts
        return [None if da is None else AdjugateDerivative.bind(a, da)]


@family("linalg.adjugate_derivative")
class AdjugateDerivative(LinalgOp):
    """``D^k adj(A)[E_1, ..., E_k]``, operands ``(A, E_1, ..., E_k)`` (module
    documentation); linear in each ``E``."""

    single_output = True

    def infer(self) -> list[Meta]:
        a = self.inputs[0]
        check_square("det", a)
        return [a]

    def lower(self, lo: Any, a: Any, *es: Any) -> Any:
        return _lowered_derivative(lo, a, list(es), self.outputs[0].dtype)

    def impl(self, a: Any, *es: Any) -> Any:
        return adjugate_derivative_value(np.asarray(a), [np.asarray(e) for e in es])

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        a, es = xs[0], list(xs[1:])
        out = None
        if ts[0] is not None:
            out = AdjugateDerivative.bind(a, *es, ts[0])
        for m, t in enumerate(ts[1:]):
            if t is None:
                continue
            term = AdjugateDerivative.bind(a, *es[:m], t, *es[m + 1 :])
            out = term if out is None else lax.add(out, term)
        return [out]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the matrix")
        (ct,) = cts
        a, es = xs[0], list(xs[1:])
        result: list[RuleValue | None] = [None]
        for m, wanted in enumerate(active[1:]):
            if ct is None or not wanted:
                result.append(None)
                continue
            swapped = AdjugateDerivative.bind(a, *es[:m], adjoint(ct), *es[m + 1 :])
            result.append(adjoint(swapped))
        return result


def adjugate(a: Any) -> Any:
    """``adj(a)`` of a square float/complex matrix tensor (module documentation)."""
    return Adjugate.bind(a)
