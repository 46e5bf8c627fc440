"""Matrix-free linear solves with implicit derivatives: ``cg``, ``gmres``, ``bicgstab``
(``tf.linalg``; SciPy's and JAX's names and conventions).

One family, ``solvers.linear_solve``, holds every such solve, the public ones and those
the other solvers' derivatives emit: ``x = A(params)^-1 b`` for an operator ``A`` given
as a :class:`~tenferro.solvers.closure.ClosedFunction` of the vector and its parameters.
Its derivatives are those of ``jax.lax.custom_linear_solve``:

* JVP: ``dx = A^-1 (db - dA x)``, ``dA x`` the operator's own JVP in its parameters at
  ``x`` -- another solve with the same operator;
* transpose (it is linear in ``b``): ``ct_b = A^-H ct_x``, a solve with the adjoint
  operator, which is the operator's VJP in the vector (so a Hermitian operator, as
  ``cg`` requires, solves its own adjoint system).

Both are solves of the same family, so every order of derivative, in every mode, is a
sequence of solves; nothing is recorded inside the iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from tenferro import lax
from tenferro.core.families import family
from tenferro.core.params import as_int, as_real
from tenferro.core.pytree import unflatten
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.errors import ParameterError, ShapeError
from tenferro.meta import Meta
from tenferro.solvers import krylov
from tenferro.solvers.closure import ClosedFunction, close, derived
from tenferro.solvers.family import SolverOp
from tenferro.solvers.spaces import Space, close_map, promoted, tensors_of

__all__ = [
    "LinearSolve",
    "adjoint_of",
    "bicgstab",
    "cg",
    "default_maxiter",
    "gmres",
    "solve_operator",
]

METHODS = ("cg", "gmres", "bicgstab")


@family("solvers.linear_solve")
class LinearSolve(SolverOp):
    """``x = A^-1 b``: operands are the operator's parameters, the right-hand side's
    leaves and (``has_x0``) an initial guess's leaves. ``operator`` maps the vector's
    leaves and the parameters to the vector's leaves; ``transposed`` solves with its
    adjoint instead (ignored when ``hermitian``)."""

    operator: ClosedFunction
    count: int
    method: str
    hermitian: bool
    transposed: bool
    rtol: float
    atol: float
    restart: int
    maxiter: int
    has_x0: bool
    caller: str

    def infer(self) -> list[Meta]:
        count = self.count
        params = len(self.operator.inputs) - count
        expected = len(self.operator.inputs) + (count if self.has_x0 else 0)
        if len(self.inputs) != expected:
            raise ShapeError(self.caller, f"{len(self.inputs)} operands, expected {expected}")
        vector = self.operator.inputs[:count]
        given = self.inputs[params : params + count]
        for position, (got, meta) in enumerate(zip(given, vector, strict=True)):
            if got.shape != meta.shape or got.dtype != meta.dtype:
                raise ShapeError(
                    self.caller,
                    f"right-hand side leaf {position} is {got.describe()}, the operator acts "
                    f"on {meta.describe()}",
                )
        return [m._replace(weak=False) for m in vector]

    def applied(self) -> ClosedFunction:
        """The operator this solve inverts (the adjoint when transposed)."""
        if self.transposed and not self.hermitian:
            return adjoint_of(self.operator, self.count)
        return self.operator

    def impl(self, *arrays: Any) -> Any:
        count = self.count
        params = list(arrays[: len(self.operator.inputs) - count])
        start = len(params)
        space = Space(self.operator.inputs[:count])
        b = space.join(arrays[start : start + count])
        x0 = space.join(arrays[start + count :]) if self.has_x0 else space.zeros()
        operator = self.applied()

        def matvec(flat: Any) -> Any:
            return space.join(operator.run([*space.split(flat), *params]))

        x = solve_flat(self.caller, self.method, matvec, b, x0, self)
        parts = space.split(x)
        return tuple(parts) if count > 1 else parts[0]

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        count = self.count
        params = len(self.operator.inputs) - count
        rhs: list[RuleValue | None] = list(ts[params : params + count])
        dparams = ts[:params]
        if any(t is not None for t in dparams):
            active = tuple(t is not None for t in dparams)
            jacobian = self.applied().jvp((False,) * count + active)
            solution = [y for y in ys if y is not None]
            tangents = [t for t in dparams if t is not None]
            changes = jacobian.emit(self.caller, [*solution, *xs[:params], *tangents])
            rhs = [lax.sub_tangents(r, d) for r, d in zip(rhs, changes, strict=True)]
        if all(r is None for r in rhs):
            return [None] * count
        filled = [
            lax.zeros_like(cast(RuleValue, y)) if r is None else r
            for r, y in zip(rhs, ys, strict=True)
        ]
        return _as_list(self.derived_solve(xs[:params], filled, self.transposed), count)

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        count = self.count
        params = len(self.operator.inputs) - count
        results: list[RuleValue | None] = [None] * len(xs)
        if all(c is None for c in cts):
            return results
        like = next(c for c in cts if c is not None)
        filled = [
            lax.zeros(m._replace(weak=False), like) if c is None else c
            for c, m in zip(cts, self.outputs, strict=True)
        ]
        solved = _as_list(self.derived_solve(xs[:params], filled, not self.transposed), count)
        for position in range(count):
            if active[params + position]:
                results[params + position] = solved[position]
        return results

    def derived_solve(self, params: Sequence[Any], rhs: Sequence[Any], transposed: bool) -> Any:
        """Another solve with this operator (or its adjoint) and these settings."""
        return LinearSolve.bind(
            *params,
            *rhs,
            operator=self.operator,
            count=self.count,
            method=self.method,
            hermitian=self.hermitian,
            transposed=transposed and not self.hermitian,
            rtol=self.rtol,
            atol=self.atol,
            restart=self.restart,
            maxiter=self.maxiter,
            has_x0=False,
            caller=self.caller,
        )


def _as_list(value: Any, count: int) -> list[Any]:
    return list(value) if count > 1 else [value]


def solve_flat(op: str, method: str, matvec: Any, b: Any, x0: Any, settings: Any) -> Any:
    """The kernel of ``method`` on flat vectors with ``settings``' tolerances."""
    if method == "cg":
        x, _ = krylov.cg(op, matvec, b, x0, settings.rtol, settings.atol, settings.maxiter)
    elif method == "gmres":
        x, _ = krylov.gmres(
            op, matvec, b, x0, settings.rtol, settings.atol, settings.restart, settings.maxiter
        )
    else:
        x, _ = krylov.bicgstab(op, matvec, b, x0, settings.rtol, settings.atol, settings.maxiter)
    return x


