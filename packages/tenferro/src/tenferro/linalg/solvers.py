"""Linear solves and determinants: ``solve``, ``solve_triangular``, ``inv``, ``det``,
``slogdet``.

Families (each one class: shape rule, LAPACK kernel, JVP):

* ``linalg.solve_triangular`` (A, B) -> X with op(A) X = B (``left``) or X op(A) = B;
  linear in B (it has a transpose rule), so the other families' JVPs use it for their
  triangular sub-steps and reverse mode transposes them;
* ``linalg.solve`` (A, B) -> X with A X = B, linear in B likewise;
* ``linalg.inv``, ``linalg.det``, ``linalg.slogdet``.

JVPs: dX = solve(A, dB - dA X); d inv = -Y dA Y; d det = tr(adj(A) dA);
d logabsdet = Re tr(A^-1 dA), d sign = sign * i Im tr(A^-1 dA) (zero for real input,
torch's convention).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, overload

import numpy as np

from computegraph import DictCache
from tenferro import lax
from tenferro.algebra import adjoint, matmul, trace
from tenferro.concrete import Tensor
from tenferro.core.bind import bind, bind1
from tenferro.core.families import family
from tenferro.core.flags import check_flag
from tenferro.core.rules import RuleValue
from tenferro.errors import LinAlgError, ShapeError
from tenferro.linalg import lapack, lowered
from tenferro.linalg._common import (
    broadcast_batch,
    inexact_operands,
    raise_per_matrix,
    require_inexact,
    same_batch,
    scipy_linalg,
)
from tenferro.linalg.adjugate import adjugate
from tenferro.linalg.checks import check_finite, check_matrix, check_square, failing_batch
from tenferro.linalg.family import LinalgOp, SquareMatrixOp, matrix_operand
from tenferro.meta import Meta
from tenferro.surface.signatures import binary_preserving, preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["SlogdetResult", "det", "inv", "slogdet", "solve", "solve_triangular"]


class SlogdetResult(NamedTuple, Generic[TensorLikeT]):
    """``slogdet``'s result: ``det = sign * exp(logabsdet)``."""

    sign: TensorLikeT
    logabsdet: TensorLikeT


# ---------------------------------------------------------------------- triangular solve


@family("linalg.solve_triangular")
class TriangularSolve(LinalgOp):
    """op(A) X = B (``left``) or X op(A) = B, A upper or lower triangular (only that
    triangle is read; ``unitriangular``: its diagonal is taken as ones). ``caller`` names
    the public operation in errors."""

    single_output = True

    extent_generic = True  # its rules read ranks and flags only
    upper: bool
    left: bool
    unitriangular: bool
    caller: str

    def infer(self) -> list[Meta]:
        a, b = self.inputs
        check_square(self.caller, a)
        check_matrix(self.caller, b)
        require_inexact(self.caller, a)
        same_batch(self.caller, a, b)
        n = a.shape[-1]
        extent = b.shape[-2] if self.left else b.shape[-1]
        if extent != n:
            side = "rows" if self.left else "columns"
            raise ShapeError(
                self.caller, f"B of shape {b.shape} needs {n} {side} for A of shape {a.shape}"
            )
        return [b]

    def impl(self, a: Any, b: Any) -> Any:
        if a.size == 0 or b.size == 0:
            return np.zeros(b.shape, b.dtype)
        check_finite(self.caller, np.triu(a) if self.upper else np.tril(a))  # the triangle read
        try:
            return self._solve_one(a, b) if a.ndim == 2 else lapack.looped(self._solve_one, a, b)
        except np.linalg.LinAlgError:
            singular = (np.diagonal(a, axis1=-2, axis2=-1) == 0).any(axis=-1)
            raise LinAlgError(
                self.caller,
                f"the triangular matrix of shape {a.shape} is singular (a zero on its "
                f"diagonal){failing_batch(singular)}",
            ) from None

    def _solve_one(self, a: Any, b: Any) -> Any:
        lower, unit = not self.upper, self.unitriangular
        if self.left:
            return lapack.triangular_solve(a, b, lower=lower, trans=0, unit=unit)
        # X A = B is A^T X^T = B^T
        x = lapack.triangular_solve(a, b.T, lower=lower, trans=1, unit=unit)
        return x.T

    def lower(self, lo: Any, a: Any, b: Any) -> Any:
        if 0 in a.shape or 0 in b.shape:
            return lo.jnp.zeros(b.shape, b.dtype)
        return lo.linalg.triangular_solve(
            a, b, left_side=self.left, lower=not self.upper, unit_diagonal=self.unitriangular
        )

    def _triangle(self, m: Any) -> Any:
        offset = 1 if self.unitriangular else 0
        return lax.triu(m, offset) if self.upper else lax.tril(m, -offset)

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a, _), (x,), (da, db) = xs, ys, ts
        rhs = db
        if da is not None:
            dtri = self._triangle(da)
            rhs = lax.sub_tangents(rhs, matmul(dtri, x) if self.left else matmul(x, dtri))
        if rhs is None:
            return [None]
        return [self.solve(a, rhs)]

    def solve(self, a: Any, b: Any) -> Any:
        """This family's solve with the same flags (for rule values)."""
        return triangular_solve(
            a, b, upper=self.upper, left=self.left, unit=self.unitriangular, caller=self.caller
        )

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the triangular matrix")
        (ct,), (a, _) = cts, xs
        if ct is None:
            return [None, None]
        flipped = triangular_solve(
            adjoint(a),
            ct,
            upper=not self.upper,
            left=self.left,
            unit=self.unitriangular,
            caller=self.caller,
        )
        return [None, flipped]


