"""Matrix-free eigensolvers with implicit derivatives: ``eigsh`` (Hermitian; Lanczos)
and ``eigs`` (general; Arnoldi), ``tf.linalg``, SciPy's names and conventions.

``eigsh`` -- ``solvers.eigsh``. With ``V`` the ``k`` orthonormal eigenvectors, ``w``
their eigenvalues and ``C = V^H dA V`` (``dA V`` from the operator's own JVP):

* ``dw = Re diag(C)`` (Hellmann-Feynman), marked as the dense rules mark theirs: a
  loss that weights tied eigenvalues differently warns in reverse mode
  (:class:`~tenferro.DegenerateDerivativeWarning`), and so does one that gives a
  derivative to the last wanted eigenvalue when it is tied with the next one (the
  forward pass converges one pair more than asked to know it) -- a degenerate ground
  state with ``k=1``, say;
* ``dV = V (R o C) + Z``: inside the block, the dense ``eigh`` rule with its gap
  reciprocals ``R`` cut at ties (relative tolerance ``eps``); outside it, ``Z`` solves
  the projected Sylvester system ``P (A Z - Z B) = -P dA V`` (``P = I - V V^H``,
  ``B = diag(w)`` the spectral block of the dense rules, whose derivative inside a tied
  level is the perturbation's whole block), matrix-free (conjugate gradients for
  ``which="SA"``/``"LA"``, where it is definite; GMRES otherwise). The gauge is the
  dense rule's, ``v_j^H dv_j = 0``, and derivatives of quantities of complete tied
  levels are exact at every order, as the dense rule's. Where a wanted eigenvalue is
  degenerate with one outside the block, the eigenvector has no derivative and this
  solve fails with a :class:`~tenferro.ConvergenceError` saying so.

``eigs`` -- ``solvers.eigs``. For each wanted eigenpair ``(w_j, v_j)`` (``|v_j| = 1``)
one bordered system gives both derivatives at once::

    [A - w_j   -v_j] [dv_j]   [-dA v_j]
    [v_j^H       0 ] [dw_j] = [   0   ]

(nonsingular exactly when ``w_j`` is simple; the gauge is ``v_j^H dv_j = 0``), solved
by GMRES with the operator's JVP and, in reverse mode, its VJP. An eigenvalue within
rounding of another (computed or the next Ritz value) warns.

All the derivative solves are ``solvers.linear_solve``, so second derivatives
(Hessian-vector products of eigenvalues) come from the same rules; memory does not
grow with the number of Lanczos/Arnoldi iterations.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from tenferro import lax
from tenferro.algebra import adjoint, diagonal, eye_like, matmul
from tenferro.core.families import FamilyPrimitive, family
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int, as_real
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.errors import ParameterError, ShapeError
from tenferro.linalg.degeneracy import guard_ties, report
from tenferro.linalg.gaps import DEFAULT_EPS, gap_scale, resolve_eps, spectral_block
from tenferro.meta import Meta
from tenferro.solvers import krylov
from tenferro.solvers.closure import ClosedFunction, close, derived
from tenferro.solvers.family import SolverOp
from tenferro.solvers.linear import LinearSolve, default_maxiter
from tenferro.solvers.spaces import close_map, promoted, tensors_of
from tenferro.surface.math import real as surface_real
from tenferro.surface.reductions import sum as surface_sum
from tenferro.surface.shapes import reshape, stack

__all__ = ["EigenpairsResult", "Eigs", "Eigsh", "eigs", "eigsh"]


class EigenpairsResult(NamedTuple):
    """``(w, v)`` of :func:`eigsh` and :func:`eigs`."""

    eigenvalues: Any
    eigenvectors: Any


def _real_dtype(dt: np.dtype[Any]) -> np.dtype[Any]:
    return np.empty(0, dt).real.dtype


# ---------------------------------------------------------------------- operators on blocks


def columnwise(operator: ClosedFunction, columns: int) -> ClosedFunction:
    """``operator`` (of a vector and other inputs) applied to each column of a block
    ``[*shape, columns]`` of vectors, the other inputs shared."""
    return derived((operator, "columns", columns), lambda: _columnwise(operator, columns))


def _columnwise(operator: ClosedFunction, columns: int) -> ClosedFunction:
    vector = operator.inputs[0]
    block = vector._replace(shape=(*vector.shape, columns))

    def apply(matrix: Any, *rest: Any) -> list[Any]:
        outputs = [operator.apply([matrix[..., j], *rest])[0] for j in range(columns)]
        return [stack(outputs, axis=-1)]

    closed, captured = close("columns", apply, [block, *operator.inputs[1:]])
    assert not captured, "a block operator reads only its arguments"
    return closed


def _projected(operator: ClosedFunction, columns: int, sign: float) -> ClosedFunction:
    """``Z -> sign P (A Z - Z B) + V V^H Z`` (``P = I - V V^H``) as a closed function of
    ``(Z, V, B, params)``: with ``B = diag(w)`` Hermitian, and definite for the extremal
    ends of the spectrum with the right ``sign``; on the complement of ``V`` it is the
    system of the eigenvectors' derivatives. ``B`` is the spectral block, whose
    derivative inside a tied level is the perturbation's whole block (not only its
    diagonal), so this system's own derivative does not depend on the basis chosen in
    the level."""
    return derived(
        (operator, "projected", columns, sign), lambda: _make_projected(operator, columns, sign)
    )


def _make_projected(operator: ClosedFunction, columns: int, sign: float) -> ClosedFunction:
    vector = operator.inputs[0]
    n = vector.size
    block = vector._replace(shape=(*vector.shape, columns))
    square = Meta((columns, columns), vector.dtype)
    apply_columns = columnwise(operator, columns)

    def apply(z: Any, v: Any, b: Any, *params: Any) -> list[Any]:
        zm, vm = reshape(z, (n, columns)), reshape(v, (n, columns))
        inside = matmul(adjoint(vm), zm)
        pz = zm - matmul(vm, inside)
        az = apply_columns.apply([reshape(pz, block.shape), *params])[0]
        shifted = reshape(az, (n, columns)) - matmul(pz, b)
        projected = shifted - matmul(vm, matmul(adjoint(vm), shifted))
        return [reshape(projected * sign + matmul(vm, inside), block.shape)]

    closed, captured = close("eigsh", apply, [block, block, square, *operator.inputs[1:]])
    assert not captured, "a projected operator reads only its arguments"
    return closed


def _bordered(operator: ClosedFunction, columns: int) -> ClosedFunction:
    """``(Z, mu) -> ((A - w_j) z_j - mu_j v_j, v_j^H z_j)_j`` as a closed function of
    ``(Z, mu, V, w, params)``: the bordered systems of the eigenpairs' derivatives."""
    return derived((operator, "bordered", columns), lambda: _make_bordered(operator, columns))


