"""The iterative kernels, on numpy vectors: conjugate gradients, restarted GMRES,
BiCGSTAB, Krylov-Schur eigensolvers (Lanczos for Hermitian operators, Arnoldi for
general ones) and fixed-point iterations (plain and Anderson-accelerated).

Each kernel takes ``matvec`` (or the map ``f``) on flat vectors of one dtype and
returns what it found together with the iterations it ran; it never records anything
(no tape, no graph), so its memory does not grow with the iteration count. A kernel
that does not reach its tolerance raises :class:`~tenferro.errors.ConvergenceError`
naming the caller ``op``, the method, the tolerance, the residual reached and the
iteration count.

Norms are Euclidean over the whole (flattened) vector; complex vectors use the
Hermitian inner product ``vdot``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from tenferro.errors import ConvergenceError
from tenferro.linalg._common import scipy_linalg

__all__ = [
    "EIGSH_WHICH",
    "EIGS_WHICH",
    "EigenResult",
    "anderson",
    "bicgstab",
    "cg",
    "eigen",
    "fixed_point_iteration",
    "gmres",
    "precision",
]

Array = np.ndarray[Any, Any]
MatVec = Callable[[Array], Array]


def precision(dtype: np.dtype[Any]) -> float:
    """Machine epsilon of ``dtype``'s real precision."""
    return float(np.finfo(dtype).eps)


def _norm(x: Array) -> float:
    return float(np.sqrt(np.real(np.vdot(x, x))))


def _tolerance(b: Array, rtol: float, atol: float) -> float:
    return max(rtol * _norm(b), atol)


# ---------------------------------------------------------------------- linear systems


def cg(
    op: str, matvec: MatVec, b: Array, x0: Array, rtol: float, atol: float, maxiter: int
) -> tuple[Array, int]:
    """Conjugate gradients for a Hermitian positive definite operator: the solution and
    the iterations run. Converged when ``||b - A x|| <= max(rtol ||b||, atol)``, checked
    on the true residual (a drifted recursive residual restarts the iteration)."""
    tol = _tolerance(b, rtol, atol)
    x = np.array(x0, copy=True)
    r = b - matvec(x) if x.any() else np.array(b, copy=True)
    iterations = 0
    while True:
        residual = _norm(r)
        if residual <= tol:
            return x, iterations
        p = r.copy()
        rho = residual * residual
        while iterations < maxiter:
            q = matvec(p)
            iterations += 1
            curvature = np.real(np.vdot(p, q))
            if not curvature > 0:
                raise ConvergenceError(
                    op,
                    "cg",
                    tol,
                    _norm(r),
                    iterations,
                    "the operator is not positive definite (p^H A p <= 0): cg needs a "
                    "Hermitian positive definite operator; use gmres or bicgstab",
                )
            alpha = rho / curvature
            x += alpha * p
            r -= alpha * q
            residual = _norm(r)
            if residual <= tol:
                break
            rho_next = residual * residual
            p *= rho_next / rho
            p += r
            rho = rho_next
        else:
            raise ConvergenceError(op, "cg", tol, _norm(b - matvec(x)), iterations)
        r = b - matvec(x)  # the true residual: stop, or go on from it