def default_maxiter(method: str, size: int, restart: int) -> int:
    """SciPy's default: ten times the size in iterations (for GMRES, enough restart
    cycles of ``restart`` for that many)."""
    if method == "gmres":
        return max(1, -(-10 * size // min(restart, max(size, 1))))
    return max(10 * size, 10)


def adjoint_of(operator: ClosedFunction, count: int) -> ClosedFunction:
    """The adjoint of a linear operator (of the vector's ``count`` leaves and
    parameters): its VJP in the vector, as an operator of the same signature."""
    return derived((operator, "adjoint", count), lambda: _adjoint(operator, count))


def _adjoint(operator: ClosedFunction, count: int) -> ClosedFunction:
    pullback = operator.vjp(tuple(range(count)))
    vector = operator.inputs[:count]

    def apply(*args: Any) -> list[Any]:
        u, params = args[:count], args[count:]
        zeros = [lax.zeros(m, u[0]) for m in vector]  # the operator is linear: any point
        return pullback.apply([*zeros, *params, *u])

    closed, captured = close("adjoint", apply, [*operator.output_metas, *operator.inputs[count:]])
    assert not captured, "an adjoint reads only its arguments"
    return closed


# ---------------------------------------------------------------------- public functions


def _rtol(op: str, rtol: Any, tol: Any) -> float:
    if tol is not None:
        if rtol is not None:
            raise ParameterError(op, "give rtol or its alias tol, not both")
        rtol = tol
    value = float(as_real(op, "rtol", 1e-5 if rtol is None else rtol))
    if not value >= 0:
        raise ParameterError(op, f"rtol must be >= 0, got {rtol!r}")
    return value


def _non_negative(op: str, what: str, value: Any) -> float:
    number = float(as_real(op, what, value))
    if not number >= 0:
        raise ParameterError(op, f"{what} must be >= 0, got {value!r}")
    return number


def _positive_int(op: str, what: str, value: Any) -> int:
    number = as_int(op, what, value)
    if number < 1:
        raise ParameterError(op, f"{what} must be >= 1, got {value!r}")
    return number


def solve_operator(op: str, a: Any, b: Any) -> tuple[ClosedFunction, list[Any], list[Any], Any]:
    """The operator of ``a`` (a square matrix, or a function ``v -> A v`` on ``b``'s
    pytree), its operands and ``b``'s leaves (promoted to a common inexact dtype with a
    matrix ``a``), and ``b``'s structure."""
    if callable(a):
        leaves, treedef = tensors_of(op, "b", b)
        metas = [t.meta for t in leaves]
        operator, operands = close_map(
            op, lambda v, params: a(v), treedef, metas, [], "the operator A", promote=True
        )
        return operator, operands, promoted(leaves, operator), treedef
    (matrix,), _ = tensors_of(op, "A", a)
    leaves, treedef = tensors_of(op, "b", b, matrix.meta.dtype)
    matrix = lax.convert_element_type(matrix, leaves[0].meta.dtype)
    shape = matrix.meta.shape
    if len(leaves) != 1 or len(shape) != 2 or shape[0] != shape[1]:
        raise ShapeError(
            op,
            f"A must be a square matrix (or a function v -> A v) and b one tensor, got A of "
            f"shape {shape} and b {[t.meta.shape for t in leaves]}",
        )
    if leaves[0].meta.ndim not in (1, 2) or leaves[0].meta.shape[0] != shape[1]:
        raise ShapeError(op, f"b of shape {leaves[0].meta.shape} does not fit A of shape {shape}")
    operator, operands = close_map(
        op,
        lambda v, params: params[0] @ v,
        treedef,
        [leaves[0].meta],
        [matrix],
        "A @ v",
    )
    return operator, operands, leaves, treedef


def _linear_solve(
    op: str,
    method: str,
    a: Any,
    b: Any,
    x0: Any,
    rtol: Any,
    tol: Any,
    atol: Any,
    maxiter: Any,
    restart: Any,
) -> tuple[Any, int]:
    rtol_value = _rtol(op, rtol, tol)
    atol_value = _non_negative(op, "atol", atol)
    restart_value = _positive_int(op, "restart", restart)
    operator, operands, leaves, treedef = solve_operator(op, a, b)
    size = sum(t.meta.size for t in leaves)
    if maxiter is None:
        maxiter_value = default_maxiter(method, size, restart_value)
    else:
        maxiter_value = _positive_int(op, "maxiter", maxiter)
    guess: list[Any] = []
    if x0 is not None:
        guess, guess_tree = tensors_of(op, "x0", x0, leaves[0].meta.dtype)
        shapes = [t.meta.shape for t in guess]
        if guess_tree != treedef or shapes != [t.meta.shape for t in leaves]:
            raise ShapeError(op, f"x0 has shapes {shapes}, b has {[t.meta.shape for t in leaves]}")
        guess = [lax.convert_element_type(t, leaves[0].meta.dtype) for t in guess]
    result = LinearSolve.apply(
        *operands,
        *leaves,
        *guess,
        operator=operator,
        count=len(leaves),
        method=method,
        hermitian=method == "cg",
        transposed=False,
        rtol=rtol_value,
        atol=atol_value,
        restart=restart_value,
        maxiter=maxiter_value,
        has_x0=bool(guess),
        caller=op,
    )
    return unflatten(treedef, _as_list(result, len(leaves))), 0


def cg(
    A: Any,  # noqa: N803  (SciPy's name)
    b: Any,
    x0: Any = None,
    *,
    rtol: float | None = None,
    atol: float = 0.0,
    maxiter: int | None = None,
    tol: float | None = None,
) -> tuple[Any, int]:
    """Solve ``A x = b`` for Hermitian positive definite ``A`` by conjugate gradients
    (``scipy.sparse.linalg.cg``, ``jax.scipy.sparse.linalg.cg``).

    ``A`` is a square matrix or a function ``v -> A v`` (matrix-free), which may read
    tensors from its scope -- parameters being differentiated included; ``b`` (and
    ``x0``) a tensor or, with a function ``A``, a pytree of tensors of one dtype. Stops
    when ``||b - A x|| <= max(rtol ||b||, atol)`` (``tol`` is JAX's name for ``rtol``;
    default 1e-5); ``maxiter`` defaults to ten times the size of ``b``. Returns
    ``(x, 0)`` (SciPy's ``info``; a solve that does not converge raises
    :class:`~tenferro.ConvergenceError` instead).

    Derivatives with respect to ``b`` and to everything ``A`` reads come from one more
    solve with ``A`` (the adjoint system in reverse mode), at any order and in every
    mode, with memory independent of the number of iterations. ``x0`` only starts the
    iteration: the solution does not depend on it.
    """
    return _linear_solve("linalg.cg", "cg", A, b, x0, rtol, tol, atol, maxiter, 20)


def gmres(
    A: Any,  # noqa: N803  (SciPy's name)
    b: Any,
    x0: Any = None,
    *,
    rtol: float | None = None,
    atol: float = 0.0,
    restart: int = 20,
    maxiter: int | None = None,
    tol: float | None = None,
) -> tuple[Any, int]:
    """Solve ``A x = b`` for a general nonsingular ``A`` by restarted GMRES
    (``scipy.sparse.linalg.gmres``, ``jax.scipy.sparse.linalg.gmres``).

    Arguments, stopping rule, result and derivatives as :func:`cg`; ``restart`` is the
    Krylov dimension of a cycle and ``maxiter`` counts cycles (by default enough for
    ten times the size of ``b`` iterations). Reverse mode solves the adjoint system
    ``A^H y = ct`` with the operator's own VJP.
    """
    return _linear_solve("linalg.gmres", "gmres", A, b, x0, rtol, tol, atol, maxiter, restart)


def bicgstab(
    A: Any,  # noqa: N803  (SciPy's name)
    b: Any,
    x0: Any = None,
    *,
    rtol: float | None = None,
    atol: float = 0.0,
    maxiter: int | None = None,
    tol: float | None = None,
) -> tuple[Any, int]:
    """Solve ``A x = b`` for a general nonsingular ``A`` by BiCGSTAB
    (``scipy.sparse.linalg.bicgstab``, ``jax.scipy.sparse.linalg.bicgstab``); arguments,
    result and derivatives as :func:`gmres`, ``maxiter`` counting iterations."""
    return _linear_solve("linalg.bicgstab", "bicgstab", A, b, x0, rtol, tol, atol, maxiter, 20)
