"""Common numerics with numpy/JAX semantics, for every tensor kind: softmax, log_softmax,
logsumexp, relu, erf, erfc, argmax, argmin, sort, argsort, cumsum, cumprod, split, kron,
cross, nansum, nanmean.

Composites of existing primitives where that is exact and efficient (softmax family,
relu, split, kron, cross, the NaN-ignoring reductions); primitives of their own for
erf/erfc (:mod:`tenferro.ops.special`), the scans (:mod:`tenferro.ops.scan`) and
ordering (:mod:`tenferro.ops.sorting`). ``axis=None`` flattens where numpy does
(argmax, argmin, sort, argsort, cumsum, cumprod) and means every axis for reductions.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from tenferro import lax
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int, as_ints, is_listed
from tenferro.dtypes import float64, real_dtype
from tenferro.errors import DTypeError, ParameterError, ShapeError
from tenferro.meta import normalize_axis
from tenferro.surface.convert import asarray, astype, prepare
from tenferro.surface.math import multiply, subtract
from tenferro.surface.reductions import _accumulator, _axes, _keep
from tenferro.surface.reductions import sum as _sum
from tenferro.surface.shapes import moveaxis, reshape, stack
from tenferro.surface.signatures import (
    binary,
    binary_preserving,
    preserving,
    unary,
)
from tenferro.typing import TensorT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from tenferro.concrete import Tensor

__all__ = [
    "argmax",
    "argmin",
    "argsort",
    "cross",
    "cumprod",
    "cumsum",
    "erf",
    "erfc",
    "kron",
    "log_softmax",
    "logsumexp",
    "nanmean",
    "nansum",
    "relu",
    "softmax",
    "sort",
    "split",
]

Axis = int | Sequence[int] | None


def _inexact(x: Any, op: str) -> Any:
    """``x`` as a floating or complex tensor (bool and integers become float64)."""
    a = asarray(x, op=op)
    return astype(a, float64) if a.meta.dtype.kind in "bi" else a


def _flat_or_axis(x: Any, axis: int | None, op: str) -> tuple[Any, int]:
    """numpy's ``axis=None``: the flattened tensor and axis 0; else the normalised axis."""
    if axis is None:
        return lax.reshape(x, (x.meta.size,)), 0
    return x, normalize_axis(axis, x.meta.ndim, op) if x.meta.ndim else _no_axis(x, axis, op)


def _no_axis(x: Any, axis: Any, op: str) -> int:
    return normalize_axis(axis, 0, op)  # raises the AxisError naming op and axis


# ---------------------------------------------------------------------- softmax family