def triangular_solve(
    a: Any, b: Any, *, upper: bool, left: bool = True, unit: bool = False, caller: str
) -> Any:
    """Bind ``linalg.solve_triangular`` on tensors or rule values of one kind."""
    op = TriangularSolve.make(
        (a.meta, b.meta), upper=upper, left=left, unitriangular=unit, caller=caller
    )
    return bind1(op, (a, b))


@binary_preserving
def solve_triangular(
    a: Any, b: Any, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Any:
    """Solve ``A X = B`` (``left=True``) or ``X A = B`` (``left=False``) for triangular A.

    torch.linalg.solve_triangular's signature and semantics: ``upper`` (keyword, required)
    says which triangle of ``a`` is read (the other is ignored); ``unitriangular`` takes
    the diagonal as ones. ``b`` is a matrix stack ``[..., N, K]`` (``[..., K, N]`` when
    ``left=False``); batch axes broadcast. The derivative with respect to ``a`` is
    projected onto the triangle that is read. A zero on the diagonal raises
    :class:`~tenferro.errors.LinAlgError`.
    """
    name = "solve_triangular"
    upper = check_flag(f"linalg.{name}", "upper", upper)
    left = check_flag(f"linalg.{name}", "left", left)
    unitriangular = check_flag(f"linalg.{name}", "unitriangular", unitriangular)
    a, b = inexact_operands(name, a, b)
    check_matrix(name, a.meta)
    check_matrix(name, b.meta)
    a, b = broadcast_batch(name, a, b)
    return triangular_solve(a, b, upper=upper, left=left, unit=unitriangular, caller=name)


# ---------------------------------------------------------------------- general solve


def _check_nonsingular(op: str, a: np.ndarray[Any, Any]) -> None:
    """Raise naming the first exactly singular matrix (after LAPACK reported one)."""

    def singular(m: np.ndarray[Any, Any]) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu, _ = scipy_linalg().lu_factor(m, check_finite=False)
        return bool((np.diagonal(lu) == 0).any())

    raise_per_matrix(op, a, singular, "singular")


@family("linalg.solve")
class Solve(LinalgOp):
    """A X = B for square A and a matrix stack B ``[..., N, K]`` (same batch axes).

    Up to :data:`lapack.LOOP_LIMIT` matrices (the instances whose kernels run matrix by
    matrix), it also outputs A's LU factors and pivots (LAPACK's layout, see
    :func:`lapack.factor_and_solve`) for its derivative rules: the JVP solves with them
    through ``linalg.solve_with_factors``, so reverse mode solves with A^H without
    factoring A again (torch's linalg.solve saves its LU factors the same way). Larger
    batches (of small matrices, in practice) take numpy's batched solver, which returns
    no factors; their derivatives solve again. The factors are not a result of the
    public functions; their JVP leaves their tangent out (the family that reads them
    differentiates through A itself and does not read it)."""

    caller: str

    def infer(self) -> list[Meta]:
        a, b = self.inputs
        check_square(self.caller, a)
        check_matrix(self.caller, b)
        require_inexact(self.caller, a)
        same_batch(self.caller, a, b)
        if b.shape[-2] != a.shape[-1]:
            raise ShapeError(
                self.caller, f"B of shape {b.shape} does not match A of shape {a.shape}"
            )
        if math.prod(a.shape[:-2]) > lapack.LOOP_LIMIT:
            return [b]
        return [b, a, a.with_(shape=a.shape[:-1], dtype=np.dtype(np.int32))]

    def impl(self, a: Any, b: Any) -> Any:
        factored = len(self.outputs) == 3
        if a.size == 0 or b.size == 0:
            x = np.zeros(b.shape, b.dtype)
            return (x, np.zeros(a.shape, a.dtype), _no_pivots(a)) if factored else x
        check_finite(self.caller, a)
        try:
            if not factored:
                return np.linalg.solve(a, b)
            if a.ndim == 2:
                return lapack.factor_and_solve(a, b)
            return lapack.factor_and_solve_batch(a, b)
        except np.linalg.LinAlgError:
            _check_nonsingular(self.caller, a)
            raise  # pragma: no cover - LAPACK failed without an exactly singular pivot

    def lower(self, lo: Any, a: Any, b: Any) -> Any:
        jnp = lo.jnp
        factored = len(self.outputs) == 3
        if 0 in a.shape or 0 in b.shape:
            x = jnp.zeros(b.shape, b.dtype)
            if not factored:
                return x
            return x, jnp.zeros(a.shape, a.dtype), jnp.zeros(a.shape[:-1], "int32")
        if not factored:
            return jnp.linalg.solve(a, b)
        # the numpy kernel's layout: the LU factors of A^T, transposed back
        packed, pivots, _ = lo.linalg.lu(jnp.swapaxes(a, -1, -2))
        factors = jnp.swapaxes(packed, -1, -2)
        return lowered.solve_transposed_lu(lo, factors, pivots, b, False), factors, pivots

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a, _), (x, *factored), (da, db) = xs, ys, ts
        rhs = lax.sub_tangents(db, None if da is None else matmul(da, x))
        if not factored:
            return [None if rhs is None else general_solve(a, rhs, caller=self.caller)]
        if rhs is None:
            return [None, None, None]
        if da is None:
            # Linear in B alone: a solve that reads only A and dB, never this node's
            # factors, which are computed from B too (a derivative of a linear program,
            # as a checkpointed JVP segment transposes, must not read its B).
            return [general_solve(a, rhs, caller=self.caller), None, None]
        factors, pivots = factored
        # The factors' tangent is left out (not a no_derivative marker, which eager
        # forward mode evaluates and raises on whether or not it is used): their only
        # reader, linalg.solve_with_factors, does not read it, and no public function
        # returns the factors.
        return [
            solve_with_factors(a, factors, pivots, rhs, adjoint=False, caller=self.caller),
            None,
            None,
        ]

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the matrix")
        (ct, *_), (a, _) = cts, xs
        if ct is None:
            return [None, None]
        return [None, general_solve(adjoint(a), ct, caller=self.caller)]