def gmres(
    op: str,
    matvec: MatVec,
    b: Array,
    x0: Array,
    rtol: float,
    atol: float,
    restart: int,
    maxiter: int,
) -> tuple[Array, int]:
    """Restarted GMRES (Arnoldi with repeated Gram-Schmidt, Givens rotations): the
    solution and the inner iterations run. ``maxiter`` counts restart cycles of up to
    ``restart`` iterations, as in SciPy and JAX. Converged when the true residual
    ``||b - A x|| <= max(rtol ||b||, atol)``."""
    tol = _tolerance(b, rtol, atol)
    n = b.size
    m = max(1, min(restart, n))
    dtype = np.result_type(b.dtype, np.float32)
    x = np.array(x0, dtype=dtype, copy=True)
    iterations = 0
    r = b - matvec(x) if x.any() else np.array(b, dtype=dtype, copy=True)
    residual = _norm(r)
    tiny = precision(dtype) * max(residual, 1e-300)
    for _ in range(maxiter):
        if residual <= tol:
            return x, iterations
        basis = [r / residual]  # grown as needed: memory follows the iterations run
        h = np.zeros((m + 1, m), dtype)
        cs = np.zeros(m, dtype.type(0).real.dtype)
        sn = np.zeros(m, dtype)
        g = np.zeros(m + 1, dtype)
        g[0] = residual
        size = 0
        for j in range(m):
            w = np.array(matvec(basis[j]), dtype=dtype)  # a copy: orthogonalised in place
            iterations += 1
            for _pass in range(2):  # modified Gram-Schmidt, twice
                for i, u in enumerate(basis):
                    coefficient = np.vdot(u, w)
                    w -= coefficient * u
                    h[i, j] += coefficient
            norm_w = _norm(w)
            h[j + 1, j] = norm_w
            for i in range(j):
                hi, hk = h[i, j], h[i + 1, j]
                h[i, j] = cs[i] * hi + sn[i] * hk
                h[i + 1, j] = -np.conj(sn[i]) * hi + cs[i] * hk
            cs[j], sn[j], h[j, j] = _givens(h[j, j], h[j + 1, j])
            h[j + 1, j] = 0
            g[j + 1] = -np.conj(sn[j]) * g[j]
            g[j] = cs[j] * g[j]
            size = j + 1
            if abs(g[j + 1]) <= tol or norm_w <= tiny:
                break
            basis.append(w / norm_w)
        y = scipy_linalg().solve_triangular(h[:size, :size], g[:size])
        for coefficient, u in zip(y, basis, strict=False):
            x += coefficient * u
        r = b - matvec(x)
        residual = _norm(r)
    if residual <= tol:
        return x, iterations
    raise ConvergenceError(
        op, "gmres", tol, residual, iterations, f"{maxiter} restart cycle(s) of {m}"
    )


def _givens(a: Any, b: Any) -> tuple[float, Any, Any]:
    """``(c, s, r)`` with ``[[c, s], [-conj(s), c]] @ [a, b] = [r, 0]``, ``c`` real."""
    size_a, size_b = abs(a), abs(b)
    if size_b == 0:
        return 1.0, 0.0 * a, a
    if size_a == 0:
        return 0.0, np.conj(b) / size_b, size_b
    radius = float(np.hypot(size_a, size_b))
    phase = a / size_a
    return size_a / radius, phase * np.conj(b) / radius, phase * radius


def bicgstab(
    op: str, matvec: MatVec, b: Array, x0: Array, rtol: float, atol: float, maxiter: int
) -> tuple[Array, int]:
    """BiCGSTAB (van der Vorst) for a general operator: the solution and the iterations
    run (each applies the operator twice). Converged when the true residual
    ``||b - A x|| <= max(rtol ||b||, atol)``."""
    tol = _tolerance(b, rtol, atol)
    dtype = np.result_type(b.dtype, np.float32)
    x = np.array(x0, dtype=dtype, copy=True)
    r = b - matvec(x) if x.any() else np.array(b, dtype=dtype, copy=True)
    iterations = 0
    while iterations < maxiter:
        if _norm(r) <= tol:
            return x, iterations
        shadow = r.copy()
        rho = alpha = omega = 1.0
        v = np.zeros_like(r)
        p = np.zeros_like(r)
        while iterations < maxiter:
            iterations += 1
            rho_next = np.vdot(shadow, r)
            if rho_next == 0 or omega == 0:
                break  # breakdown: restart from the current residual
            p = r + (rho_next / rho) * (alpha / omega) * (p - omega * v)
            rho = rho_next
            v = matvec(p)
            projection = np.vdot(shadow, v)
            if projection == 0:
                break
            alpha = rho / projection
            s = r - alpha * v
            if _norm(s) <= tol:
                x += alpha * p
                r = s
                break
            t = matvec(s)
            tt = np.real(np.vdot(t, t))
            omega = np.vdot(t, s) / tt if tt > 0 else 0.0
            x += alpha * p + omega * s
            r = s - omega * t
            if _norm(r) <= tol:
                break
        r = b - matvec(x)
    residual = _norm(r)
    if residual <= tol:
        return x, iterations
    raise ConvergenceError(op, "bicgstab", tol, residual, iterations)


