"""Spectral gap kernels: the ``1/gap`` factors of eigen and singular vector derivatives.

The derivatives of eigen/singular vectors multiply the projected perturbation entrywise by
reciprocals of spectral gaps. This module is the one place where those reciprocals are
formed, regularised and checked, for every family (``svd``, ``eigh``, ``eig``).

**Ties, relative to the spectrum.** For a spectrum ``v`` (the last axis) of scale
``max|v|``, values whose gaps to a neighbour are at most ``eps * max|v|`` form a *tied
cluster* (the connected groups of that relation). The reciprocal of a gap inside a
cluster is taken as 0, at every order; every other gap gets its exact reciprocal.
``eps`` is relative, so derivatives are unchanged when the input is rescaled. Its
default, 64 machine epsilons of the values' precision, ties exactly the values that the
decomposition cannot tell apart (LAPACK resolves gaps to about that relative accuracy).

**Gaps and sums.** ``kind="difference"`` is ``1/(v_j - v_i)``, singular at a tie;
``kind="sum"`` is ``1/(v_i + v_j)`` (the part of the SVD's derivative over
``s_i + s_j``: exact at a tie of non-zero singular values, cut only between values of the
cluster at zero).

**Exact at every order.** The first-order rule ``K = R o y`` solves the Sylvester
equation ``K B - B K = y`` (``B K + K B = y`` for sums) with ``B = diag(v)``. Its
derivative is taken as that of the Sylvester solution, ``dK = R o (dy - (K dB - dB K))``,
where ``dB`` is the derivative of ``B`` *with its tied blocks full*: inside a tied
cluster the perturbation's projected block, not just its diagonal (a perturbation splits
a tied level along the eigenvectors of that block, not along the arbitrary basis the
decomposition returned). :class:`SpectralBlock` carries ``B`` with that derivative. So the
derivatives of every order of a quantity that does not depend on the rotation inside a
tied level (projectors onto complete levels, the polar factor, ...) are exact at and
near the tie, and the same primitive (:class:`GapScale`) serves every order.

**Checks** (the warnings of :mod:`tenferro.linalg.degeneracy`):

* a ``reverse`` instance (it runs in a reverse pass, at any order) checks the cotangent
  on tied pairs: where the part of it that the left-out reciprocal would multiply
  exceeds ``sqrt(machine epsilon)`` of its largest entry, the left-out term (a cotangent
  over a gap below ``eps * scale``) is at least as large as the result, and it warns;
* every instance checks the precision of the gaps it resolves: a derivative of order
  ``k`` through a gap ``g`` amplifies rounding by about ``(scale/|g|)**k``; where that
  exceeds ``machine epsilon ** -3/4`` (four digits left in double) on an entry that
  matters (above ``sqrt(machine epsilon)`` of the largest), it warns that the derivative
  loses precision and names the ``eps`` that would tie the pair.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint, matmul, scale_columns, scale_rows, to_dtype
from tenferro.core.families import family
from tenferro.core.rules import RuleValue
from tenferro.linalg import lowered
from tenferro.linalg.degeneracy import clusters, report
from tenferro.linalg.family import LinalgOp
from tenferro.meta import Meta

__all__ = [
    "DEFAULT_EPS",
    "ClusterBlocks",
    "GapScale",
    "SpectralBlock",
    "TiedInverse",
    "default_eps",
    "gap_scale",
    "hermitian_part",
    "resolve_eps",
    "spectral_block",
    "tied_inverse",
]

Ts = tuple[RuleValue | None, ...]
Xs = tuple[RuleValue, ...]


def default_eps(dtype: Any) -> float:
    """The default relative tie tolerance for values of ``dtype``: 64 machine epsilons
    of its real precision (1.4e-14 in double, 7.6e-6 in single)."""
    return 64 * float(np.finfo(dtype).eps)


DEFAULT_EPS = None
"""``eps=None``: the tie tolerance of :func:`default_eps` for the operand's precision."""