def _no_pivots(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.zeros(a.shape[:-1], np.int32)


def general_solve(a: Any, b: Any, *, caller: str) -> Any:
    """Bind ``linalg.solve`` (matrix right-hand sides, same batch axes); X only."""
    return bind(Solve.make((a.meta, b.meta), caller=caller), (a, b))[0]


@family("linalg.solve_with_factors")
class SolveWithFactors(LinalgOp):
    """``A X = B`` (``A^H X = B`` when ``adjoint``) from A's LU factors and pivots as
    ``linalg.solve`` returned them: two triangular solves, no factorization.

    Operands (A, factors, pivots, B). The factors must be A's (this family exists for
    ``linalg.solve``'s derivative rules, which pass its outputs): the kernel reads them
    only, the derivative is that of op(A)^-1 B with respect to A and B (dX =
    op(A)^-1 (dB - op(dA) X)); the factors' and pivots' tangents are not read, as they
    are functions of A already accounted for through A. Linear in B."""

    single_output = True

    adjoint: bool
    caller: str

    def infer(self) -> list[Meta]:
        a, factors, pivots, b = self.inputs
        check_square(self.caller, a)
        check_matrix(self.caller, b)
        same_batch(self.caller, a, b)
        if factors != a or pivots.shape != a.shape[:-1] or pivots.dtype != np.int32:
            raise ShapeError(
                self.caller,
                f"LU factors {factors.describe()} and pivots {pivots.describe()} do not "
                f"belong to a matrix {a.describe()}",
            )
        if b.shape[-2] != a.shape[-1]:
            raise ShapeError(
                self.caller, f"B of shape {b.shape} does not match A of shape {a.shape}"
            )
        return [b]

    def impl(self, a: Any, factors: Any, pivots: Any, b: Any) -> Any:
        if a.size == 0 or b.size == 0:
            return np.zeros(b.shape, b.dtype)
        adjoint = self.adjoint
        if a.ndim == 2:
            return lapack.solve_with_factors(factors, pivots, b, adjoint)
        return lapack.looped(
            lambda f, p, rhs: lapack.solve_with_factors(f, p, rhs, adjoint), factors, pivots, b
        )

    def lower(self, lo: Any, a: Any, factors: Any, pivots: Any, b: Any) -> Any:
        if 0 in a.shape or 0 in b.shape:
            return lo.jnp.zeros(b.shape, b.dtype)
        return lowered.solve_transposed_lu(lo, factors, pivots, b, self.adjoint)

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a, factors, pivots, _), (x,), (da, _, _, db) = xs, ys, ts
        change = None
        if da is not None:
            change = matmul(adjoint(da) if self.adjoint else da, x)
        rhs = lax.sub_tangents(db, change)
        if rhs is None:
            return [None]
        return [self._solve(a, factors, pivots, rhs, self.adjoint)]

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        if active[0] or active[1]:
            raise lax.not_linear(self, "the matrix")
        (ct,), (a, factors, pivots, _) = cts, xs
        if ct is None:
            return [None, None, None, None]
        return [None, None, None, self._solve(a, factors, pivots, ct, not self.adjoint)]

    def _solve(self, a: Any, factors: Any, pivots: Any, b: Any, adjoint: bool) -> Any:
        return solve_with_factors(a, factors, pivots, b, adjoint=adjoint, caller=self.caller)