def _make_bordered(operator: ClosedFunction, columns: int) -> ClosedFunction:
    vector = operator.inputs[0]
    block = vector._replace(shape=(*vector.shape, columns))
    values = Meta((columns,), vector.dtype)
    apply_columns = columnwise(operator, columns)
    axes = tuple(range(len(vector.shape)))

    def apply(z: Any, mu: Any, v: Any, w: Any, *params: Any) -> list[Any]:
        az = apply_columns.apply([z, *params])[0]
        top = az - z * w - v * mu
        bottom = surface_sum(lax.conj(v) * z, axis=axes) if axes else lax.conj(v) * z
        return [top, bottom]

    closed, captured = close("eigs", apply, [block, values, block, values, *operator.inputs[1:]])
    assert not captured, "a bordered operator reads only its arguments"
    return closed


def _operator_change(
    caller: str, operator: ClosedFunction, columns: int, block: Any, params: Xs, ts: Ts
) -> Any:
    """``dA V``: the operator's JVP in its parameters, on each column of ``block``."""
    active = tuple(t is not None for t in ts)
    jacobian = columnwise(operator.jvp((False, *active)), columns)
    tangents = [t for t in ts if t is not None]
    return jacobian.emit(caller, [block, *params, *tangents])[0]


# ---------------------------------------------------------------------- eigsh


class _EigenSearch(SolverOp):
    """What ``eigsh`` and ``eigs`` share: the operator, the search's settings and its
    run on the operands (the operator's parameters, then the starting vector)."""

    operator: ClosedFunction
    k: int
    which: str
    tol: float
    ncv: int
    maxiter: int
    eps: float
    solve_rtol: float
    caller: str

    def search(self, arrays: Any, count: int, hermitian: bool) -> krylov.EigenResult:
        vector = self.operator.inputs[0]
        params = list(arrays[:-1])
        operator = self.operator

        def matvec(flat: Any) -> Any:
            return np.asarray(operator.run([flat.reshape(vector.shape), *params])[0]).reshape(-1)

        v0 = np.asarray(arrays[-1], vector.dtype).reshape(-1)
        return krylov.eigen(
            self.caller, matvec, v0, count, self.which, hermitian, self.tol, self.ncv, self.maxiter
        )


