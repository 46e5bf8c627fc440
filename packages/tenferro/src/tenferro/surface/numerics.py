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
from tenferro.core.params import as_int, as_int_or_ints, as_ints, is_listed, torch_alias
from tenferro.dtypes import float64, real_dtype
from tenferro.errors import AxisError, DTypeError, ParameterError, ShapeError
from tenferro.meta import normalize_axis
from tenferro.surface.convert import asarray, astype, prepare
from tenferro.surface.indexing import take
from tenferro.surface.math import multiply, subtract
from tenferro.surface.reductions import _accumulator, _axes, _keep, torch_names
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
    "argpartition",
    "argsort",
    "array_split",
    "cross",
    "cumprod",
    "cumsum",
    "dsplit",
    "erf",
    "erfc",
    "gradient",
    "hsplit",
    "kron",
    "log_softmax",
    "logsumexp",
    "nanmean",
    "nansum",
    "partition",
    "relu",
    "searchsorted",
    "softmax",
    "sort",
    "split",
    "vsplit",
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
def logsumexp(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Any = None,
    keepdim: bool | None = None,
) -> Any:
    """``log(sum(exp(x)))`` over ``axis`` (every axis when None), computed as
    ``m + log(sum(exp(x - m)))`` with ``m`` the maximum (of the real parts): no overflow
    or underflow. The shift leaves the function unchanged, so its derivative is the
    softmax, exactly, at ties too (the max's share of the derivative cancels). Infinite
    maxima are not shifted (``-inf`` everywhere gives ``-inf``; ``+inf`` gives ``+inf``);
    an empty reduction gives ``-inf`` (numpy's sum of nothing is 0)."""
    axis, keepdims = torch_names("logsumexp", axis, keepdims, dim, keepdim)
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
def softmax(x: Any, axis: Axis = -1, *, dim: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (default the last, as ``jax.nn.softmax``;
    a tuple normalises over several axes), as ``exp(x - logsumexp(x))``: stable, with
    exact derivatives."""
    axis = torch_alias("softmax", "axis", axis, -1, "dim", dim)
    a = _inexact(x, "softmax")
    return lax.exp(subtract(a, logsumexp(a, _axes(a, axis, "softmax"), keepdims=True)))


@preserving
def log_softmax(x: Any, axis: Axis = -1, *, dim: Any = None) -> Any:
    """``x - logsumexp(x)`` over ``axis`` (default the last): stable for every x."""
    axis = torch_alias("log_softmax", "axis", axis, -1, "dim", dim)
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
def argmax(
    x: Any,
    axis: int | None = None,
    keepdims: bool = False,
    *,
    dim: Any = None,
    keepdim: bool | None = None,
) -> Any:
    """The int64 index of the first maximum along ``axis`` (of the flattened tensor when
    None; the first NaN wins, as in numpy). Integer output: no derivative."""
    axis, keepdims = torch_names("argmax", axis, keepdims, dim, keepdim)
    return _arg_extremum("argmax", lax.argmax, x, axis, keepdims)


@preserving
def argmin(
    x: Any,
    axis: int | None = None,
    keepdims: bool = False,
    *,
    dim: Any = None,
    keepdim: bool | None = None,
) -> Any:
    """The int64 index of the first minimum along ``axis`` (of the flattened tensor when
    None; the first NaN wins, as in numpy). Integer output: no derivative."""
    axis, keepdims = torch_names("argmin", axis, keepdims, dim, keepdim)
    return _arg_extremum("argmin", lax.argmin, x, axis, keepdims)


@preserving
def sort(
    x: Any,
    axis: int | None = -1,
    *,
    descending: bool = False,
    stable: bool = True,
    dim: Any = None,
) -> Any:
    """``x`` sorted along ``axis`` (flattened when None). Always stable (``stable=False``
    is accepted, as numpy allows a stable result for it); NaNs sort last, first when
    ``descending``. The derivative moves each tangent with its value."""
    if dim is not None:
        raise ParameterError(
            "sort",
            "dim= is PyTorch's sort, which returns (values, indices); tenferro's sort "
            "returns the values: use axis= for them and tf.argsort(x, axis) for the indices",
        )
    descending = check_flag("sort", "descending", descending)
    check_flag("sort", "stable", stable)
    a = asarray(x, op="sort")
    flat, position = _flat_or_axis(a, axis, "sort")
    return lax.sort(flat, position, descending=descending)


@preserving
def argsort(
    x: Any,
    axis: int | None = -1,
    *,
    descending: bool = False,
    stable: bool = True,
    dim: Any = None,
) -> Any:
    """The int64 indices that sort ``x`` along ``axis`` (flattened when None), stable;
    ``descending`` keeps equal elements in their original order (like JAX)."""
    axis = torch_alias("argsort", "axis", axis, -1, "dim", dim)
    descending = check_flag("argsort", "descending", descending)
    check_flag("argsort", "stable", stable)
    a = asarray(x, op="argsort")
    flat, position = _flat_or_axis(a, axis, "argsort")
    return lax.argsort(flat, position, descending=descending)


@preserving
def partition(x: Any, kth: Any, axis: int | None = -1) -> Any:
    """numpy's ``partition``: along ``axis``, each ``kth`` element where sorting puts it,
    smaller ones before, larger after. tenferro sorts the whole axis (a partition of every
    ``kth`` at once; numpy leaves the order within each side unspecified). Derivatives
    follow the values, as ``sort``'s."""
    a = asarray(x, op="partition")
    _check_kth("partition", a, kth, axis)
    return sort(a, axis)


@preserving
def argpartition(x: Any, kth: Any, axis: int | None = -1) -> Any:
    """numpy's ``argpartition``: the int64 indices of :func:`partition` (``argsort``'s)."""
    a = asarray(x, op="argpartition")
    _check_kth("argpartition", a, kth, axis)
    return argsort(a, axis)


def _check_kth(op: str, a: Any, kth: Any, axis: int | None) -> None:
    if axis is None:
        extent = a.meta.size
    else:
        position = normalize_axis(as_int(op, "axis", axis, AxisError), a.meta.ndim, op)
        extent = a.meta.shape[position]
    for k in as_int_or_ints(op, "kth", kth, AxisError):
        if not -extent <= k < extent:
            raise AxisError(op, f"kth {kth!r} is out of range for an axis of {extent}")


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    """The int64 indices at which the values ``x2`` would be inserted into the 1-D ``x1``
    (sorted ascending, or put in order by the indices ``sorter``) to keep it sorted:
    before equal entries with ``side="left"``, after them with ``"right"``; NaNs sort
    last. The result has ``x2``'s shape and kind; no derivative."""
    sorted_values = asarray(x1, op="searchsorted")
    if sorter is not None:
        order = asarray(sorter, op="searchsorted")
        if order.meta.dtype.kind != "i" or order.meta.shape != sorted_values.meta.shape:
            raise ParameterError(
                "searchsorted",
                f"sorter must be integer indices of x1's shape {sorted_values.meta.shape}, "
                f"got {order.meta.describe()}",
            )
        sorted_values = take(sorted_values, order)
    a, b = prepare("searchsorted", (sorted_values, x2), kinds="bif", broadcast=False)
    return lax.searchsorted(a, b, side)


# ---------------------------------------------------------------------- scans


@preserving
def cumsum(x: Any, axis: int | None = None, dtype: Any = None, *, dim: Any = None) -> Any:
    """The cumulative sum along ``axis`` (of the flattened tensor when None); bool and
    integers accumulate in int64 as in numpy unless ``dtype`` says otherwise."""
    axis = torch_alias("cumsum", "axis", axis, None, "dim", dim)
    a = _accumulator(asarray(x, op="cumsum"), dtype, "cumsum")
    flat, position = _flat_or_axis(a, axis, "cumsum")
    return lax.cumsum(flat, position)


@preserving
def cumprod(x: Any, axis: int | None = None, dtype: Any = None, *, dim: Any = None) -> Any:
    """The cumulative product along ``axis`` (flattened when None); its derivative is
    built from multiplications only, exact at zeros and differentiable again."""
    axis = torch_alias("cumprod", "axis", axis, None, "dim", dim)
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
    return _split("split", x, indices_or_sections, axis, equal=True)


def array_split(x: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Any]:
    """``split`` that also takes a number of sections that does not divide the extent
    (numpy's ``array_split``: the first ``extent % N`` sections are one longer)."""
    return _split("array_split", x, indices_or_sections, axis, equal=False)


def hsplit(x: Any, indices_or_sections: int | Sequence[int]) -> list[Any]:
    """``split`` along axis 1 (axis 0 of a 1-D ``x``), as numpy's ``hsplit``."""
    a = asarray(x, op="hsplit")
    if a.meta.ndim == 0:
        raise ShapeError("hsplit", "needs rank >= 1, got a 0-d value")
    return _split("hsplit", a, indices_or_sections, 1 if a.meta.ndim > 1 else 0, equal=True)


def vsplit(x: Any, indices_or_sections: int | Sequence[int]) -> list[Any]:
    """``split`` along axis 0 of an ``x`` of rank >= 2 (numpy's ``vsplit``)."""
    return _split_at_least("vsplit", x, indices_or_sections, 0, 2)


def dsplit(x: Any, indices_or_sections: int | Sequence[int]) -> list[Any]:
    """``split`` along axis 2 of an ``x`` of rank >= 3 (numpy's ``dsplit``)."""
    return _split_at_least("dsplit", x, indices_or_sections, 2, 3)


def _split_at_least(op: str, x: Any, sections: Any, axis: int, rank: int) -> list[Any]:
    a = asarray(x, op=op)
    if a.meta.ndim < rank:
        raise ShapeError(op, f"needs rank >= {rank}, got shape {a.meta.shape}")
    return _split(op, a, sections, axis, equal=True)


def _split(op: str, x: Any, indices_or_sections: Any, axis: int, *, equal: bool) -> list[Any]:
    a = asarray(x, op=op)
    position = normalize_axis(axis, a.meta.ndim, op) if a.meta.ndim else _no_axis(a, axis, op)
    n = a.meta.shape[position]
    if is_listed(indices_or_sections):
        cuts = as_ints(op, "indices_or_sections", indices_or_sections, error=ParameterError)
        edges: list[int | None] = [None, *cuts, None]
        bounds = []
        for start, stop in itertools.pairwise(edges):
            first, last, _ = builtins.slice(start, stop).indices(n)
            bounds.append((first, builtins.max(first, last)))
    else:
        sections = as_int(op, "indices_or_sections", indices_or_sections)
        if sections <= 0 or (equal and n % sections):
            raise ShapeError(
                op,
                f"{sections} sections do not divide axis {position} of extent {n} equally"
                + ("" if equal or sections > 0 else " (the number must be positive)"),
            )
        step, longer = divmod(n, sections)
        sizes = [step + 1] * longer + [step] * (sections - longer)
        starts = list(itertools.accumulate([0, *sizes]))
        bounds = list(itertools.pairwise(starts))
    pieces = []
    for first, last in bounds:
        starts = [0] * a.meta.ndim
        limits = list(a.meta.shape)
        starts[position], limits[position] = first, last
        pieces.append(lax.slice(a, starts, limits))
    return pieces


# ---------------------------------------------------------------------- finite differences


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """numpy's ``gradient``: second-order central differences inside, one-sided
    differences of order ``edge_order`` (1 or 2) at the edges, along ``axis`` (every
    axis when None). ``varargs`` gives the spacing: nothing (1), one scalar for every
    axis, or one scalar or 1-D coordinate array per axis (non-uniform formulas then).
    One axis gives one tensor, several a tuple; integers differentiate in float64."""
    op = "gradient"
    a = _inexact(f, op)
    ndim = a.meta.ndim
    if axis is None:
        axes = list(range(ndim))
    else:
        axes = [normalize_axis(n, ndim, op) for n in as_int_or_ints(op, "axis", axis, AxisError)]
        if len(set(axes)) != len(axes):
            raise AxisError(op, f"repeated axis in {axis!r}")
    order = as_int(op, "edge_order", edge_order)
    if order not in (1, 2):
        raise ParameterError(op, f"edge_order must be 1 or 2, got {edge_order!r}")
    if not varargs:
        spacings: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and asarray(varargs[0], op=op).meta.ndim == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise ParameterError(
            op, f"give no spacing, one scalar, or one per axis ({len(axes)}), got {len(varargs)}"
        )
    results = []
    for position, spacing in zip(axes, spacings, strict=True):
        extent = a.meta.shape[position]
        if extent < order + 1:
            raise ShapeError(
                op,
                f"axis {position} of shape {a.meta.shape} has {extent} points; edge_order "
                f"{order} needs at least {order + 1}",
            )
        results.append(_gradient_along(a, position, spacing, order))
    return results[0] if len(results) == 1 else tuple(results)


def _gradient_along(a: Any, axis: int, spacing: Any, order: int) -> Any:
    h = asarray(spacing, op="gradient")
    n = a.meta.shape[axis]

    def part(start: int, stop: int) -> Any:
        starts, limits = [0] * a.meta.ndim, list(a.meta.shape)
        starts[axis], limits[axis] = start % (n + 1), stop % (n + 1)
        return lax.slice(a, starts, limits)

    def along(vector: Any) -> Any:  # a 1-D coefficient vector, broadcast along ``axis``
        shape = [1] * a.meta.ndim
        shape[axis] = vector.meta.shape[0]
        return reshape(vector, shape)

    if h.meta.ndim == 0:
        inner = (part(2, n) - part(0, n - 2)) / (2 * h)
        if order == 1:
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(n - 1, n) - part(n - 2, n - 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(n - 3, n - 2) - 2 * part(n - 2, n - 1) + 1.5 * part(n - 1, n)) / h
    else:
        if h.meta.shape != (n,):
            raise ShapeError(
                "gradient",
                f"coordinates of shape {h.meta.shape} do not match axis {axis} of extent {n}",
            )
        dx = lax.sub(h[1:], h[:-1])
        dx1, dx2 = dx[:-1], dx[1:]
        inner = (
            along(-dx2 / (dx1 * (dx1 + dx2))) * part(0, n - 2)
            + along((dx2 - dx1) / (dx1 * dx2)) * part(1, n - 1)
            + along(dx1 / (dx2 * (dx1 + dx2))) * part(2, n)
        )
        if order == 1:
            first = (part(1, 2) - part(0, 1)) / along(dx[:1])
            last = (part(n - 1, n) - part(n - 2, n - 1)) / along(dx[-1:])
        else:
            d1, d2 = dx[:1], dx[1:2]
            first = (
                along(-(2 * d1 + d2) / (d1 * (d1 + d2))) * part(0, 1)
                + along((d1 + d2) / (d1 * d2)) * part(1, 2)
                + along(-d1 / (d2 * (d1 + d2))) * part(2, 3)
            )
            d1, d2 = dx[-2:-1], dx[-1:]
            last = (
                along(d2 / (d1 * (d1 + d2))) * part(n - 3, n - 2)
                + along(-(d2 + d1) / (d1 * d2)) * part(n - 2, n - 1)
                + along((2 * d2 + d1) / (d2 * (d1 + d2))) * part(n - 1, n)
            )
    pieces = prepare("gradient", (first, inner, last), broadcast=False)
    return lax.concatenate(pieces, axis)


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
def nansum(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    dtype: Any = None,
    *,
    dim: Any = None,
    keepdim: bool | None = None,
) -> Any:
    """The sum over ``axis`` treating NaNs as zero (they receive zero gradient)."""
    axis, keepdims = torch_names("nansum", axis, keepdims, dim, keepdim)
    keepdims = check_flag("nansum", "keepdims", keepdims)
    a = asarray(x, op="nansum")
    axes = _axes(a, axis, "nansum")
    if a.meta.dtype.kind in "fc":
        a, _ = _without_nans(a)
    return _sum(a, axes, keepdims, dtype)


@preserving
def nanmean(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Any = None,
    keepdim: bool | None = None,
) -> Any:
    """The mean over ``axis`` of the values that are not NaN (NaN where all are)."""
    axis, keepdims = torch_names("nanmean", axis, keepdims, dim, keepdim)
    keepdims = check_flag("nanmean", "keepdims", keepdims)
    a = _inexact(x, "nanmean")
    axis = _axes(a, axis, "nanmean")
    cleaned, nan = _without_nans(a)
    present = lax.convert_element_type(lax.logical_not(nan), real_dtype(a.meta.dtype))
    counts = _sum(present, axis, keepdims)
    total = _sum(cleaned, axis, keepdims)
    return lax.div(total, lax.convert_element_type(counts, a.meta.dtype))
