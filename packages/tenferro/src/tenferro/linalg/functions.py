"""Matrix functions: ``matrix_exp``, ``matrix_power``, ``multi_dot``, ``tensorinv``,
``tensorsolve``; and the vector function ``cross``.

``linalg.matrix_exp`` has the JVP ``L_A(dA)``, the Fréchet derivative of the
exponential, which is its own family ``linalg.expm_frechet`` (A, E) -> L_A(E): linear
in E with the transpose ``L_{A^H}`` (the adjoint of ``E -> ∫ e^{sA} E e^{(1-s)A} ds``),
evaluated as the upper-right block of ``expm([[A, E], [0, A]])``. Its own JVP is the
same block identity one level up (``L_M(dM)`` with ``M = [[A, E], [0, A]]``), so every
order of derivative is available.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from tenferro import lax, surface
from tenferro.algebra import adjoint, eye_like, matmul
from tenferro.core.bind import bind1
from tenferro.core.families import family
from tenferro.core.params import as_int
from tenferro.core.rules import RuleValue
from tenferro.einsum import api as einsum_api
from tenferro.errors import ParameterError, ShapeError
from tenferro.linalg._common import (
    inexact_operands,
    matrix_slice,
    on_tape_of,
    same_batch,
    scipy_linalg,
)
from tenferro.linalg.checks import check_finite, check_square
from tenferro.linalg.family import LinalgOp, SquareMatrixOp
from tenferro.linalg.solvers import inv, solve
from tenferro.meta import Meta, broadcast_shapes, normalize_axes, normalize_axis
from tenferro.surface.convert import broadcast_to, prepare
from tenferro.surface.numerics import cross as numpy_cross
from tenferro.surface.signatures import binary_preserving, preserving
from tenferro.typing import TensorLikeT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from tenferro.concrete import Tensor

__all__ = ["cross", "matrix_exp", "matrix_power", "multi_dot", "tensorinv", "tensorsolve"]


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (the Array API's and
    ``torch.linalg.cross``'s): the operands broadcast against each other, ``axis`` is an
    axis of the broadcast shape, and both operands must have 3 components along it (no
    broadcasting there, no 2-vectors: ``tf.cross`` is numpy's, which takes them)."""
    op = "linalg.cross"
    a, b = prepare(op, (x1, x2), kinds="ifc", broadcast=False)
    shape = broadcast_shapes(a.meta.shape, b.meta.shape, op=op)
    if not shape:
        raise ShapeError(op, "needs vectors: both operands are scalars")
    position = normalize_axis(as_int(op, "axis", axis), len(shape), op)
    offset = position - len(shape)
    extents = [value.meta.shape[offset] if value.meta.ndim >= -offset else 1 for value in (a, b)]
    if extents != [3, 3]:
        raise ShapeError(
            op,
            f"needs 3 components along axis {axis} of both operands, got shapes "
            f"{a.meta.shape} and {b.meta.shape}",
        )
    return numpy_cross(broadcast_to(a, shape), broadcast_to(b, shape), axis=position)


def _blocks(a: Any, e: Any, zeros: Any) -> Any:
    """``[[a, e], [zeros, a]]`` over the last two axes."""
    nd = a.meta.ndim
    top = lax.concatenate([a, e], nd - 1)
    bottom = lax.concatenate([zeros, a], nd - 1)
    return lax.concatenate([top, bottom], nd - 2)


@family("linalg.matrix_exp")
class MatrixExp(SquareMatrixOp):
    """The matrix exponential of square matrices (scipy_linalg().expm, batched)."""

    subject = "matrix_exp"

    def impl(self, a: Any) -> Any:
        if a.size == 0:
            return np.zeros(a.shape, a.dtype)
        check_finite("matrix_exp", a)
        return np.asarray(scipy_linalg().expm(a), dtype=a.dtype)

    def lower(self, lo: Any, a: Any) -> Any:
        return a if 0 in a.shape else lo.jax.scipy.linalg.expm(a)

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a,), (da,) = xs, ts
        return [None if da is None else expm_frechet(a, da)]