@family("solvers.eigsh")
class Eigsh(_EigenSearch):
    """Extremal eigenpairs of a Hermitian operator: operands are the operator's
    parameters, then the starting vector. Outputs: the ``k`` wanted eigenvalues
    (ascending, real), their vectors ``[*shape, k]`` and the next eigenvalue beyond
    them (NaN when the space has no more), which only the derivative's degeneracy
    check reads (it gets no derivative: the public function never returns it)."""

    def infer(self) -> list[Meta]:
        vector = self.operator.inputs[0]
        real = _real_dtype(vector.dtype)
        return [
            Meta((self.k,), real),
            vector._replace(shape=(*vector.shape, self.k), weak=False),
            Meta((), real),
        ]

    def impl(self, *arrays: Any) -> Any:
        vector = self.operator.inputs[0]
        columns = min(self.k + 1, vector.size)
        found = self.search(arrays, columns, hermitian=True)
        values = np.real(found.values)
        wanted = np.argsort(values[: self.k], kind="stable")
        following = values[self.k] if columns > self.k else np.nan
        vectors = found.vectors[:, wanted].reshape(*vector.shape, self.k)
        return (
            values[wanted],
            vectors.astype(vector.dtype, copy=False),
            np.asarray(following, values.dtype),
        )

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        params = len(self.operator.inputs) - 1
        dparams = ts[:params]
        if all(t is None for t in dparams):
            return [None] * 3
        w, v, following = ys
        assert w is not None
        assert v is not None
        assert following is not None
        k = self.k
        dtype = v.meta.dtype
        n = math.prod(v.meta.shape[:-1])
        change = _operator_change(self.caller, self.operator, k, v, xs[:params], dparams)
        vm = lax.reshape(v, (n, k))
        dav = lax.reshape(change, (n, k))
        c = matmul(adjoint(vm), dav)
        dw = diagonal(c)
        dw = guard_ties(self.caller, w, lax.real(dw) if dtype.kind == "c" else dw, self.eps)
        boundary = {"caller": self.caller, "eps": self.eps, "reverse": False}
        dw = BoundaryGuard.bind(w, following, dw, vectors=False, **boundary)
        # Inside the block, eigh's rule on the projected matrix P = V^H A V (= diag(w)):
        # its derivative dP = V^H dA V + dV^H V W + W V^H dV is that of the spectral
        # block (exact at every order inside tied levels), P written out so it has it.
        images = columnwise(self.operator, k).emit(self.caller, [v, *xs[:params]])[0]
        projected = matmul(adjoint(vm), lax.reshape(images, (n, k)))
        eye = lax.convert_element_type(eye_like(projected), dtype)
        block = spectral_block("eigh", w, (projected, eye), self.eps)
        inside = matmul(vm, gap_scale(self.caller, w, block, c, self.eps, pre="hermitian"))
        outside = lax.sub(dav, matmul(vm, c))  # P dA V
        sign = -1.0 if self.which == "LA" else 1.0
        rhs = lax.reshape(lax.mul(outside, lax.full_like(outside, -sign)), v.meta.shape)
        definite = self.which in ("SA", "LA")
        method = "cg" if definite else "gmres"
        restart = min(n, 50)
        z = LinearSolve.bind(
            v,
            block,
            *xs[:params],
            rhs,
            operator=_projected(self.operator, k, sign),
            count=1,
            method=method,
            hermitian=True,
            transposed=False,
            rtol=self.solve_rtol,
            atol=0.0,
            restart=restart,
            maxiter=default_maxiter(method, n * k, restart),
            has_x0=False,
            caller=f"{self.caller} (eigenvector derivative; it does not exist where a "
            f"wanted eigenvalue is degenerate with the rest of the spectrum)",
        )
        dv = lax.add(lax.reshape(inside, v.meta.shape), z)
        return [dw, BoundaryGuard.bind(w, following, dv, vectors=True, **boundary), None]