# ---------------------------------------------------------------------- eigenproblems

EIGSH_WHICH = ("SA", "LA", "SM", "LM")
EIGS_WHICH = ("LM", "SM", "LR", "SR", "LI", "SI")


def _order(values: Array, which: str) -> Array:
    """Positions of ``values`` from most to least wanted (stable)."""
    if which in ("SM", "LM"):
        key = np.abs(values)
    elif which in ("SI", "LI"):
        key = np.imag(values)
    else:
        key = np.real(values)
    if which[0] == "L":
        key = -key
    return np.argsort(key, kind="stable")


class EigenResult(NamedTuple):
    """Converged Ritz pairs, most wanted first: ``values`` (``count``), ``vectors``
    (``n x count``, orthonormal for Hermitian operators, unit columns otherwise), and
    ``following``: the best Ritz value not returned (NaN when there is none)."""

    values: Array
    vectors: Array
    following: Any
    iterations: int


def eigen(
    op: str,
    matvec: MatVec,
    v0: Array,
    count: int,
    which: str,
    hermitian: bool,
    tol: float,
    ncv: int,
    maxiter: int,
) -> EigenResult:
    """The ``count`` most wanted eigenpairs by Krylov-Schur (Stewart): Arnoldi with full
    reorthogonalisation, restarted by keeping the wanted part of the Krylov
    decomposition ``A V = V H + v b^H`` -- Lanczos with thick restarts when
    ``hermitian``. Converged when every wanted pair's residual ``||A x - t x||`` is at
    most ``tol`` times the largest Ritz value's magnitude (checked on the true
    residuals at the end). ``maxiter`` counts restarts.

    A Krylov space holds one direction of each eigenspace its start vector meets, so a
    single-vector method cannot see a multiplicity. The pairs found (for Hermitian
    operators, polished by a Rayleigh-Ritz step) are therefore completed: a random probe
    of the operator deflated by their span looks for eigenvalues as wanted as (or tied
    with) the last one found, and converges each it finds (a degenerate level is
    returned whole up to ``count``, and ``following`` sees a tie)."""
    eps = precision(v0.dtype)
    found = _krylov_schur(op, matvec, v0, count, which, hermitian, tol, ncv, maxiter, None)
    values, vectors = found.values, found.vectors
    if hermitian:
        values, vectors = _rayleigh_ritz(op, matvec, vectors, which, tol, eps, found.iterations)
    rng = np.random.default_rng(2)
    n = v0.size
    for _attempt in range(count + 1):
        if vectors.shape[1] >= n:
            break
        worst = values[min(count, len(values)) - 1]
        scale = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
        locked = np.linalg.qr(vectors)[0]
        probe = _krylov_schur(
            op, matvec, _random(rng, n, v0.dtype), 1, which, hermitian, tol, ncv, 0, locked.T
        )
        margin = max(100 * tol, 1000 * eps) * scale
        if _rank_key(probe.values[0], which) > _rank_key(worst, which) + margin:
            break  # nothing in the rest of the space is as wanted as what was found
        more = probe
        if not probe.converged:
            more = _krylov_schur(
                op, matvec, probe.vectors[:, 0], 1, which, hermitian, tol, ncv, maxiter, locked.T
            )
        vector = _eigenvector(matvec, more.values[0], more.vectors[:, 0], locked)
        vectors = np.concatenate([vectors, vector[:, None]], axis=1)
        if hermitian:
            values, vectors = _rayleigh_ritz(op, matvec, vectors, which, tol, eps, found.iterations)
        else:
            values = np.append(values, more.values[0])
            order = _order(values, which)
            values, vectors = values[order], vectors[:, order]
    following = values[count] if len(values) > count else found.following
    return EigenResult(values[:count], vectors[:, :count], following, found.iterations)


