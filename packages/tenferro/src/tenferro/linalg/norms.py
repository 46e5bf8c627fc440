"""Vector and matrix norms (numpy.linalg.norm semantics) with AD.

The 2-norm and the Frobenius norm (the defaults) are one primitive, ``linalg.norm2``;
the other norms are compositions of differentiable operations (the spectral ones of
:func:`tenferro.linalg.svdvals`). At a zero vector or matrix a norm is not
differentiable; like torch we return the subgradient 0 there, not NaN (the root is
taken on a guarded value, so its derivative never divides by zero), and so for the zero
entries of an ``ord < 1`` norm, whose ``|x|**ord`` has no derivative at 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.families import family
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int_or_ints, as_real
from tenferro.errors import AxisError, LinAlgError, ParameterError, ShapeError
from tenferro.linalg.checks import inexact_dtype
from tenferro.linalg.family import LinalgOp
from tenferro.linalg.singular_values import svdvals
from tenferro.linalg.solvers import inv
from tenferro.meta import Meta, normalize_axis
from tenferro.ops.batching import batch_size, to_front
from tenferro.surface.convert import asarray
from tenferro.surface.dispatch import dispatch_cached
from tenferro.surface.math import abs as abs_
from tenferro.surface.math import where
from tenferro.surface.reductions import amax, amin, sum
from tenferro.surface.shapes import expand_dims, moveaxis
from tenferro.surface.signatures import preserving

__all__ = ["cond", "matrix_norm", "norm", "vector_norm"]

Axis = int | Sequence[int] | None


def _operand(op: str, x: Any) -> Any:
    x = asarray(x)
    target = inexact_dtype(op, x.meta)
    return x if x.meta.dtype == target else lax.convert_element_type(x, target)


def _axes(op: str, x: Any, axis: Axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.meta.ndim))
    raw = as_int_or_ints(op, "axis", axis, AxisError)
    axes = tuple(normalize_axis(a, x.meta.ndim, op) for a in raw)
    if len(set(axes)) != len(axes):
        raise ParameterError(op, f"repeated axis in {axis!r}")
    return axes


def _vector_order(op: str, order: Any) -> float:
    """A vector norm's ``ord``: a real number (numpy's scalars and 0-d arrays too, never a
    bool or a string); :class:`ParameterError` naming ``op`` and the value otherwise."""
    if isinstance(order, str):
        raise ParameterError(op, f"ord {order!r} is not a vector norm; it must be a number")
    return float(as_real(op, "ord", order))


def _matrix_order(op: str, order: Any, what: str = "ord") -> Any:
    """A matrix norm's ``ord``: ``"fro"``, ``"nuc"`` or one of the real numbers 1, -1,
    2, -2, inf, -inf; :class:`ParameterError` naming ``op`` and the value otherwise."""
    if isinstance(order, str):
        if order in ("fro", "nuc"):
            return order
    else:
        try:
            number = as_real(op, what, order)
        except ParameterError:
            number = None
        if number in _MATRIX_ORDERS:
            return number
    raise ParameterError(
        op,
        f"{what} {order!r} is not a matrix norm order: matrix_norm takes one of {_MATRIX_ORDERS}",
    )


def _root(total: Any, order: float) -> Any:
    """``total ** (1 / order)`` with derivative 0 (not inf) where ``total`` is 0 (an
    empty or zero vector; for a negative ``order`` only an empty one, whose norm is
    ``0 ** (1 / order) = inf``, as numpy's)."""
    zero = total == 0
    safe = where(zero, 1, total)
    return where(zero, math.inf if order < 0 else 0, safe ** (1.0 / order))


@family("linalg.norm2")
class Norm2(LinalgOp):
    """``sqrt(sum |x|**2)`` over ``axes`` (sorted, non-negative), real: the vector
    2-norm and the Frobenius norm in one primitive. Its derivative at a zero norm is
    the subgradient 0 (the scale ``1/norm`` is taken as 0 there)."""

    single_output = True

    axes: tuple[int, ...]
    keepdims: bool

    def infer(self) -> list[Meta]:
        (x,) = self.inputs
        kept = tuple(1 if i in self.axes else n for i, n in enumerate(x.shape))
        shape = kept if self.keepdims else _dropped(x.shape, self.axes)
        return [x.with_(shape=shape, dtype=np.finfo(x.dtype).dtype)]

    def impl(self, x: Any) -> Any:
        if len(self.axes) == x.ndim and not self.keepdims:  # every entry: one BLAS dot
            total = _vdot(x, x)  # (numpy.linalg.norm's own formula)
            if x.dtype.kind == "c":
                return np.sqrt(total.real)
            # math.sqrt is correctly rounded in double, so also in float32 once rounded
            # back (53 >= 2 * 24 + 2 bits): the value np.sqrt gives, without the ufunc.
            return x.dtype.type(math.sqrt(total))
        squares = x.real * x.real + x.imag * x.imag if x.dtype.kind == "c" else x * x
        return np.sqrt(_add_reduce(squares, axis=self.axes, keepdims=self.keepdims))

    def lower(self, lo: Any, x: Any) -> Any:
        jnp = lo.jnp
        squares = lo.lax.real(x) ** 2 + lo.lax.imag(x) ** 2 if jnp.iscomplexobj(x) else x * x
        return jnp.sqrt(jnp.sum(squares, axis=self.axes, keepdims=self.keepdims))

    def jvp(self, xs: Any, ys: Any, ts: Any) -> list[Any]:
        (x,), (n,), (dx,) = xs, ys, ts
        if dx is None:
            return [None]
        inner = lax.real(lax.mul(lax.conj(x), dx)) if dx.meta.dtype.kind == "c" else lax.mul(x, dx)
        total = lax.reduce_sum(inner, self.axes)
        if self.keepdims:
            total = lax.reshape(total, n.meta.shape)
        zero = lax.compare(n, lax.zeros_like(n), "eq")
        one = lax.full_like(n, 1)
        scale = lax.select(zero, lax.zeros_like(n), lax.div(one, lax.select(zero, one, n)))
        return [lax.mul(total, scale)]

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        (x,), (d,) = xs, dims
        fronted = to_front(x, d, batch_size(xs, dims))
        axes = tuple(a + 1 for a in self.axes)
        return [Norm2.bind(fronted, axes=axes, keepdims=self.keepdims)], [0]


_add_reduce: Any = np.add.reduce
"""``np.sum`` without its Python wrapper."""
_vdot: Any = np.vdot


def _largest(x: Any, axes: Any, keepdims: bool) -> Any:
    """The largest of the non-negative ``x`` over ``axes``; 0 over no values (numpy's
    norms), as a sum of nothing: still a result of ``x`` (on its tape)."""
    listed = (axes,) if isinstance(axes, int) else axes
    if any(x.meta.shape[a] == 0 for a in listed):
        return sum(x, axis=axes, keepdims=keepdims)
    return amax(x, axis=axes, keepdims=keepdims)


def _smallest(op: str, x: Any, axes: Any, keepdims: bool, what: str, shape: Any) -> Any:
    """The smallest of ``x`` over ``axes``; over no values it is undefined (numpy
    raises): :class:`ShapeError` naming ``op``, ``what`` and the operand's shape."""
    listed = (axes,) if isinstance(axes, int) else axes
    if any(x.meta.shape[a] == 0 for a in listed):
        raise ShapeError(
            op, f"{what} is undefined for an operand of shape {shape} (the smallest of no values)"
        )
    return amin(x, axis=axes, keepdims=keepdims)


def _vector_norm(op: str, x: Any, order: float, axes: tuple[int, ...], keepdims: bool) -> Any:
    if order == 2:
        return Norm2.bind(x, axes=tuple(sorted(axes)), keepdims=bool(keepdims))
    magnitude = abs_(x)
    if order == math.inf:
        return _largest(magnitude, axes, keepdims)
    if order == -math.inf:
        return _smallest(op, magnitude, axes, keepdims, "ord=-inf", x.meta.shape)
    if order == 0:  # the count of non-zero entries (NaN counts, as numpy's), derivative 0:
        # sign(|x|) keeps the result on the tape and in the graph, as a norm of x
        nonzero = lax.select(
            magnitude == magnitude, lax.sign(magnitude), lax.full_like(magnitude, 1)
        )
        return sum(nonzero, axis=axes, keepdims=keepdims)
    if order == 1:
        return sum(magnitude, axis=axes, keepdims=keepdims)
    if order < 1:  # |x|**order is not differentiable at a zero entry: subgradient 0 there
        zero = magnitude == 0
        powered = where(zero, 0 if order > 0 else math.inf, where(zero, 1, magnitude) ** order)
    else:
        powered = magnitude**order
    return _root(sum(powered, axis=axes, keepdims=keepdims), order)


@preserving
def vector_norm(
    x: Any,
    ord: Any = 2,  # noqa: A002  (numpy.linalg name)
    axis: Axis = None,
    keepdims: bool = False,
) -> Any:
    """The vector ``ord``-norm over ``axis`` (all axes when None): ``(sum |x|**ord) **
    (1/ord)``; ``inf``/``-inf`` the largest/smallest ``|x|``, 0 the count of nonzeros.
    Real result (numpy.linalg.vector_norm)."""
    op = "linalg.vector_norm"
    keepdims = check_flag(op, "keepdims", keepdims)
    x = _operand(op, x)
    return _vector_norm(op, x, _vector_order(op, ord), _axes(op, x, axis), keepdims)


_MATRIX_ORDERS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


@preserving
def matrix_norm(
    x: Any,
    ord: Any = "fro",  # noqa: A002  (numpy.linalg name)
    axis: tuple[int, int] = (-2, -1),
    keepdims: bool = False,
) -> Any:
    """The matrix norm over the two axes ``axis`` (numpy.linalg.matrix_norm): ``"fro"``
    (Frobenius), ``"nuc"`` (sum of singular values), ``2``/``-2`` (largest/smallest
    singular value), ``1``/``-1`` (largest/smallest column sum of ``|x|``),
    ``inf``/``-inf`` (largest/smallest row sum). Real result."""
    op = "linalg.matrix_norm"
    keepdims = check_flag(op, "keepdims", keepdims)
    x = _operand(op, x)
    ord = _matrix_order(op, ord)
    axes = _axes(op, x, axis)
    if len(axes) != 2:
        raise ShapeError(op, f"needs two axes, got {axis!r}")
    rows, cols = axes
    if ord == "fro":
        return _vector_norm(op, x, 2, axes, keepdims)
    if ord in (1, -1, math.inf, -math.inf):
        summed, other = (rows, cols) if abs(ord) == 1 else (cols, rows)
        sums = sum(abs_(x), axis=summed, keepdims=True)
        if ord > 0:
            result = _largest(sums, other, keepdims=True)
        else:
            result = _smallest(op, sums, other, True, f"ord={ord}", x.meta.shape)
        return result if keepdims else lax.reshape(result, _dropped(result.meta.shape, axes))
    s = svdvals(moveaxis(x, (rows, cols), (-2, -1)))
    if ord == "nuc":
        result = sum(s, axis=-1)
    elif ord == 2:
        result = _largest(s, -1, keepdims=False)
    else:
        result = _smallest(op, s, s.meta.ndim - 1, False, "ord=-2", x.meta.shape)
    if keepdims:
        for a in sorted(axes):
            result = expand_dims(result, a)
    return result


@preserving
def cond(x: Any, p: Any = None) -> Any:
    """The condition number of (a batch of) matrices (numpy.linalg.cond): with ``p`` None,
    2 or -2 the ratio of extreme singular values (largest over smallest; -2 inverts it,
    any shape), otherwise ``matrix_norm(x, p) * matrix_norm(inv(x), p)`` (square
    matrices). Real result; differentiable wherever the matrix is non-singular."""
    op = "linalg.cond"
    x = _operand(op, x)
    if x.meta.ndim < 2:
        raise ShapeError(op, f"needs a matrix or a batch of matrices, got shape {x.meta.shape}")
    if not min(x.meta.shape[-2:]):
        raise LinAlgError(op, f"is not defined for empty matrices, got shape {x.meta.shape}")
    if p is not None:
        p = _matrix_order(op, p, "p")
    if p is None or p in (2, -2):
        s = svdvals(x)
        largest, smallest = amax(s, axis=-1), amin(s, axis=-1)
        return smallest / largest if p == -2 else largest / smallest
    return matrix_norm(x, p) * matrix_norm(inv(x), p)


def _dropped(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for i, n in enumerate(shape) if i not in axes)


@dispatch_cached()
@preserving
def norm(x: Any, ord: Any = None, axis: Axis = None, keepdims: bool = False) -> Any:  # noqa: A002  (numpy.linalg name)
    """numpy.linalg.norm: with ``axis=None``, the 2-norm of all entries when ``ord`` is
    None, else the vector norm of a 1-D or the matrix norm of a 2-D ``x``; an integer
    ``axis`` gives vector norms, a pair of axes matrix norms."""
    op = "linalg.norm"
    keepdims = check_flag(op, "keepdims", keepdims)
    x = _operand(op, x)
    if axis is None:
        if ord is None:
            return _vector_norm(op, x, 2, _axes(op, x, None), keepdims)
        if x.meta.ndim == 1:
            axis = 0
        elif x.meta.ndim == 2:
            axis = (0, 1)
        else:
            raise ShapeError(
                op, f"an ord needs a 1-D or 2-D input or an explicit axis, got shape {x.meta.shape}"
            )
    axes = _axes(op, x, axis)
    if len(axes) == 1:
        order = 2.0 if ord is None else _vector_order(op, ord)
        return _vector_norm(op, x, order, axes, keepdims)
    if len(axes) == 2:
        return matrix_norm(x, "fro" if ord is None else _matrix_order(op, ord), axes, keepdims)
    raise ShapeError(op, f"axis must name one or two axes, got {axis!r}")