@family("linalg.expm_frechet")
class ExpmFrechet(LinalgOp):
    """``L_A(E)``: the Fréchet derivative of expm at A along E (linear in E)."""

    def infer(self) -> list[Meta]:
        a, e = self.inputs
        check_square("matrix_exp", a)
        same_batch("matrix_exp", a, e)
        if e.shape != a.shape:
            raise ShapeError("matrix_exp", f"direction {e.shape} for a matrix {a.shape}")
        return [a]

    def impl(self, a: Any, e: Any) -> Any:
        n = a.shape[-1]
        if a.size == 0:
            return np.zeros(a.shape, a.dtype)
        block = np.zeros((*a.shape[:-2], 2 * n, 2 * n), a.dtype)
        block[..., :n, :n] = a
        block[..., n:, n:] = a
        block[..., :n, n:] = e
        return np.ascontiguousarray(scipy_linalg().expm(block)[..., :n, n:], dtype=a.dtype)

    def lower(self, lo: Any, a: Any, e: Any) -> Any:
        jnp = lo.jnp
        n = a.shape[-1]
        if 0 in a.shape:
            return a
        zeros = jnp.zeros(a.shape, a.dtype)  # the numpy kernel's block formula
        block = jnp.concatenate(
            [jnp.concatenate([a, e], axis=-1), jnp.concatenate([zeros, a], axis=-1)], axis=-2
        )
        return lo.jax.scipy.linalg.expm(block)[..., :n, n:]

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> list[RuleValue | None]:
        (a, e), (da, de) = xs, ts
        if da is None and de is None:
            return [None]
        if da is None:
            # Linear in E: reads A and dE only, never E (a derivative of a linear
            # program, as a checkpointed JVP segment transposes, must not read it).
            return [expm_frechet(a, de)]
        n = a.meta.shape[-1]
        zeros = lax.zeros_like(a)
        da_ = zeros if da is None else da
        de_ = zeros if de is None else de
        tangent = expm_frechet(_blocks(a, e, zeros), _blocks(da_, de_, zeros))
        return [matrix_slice(tangent, (0, n), (n, 2 * n))]

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        if active[0]:
            raise lax.not_linear(self, "the matrix")
        (ct,), (a, _) = cts, xs
        return [None, None if ct is None else expm_frechet(adjoint(a), ct)]


def expm_frechet(a: Any, e: Any) -> Any:
    """Bind ``linalg.expm_frechet``."""
    return bind1(ExpmFrechet.make((a.meta, e.meta)), (a, e))


@preserving
def matrix_exp(a: Any) -> Any:
    """The matrix exponential ``[..., N, N]`` (torch.linalg.matrix_exp,
    scipy_linalg().expm). Differentiable to any order (Fréchet derivative);
    NaN/Inf input raises :class:`~tenferro.errors.LinAlgError`."""
    (a,) = inexact_operands("matrix_exp", a)
    check_square("matrix_exp", a.meta)
    return bind1(MatrixExp.make((a.meta,)), (a,))


@preserving
def matrix_power(a: Any, n: int) -> Any:
    """``a`` raised to the integer power ``n`` (numpy.linalg.matrix_power): ``n = 0`` is
    the identity, ``n < 0`` the power of ``inv(a)``; computed by repeated squaring with
    matrix products, so its derivative is exact (zero for ``n = 0``, whose identity
    stays a result of ``a`` on a tape). Integer matrices stay integer for ``n >= 0``
    (numpy's rule)."""
    n = as_int("matrix_power", "n", n)
    (x,) = inexact_operands("matrix_power", a) if n < 0 else (surface.asarray(a),)
    check_square("matrix_power", x.meta)
    if n < 0:
        x = inv(x)
    power = abs(int(n))
    result = None
    while power:
        if power & 1:
            result = x if result is None else matmul(result, x)
        power >>= 1
        if power:
            x = matmul(x, x)
    return on_tape_of(eye_like(x), x) if result is None else result


def _chain_order(shapes: Sequence[tuple[int, int]]) -> Any:
    """The classic O(n^3) matrix-chain dynamic programme: the cheapest parenthesisation."""
    count = len(shapes)
    dims = [shapes[0][0], *(s[1] for s in shapes)]
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf  # type: ignore[call-overload]
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def order(i: int, j: int) -> Any:
        return i if i == j else (order(i, split[i][j]), order(split[i][j] + 1, j))

    return order(0, count - 1)


