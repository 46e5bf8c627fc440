"""Fixed points and roots with implicit derivatives: ``tf.fixed_point`` and
``tf.custom_root`` (JAX's ``lax.custom_root``; jaxopt's implicit differentiation).

The forward pass iterates on numpy arrays with nothing recorded; the derivative comes
from the implicit function theorem at the solution. For a fixed point
``x* = f(x*, p)``::

    dx* = (I - J_x)^-1 J_p dp        (J_x, J_p: f's Jacobians at (x*, p))

and for a root ``f(x*, p) = 0``, ``dx* = -J_x^-1 J_p dp``. ``J_p dp`` is the JVP of the
user's function; the inverse is a matrix-free solve (``solvers.linear_solve``) whose
operator is the JVP of the function in ``x`` -- so reverse mode solves the adjoint
system ``(I - J_x)^H y = ct`` with the function's own VJP, and every order of
derivative is a sequence of such solves.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.families import family
from tenferro.core.kinds import asarray
from tenferro.core.params import as_int, as_real
from tenferro.core.pytree import describe, flatten, unflatten
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.errors import ArgumentTypeError, ParameterError, ShapeError
from tenferro.meta import Meta
from tenferro.solvers import krylov
from tenferro.solvers.closure import ClosedFunction, close, derived
from tenferro.solvers.family import SolverOp
from tenferro.solvers.linear import LinearSolve, default_maxiter
from tenferro.solvers.spaces import Space, close_map, leaves_of, promoted, tensors_of

__all__ = ["FixedPoint", "Root", "custom_root", "fixed_point"]

SOLVERS = ("iterate", "anderson")
IMPLICIT_SOLVERS = ("gmres", "bicgstab")


def linearized(function: ClosedFunction, count: int, identity_minus: bool) -> ClosedFunction:
    """The Jacobian of ``function`` (of ``count`` vector leaves and parameters) in the
    vector, as an operator ``(v, x, params) -> J_x v`` -- or ``v - J_x v`` with
    ``identity_minus`` (the operator of a fixed point's implicit derivative)."""
    return derived(
        (function, "linearized", count, identity_minus),
        lambda: _linearized(function, count, identity_minus),
    )


def _linearized(function: ClosedFunction, count: int, identity_minus: bool) -> ClosedFunction:
    params = len(function.inputs) - count
    jacobian = function.jvp((True,) * count + (False,) * params)
    vector = function.inputs[:count]

    def apply(*args: Any) -> list[Any]:
        v, point = args[:count], args[count:]
        jv = jacobian.apply([*point, *v])
        return [a - b for a, b in zip(v, jv, strict=True)] if identity_minus else jv

    closed, captured = close("implicit derivative", apply, [*vector, *function.inputs])
    assert not captured, "a Jacobian reads only its arguments"
    return closed


class _ImplicitSolve:
    """What the fixed-point and root families share: the solve of their implicit
    derivative (fields of both)."""

    function: ClosedFunction
    count: int
    implicit: str
    implicit_rtol: float
    implicit_maxiter: int
    caller: str

    def parameter_change(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue] | None:
        """``J_p dp`` at the solution (``None`` when no parameter has a tangent)."""
        count = self.count
        dparams = ts[count:]
        if all(t is None for t in dparams):
            return None  # the solution does not depend on the starting point
        active = tuple(t is not None for t in dparams)
        jacobian = self.function.jvp((False,) * count + active)
        solution = [y for y in ys if y is not None]
        tangents = [t for t in dparams if t is not None]
        return jacobian.emit(self.caller, [*solution, *xs[count:], *tangents])

    def implicit_solve(
        self, xs: Xs, ys: Ts, rhs: list[RuleValue], identity_minus: bool
    ) -> list[RuleValue | None]:
        count = self.count
        solution = [y for y in ys if y is not None]
        result = LinearSolve.bind(
            *solution,
            *xs[count : len(self.function.inputs)],
            *rhs,
            operator=linearized(self.function, count, identity_minus),
            count=count,
            method=self.implicit,
            hermitian=False,
            transposed=False,
            rtol=self.implicit_rtol,
            atol=0.0,
            restart=20,
            maxiter=self.implicit_maxiter,
            has_x0=False,
            caller=f"{self.caller} (implicit derivative)",
        )
        return list(result) if count > 1 else [result]


@family("solvers.fixed_point")
class FixedPoint(_ImplicitSolve, SolverOp):
    """``x* = f(x*, params)``: operands are the starting point's leaves, then the
    parameters (explicit ones and what ``f`` captured); ``function`` is ``f`` closed."""

    function: ClosedFunction
    count: int
    solver: str
    tol: float
    atol: float
    maxiter: int
    memory: int
    mixing: float
    implicit: str
    implicit_rtol: float
    implicit_maxiter: int
    caller: str

    def infer(self) -> list[Meta]:
        return list(self.function.output_metas)

    def impl(self, *arrays: Any) -> Any:
        count = self.count
        space = Space(self.function.inputs[:count])
        params = list(arrays[count:])
        function = self.function

        def step(flat: Any) -> Any:
            return space.join(function.run([*space.split(flat), *params]))

        x0 = space.join(arrays[:count])
        if self.solver == "anderson":
            x, _ = krylov.anderson(
                self.caller, step, x0, self.tol, self.atol, self.maxiter, self.memory, self.mixing
            )
        else:
            x, _ = krylov.fixed_point_iteration(
                self.caller, step, x0, self.tol, self.atol, self.maxiter
            )
        parts = space.split(x)
        return tuple(parts) if count > 1 else parts[0]

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        rhs = self.parameter_change(xs, ys, ts)
        if rhs is None:
            return [None] * self.count
        return self.implicit_solve(xs, ys, rhs, identity_minus=True)


@family("solvers.custom_root")
class Root(_ImplicitSolve, SolverOp):
    """``f(x*, params) = 0`` found by the user's ``solve(f, x0)``: operands are the
    initial guess's leaves, what ``f`` captured, then (``extra`` of them) what the
    user's tangent solve captured. ``tangent_solver`` -- ``tangent_solve(g, y)`` closed
    over ``(y, x*, params, extra)`` -- or, when ``None``, GMRES solves the linearised
    system of the derivative."""

    function: ClosedFunction
    count: int
    solve: Any
    tangent_solver: ClosedFunction | None
    extra: int
    treedef: Hashable
    implicit: str
    implicit_rtol: float
    implicit_maxiter: int
    caller: str

    def infer(self) -> list[Meta]:
        return [m._replace(weak=False) for m in self.function.inputs[: self.count]]

    def impl(self, *arrays: Any) -> Any:
        count = self.count
        params = list(arrays[count : len(arrays) - self.extra])
        function, treedef = self.function, self.treedef
        metas = self.function.inputs[:count]

        def residual(x: Any) -> Any:
            leaves = _concrete_leaves(self.caller, "the argument of f", x, treedef, metas)
            values = function.run([*leaves, *params])
            return unflatten(treedef, [Tensor._wrap(np.asarray(v)) for v in values])

        guess = unflatten(treedef, [Tensor._wrap(np.array(a)) for a in arrays[:count]])
        found = self.solve(residual, guess)
        result = _concrete_leaves(self.caller, "solve's result", found, treedef, metas)
        return tuple(result) if count > 1 else result[0]

    def jvp(self, xs: Xs, ys: Ts, ts: Ts) -> list[RuleValue | None]:
        end = len(xs) - self.extra
        change = self.parameter_change(xs[:end], ys, ts[:end])
        if change is None:
            return [None] * self.count
        rhs = [lax.neg(c) for c in change]
        if self.tangent_solver is None:
            return self.implicit_solve(xs, ys, rhs, identity_minus=False)
        solution = [y for y in ys if y is not None]
        return list(self.tangent_solver.emit(self.caller, [*rhs, *solution, *xs[self.count :]]))


def _concrete_leaves(
    op: str, what: str, value: Any, treedef: Hashable, metas: tuple[Meta, ...]
) -> list[Any]:
    """The leaves of a concrete pytree as arrays of ``metas`` (checked)."""
    leaves, tree = flatten(value)
    if tree != treedef:
        raise ShapeError(op, f"{what} has structure {describe(tree)}, expected {describe(treedef)}")
    arrays = []
    for position, (leaf, meta) in enumerate(zip(leaves, metas, strict=True)):
        array = np.asarray(getattr(leaf, "_value", leaf))
        if array.shape != meta.shape:
            raise ShapeError(
                op, f"{what}: leaf {position} has shape {array.shape}, not {meta.shape}"
            )
        arrays.append(array.astype(meta.dtype, copy=False))
    return arrays


def _tangent_solver(
    function: ClosedFunction, count: int, tangent_solve: Any, treedef: Hashable
) -> tuple[ClosedFunction, list[Any]]:
    """``tangent_solve(g, y)`` traced, ``g`` the linearised residual at the root: a
    closed function of ``(y, x*, params, captured)`` and the values it captured (the
    identity basis of a ``jacfwd``, say)."""
    operator = linearized(function, count, identity_minus=False)
    vector = function.inputs[:count]

    def apply(*args: Any) -> list[Any]:
        y, point = args[:count], args[count : count + len(function.inputs)]

        def g(v: Any) -> Any:
            leaves, tree = flatten(v)
            if tree != treedef or len(leaves) != count:
                raise ShapeError(
                    "custom_root",
                    f"tangent_solve applied g to structure {describe(tree)}, expected "
                    f"{describe(treedef)}",
                )
            tensors = [
                lax.convert_element_type(asarray(leaf), m.dtype)
                for leaf, m in zip(leaves, vector, strict=True)
            ]
            return unflatten(treedef, operator.apply([*tensors, *point]))

        result = tangent_solve(g, unflatten(treedef, list(y)))
        leaves, tree = flatten(result)
        if tree != treedef:
            raise ShapeError(
                "custom_root",
                f"tangent_solve returned structure {describe(tree)}, expected {describe(treedef)}",
            )
        return leaves

    return close("custom_root", apply, [*vector, *function.inputs])


# ---------------------------------------------------------------------- public functions


def _default_tol(dtype: np.dtype[Any]) -> float:
    return 1e-5 if np.finfo(dtype).bits <= 32 else 1e-10


def _tolerance(op: str, what: str, value: Any, default: float | None) -> float:
    """A tolerance ``>= 0``; ``None`` means ``default`` where there is one."""
    if value is None and default is not None:
        return default
    number = float(as_real(op, what, value))
    if not number >= 0:
        raise ParameterError(op, f"{what} must be >= 0, got {value!r}")
    return number


def _choice(op: str, what: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ParameterError(op, f"{what} must be one of {choices}, got {value!r}")
    return str(value)


def fixed_point(
    f: Callable[..., Any],
    x0: Any,
    *params: Any,
    solver: str = "iterate",
    tol: float | None = None,
    atol: float = 0.0,
    maxiter: int = 1000,
    memory: int = 5,
    mixing: float = 1.0,
    implicit_solver: str = "gmres",
    implicit_tol: float | None = None,
) -> Any:
    """The fixed point ``x* = f(x*, *params)`` reached from ``x0``, with derivatives by
    the implicit function theorem.

    ``x0`` is a tensor or a pytree of tensors of one dtype; ``f(x, *params)`` returns
    one of the same structure, shapes and dtype. ``f`` may also read tensors from its
    scope (parameters being differentiated included). ``solver="iterate"`` repeats
    ``x <- f(x)``; ``"anderson"`` accelerates it with the last ``memory`` steps
    (``mixing`` is the step's weight). The iteration stops when
    ``||f(x) - x|| <= max(tol ||f(x)||, atol)`` (``tol`` defaults to 1e-10, or 1e-5 in
    single precision) and raises :class:`~tenferro.ConvergenceError` after ``maxiter``
    steps.

    Derivatives with respect to ``params`` and the captured tensors solve
    ``(I - J_x) dx = J_p dp`` matrix-free with ``implicit_solver`` (``"gmres"`` or
    ``"bicgstab"``, relative tolerance ``implicit_tol``, default ``tol``), using only the
    JVP/VJP of ``f`` at the fixed point: memory does not grow with the number of
    iterations, in every mode and at every order. The fixed point must be attractive
    (or at least ``I - J_x`` nonsingular); the result does not depend on ``x0``, which
    gets no derivative.
    """
    op = "fixed_point"
    if not callable(f):
        raise ArgumentTypeError(op, f"f must be callable, got {f!r}")
    solver = _choice(op, "solver", solver, SOLVERS)
    implicit_solver = _choice(op, "implicit_solver", implicit_solver, IMPLICIT_SOLVERS)
    leaves, treedef = tensors_of(op, "x0", x0)
    param_leaves, param_tree = leaves_of(params)
    metas = [t.meta for t in leaves]
    dtype = metas[0].dtype
    tol_value = _tolerance(op, "tol", tol, _default_tol(dtype))
    implicit_rtol = _tolerance(op, "implicit_tol", implicit_tol, tol_value)

    def call(x: Any, leaves_of_params: list[Any]) -> Any:
        return f(x, *unflatten(param_tree, leaves_of_params))

    function, operands = close_map(op, call, treedef, metas, param_leaves, "f", promote=True)
    leaves = promoted(leaves, function)
    size = sum(m.size for m in metas)
    result = FixedPoint.apply(
        *leaves,
        *operands,
        function=function,
        count=len(leaves),
        solver=solver,
        tol=tol_value,
        atol=_tolerance(op, "atol", atol, None),
        maxiter=_positive(op, "maxiter", maxiter),
        memory=_positive(op, "memory", memory),
        mixing=float(as_real(op, "mixing", mixing)),
        implicit=implicit_solver,
        implicit_rtol=implicit_rtol,
        implicit_maxiter=default_maxiter(implicit_solver, size, 20),
        caller=op,
    )
    return unflatten(treedef, list(result) if len(leaves) > 1 else [result])


def _positive(op: str, what: str, value: Any) -> int:
    number = as_int(op, what, value)
    if number < 1:
        raise ParameterError(op, f"{what} must be >= 1, got {value!r}")
    return number


def custom_root(
    f: Callable[[Any], Any],
    initial_guess: Any,
    solve: Callable[[Callable[[Any], Any], Any], Any],
    tangent_solve: Callable[[Callable[[Any], Any], Any], Any] | None = None,
    *,
    implicit_tol: float | None = None,
) -> Any:
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly
    (``jax.lax.custom_root``).

    ``f(x)`` returns a pytree of ``x``'s structure, shapes and dtype and may read
    tensors from its scope: derivatives flow to those, ``dx* = -J_x^-1 J_p dp`` at the
    root. ``solve`` runs on concrete tensors (``f`` given to it evaluates without
    recording anything) and may be any algorithm, tenferro's or not; it is never
    differentiated. ``tangent_solve(g, y)`` solves the linear system ``g(x) = y`` for the
    linearised ``g`` (as in JAX, e.g. ``lambda g, y: y / g(1.0)`` for a scalar, or a
    dense solve of ``tf.jacfwd(g)``); it is traced once, must be linear in ``y`` and
    built of differentiable operations (tensors it reads from its scope are inputs of
    the derivative like any others). Without it the
    system is solved matrix-free by GMRES (relative tolerance ``implicit_tol``, default
    1e-10, or 1e-5 in single precision).
    """
    op = "custom_root"
    for name, value in (("f", f), ("solve", solve)):
        if not callable(value):
            raise ArgumentTypeError(op, f"{name} must be callable, got {value!r}")
    if tangent_solve is not None and not callable(tangent_solve):
        raise ArgumentTypeError(op, f"tangent_solve must be callable, got {tangent_solve!r}")
    leaves, treedef = tensors_of(op, "initial_guess", initial_guess)
    metas = [t.meta for t in leaves]
    function, operands = close_map(
        op, lambda x, _params: f(x), treedef, metas, [], "f", promote=True
    )
    leaves = promoted(leaves, function)
    metas = [t.meta for t in leaves]
    size = sum(m.size for m in metas)
    solver: ClosedFunction | None = None
    extra: list[Any] = []
    if tangent_solve is not None:
        solver, extra = _tangent_solver(function, len(leaves), tangent_solve, treedef)
    result = Root.apply(
        *leaves,
        *operands,
        *extra,
        function=function,
        count=len(leaves),
        solve=solve,
        tangent_solver=solver,
        extra=len(extra),
        treedef=treedef,
        implicit="gmres",
        implicit_rtol=_tolerance(op, "implicit_tol", implicit_tol, _default_tol(metas[0].dtype)),
        implicit_maxiter=default_maxiter("gmres", size, 20),
        caller=op,
    )
    return unflatten(treedef, list(result) if len(leaves) > 1 else [result])