def solve_with_factors(
    a: Any, factors: Any, pivots: Any, b: Any, *, adjoint: bool, caller: str
) -> Any:
    """Bind ``linalg.solve_with_factors`` (``factors``, ``pivots``: ``linalg.solve``'s
    outputs for the same A)."""
    op = SolveWithFactors.make(
        (a.meta, factors.meta, pivots.meta, b.meta), adjoint=adjoint, caller=caller
    )
    return bind1(op, (a, factors, pivots, b))


@binary_preserving
def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` for square ``a`` (numpy 2 / torch semantics).

    ``b`` is a vector only when it has one axis (``[N]``; the result is ``[..., N]``);
    otherwise it is a matrix stack ``[..., N, K]``. Batch axes broadcast. A singular
    ``a`` raises :class:`~tenferro.errors.LinAlgError` naming the first singular
    matrix of the batch, as does NaN/Inf in ``a``.
    """
    kind = type(a)
    if kind is type(b) and isinstance(a, Tensor):  # a repeated call: the metas were checked
        op = _SOLVE_CALLS.get((a.meta, b.meta))
        if op is not None:
            return kind._bind(op, (a, b))[0]
    name = "solve"
    given = (a, b)
    a, b = inexact_operands(name, a, b)
    check_square(name, a.meta)
    vector = b.meta.ndim == 1
    if vector:
        b = lax.reshape(b, (*b.meta.shape, 1))
    check_matrix(name, b.meta)
    if a.meta.shape[:-2] != b.meta.shape[:-2]:
        a, b = broadcast_batch(name, a, b)
    op = Solve.make((a.meta, b.meta), caller=name)
    x = bind(op, (a, b))[0]
    if a is given[0] and b is given[1] and type(a) is type(b):  # operands used as given
        _SOLVE_CALLS.put((a.meta, b.meta), op)
    return lax.reshape(x, x.meta.shape[:-1]) if vector else x


_SOLVE_CALLS: DictCache[tuple[Meta, Meta], Solve] = DictCache(1024, "linalg.solve calls")
"""(A's meta, B's meta) -> the Solve instance a call with matrix operands of one kind,
used as given (no promotion, broadcasting or vector B), binds (structure only)."""


# ---------------------------------------------------------------------- inverse


@family("linalg.inv")
class Inv(SquareMatrixOp):
    """The inverse of square matrices."""

    single_output = True

    subject = "inv"

    def impl(self, a: Any) -> Any:
        if a.size == 0:
            return np.zeros(a.shape, a.dtype)
        check_finite("inv", a)
        try:
            if a.ndim == 2:
                return lapack.inv(a)
            return lapack.apply(lapack.inv, np.linalg.inv, a, batched=lapack.inv_batch)
        except np.linalg.LinAlgError:
            _check_nonsingular("inv", a)
            raise  # pragma: no cover

    def lower(self, lo: Any, a: Any) -> Any:
        return a if 0 in a.shape else lo.jnp.linalg.inv(a)

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (y,), (da,) = ys, ts
        if da is None:
            return [None]
        return [lax.neg(matmul(matmul(y, da), y))]


@preserving
def inv(a: Any) -> Any:
    """The inverse of a (batch of) square matrices; singular or non-finite input raises
    :class:`~tenferro.errors.LinAlgError` naming the first failing batch index."""
    return Inv.bind(matrix_operand("inv", a, square=True))


# ---------------------------------------------------------------------- determinants


def _trace_of_solve(a: Any, da: Any, caller: str) -> Any:
    """tr(A^-1 dA), linear in ``da``."""
    return trace(general_solve(a, da, caller=caller))


@family("linalg.det")
class Det(SquareMatrixOp):
    """The determinant of square matrices ``[..., N, N] -> [...]``."""

    single_output = True

    subject = "det"

    def square_outputs(self, a: Meta) -> list[Meta]:
        return [a.with_(shape=a.shape[:-2])]

    def impl(self, a: Any) -> Any:
        check_finite("det", a)
        return np.asarray(np.linalg.det(a), dtype=a.dtype)

    def lower(self, lo: Any, a: Any) -> Any:
        if a.shape[-1] == 0:
            return lo.jnp.ones(a.shape[:-2], a.dtype)
        return lo.jnp.linalg.det(a)

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (da,) = xs, ts
        if da is None:
            return [None]
        # tr(adj(A) dA): exact at singular matrices too, and so at every order
        # (tenferro.linalg.adjugate).
        return [trace(matmul(adjugate(a), da))]


@preserving
def det(a: Any) -> Any:
    """The determinant ``[..., N, N] -> [...]``. Its derivative ``tr(adj(A) dA)`` (the
    adjugate, ``det(A) A^-1`` where ``A`` is invertible) exists everywhere: derivatives of
    every order are exact at singular matrices too."""
    return Det.bind(matrix_operand("det", a, square=True))


@family("linalg.slogdet")
class Slogdet(SquareMatrixOp):
    """``(sign, log|det|)`` of square matrices; sign has the input dtype, logabsdet is real."""

    subject = "slogdet"

    def square_outputs(self, a: Meta) -> list[Meta]:
        batch = a.with_(shape=a.shape[:-2])
        real = np.finfo(a.dtype).dtype
        return [batch, batch.with_(dtype=real)]

    def impl(self, a: Any) -> Any:
        check_finite("slogdet", a)
        sign, logabsdet = np.linalg.slogdet(a)
        real = np.finfo(a.dtype).dtype
        return np.asarray(sign, dtype=a.dtype), np.asarray(logabsdet, dtype=real)

    def lower(self, lo: Any, a: Any) -> Any:
        jnp = lo.jnp
        if a.shape[-1] == 0:
            real = np.finfo(a.dtype).dtype
            return jnp.ones(a.shape[:-2], a.dtype), jnp.zeros(a.shape[:-2], real)
        sign, logabsdet = jnp.linalg.slogdet(a)
        return sign.astype(a.dtype), logabsdet

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (sign, _), (da,) = xs, ys, ts
        if da is None:
            return [None, None]
        t = _trace_of_solve(a, da, "slogdet")
        if a.meta.dtype.kind != "c":
            return [None, t]
        phase = lax.complex(lax.zeros_like(lax.imag(t)), lax.imag(t))
        return [lax.mul(sign, phase), lax.real(t)]


@overload
def slogdet(a: TensorLikeT) -> SlogdetResult[TensorLikeT]: ...
@overload
def slogdet(a: ArrayLike) -> SlogdetResult[Tensor]: ...
def slogdet(a: Any) -> SlogdetResult[Any]:
    """``SlogdetResult(sign, logabsdet)`` with ``det = sign * exp(logabsdet)``.

    ``sign`` has the input dtype (±1, or a unit complex number), ``logabsdet`` the real
    dtype. A singular matrix gives sign 0 and logabsdet -inf. Derivatives as torch's:
    the sign's is zero for real input and ``sign * i Im tr(A^-1 dA)`` for complex input.
    """
    sign, logabsdet = Slogdet.bind(matrix_operand("slogdet", a, square=True))
    return SlogdetResult(sign, logabsdet)