@overload
def multi_dot(arrays: Sequence[TensorLikeT]) -> TensorLikeT: ...
@overload
def multi_dot(arrays: Sequence[ArrayLike]) -> Tensor: ...
@overload
def multi_dot(arrays: Sequence[Any]) -> Any: ...
def multi_dot(arrays: Sequence[Any]) -> Any:
    """The product of a chain of matrices in the cheapest order (numpy.linalg.multi_dot):
    the first operand may be a vector (a row), the last a vector (a column); the others
    are matrices. Planned by ``tenferro.einsum`` when it exists, else by the classic
    matrix-chain dynamic programme."""
    if len(arrays) < 2:
        raise ParameterError("multi_dot", f"needs at least two arrays, got {len(arrays)}")
    operands = [surface.asarray(x) for x in arrays]
    first_vector = operands[0].ndim == 1
    last_vector = operands[-1].ndim == 1
    if first_vector:
        operands[0] = surface.reshape(operands[0], (1, -1))
    if last_vector:
        operands[-1] = surface.reshape(operands[-1], (-1, 1))
    for position, x in enumerate(operands):
        if x.ndim != 2:
            raise ShapeError(
                "multi_dot", f"operand {position} must be a matrix, got shape {tuple(x.shape)}"
            )
    for position in range(len(operands) - 1):
        if operands[position].shape[1] != operands[position + 1].shape[0]:
            raise ShapeError(
                "multi_dot",
                f"operands {position} and {position + 1} of shapes "
                f"{tuple(operands[position].shape)} and {tuple(operands[position + 1].shape)}"
                " do not chain",
            )
    einsum = getattr(einsum_api, "einsum", None)
    if einsum is not None:
        letters = [chr(ord("a") + i) for i in range(len(operands) + 1)]
        inputs = ",".join(letters[i] + letters[i + 1] for i in range(len(operands)))
        result = einsum(f"{inputs}->{letters[0]}{letters[-1]}", *operands)
    else:
        result = _evaluate(_chain_order([tuple(x.shape) for x in operands]), operands)
    if first_vector and last_vector:
        return surface.reshape(result, ())
    if first_vector:
        return surface.reshape(result, (-1,))
    if last_vector:
        return surface.reshape(result, (-1,))
    return result


def _evaluate(order: Any, operands: list[Any]) -> Any:
    if isinstance(order, int):
        return operands[order]
    left, right = order
    return surface.matmul(_evaluate(left, operands), _evaluate(right, operands))


@preserving
def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` seen as a linear map from its trailing axes (``a.shape[ind:]``)
    to its leading ones (numpy.linalg.tensorinv): the result has shape
    ``a.shape[ind:] + a.shape[:ind]``."""
    (a,) = inexact_operands("tensorinv", a)
    shape = a.meta.shape
    ind = as_int("tensorinv", "ind", ind)
    if ind <= 0:
        raise ParameterError("tensorinv", f"ind must be a positive integer, got {ind!r}")
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise ShapeError(
            "tensorinv", f"shape {shape} with ind={ind} is not square ({rows} x {cols})"
        )
    result = inv(lax.reshape(a, (rows, cols)))
    return lax.reshape(result, (*shape[ind:], *shape[:ind]))


@binary_preserving
def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Any:
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (numpy.linalg.tensorsolve): ``x``
    has shape ``a.shape[b.ndim:]``; ``axes`` are axes of ``a`` moved to the end first."""
    a, b = inexact_operands("tensorsolve", a, b)
    if axes is not None:
        moved = normalize_axes(axes, a.meta.ndim, "tensorsolve")
        order = [ax for ax in range(a.meta.ndim) if ax not in moved] + list(moved)
        a = lax.transpose(a, tuple(order))
    shape = a.meta.shape
    xshape = shape[b.meta.ndim :]
    rows, cols = math.prod(shape[: b.meta.ndim]), math.prod(xshape)
    if rows != math.prod(b.meta.shape) or rows != cols:
        raise ShapeError(
            "tensorsolve", f"a of shape {shape} does not match b of shape {b.meta.shape}"
        )
    x = solve(lax.reshape(a, (rows, cols)), lax.reshape(b, (rows,)))
    return lax.reshape(x, xshape)