def resolve_eps(eps: float | None, dtype: Any) -> float:
    """The relative tie tolerance of a family instance: ``eps``, or the default for the
    precision of ``dtype``."""
    return default_eps(dtype) if eps is None else eps


def machine_eps(dtype: Any) -> float:
    return float(np.finfo(dtype).eps)


# ---------------------------------------------------------------------- numpy helpers


def _scale(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``max|v|`` over the last axis, ``[..., 1, 1]``."""
    if not v.shape[-1]:
        return np.zeros((*v.shape[:-1], 1, 1))
    return np.max(np.abs(v), axis=-1)[..., None, None]


def _gaps(v: np.ndarray[Any, Any], kind: str) -> np.ndarray[Any, Any]:
    """``g[..., i, j] = v_j - v_i`` (difference) or ``v_i + v_j`` (sum)."""
    if kind == "difference":
        return v[..., None, :] - v[..., :, None]
    return v[..., None, :] + v[..., :, None]


def _cut(v: np.ndarray[Any, Any], eps: float, kind: str) -> np.ndarray[Any, Any]:
    """Pairs whose reciprocal is cut: the same tied cluster (difference), or both in the
    cluster at zero (sum)."""
    same, at_zero = clusters(v, eps)
    if kind == "difference":
        return same
    return at_zero[..., :, None] & at_zero[..., None, :]


def _reciprocals(
    v: np.ndarray[Any, Any], eps: float, kind: str
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(R, g, cut)``: ``R = 1/g`` where the pair is not cut, else 0."""
    g = _gaps(v, kind)
    cut = _cut(v, eps, kind)
    r = np.divide(1, g, out=np.zeros(g.shape, g.dtype), where=~cut)
    return r, g, cut


def _resolved(v: np.ndarray[Any, Any], eps: float, kind: str, order: int) -> Any:
    """The reciprocals ``R`` of a sorted real spectrum whose gaps (or sums) are all
    resolved well beyond the tie tolerance and the precision check's bound, else
    ``None``: then nothing is cut and nothing needs checking (the common case, cheap)."""
    k = v.shape[-1]
    if v.dtype.kind == "c" or k == 0:
        return None
    steps = v[..., 1:] - v[..., :-1]
    if not (np.all(steps > 0) or np.all(steps < 0)) and k > 1:
        return None
    scale = np.max(np.abs(v), axis=-1)
    limit = scale * max(eps, machine_eps(v.dtype) ** (0.75 / order))
    if kind == "difference":
        closest = np.min(np.abs(steps), axis=-1) if k > 1 else scale + 1
    else:
        closest = 2 * np.min(np.abs(v), axis=-1)
    if not np.all(closest > limit):
        return None
    g = _gaps(v, kind)
    if kind == "difference":
        g.reshape((*v.shape[:-1], k * k))[..., :: k + 1] = 1  # its reciprocal: set to 0
        r = np.divide(1, g, out=g)
        r.reshape((*v.shape[:-1], k * k))[..., :: k + 1] = 0
        return r
    return np.divide(1, g, out=g)


def _project(x: np.ndarray[Any, Any], part: str) -> np.ndarray[Any, Any]:
    if part == "full":
        return x
    xh = np.swapaxes(x, -1, -2)
    if x.dtype.kind == "c":
        xh = xh.conj()
    return (x + xh) * 0.5 if part == "hermitian" else (x - xh) * 0.5


def _lowered_gaps(v: Any, kind: str) -> Any:
    """:func:`_gaps` of JAX values."""
    if kind == "difference":
        return v[..., None, :] - v[..., :, None]
    return v[..., None, :] + v[..., :, None]


def _lowered_cut(lo: Any, v: Any, eps: float, kind: str) -> Any:
    """:func:`_cut` of JAX values."""
    same, at_zero = lowered.clusters(lo, v, eps)
    if kind == "difference":
        return same
    return at_zero[..., :, None] & at_zero[..., None, :]


# ---------------------------------------------------------------------- checks


def _check(
    op: GapScale,
    v: np.ndarray[Any, Any],
    g: np.ndarray[Any, Any],
    cut: np.ndarray[Any, Any],
    y: np.ndarray[Any, Any],
    parts: list[np.ndarray[Any, Any]],
) -> None:
    """The checks of the module documentation (``y = pre(x)``, ``x`` the sum of
    ``parts``); each reports its first offender. The cotangent's scale is that of the
    parts a paired instance adds up (what they cancel to is no scale, and the rounding
    a reciprocal amplifies is theirs)."""
    k = v.shape[-1]
    off = ~np.eye(k, dtype=bool)
    tied = cut & off if op.kind == "difference" else cut  # no rotation of a value with itself
    eps_m = machine_eps(np.abs(v[..., :0]).dtype)
    size = np.max([np.abs(_project(p, op.pre)) for p in parts], axis=0)
    significant = math.sqrt(eps_m) * np.max(size, axis=(-2, -1), keepdims=True)
    if op.reverse and np.any(tied):
        # Signs that keep the reciprocal's symmetry where the gap is 0: the part of the
        # cotangent the left-out term would carry, through the output projection.
        sign = g / np.where(g == 0, 1, np.abs(g))
        if op.kind == "difference":
            upper = np.triu(np.ones((k, k), dtype=bool), 1)
            sign = np.where(g == 0, np.where(upper, 1.0, -1.0), sign)
        else:
            sign = np.where(g == 0, 1.0, sign)
        carried = np.abs(_project(np.where(tied, sign * y, 0), op.post))
        bad = tied & (carried > significant)
        if np.any(bad):
            _report_tie(op, v, tuple(int(i) for i in np.argwhere(bad)[0]))
            return
    matters = size > significant
    loose = ~cut & off if op.kind == "difference" else ~cut
    scale = _scale(v)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        amplification = (scale / np.abs(g)) ** op.order
    bad = loose & (amplification * eps_m > eps_m**0.25) & matters
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        _report_precision(op, v, g, scale, where)


def _pair(v: np.ndarray[Any, Any], where: tuple[int, ...]) -> tuple[str, int, int, Any, Any]:
    *batch, i, j = where
    i, j = min(i, j), max(i, j)
    at = f"[{', '.join(map(str, batch))}]" if batch else ""
    row = v[tuple(batch)]
    return at, i, j, row[i], row[j]


def _noun(family: str) -> str:
    return "singular values" if "svd" in family else "eigenvalues"


def _fmt(x: Any) -> str:
    return f"{complex(x):.6g}" if np.iscomplexobj(x) else f"{float(x):.6g}"


def _report_tie(op: GapScale, v: np.ndarray[Any, Any], where: tuple[int, ...]) -> None:
    at, i, j, a, b = _pair(v, where)
    noun = _noun(op.family_name)
    what = "both at zero" if op.kind == "sum" else f"within eps={op.eps:.3g} of the largest"
    report(
        op.family_name,
        f"{noun}{at} {i} and {j} are tied ({_fmt(a)} and {_fmt(b)}, {what}) and the loss "
        f"depends on how the perturbation rotates their vectors into each other, which is "
        f"not defined at a tie: the derivative returned leaves that rotation out, and the "
        f"part left out is significant. Make the loss depend on the tied vectors only "
        f"through their span (a projector, a symmetric function), or lift the degeneracy",
    )


def _check_zero_block(
    family: str, v: np.ndarray[Any, Any], x: np.ndarray[Any, Any], eps: float
) -> None:
    """Singular values at zero split, to first order, by the singular values of the
    perturbation's block there; the spectral block carries its Hermitian part, whose
    eigenvalues agree (up to signs, an analytic branch) only if the block is Hermitian.
    A significant anti-Hermitian part there: the second derivative is not exact."""
    _, at_zero = clusters(v, eps)
    if not np.any(at_zero):
        return
    both = at_zero[..., :, None] & at_zero[..., None, :]
    skew = np.abs(_project(x, "antihermitian"))
    limit = math.sqrt(machine_eps(np.abs(v[..., :0]).dtype))
    largest = np.max(np.abs(x), axis=(-2, -1), keepdims=True)
    bad = both & (skew > limit * largest)
    if not np.any(bad):
        return
    at, i, j, a, b = _pair(v, tuple(int(k) for k in np.argwhere(bad)[0]))
    report(
        family,
        f"singular values{at} {i} and {j} are at zero ({_fmt(a)} and {_fmt(b)}) and the "
        f"perturbation mixes them (its block there is not Hermitian), so the zero level "
        f"splits by singular values the decomposition's second derivative does not "
        f"follow: second and higher derivatives through it are not exact (the first is). "
        f"Lift the rank deficiency, or truncate the zero singular values away",
    )


def _report_precision(
    op: GapScale,
    v: np.ndarray[Any, Any],
    g: np.ndarray[Any, Any],
    scale: np.ndarray[Any, Any],
    where: tuple[int, ...],
) -> None:
    at, i, j, a, b = _pair(v, where)
    noun = _noun(op.family_name)
    relative = float(abs(g[where]) / scale[(*where[:-2], 0, 0)])
    order = {1: "first", 2: "second", 3: "third"}.get(op.order, f"order-{op.order}")
    report(
        op.family_name,
        f"{noun}{at} {i} and {j} ({_fmt(a)} and {_fmt(b)}) are {relative:.2g} apart relative "
        f"to the largest; the {order}-order derivative through that gap amplifies rounding "
        f"by about {relative**-op.order:.2g} and keeps few digits. Pass "
        f"eps={min(2 * relative, 0.5):.2g} or more to treat them as tied (exact for losses "
        f"that do not separate them)",
    )


# ---------------------------------------------------------------------- lax helpers


def hermitian_part(x: Any, part: str = "hermitian") -> Any:
    """``(x + x^H)/2`` (or the anti-Hermitian ``(x - x^H)/2``) of ``[..., K, K]`` stacks;
    exactly (anti-)Hermitian in floating point."""
    if part == "full":
        return x
    swapped = adjoint(x)
    both = lax.add(x, swapped) if part == "hermitian" else lax.sub(x, swapped)
    return lax.mul(both, lax.full_like(both, 0.5))


def _commutator(k: Any, db: Any, kind: str) -> Any:
    """``K dB - dB K`` (difference) or ``K dB + dB K`` (sum)."""
    left, right = matmul(k, db), matmul(db, k)
    return lax.sub(left, right) if kind == "difference" else lax.add(left, right)


# ---------------------------------------------------------------------- primitives


@family("linalg.gap_scale")
class GapScale(LinalgOp):
    """``post(R(v) o pre(x))``: ``R`` the cut reciprocals of the gaps (or sums) of the
    spectrum ``v`` (``[..., K]``, real, or complex with ``eig``; conjugated with
    ``conjugate``), ``x`` ``[..., K, K]``. Operands ``(v, b, x)``: ``b`` is the
    :class:`SpectralBlock` of ``v``, read for its derivative only (module documentation).

    ``pair`` (+1 or -1; 0: single) makes a paired instance, for a result used twice with
    signs (the SVD's rotation enters ``dU`` and ``dV``): a forward one returns ``(K,
    pair * K)``; a ``reverse`` one (its transpose) takes two cotangents and applies the
    map to ``x_a + pair * x_b``, checking that sum against the scale of its parts.
    ``order`` counts the derivatives taken (for the precision check)."""

    extent_generic = True  # its rules read ranks only
    eps: float
    kind: str
    pre: str
    post: str
    conjugate: bool
    reverse: bool
    family_name: str
    pair: int = 0
    order: int = 1

    def infer(self) -> list[Meta]:
        x = self.inputs[2]
        return [x, x] if self.pair and not self.reverse else [x]

    def any_extent_kernel(self) -> Any:
        return self.impl if len(self.outputs) == 1 else None  # such kernels have one output

    def impl(self, v: Any, b: Any, *xs: Any) -> Any:
        v = np.asarray(v)
        parts = [np.asarray(x) for x in xs]
        x = parts[0] if len(parts) == 1 else parts[0] + self.pair * parts[1]
        y = _project(x, self.pre)
        r = _resolved(v, self.eps, self.kind, self.order)
        if r is None:
            r, g, cut = _reciprocals(v, self.eps, self.kind)
            if x.size and any(np.any(p) for p in parts):
                _check(self, v, g, cut, y, parts)
        if self.conjugate and r.dtype.kind == "c":
            r = r.conj()
        out = _project(r * y, self.post).astype(x.dtype, copy=False)
        if self.pair and not self.reverse:
            return out, (out if self.pair > 0 else -out)
        return out

    def lower(self, lo: Any, v: Any, b: Any, *xs: Any) -> Any:
        """:meth:`impl` in JAX: every reciprocal formed and cut on the device; the
        checks run on the host after the call, only when a gap is not resolved (the
        device says so) and the operand is not zero."""
        jnp = lo.jnp
        x = xs[0] if len(xs) == 1 else xs[0] + self.pair * xs[1]
        if 0 in x.shape:
            out = jnp.zeros(x.shape, x.dtype)
        else:
            y = lowered.project(lo, x, self.pre)
            g = _lowered_gaps(v, self.kind)
            cut = _lowered_cut(lo, v, self.eps, self.kind)
            r = jnp.where(cut, 0, 1 / jnp.where(cut, 1, g))
            if self.conjugate and jnp.iscomplexobj(r):
                r = jnp.conj(r)
            out = lowered.project(lo, r * y, self.post).astype(x.dtype)
            nonzero = jnp.any(jnp.stack([jnp.any(p != 0) for p in xs]))
            lo.check(self._check_on_host, v, *xs, when=nonzero & ~self._resolved_on_device(lo, v))
        if self.pair and not self.reverse:
            return out, (out if self.pair > 0 else -out)
        return out

    def _resolved_on_device(self, lo: Any, v: Any) -> Any:
        """Whether :func:`_resolved` finds every gap resolved (then nothing needs
        checking), computed on the device."""
        jnp = lo.jnp
        k = v.shape[-1]
        if jnp.iscomplexobj(v) or k == 0:
            return jnp.asarray(False)
        scale = jnp.max(jnp.abs(v), axis=-1)
        limit = scale * max(self.eps, machine_eps(v.dtype) ** (0.75 / self.order))
        monotone = jnp.asarray(True)
        if k > 1:
            steps = v[..., 1:] - v[..., :-1]
            monotone = jnp.all(steps > 0) | jnp.all(steps < 0)
        if self.kind == "difference":
            closest = jnp.min(jnp.abs(steps), axis=-1) if k > 1 else scale + 1
        else:
            closest = 2 * jnp.min(jnp.abs(v), axis=-1)
        return monotone & jnp.all(closest > limit)

    def _check_on_host(self, v: Any, *xs: Any) -> None:
        """The checks :meth:`impl` makes, on the values a lowered program computed."""
        v = np.asarray(v)
        parts = [np.asarray(x) for x in xs]
        x = parts[0] if len(parts) == 1 else parts[0] + self.pair * parts[1]
        if _resolved(v, self.eps, self.kind, self.order) is None:
            _, g, cut = _reciprocals(v, self.eps, self.kind)
            _check(self, v, g, cut, _project(x, self.pre), parts)

    def _params(self, **changes: Any) -> dict[str, Any]:
        params = {
            "eps": self.eps,
            "kind": self.kind,
            "pre": self.pre,
            "post": self.post,
            "conjugate": self.conjugate,
            "reverse": self.reverse,
            "family_name": self.family_name,
            "pair": self.pair,
            "order": self.order,
        }
        params.update(changes)
        return params

    def _apply(self, v: Any, b: Any, xs: list[Any], **changes: Any) -> list[Any]:
        out = GapScale.bind(v, b, *xs, **self._params(**changes))
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        v, b, operands = xs[0], xs[1], list(xs[2:])
        db, tangents = ts[1], list(ts[2:])
        active = [t is not None for t in tangents]
        if db is None and not any(active):
            return [None] * len(self.outputs)
        # Inputs of the same map: pre(dx) - (K dB -+ dB K), with K = R o pre(x) (the
        # derivative of the Sylvester solution; module documentation).
        inputs = [hermitian_part(t, self.pre) if t is not None else None for t in tangents]
        if db is not None:
            dt = operands[0].meta.dtype
            # A transposed instance solves the adjoint Sylvester equation, of B^H.
            db = to_dtype(adjoint(db) if self.conjugate else db, dt)
            for i, x in enumerate(operands):
                (k,) = self._apply(v, b, [x], post="full", pair=0, reverse=False)
                moved = _commutator(k, db, self.kind)
                inputs[i] = lax.neg(moved) if inputs[i] is None else lax.sub(inputs[i], moved)
        # Those inputs keep the symmetry ``pre`` projects onto: ``[K, dB]`` is Hermitian
        # for an anti-Hermitian K (a Hermitian pre: R antisymmetric) and {K, dB}
        # anti-Hermitian for an anti-Hermitian pre (R symmetric), dB being Hermitian.
        filled = [
            lax.zeros_like(x) if t is None else t for x, t in zip(operands, inputs, strict=True)
        ]
        return self._apply(v, b, filled, order=self.order + (db is not None))

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if active[0] or active[1]:
            raise lax.not_linear(self, "the spectrum")
        v, b, count = xs[0], xs[1], len(xs) - 2
        if all(ct is None for ct in cts):
            return [None] * (count + 2)
        params = {
            "pre": self.post,
            "post": self.pre,
            "conjugate": not self.conjugate,
            "reverse": not self.reverse,
        }
        filled = [lax.zeros_like(xs[2]) if ct is None else ct for ct in cts]
        return [None, None, *self._apply(v, b, filled, **params)]


def gap_scale(
    family: str,
    v: Any,
    b: Any,
    x: Any,
    eps: float,
    *,
    kind: str = "difference",
    pre: str = "full",
    pair: int = 0,
) -> Any:
    """``R(v) o pre(x)`` (module documentation) for the derivative rules of ``family``,
    ``b`` the :func:`spectral_block` of ``v``; with ``pair`` (+1/-1) the pair ``(K,
    pair * K)``."""
    return GapScale.bind(
        v,
        b,
        x,
        eps=float(eps),
        kind=kind,
        pre=pre,
        post="full",
        conjugate=False,
        reverse=False,
        family_name=family,
        pair=pair,
    )


@family("linalg.cluster_blocks")
class ClusterBlocks(LinalgOp):
    """``part(x)`` (``[..., K, K]``; ``part`` the Hermitian part or all of it) kept on
    the blocks of the tied clusters of the spectrum ``v`` (diagonal included), zero
    elsewhere. Linear and self-adjoint; the clusters are locally constant, so ``v`` has
    no derivative through it. With ``check_zero`` (an SVD's tangent) it warns where the
    cluster at zero gets a non-Hermitian block (see ``_check_zero_block``)."""

    single_output = True
    extent_generic = True  # its rules read ranks only
    eps: float
    part: str = "full"
    check_zero: str = ""  # the family whose zero level to check (SVD tangents)

    def infer(self) -> list[Meta]:
        return [self.inputs[1]]

    def any_extent_kernel(self) -> Any:
        return self.impl

    def impl(self, v: Any, x: Any) -> Any:
        v, x = np.asarray(v), np.asarray(x)
        if self.check_zero and x.size:
            _check_zero_block(self.check_zero, v, x, self.eps)
        same, _ = clusters(v, self.eps)
        return np.where(same, _project(x, self.part), 0).astype(x.dtype, copy=False)

    def lower(self, lo: Any, v: Any, x: Any) -> Any:
        """:meth:`impl` in JAX; the zero-level check runs on the host after the call,
        only when the device finds a cluster at zero."""
        jnp = lo.jnp
        if 0 in x.shape:
            return jnp.zeros(x.shape, x.dtype)
        same, at_zero = lowered.clusters(lo, v, self.eps)
        if self.check_zero:
            lo.check(self._check_on_host, v, x, when=jnp.any(at_zero))
        return jnp.where(same, lowered.project(lo, x, self.part), 0).astype(x.dtype)

    def _check_on_host(self, v: Any, x: Any) -> None:
        _check_zero_block(self.check_zero, np.asarray(v), np.asarray(x), self.eps)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        if ts[1] is None:
            return [None]
        params = {"eps": self.eps, "part": self.part, "check_zero": self.check_zero}
        return [ClusterBlocks.bind(xs[0], ts[1], **params)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the spectrum")
        ct = cts[0]
        if ct is None:
            return [None, None]
        return [None, ClusterBlocks.bind(xs[0], ct, eps=self.eps, part=self.part)]


@family("linalg.spectral_block")
class SpectralBlock(LinalgOp):
    """``B = diag(v)`` in the dtype of the vectors, whose derivative is that of the
    projected matrix with its tied blocks full (module documentation):

    * ``decomposition="svd"``, operands ``(s, a, u, vh)``: ``dB = blocks(Herm(U^H dA V + dU^H U S
      + S Vh dVh^H))`` (``A V = U S`` and ``U^H A = S Vh`` at the point);
    * ``"eigh"``, ``(w, a, v)``: ``dB = blocks(Herm(V^H Herm(dA) V + dV^H V W + W V^H dV))``;
    * ``"eig"``, ``(w, a, v, vinv)``: ``dB = blocks(V^-1 dA V + dV^-1 V W + W V^-1 dV)``.
    """

    single_output = True
    extent_generic = True  # its rules read ranks only
    decomposition: str
    eps: float

    def infer(self) -> list[Meta]:
        v, vectors = self.inputs[0], self.inputs[2]
        k = v.shape[-1]
        return [Meta((*v.shape, k), vectors.dtype)]

    def any_extent_kernel(self) -> Any:
        return self.impl

    def impl(self, v: Any, a: Any, vectors: Any, *rest: Any) -> Any:
        v = np.asarray(v)
        out = np.zeros((*v.shape, v.shape[-1]), np.asarray(vectors).dtype)
        k = v.shape[-1]
        out.reshape((*v.shape[:-1], k * k))[..., :: k + 1] = v
        return out

    def lower(self, lo: Any, v: Any, a: Any, vectors: Any, *rest: Any) -> Any:
        return lowered.diagonal_matrix(lo, v, self.outputs[0].dtype)

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        v = xs[0]
        dt = xs[2].meta.dtype
        values = to_dtype(v, dt)
        terms: list[Any] = []
        if self.decomposition == "svd":
            u, vh = xs[2], xs[3]
            da, du, dvh = ts[1], ts[2], ts[3]
            if da is not None:
                terms.append(matmul(matmul(adjoint(u), da), adjoint(vh)))
            if du is not None:
                terms.append(scale_columns(matmul(adjoint(du), u), values))
            if dvh is not None:
                terms.append(scale_rows(values, matmul(vh, adjoint(dvh))))
            part = "hermitian"
        elif self.decomposition == "eigh":
            vectors = xs[2]
            da, dv = ts[1], ts[2]
            if da is not None:
                terms.append(matmul(adjoint(vectors), matmul(hermitian_part(da), vectors)))
            if dv is not None:
                mixed = scale_columns(matmul(adjoint(dv), vectors), values)
                terms.append(lax.add(mixed, adjoint(mixed)))
            part = "hermitian"
        else:  # eig
            vectors, vinv = xs[2], xs[3]
            da, dv, dvinv = ts[1], ts[2], ts[3]
            if da is not None:
                terms.append(matmul(vinv, matmul(to_dtype(da, dt), vectors)))
            if dvinv is not None:
                terms.append(scale_columns(matmul(dvinv, vectors), values))
            if dv is not None:
                terms.append(scale_rows(values, matmul(vinv, dv)))
            part = "full"
        if not terms:
            return [None]
        total = terms[0]
        for term in terms[1:]:
            total = lax.add(total, term)
        check = "linalg.svd" if self.decomposition == "svd" else ""
        return [ClusterBlocks.bind(v, total, eps=self.eps, part=part, check_zero=check)]


def spectral_block(family: str, v: Any, operands: tuple[Any, ...], eps: float) -> Any:
    """The :class:`SpectralBlock` of the spectrum ``v`` of a ``family`` decomposition of
    ``operands`` (``(a, u, vh)``, ``(a, v)`` or ``(a, v, vinv)``)."""
    return SpectralBlock.bind(v, *operands, decomposition=family, eps=float(eps))


@family("linalg.tied_inverse")
class TiedInverse(LinalgOp):
    """``diag(1/v)`` (``[..., K, K]``, dtype of ``b``) with the cluster at zero cut to 0:
    the inverse singular values of the SVD's derivative. Operands ``(v, b)``, ``b`` the
    :class:`SpectralBlock` of ``v``: its derivative is ``-B^+ dB B^+`` (exact with the
    tied blocks full)."""

    single_output = True
    extent_generic = True  # its rules read ranks only
    eps: float

    def infer(self) -> list[Meta]:
        return [self.inputs[1]]

    def any_extent_kernel(self) -> Any:
        return self.impl

    def lower(self, lo: Any, v: Any, b: Any) -> Any:
        """:meth:`impl` in JAX (its fast path is the same formula with nothing at zero)."""
        jnp = lo.jnp
        if 0 in b.shape:
            return jnp.zeros(b.shape, b.dtype)
        _, at_zero = lowered.clusters(lo, v, self.eps)
        inverse = jnp.where(at_zero, 0, 1 / jnp.where(at_zero, 1, v))
        return lowered.diagonal_matrix(lo, inverse, b.dtype)

    def impl(self, v: Any, b: Any) -> Any:
        v, b = np.asarray(v), np.asarray(b)
        if v.size and np.all(np.abs(v) > self.eps * np.max(np.abs(v), axis=-1, keepdims=True)):
            inverse = 1 / v  # no value at zero (the common case)
        else:
            _, at_zero = clusters(v, self.eps)
            inverse = np.divide(1, v, out=np.zeros(v.shape, v.dtype), where=~at_zero)
        k = v.shape[-1]
        out = np.zeros(b.shape, b.dtype)
        out.reshape((*v.shape[:-1], k * k))[..., :: k + 1] = inverse
        return out

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        db = ts[1]
        if db is None:
            return [None]
        (inverse,) = ys
        assert inverse is not None
        return [lax.neg(matmul(matmul(inverse, db), inverse))]


def tied_inverse(v: Any, b: Any, eps: float) -> Any:
    """``diag(1/v)`` cut at zero (see :class:`TiedInverse`)."""
    return TiedInverse.bind(v, b, eps=float(eps))