class _SpectrumCheck(FamilyPrimitive):
    """The identity on its last operand (a derivative of an eigensolver's outputs);
    the first two locate the degeneracies it looks for. ``reverse``: it checks
    cotangents (the transpose of the unchecked forward mark)."""

    caller: str
    eps: float
    reverse: bool
    batch_loop: ClassVar[str] = "a check of one eigenproblem's spectrum: applied per example"
    no_lowering: ClassVar[str] = (
        "checks the spectrum of an iterative eigensolver, which does not lower to XLA "
        "(its iteration runs on the host)"
    )

    def infer(self) -> list[Meta]:
        return [self.inputs[2]._replace(weak=False)]

    def impl(self, values: Any, following: Any, x: Any) -> Any:
        self.check(np.asarray(values), np.asarray(following), np.asarray(x))
        return x

    def check(self, values: Any, following: Any, x: Any) -> None:
        raise NotImplementedError

    def _again(self, values: Any, following: Any, x: Any, reverse: bool) -> Any:
        return type(self).bind(
            values, following, x, caller=self.caller, eps=self.eps, reverse=reverse
        )

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        return [None if ts[2] is None else self._again(xs[0], xs[1], ts[2], self.reverse)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if cts[0] is None:
            return [None, None, None]
        return [None, None, self._again(xs[0], xs[1], cts[0], not self.reverse)]


def _bound(values: Any, eps: float) -> float:
    """Values closer than this are tied: ``eps`` relative to the spectrum's largest
    magnitude (the dense spectral rules' criterion)."""
    return eps * float(np.max(np.abs(values), initial=0.0))


@family("solvers.eigsh_boundary_check")
class BoundaryGuard(_SpectrumCheck):
    """On ``eigsh``'s derivatives: warns when a wanted eigenvalue is tied with the next
    one (not computed: a degenerate level split by ``k``, which has no derivative) and
    the derivative asked depends on it. For eigenvalues (``vectors`` false) as the
    dense rules do, in reverse mode when the loss gives the tied eigenvalue a
    cotangent (the next one, not computed, has none); for eigenvectors in both
    directions, whenever a tied column's tangent or cotangent is not zero."""

    vectors: bool

    def _again(self, values: Any, following: Any, x: Any, reverse: bool) -> Any:
        return BoundaryGuard.bind(
            values,
            following,
            x,
            caller=self.caller,
            eps=self.eps,
            reverse=reverse,
            vectors=self.vectors,
        )

    def check(self, values: Any, following: Any, x: Any) -> None:
        if (not self.reverse and not self.vectors) or np.isnan(following) or not values.size:
            return
        bound = _bound(np.append(values, following), self.eps)
        scale = float(np.max(np.abs(x), initial=0.0))
        floor = np.sqrt(krylov.precision(x.dtype)) * scale
        for i in np.flatnonzero(np.abs(values - following) <= bound):
            weight = np.max(np.abs(x[..., i])) if self.vectors else abs(x[i])
            if weight > floor:
                what = "eigenvector" if self.vectors else "eigenvalue"
                report(
                    self.caller,
                    f"eigenvalue {i} ({values[i]:.6g}) is tied with the next one "
                    f"({float(following):.6g}, not among the k computed; within eps="
                    f"{self.eps:.3g} of the largest) and the derivative depends on its "
                    f"{what}; a degenerate level split by k has no derivative (it depends on "
                    f"how a perturbation splits the level), so the one returned is not a "
                    f"derivative. Raise k to hold the whole level",
                )
                return


def _check_k(op: str, k: Any, n: int) -> int:
    value = as_int(op, "k", k)
    if not 1 <= value <= n:
        raise ParameterError(op, f"k must be between 1 and the dimension {n}, got {k!r}")
    return value


def _settings(
    op: str, columns: int, n: int, ncv: Any, maxiter: Any, tol: Any
) -> tuple[int, int, float]:
    if ncv is None:
        ncv_value = min(n, max(2 * columns + 1, 20))
    else:
        ncv_value = as_int(op, "ncv", ncv)
        if ncv_value <= columns and columns < n:
            raise ParameterError(
                op, f"ncv must be above the eigenpairs computed ({columns}), got {ncv!r}"
            )
    maxiter_value = max(10 * n, 100) if maxiter is None else as_int(op, "maxiter", maxiter)
    if maxiter_value < 1:
        raise ParameterError(op, f"maxiter must be >= 1, got {maxiter!r}")
    tol_value = float(as_real(op, "tol", tol))
    if not tol_value >= 0:
        raise ParameterError(op, f"tol must be >= 0, got {tol!r}")
    return min(ncv_value, n), maxiter_value, tol_value


def _start(op: str, v0: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """The starting vector: ``v0``, or a fixed pseudo-random one (reproducible)."""
    if v0 is not None:
        return v0
    rng = np.random.default_rng(0)
    start = rng.standard_normal(shape)
    if dtype.kind == "c":
        start = start + 1j * rng.standard_normal(shape)
    return tensors_of(op, "v0", start.astype(dtype))[0][0]


def _operator(op: str, a: Any, v0: Any, hermitian: bool) -> tuple[ClosedFunction, list[Any], Any]:
    """The operator of ``a`` (a square matrix -- its Hermitian part with
    ``hermitian`` -- or a function), its operands, and the starting vector."""
    if callable(a):
        if v0 is None:
            raise ShapeError(
                op, "a matrix-free operator needs v0: its shape and dtype give the vector space"
            )
        leaves, treedef = tensors_of(op, "v0", v0)
        if len(leaves) != 1:
            raise ShapeError(op, f"v0 must be one tensor, got {len(leaves)} leaves")
        start = leaves[0]
        operator, operands = close_map(
            op,
            lambda v, params: a(v),
            treedef,
            [start.meta],
            [],
            "the operator A",
            promote=True,
        )
        return operator, operands, promoted([start], operator)[0]
    (matrix,), _ = tensors_of(op, "A", a)
    shape = matrix.meta.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ShapeError(op, f"A must be a square matrix or a function v -> A v, got {shape}")
    if v0 is not None:
        (start,), _ = tensors_of(op, "v0", v0, matrix.meta.dtype)
        if start.meta.shape != (shape[0],):
            raise ShapeError(op, f"v0 of shape {start.meta.shape} does not fit A of shape {shape}")
        matrix = lax.convert_element_type(matrix, start.meta.dtype)
    else:
        start = _start(op, None, (shape[0],), matrix.meta.dtype)
    if hermitian:
        matrix = (matrix + lax.conj(lax.transpose(matrix, (1, 0)))) * 0.5
    (leaf,), treedef = tensors_of(op, "v0", start)
    operator, operands = close_map(
        op, lambda v, params: params[0] @ v, treedef, [leaf.meta], [matrix], "A @ v"
    )
    return operator, operands, start


def _tie_tolerance(op: str, eps: Any, dtype: np.dtype[Any]) -> float:
    """The relative tie tolerance (``None``: the dense rules' default for ``dtype``)."""
    if eps is None:
        return resolve_eps(None, dtype)
    value = float(as_real(op, "eps", eps))
    if not value >= 0:
        raise ParameterError(op, f"eps must be >= 0, got {eps!r}")
    return value


def _default_tol(dtype: np.dtype[Any], tol: float) -> float:
    return tol if tol > 0 else 100 * krylov.precision(dtype)


def _solve_rtol(dtype: np.dtype[Any]) -> float:
    return 1e-5 if np.finfo(dtype).bits <= 32 else 1e-11


def eigsh(
    A: Any,  # noqa: N803  (SciPy's name)
    k: int = 1,
    *,
    which: str = "SA",
    v0: Any = None,
    ncv: int | None = None,
    maxiter: int | None = None,
    tol: float = 0.0,
    return_eigenvectors: bool = True,
    eps: float | None = DEFAULT_EPS,
) -> Any:
    """``k`` eigenpairs of a Hermitian operator by Lanczos (thick-restarted, fully
    reorthogonalised): ``(w, v)``, ``w`` real and ascending, ``v[..., i]`` the unit
    eigenvector of ``w[i]`` (``scipy.sparse.linalg.eigsh``, with the defaults of a
    ground-state search: ``k=1``, ``which="SA"``).

    ``A`` is a matrix (its Hermitian part is used: the gradient is Hermitian, as
    ``eigh``'s) or a function ``v -> A v`` on tensors of ``v0``'s shape (an MPS site
    tensor, say), which may read tensors from its scope -- couplings or environments
    being differentiated included. ``which``: ``"SA"``/``"LA"`` smallest/largest
    algebraic, ``"SM"``/``"LM"`` smallest/largest magnitude. ``v0`` starts the iteration
    (required for a function; by default a fixed pseudo-random vector); ``ncv`` is the
    Krylov dimension, ``maxiter`` the number of restarts, ``tol`` the residual
    ``||A v - w v||`` relative to the spectrum's scale (0: 100 machine epsilons). A
    search that does not converge raises :class:`~tenferro.ConvergenceError`.

    Derivatives (every mode and order): eigenvalues by Hellmann-Feynman, eigenvectors
    by a projected linear solve with the operator's own JVP/VJP (see
    :mod:`tenferro.solvers.eigen`), equal to those of ``tf.linalg.eigh`` on the same
    operator, with its relative tie tolerance ``eps`` (default 64 machine epsilons) and
    its warning where a loss weights tied eigenvalues differently. The phase of each
    eigenvector is whatever the iteration gives; derivatives of phase-invariant
    quantities (eigenvalues, projectors ``v v^H``, ``|v|^2``, expectation values) are
    well defined.
    """
    op = "linalg.eigsh"
    vectors = check_flag(op, "return_eigenvectors", return_eigenvectors)
    if which not in krylov.EIGSH_WHICH:
        raise ParameterError(op, f"which must be one of {krylov.EIGSH_WHICH}, got {which!r}")
    operator, operands, start = _operator(op, A, v0, hermitian=True)
    vector = operator.inputs[0]
    n = vector.size
    k_value = _check_k(op, k, n)
    columns = min(k_value + 1, n)
    ncv_value, maxiter_value, tol_value = _settings(op, columns, n, ncv, maxiter, tol)
    eps_value = _tie_tolerance(op, eps, vector.dtype)
    w, v, _ = Eigsh.apply(
        *operands,
        start,
        operator=operator,
        k=k_value,
        which=which,
        tol=_default_tol(vector.dtype, tol_value),
        ncv=ncv_value,
        maxiter=maxiter_value,
        eps=eps_value,
        solve_rtol=_solve_rtol(vector.dtype),
        caller=op,
    )
    return EigenpairsResult(w, v) if vectors else w


# ---------------------------------------------------------------------- eigs


@family("solvers.eigs_gap_check")
class GapCheck(_SpectrumCheck):
    """On ``eigs``' derivatives, in both directions: warns when a wanted eigenvalue is
    within rounding of another computed one or of the next Ritz value, where the
    derivative of the eigenpair does not exist (its bordered system is singular)."""

    def check(self, values: Any, following: Any, x: Any) -> None:
        if not np.any(x):
            return
        others = list(values) + ([] if np.isnan(following) else [complex(following)])
        bound = _bound(np.asarray(others), self.eps)
        for i, value in enumerate(values):
            for j, other in enumerate(others):
                if i != j and abs(value - other) <= bound:
                    what = "the next eigenvalue" if j == len(values) else f"eigenvalue {j}"
                    report(
                        self.caller,
                        f"eigenvalue {i} ({complex(value):.6g}) is degenerate with {what} "
                        f"({complex(other):.6g}, within eps={self.eps:.3g} of the largest); a "
                        f"degenerate eigenpair has no derivative, so the one returned is not "
                        f"a derivative",
                    )
                    return


@family("solvers.eigs")
class Eigs(_EigenSearch):
    """Eigenpairs of a general operator (complex vectors): operands are the operator's
    parameters, then the starting vector. Outputs: ``k`` eigenvalues (most wanted
    first), unit eigenvectors ``[*shape, k]`` and the next Ritz value (NaN when the
    space has no more), which the derivative's degeneracy check reads."""

    def infer(self) -> list[Meta]:
        vector = self.operator.inputs[0]
        return [
            Meta((self.k,), vector.dtype),
            vector._replace(shape=(*vector.shape, self.k), weak=False),
            Meta((), vector.dtype),
        ]

    def impl(self, *arrays: Any) -> Any:
        vector = self.operator.inputs[0]
        found = self.search(arrays, self.k, hermitian=False)
        vectors = found.vectors.reshape(*vector.shape, self.k).astype(vector.dtype, copy=False)
        following = np.asarray(found.following, vector.dtype)
        return found.values.astype(vector.dtype, copy=False), vectors, following

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        params = len(self.operator.inputs) - 1
        dparams = ts[:params]
        if all(t is None for t in dparams):
            return [None] * 3
        w, v, following = ys
        assert w is not None
        assert v is not None
        assert following is not None
        change = _operator_change(self.caller, self.operator, self.k, v, xs[:params], dparams)
        check = {"caller": self.caller, "eps": self.eps, "reverse": False}
        rhs = GapCheck.bind(w, following, lax.neg(change), **check)
        dv, dw = LinearSolve.bind(
            v,
            w,
            *xs[:params],
            rhs,
            lax.zeros_like(w),
            operator=_bordered(self.operator, self.k),
            count=2,
            method="gmres",
            hermitian=False,
            transposed=False,
            rtol=self.solve_rtol,
            atol=0.0,
            restart=50,
            maxiter=default_maxiter("gmres", v.meta.size + self.k, 50),
            has_x0=False,
            caller=f"{self.caller} (eigenpair derivative: singular where an eigenvalue is "
            f"degenerate)",
        )
        return [
            GapCheck.bind(w, following, dw, **check),
            GapCheck.bind(w, following, dv, **check),
            None,
        ]


def eigs(
    A: Any,  # noqa: N803  (SciPy's name)
    k: int = 1,
    *,
    which: str = "LM",
    v0: Any = None,
    ncv: int | None = None,
    maxiter: int | None = None,
    tol: float = 0.0,
    return_eigenvectors: bool = True,
    eps: float | None = DEFAULT_EPS,
) -> Any:
    """``k`` eigenpairs of a general operator by Arnoldi (Krylov-Schur restarts):
    ``(w, v)``, complex, most wanted first, ``v[..., i]`` the unit right eigenvector of
    ``w[i]`` (``scipy.sparse.linalg.eigs``; by default the dominant eigenpair, as a
    transfer matrix needs).

    ``A`` is a square matrix or a function ``v -> A v`` on tensors of ``v0``'s shape
    (real operators are applied to the real and imaginary parts of complex vectors),
    which may read tensors from its scope. ``which``: ``"LM"``/``"SM"``
    largest/smallest magnitude, ``"LR"``/``"SR"`` real part, ``"LI"``/``"SI"``
    imaginary part. ``v0``, ``ncv``, ``maxiter``, ``tol`` as in :func:`eigsh`.

    Derivatives (every mode and order) solve one bordered system per eigenpair with
    the operator's JVP/VJP (see :mod:`tenferro.solvers.eigen`); the gauge is
    ``v^H dv = 0``, so derivatives of phase-invariant quantities (eigenvalues,
    ``|v|^2``, normalised expectation values) are those of ``tf.linalg.eig``. A
    degenerate wanted eigenvalue warns (:class:`~tenferro.DegenerateDerivativeWarning`).
    """
    op = "linalg.eigs"
    vectors = check_flag(op, "return_eigenvectors", return_eigenvectors)
    if which not in krylov.EIGS_WHICH:
        raise ParameterError(op, f"which must be one of {krylov.EIGS_WHICH}, got {which!r}")
    operator, operands, start = _complex_operator(op, A, v0)
    vector = operator.inputs[0]
    n = vector.size
    k_value = _check_k(op, k, n)
    ncv_value, maxiter_value, tol_value = _settings(op, min(k_value + 1, n), n, ncv, maxiter, tol)
    w, v, _ = Eigs.apply(
        *operands,
        start,
        operator=operator,
        k=k_value,
        which=which,
        tol=_default_tol(vector.dtype, tol_value),
        ncv=ncv_value,
        maxiter=maxiter_value,
        eps=_tie_tolerance(op, eps, vector.dtype),
        solve_rtol=_solve_rtol(vector.dtype),
        caller=op,
    )
    return EigenpairsResult(w, v) if vectors else w


def _complex_operator(op: str, a: Any, v0: Any) -> tuple[ClosedFunction, list[Any], Any]:
    """The operator on complex vectors: a real operator is applied to real and
    imaginary parts."""
    operator, operands, start = _operator(op, a, v0, hermitian=False)
    vector = operator.inputs[0]
    if vector.dtype.kind == "c":
        return operator, operands, start
    complex_dtype = np.result_type(vector.dtype, np.complex64)
    count = len(operator.inputs) - 1

    def call(z: Any, params: list[Any]) -> Any:
        real_part = operator.apply([surface_real(z), *params])[0]
        imaginary_part = operator.apply([lax.imag(z), *params])[0]
        return lax.complex(real_part, imaginary_part)

    leaves, treedef = tensors_of(op, "v0", lax.convert_element_type(start, complex_dtype))
    complexified, inner = close_map(
        op, call, treedef, [leaves[0].meta], list(operands[:count]), "the operator A"
    )
    return complexified, inner, leaves[0]