def _eigenvector(matvec: MatVec, value: Any, schur: Array, locked: Array) -> Array:
    """The eigenvector of ``value`` from a Schur vector ``y`` of the operator deflated by
    the invariant subspace ``locked`` (orthonormal ``Q``): ``x = y + Q z`` with
    ``(value - T) z = Q^H A y``, ``T = Q^H A Q`` (least squares where ``value`` is also
    an eigenvalue of ``T``: a degenerate level). For a Hermitian operator ``z = 0``."""
    image = matvec(schur)
    coupling = locked.conj().T @ image
    if not np.any(np.abs(coupling) > precision(schur.dtype) * _norm(image)):
        return schur
    projected = locked.conj().T @ np.stack(
        [matvec(locked[:, i]) for i in range(locked.shape[1])], axis=1
    )
    shifted = value * np.eye(locked.shape[1]) - projected
    z = np.linalg.lstsq(shifted, coupling, rcond=None)[0]
    x: Array = schur + locked @ z
    unit: Array = x / _norm(x)
    return unit


def _rank_key(value: Any, which: str) -> float:
    """How unwanted ``value`` is (smaller: more wanted)."""
    if which in ("SM", "LM"):
        key = float(abs(value))
    elif which in ("SI", "LI"):
        key = float(np.imag(value))
    else:
        key = float(np.real(value))
    return -key if which[0] == "L" else key


def _rayleigh_ritz(
    op: str, matvec: MatVec, vectors: Array, which: str, tol: float, eps: float, iterations: int
) -> tuple[Array, Array]:
    """Orthonormal Ritz pairs of a Hermitian operator on the span of ``vectors``, most
    wanted first, with their true residuals checked (a disagreement with the Krylov
    estimates means the operator is not Hermitian, or not linear)."""
    q, _ = np.linalg.qr(vectors)
    images = np.stack([matvec(q[:, i]) for i in range(q.shape[1])], axis=1)
    projected = q.conj().T @ images
    values, rotation = np.linalg.eigh((projected + projected.conj().T) / 2)
    order = _order(values, which)
    values, rotation = values[order], rotation[:, order]
    x, ax = q @ rotation, images @ rotation
    residuals = np.linalg.norm(ax - x * values, axis=0)
    magnitude = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
    limit = max(100 * tol, 100 * eps) * magnitude
    if np.any(residuals > limit):
        raise ConvergenceError(
            op,
            "lanczos",
            limit,
            float(np.max(residuals)),
            iterations,
            "the Ritz pairs' true residuals disagree with the Krylov estimates (the operator "
            "may not be Hermitian, or not linear)",
        )
    return values, x


class _Found(NamedTuple):
    values: Array
    vectors: Array
    following: Any
    iterations: int
    converged: bool