@preserving
def logsumexp(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``axis`` (every axis when None), computed as
    ``m + log(sum(exp(x - m)))`` with ``m`` the maximum (of the real parts): no overflow
    or underflow. The shift leaves the function unchanged, so its derivative is the
    softmax, exactly, at ties too (the max's share of the derivative cancels). Infinite
    maxima are not shifted (``-inf`` everywhere gives ``-inf``; ``+inf`` gives ``+inf``);
    an empty reduction gives ``-inf`` (numpy's sum of nothing is 0)."""
    keepdims = check_flag("logsumexp", "keepdims", keepdims)
    a = _inexact(x, "logsumexp")
    axes = _axes(a, axis, "logsumexp")
    kept = tuple(i for i in range(a.meta.ndim) if i not in axes)
    real = lax.real(a) if a.meta.dtype.kind == "c" else a
    if all(a.meta.shape[i] > 0 for i in axes):
        top = lax.reduce_max(real, axes)
        finite = lax.compare(lax.sub(top, top), lax.zeros_like(top), "eq")
        top = lax.select(finite, top, lax.zeros_like(top))
    else:
        top = lax.zeros(real.meta._replace(shape=tuple(a.meta.shape[i] for i in kept)), a)
    shift = lax.convert_element_type(top, a.meta.dtype)
    shifted = lax.sub(a, lax.broadcast_in_dim(shift, a.meta.shape, kept))
    result = lax.add(lax.log(lax.reduce_sum(lax.exp(shifted), axes)), shift)
    return _keep(a, result, axes, keepdims)


@preserving
def softmax(x: Any, axis: Axis = -1) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (default the last, as ``jax.nn.softmax``;
    a tuple normalises over several axes), as ``exp(x - logsumexp(x))``: stable, with
    exact derivatives."""
    a = _inexact(x, "softmax")
    return lax.exp(subtract(a, logsumexp(a, _axes(a, axis, "softmax"), keepdims=True)))


@preserving
def log_softmax(x: Any, axis: Axis = -1) -> Any:
    """``x - logsumexp(x)`` over ``axis`` (default the last): stable for every x."""
    a = _inexact(x, "log_softmax")
    return subtract(a, logsumexp(a, _axes(a, axis, "log_softmax"), keepdims=True))


@unary
def relu(x: Any) -> Any:
    """``max(x, 0)`` of real ``x``; NaN stays NaN and the derivative at 0 is 0 (as in
    PyTorch and JAX)."""
    a = asarray(x, op="relu")
    if a.meta.dtype.kind not in "if":
        raise DTypeError("relu", f"needs real values, got {a.meta.dtype}")
    zero = lax.zeros_like(a)
    return lax.select(lax.compare(a, zero, "le"), zero, a)


@unary
def erf(x: Any) -> Any:
    """The error function (floating or complex; integers and bool become float64)."""
    return lax.erf(_inexact(x, "erf"))


@unary
def erfc(x: Any) -> Any:
    """``1 - erf(x)``, accurate where erf(x) is close to 1."""
    return lax.erfc(_inexact(x, "erfc"))


# ---------------------------------------------------------------------- ordering


def _arg_extremum(op: str, reduce: Any, x: Any, axis: int | None, keepdims: bool) -> Any:
    keepdims = check_flag(op, "keepdims", keepdims)
    a = asarray(x, op=op)
    flat, position = _flat_or_axis(a, axis, op)
    result = reduce(flat, position)
    if not keepdims:
        return result
    if axis is None:
        return lax.reshape(result, (1,) * a.meta.ndim)
    shape = list(a.meta.shape)
    shape[position] = 1
    return lax.reshape(result, shape)


@preserving
def argmax(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """The int64 index of the first maximum along ``axis`` (of the flattened tensor when
    None; the first NaN wins, as in numpy). Integer output: no derivative."""
    return _arg_extremum("argmax", lax.argmax, x, axis, keepdims)


@preserving
def argmin(x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """The int64 index of the first minimum along ``axis`` (of the flattened tensor when
    None; the first NaN wins, as in numpy). Integer output: no derivative."""
    return _arg_extremum("argmin", lax.argmin, x, axis, keepdims)


@preserving
def sort(x: Any, axis: int | None = -1, *, descending: bool = False, stable: bool = True) -> Any:
    """``x`` sorted along ``axis`` (flattened when None). Always stable (``stable=False``
    is accepted, as numpy allows a stable result for it); NaNs sort last, first when
    ``descending``. The derivative moves each tangent with its value."""
    descending = check_flag("sort", "descending", descending)
    check_flag("sort", "stable", stable)
    a = asarray(x, op="sort")
    flat, position = _flat_or_axis(a, axis, "sort")
    return lax.sort(flat, position, descending=descending)


@preserving
def argsort(x: Any, axis: int | None = -1, *, descending: bool = False, stable: bool = True) -> Any:
    """The int64 indices that sort ``x`` along ``axis`` (flattened when None), stable;
    ``descending`` keeps equal elements in their original order (like JAX)."""
    descending = check_flag("argsort", "descending", descending)
    check_flag("argsort", "stable", stable)
    a = asarray(x, op="argsort")
    flat, position = _flat_or_axis(a, axis, "argsort")
    return lax.argsort(flat, position, descending=descending)


# ---------------------------------------------------------------------- scans


@preserving
def cumsum(x: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """The cumulative sum along ``axis`` (of the flattened tensor when None); bool and
    integers accumulate in int64 as in numpy unless ``dtype`` says otherwise."""
    a = _accumulator(asarray(x, op="cumsum"), dtype, "cumsum")
    flat, position = _flat_or_axis(a, axis, "cumsum")
    return lax.cumsum(flat, position)


@preserving
def cumprod(x: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """The cumulative product along ``axis`` (flattened when None); its derivative is
    built from multiplications only, exact at zeros and differentiable again."""
    a = _accumulator(asarray(x, op="cumprod"), dtype, "cumprod")
    flat, position = _flat_or_axis(a, axis, "cumprod")
    return lax.cumprod(flat, position)


# ---------------------------------------------------------------------- joining and splitting


@overload
def split(x: TensorT, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[TensorT]: ...
@overload
def split(
    x: ArrayLike, indices_or_sections: int | Sequence[int], axis: int = 0
) -> list[Tensor]: ...
def split(x: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """``x`` cut along ``axis`` into a list: ``N`` equal sections (``N`` must divide the
    extent), or at the listed indices (numpy's slicing rules: negative indices count
    from the end, indices past the end give empty pieces)."""
    a = asarray(x, op="split")
    position = (
        normalize_axis(axis, a.meta.ndim, "split") if a.meta.ndim else _no_axis(a, axis, "split")
    )
    n = a.meta.shape[position]
    if is_listed(indices_or_sections):
        cuts = as_ints("split", "indices_or_sections", indices_or_sections, error=ParameterError)
        edges: list[int | None] = [None, *cuts, None]
        bounds = []
        for start, stop in itertools.pairwise(edges):
            first, last, _ = builtins.slice(start, stop).indices(n)
            bounds.append((first, builtins.max(first, last)))
    else:
        sections = as_int("split", "indices_or_sections", indices_or_sections)
        if sections <= 0 or n % sections:
            raise ShapeError(
                "split",
                f"{sections} sections do not divide axis {position} of extent {n} equally",
            )
        step = n // sections
        bounds = [(i * step, (i + 1) * step) for i in range(sections)]
    pieces = []
    for first, last in bounds:
        starts = [0] * a.meta.ndim
        limits = list(a.meta.shape)
        starts[position], limits[position] = first, last
        pieces.append(lax.slice(a, starts, limits))
    return pieces


@binary
def kron(a: Any, b: Any) -> Any:
    """The Kronecker product (numpy's: the operand of lower rank gains leading axes;
    ``out[i*nb + k] = a[i] * b[k]`` on every axis)."""
    x, y = prepare("kron", (a, b), broadcast=False)
    ndim = builtins.max(x.meta.ndim, y.meta.ndim)
    xs = (1,) * (ndim - x.meta.ndim) + x.meta.shape
    ys = (1,) * (ndim - y.meta.ndim) + y.meta.shape
    interleaved_x = [n for extent in xs for n in (extent, 1)]
    interleaved_y = [n for extent in ys for n in (1, extent)]
    product = multiply(reshape(x, interleaved_x), reshape(y, interleaved_y))
    return reshape(product, [p * q for p, q in zip(xs, ys, strict=True)])


@binary_preserving
def cross(
    a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None
) -> Any:
    """The cross product of 3-vectors (numpy's ``np.cross``): vectors along ``axisa`` of
    ``a`` and ``axisb`` of ``b`` (``axis`` sets all three), the other axes broadcast, the
    result's vectors along ``axisc``. 2-vectors count as having a zero z component; two
    2-vectors give the z component alone (numpy 2 deprecates them)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = prepare("cross", (a, b), broadcast=False)
    for value, which, position in ((x, "a", axisa), (y, "b", axisb)):
        if value.meta.ndim == 0:
            raise ShapeError("cross", f"{which} is a scalar; it needs an axis of vectors")
        normalize_axis(position, value.meta.ndim, "cross")
    x, y = moveaxis(x, axisa, -1), moveaxis(y, axisb, -1)
    extents = (x.meta.shape[-1], y.meta.shape[-1])
    if any(n not in (2, 3) for n in extents):
        raise ShapeError(
            "cross", f"vectors must have 2 or 3 components, got {extents[0]} and {extents[1]}"
        )
    xc = [x[..., i] for i in range(extents[0])]
    yc = [y[..., i] for i in range(extents[1])]
    z_only = multiply(xc[0], yc[1]) - multiply(xc[1], yc[0])
    if extents == (2, 2):
        return z_only
    x3 = xc[2] if extents[0] == 3 else lax.zeros_like(xc[0])
    y3 = yc[2] if extents[1] == 3 else lax.zeros_like(yc[0])
    first = multiply(xc[1], y3) - multiply(x3, yc[1])
    second = multiply(x3, yc[0]) - multiply(xc[0], y3)
    result = stack([first, second, z_only], axis=-1)
    return moveaxis(result, -1, normalize_axis(axisc, result.meta.ndim, "cross"))


# ---------------------------------------------------------------------- NaN-ignoring reductions


def _without_nans(a: Any) -> tuple[Any, Any]:
    """``a`` with NaNs replaced by 0 (their derivative is 0), and where it had NaNs."""
    nan = lax.compare(a, a, "ne")
    return lax.select(nan, lax.zeros_like(a), a), nan


@preserving
def nansum(x: Any, axis: Axis = None, keepdims: bool = False, dtype: Any = None) -> Any:
    """The sum over ``axis`` treating NaNs as zero (they receive zero gradient)."""
    keepdims = check_flag("nansum", "keepdims", keepdims)
    a = asarray(x, op="nansum")
    axes = _axes(a, axis, "nansum")
    if a.meta.dtype.kind in "fc":
        a, _ = _without_nans(a)
    return _sum(a, axes, keepdims, dtype)


@preserving
def nanmean(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
    """The mean over ``axis`` of the values that are not NaN (NaN where all are)."""
    keepdims = check_flag("nanmean", "keepdims", keepdims)
    a = _inexact(x, "nanmean")
    axis = _axes(a, axis, "nanmean")
    cleaned, nan = _without_nans(a)
    present = lax.convert_element_type(lax.logical_not(nan), real_dtype(a.meta.dtype))
    counts = _sum(present, axis, keepdims)
    total = _sum(cleaned, axis, keepdims)
    return lax.div(total, lax.convert_element_type(counts, a.meta.dtype))