def _krylov_schur(
    op: str,
    matvec: MatVec,
    v0: Array,
    count: int,
    which: str,
    hermitian: bool,
    tol: float,
    ncv: int,
    maxiter: int,
    locked: Array | None,
) -> _Found:
    """The Krylov-Schur iteration of :func:`eigen` in the space orthogonal to the rows
    of ``locked``; ``maxiter=0`` makes it a probe: one cycle, whatever converged."""
    n = v0.size
    dtype = v0.dtype
    free = n - (0 if locked is None else locked.shape[0])
    count = min(count, free)
    m = max(min(ncv, free), min(count + 1, free))
    keep = min(m - 1, count + (m - count) // 2) if m > count else count
    basis = np.zeros((m + 1, n), dtype)
    h = np.zeros((m + 1, m), dtype)
    rng = np.random.default_rng(1)
    start = _deflate(v0.astype(dtype, copy=True), locked)
    if not _norm(start) > 0:
        start = _fresh(rng, basis[:0], dtype, locked)
    basis[0] = start / _norm(start)
    size = 0  # columns of the decomposition
    restarts = 0
    eps = precision(dtype)
    scale = 0.0
    solver = "lanczos" if hermitian else "arnoldi"
    while True:
        while size < m:  # expand to m columns, or until the space is exhausted
            w = _deflate(matvec(basis[size]), locked)
            for _pass in range(2):
                coefficients = basis[: size + 1].conj() @ w
                w = w - coefficients @ basis[: size + 1]
                h[: size + 1, size] += coefficients
                w = _deflate(w, locked)
            beta = _norm(w)
            scale = max(scale, float(np.max(np.abs(h[: size + 1, : size + 1]), initial=0.0)))
            h[size + 1, size] = beta
            size += 1
            if size >= free:
                h[size, size - 1] = 0
                break
            if beta > eps * max(scale, 1e-300) * 8:
                basis[size] = w / beta
            else:  # an invariant subspace: go on from a fresh direction, at least once
                h[size, size - 1] = 0
                basis[size] = _fresh(rng, basis[:size], dtype, locked)
                continue
            if (
                maxiter > 0
                and size >= count
                and size < m
                and _all_converged(h, size, count, which, hermitian, tol, eps)
            ):
                break
        values, vectors, residuals = _ritz(h, size, hermitian)
        order = _order(values, which)
        wanted = order[:count]
        magnitude = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
        bound = max(tol, eps) * magnitude
        converged = size >= free or bool(np.all(residuals[wanted] <= bound))
        if converged or maxiter == 0:
            x = basis[:size].T @ vectors[:, wanted]
            following = values[order[count]] if len(order) > count else np.nan
            if converged and not hermitian:
                deflated = functools.partial(_deflated, matvec, locked)
                _check_residuals(op, deflated, x, values[wanted], bound, eps * magnitude, restarts)
            return _Found(values[wanted], x, following, restarts, converged)
        if restarts >= maxiter:
            raise ConvergenceError(
                op,
                solver,
                bound,
                float(np.max(residuals[wanted])),
                restarts,
                f"{count} wanted eigenpair(s), Krylov dimension ncv={m}; raise maxiter or "
                f"ncv (or tol)",
            )
        restarts += 1
        size = _restart(basis, h, size, keep, which, hermitian, values, vectors, order)


def _check_residuals(
    op: str, matvec: MatVec, x: Array, values: Array, bound: float, floor: float, restarts: int
) -> None:
    true = [_norm(matvec(x[:, i]) - values[i] * x[:, i]) for i in range(x.shape[1])]
    limit = max(100 * bound, 100 * floor)
    if true and max(true) > limit:
        raise ConvergenceError(
            op,
            "arnoldi",
            bound,
            float(max(true)),
            restarts,
            "the Ritz pairs' true residuals disagree with the Krylov estimates (is the "
            "operator linear?)",
        )


def _deflated(matvec: MatVec, locked: Array | None, x: Array) -> Array:
    """The operator restricted to the complement of ``locked``: ``P A x``."""
    return _deflate(matvec(x), locked)


def _deflate(w: Array, locked: Array | None) -> Array:
    """``w`` without its components along the rows of ``locked``."""
    if locked is None or not locked.shape[0]:
        return w
    deflated: Array = w - (locked.conj() @ w) @ locked
    return deflated


def _random(rng: np.random.Generator, n: int, dtype: np.dtype[Any]) -> Array:
    x = rng.standard_normal(n)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(n)
    return x.astype(dtype)


def _fresh(
    rng: np.random.Generator, basis: Array, dtype: np.dtype[Any], locked: Array | None
) -> Array:
    """A random unit vector orthogonal to the rows of ``basis`` and ``locked``."""
    n = basis.shape[1]
    for _attempt in range(5):
        w = _random(rng, n, dtype)
        for _pass in range(2):
            w = _deflate(w - (basis.conj() @ w) @ basis, locked)
        size = _norm(w)
        if size > 0.5:
            return w / size
    return w / _norm(w)


def _ritz(h: Array, size: int, hermitian: bool) -> tuple[Array, Array, Array]:
    """Ritz values, their vectors in the Krylov basis, and the residual estimates
    ``|b^H y|`` of the decomposition of ``size`` columns."""
    square = h[:size, :size]
    if hermitian:
        values, vectors = np.linalg.eigh((square + square.conj().T) / 2)
    else:
        values, vectors = np.linalg.eig(square)
        vectors = vectors / np.linalg.norm(vectors, axis=0)
    residuals = np.abs(h[size, :size] @ vectors)
    return values, vectors, residuals


def _all_converged(
    h: Array, size: int, count: int, which: str, hermitian: bool, tol: float, eps: float
) -> bool:
    values, _, residuals = _ritz(h, size, hermitian)
    wanted = _order(values, which)[:count]
    magnitude = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
    return bool(np.all(residuals[wanted] <= max(tol, eps) * magnitude))


def _restart(
    basis: Array,
    h: Array,
    size: int,
    keep: int,
    which: str,
    hermitian: bool,
    values: Array,
    vectors: Array,
    order: Array,
) -> int:
    """Keep the ``keep`` most wanted Ritz directions (an invariant subspace of the
    projected matrix): ``V <- V Q``, ``H <- Q^H H Q``, the residual row ``b <- b Q``;
    the last basis vector carries on. Returns the new size."""
    if hermitian:
        chosen = order[:keep]
        q = vectors[:, chosen]
        projected = np.diag(values[chosen]).astype(h.dtype)
    else:
        square = h[:size, :size].astype(np.result_type(h.dtype, np.complex64))
        t, z = scipy_linalg().schur(square, output="complex")
        diagonal = np.diag(t)
        ranks = np.empty(size, int)
        ranks[_order(diagonal, which)] = np.arange(size)
        select = (ranks < keep).astype(np.int32)
        t, z, *_rest, info = scipy_linalg().lapack.ztrsen(select, t, z)
        if info != 0:  # reordering failed (ill-conditioned): keep what Schur gave
            t, z = scipy_linalg().schur(square, output="complex")
        q = z[:, :keep]
        projected = t[:keep, :keep]
    residual_row = h[size, :size] @ q
    following = basis[size].copy()
    basis[:keep] = q.T @ basis[:size]
    basis[keep] = following
    basis[keep + 1 :] = 0
    h[:] = 0
    h[:keep, :keep] = projected
    h[keep, :keep] = residual_row
    return keep


# ---------------------------------------------------------------------- fixed points


def _fixed_point_tolerance(fx: Array, tol: float, atol: float) -> float:
    return max(tol * _norm(fx), atol)


def fixed_point_iteration(
    op: str, f: MatVec, x0: Array, tol: float, atol: float, maxiter: int
) -> tuple[Array, int]:
    """``x <- f(x)`` until ``||f(x) - x|| <= max(tol ||f(x)||, atol)``: the last ``f(x)``
    and the iterations run."""
    x = x0
    residual = np.inf
    bound = atol
    for iteration in range(1, maxiter + 1):
        fx = f(x)
        residual = _norm(fx - x)
        bound = _fixed_point_tolerance(fx, tol, atol)
        if residual <= bound:
            return fx, iteration
        x = fx
    raise ConvergenceError(op, "fixed-point iteration", bound, residual, maxiter)


def anderson(
    op: str,
    f: MatVec,
    x0: Array,
    tol: float,
    atol: float,
    maxiter: int,
    memory: int,
    mixing: float,
) -> tuple[Array, int]:
    """Anderson acceleration (type II) of ``x <- f(x)`` with the last ``memory``
    differences: ``x_next = x + b g - (dX + b dG) gamma`` with ``g = f(x) - x`` and
    ``gamma`` the least-squares fit of ``g`` by the residual differences ``dG``
    (``b`` = ``mixing``). Stops as :func:`fixed_point_iteration`."""
    x = x0
    fx = f(x)
    g = fx - x
    residual = _norm(g)
    bound = _fixed_point_tolerance(fx, tol, atol)
    if residual <= bound:
        return fx, 1
    steps_x: list[Array] = []
    steps_g: list[Array] = []
    for iteration in range(2, maxiter + 1):
        if steps_g:
            dg = np.stack(steps_g, axis=1)
            dx = np.stack(steps_x, axis=1)
            gamma = np.linalg.lstsq(dg, g, rcond=None)[0]
            x_next = x + mixing * g - (dx + mixing * dg) @ gamma
        else:
            x_next = x + mixing * g
        fx_next = f(x_next)
        g_next = fx_next - x_next
        steps_x.append(x_next - x)
        steps_g.append(g_next - g)
        if len(steps_x) > memory:
            steps_x.pop(0)
            steps_g.pop(0)
        x, fx, g = x_next, fx_next, g_next
        residual = _norm(g)
        bound = _fixed_point_tolerance(fx, tol, atol)
        if not np.isfinite(residual):
            break
        if residual <= bound:
            return fx, iteration
    raise ConvergenceError(op, "anderson", bound, residual, maxiter)
