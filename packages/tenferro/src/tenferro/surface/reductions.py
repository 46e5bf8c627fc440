"""numpy-style reductions: sum, prod, mean, var, std, max/amax, min/amin, all, any."""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

from tenferro import lax
from tenferro.core.flags import check_flag
from tenferro.core.params import as_int_or_ints, as_real, torch_alias
from tenferro.dtypes import float64, int64, is_complex
from tenferro.errors import AxisError, ParameterError, ShapeError
from tenferro.meta import normalize_axes
from tenferro.surface.convert import asarray, astype
from tenferro.surface.dispatch import dispatch_cached
from tenferro.surface.signatures import preserving

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "count_nonzero",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]

Axis = int | Sequence[int] | None


def torch_names(op: str, axis: Any, keepdims: Any, dim: Any, keepdim: Any) -> tuple[Any, Any]:
    """``(axis, keepdims)`` from numpy's names or PyTorch's (``dim``, ``keepdim``)."""
    if dim is None and keepdim is None:
        return axis, keepdims
    return (
        torch_alias(op, "axis", axis, None, "dim", dim),
        torch_alias(op, "keepdims", keepdims, False, "keepdim", keepdim),
    )


def _axes(x: Any, axis: Axis, op: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.meta.ndim))
    listed = as_int_or_ints(op, "axis", axis, AxisError)
    return tuple(sorted(normalize_axes(listed, x.meta.ndim, op)))


def _keep(x: Any, result: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    if not keepdims:
        return result
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.meta.shape))
    return lax.reshape(result, shape)


def _accumulator(x: Any, dtype: Any, op: str) -> Any:
    """numpy's accumulation dtype: bool and integers sum as int64 unless told otherwise."""
    if dtype is not None:
        return astype(x, dtype)
    if x.meta.dtype.kind in "bi":
        return astype(x, int64)
    return x


@preserving
@dispatch_cached()
def sum(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    dtype: Any = None,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """Sum over ``axis`` (all axes when None)."""
    axis, keepdims = torch_names("sum", axis, keepdims, dim, keepdim)
    keepdims = check_flag("sum", "keepdims", keepdims)
    a = _accumulator(asarray(x), dtype, "sum")
    axes = _axes(a, axis, "sum")
    return _keep(a, lax.reduce_sum(a, axes), axes, keepdims)


@preserving
@dispatch_cached()
def prod(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    dtype: Any = None,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """Product over ``axis``; its derivative is safe at zeros."""
    axis, keepdims = torch_names("prod", axis, keepdims, dim, keepdim)
    keepdims = check_flag("prod", "keepdims", keepdims)
    a = _accumulator(asarray(x), dtype, "prod")
    axes = _axes(a, axis, "prod")
    return _keep(a, lax.reduce_prod(a, axes), axes, keepdims)


@preserving
@dispatch_cached()
def mean(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """Arithmetic mean (integers average in float64)."""
    axis, keepdims = torch_names("mean", axis, keepdims, dim, keepdim)
    keepdims = check_flag("mean", "keepdims", keepdims)
    a = asarray(x)
    if a.meta.dtype.kind in "bi":
        a = astype(a, float64)
    axes = _axes(a, axis, "mean")
    count = math.prod(a.meta.shape[i] for i in axes)
    total = lax.reduce_sum(a, axes)
    scale = lax.full_like(total, 1.0 / count if count else float("nan"))
    return _keep(a, lax.mul(total, scale), axes, keepdims)


@preserving
def var(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    ddof: int = 0,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
    correction: Any = None,
) -> Any:
    """Variance ``sum(|x - mean(x)|**2) / (n - ddof)`` over ``axis`` (real for complex input;
    ``ddof`` a real number, as numpy's)."""
    axis, keepdims = torch_names("var", axis, keepdims, dim, keepdim)
    return _var(
        "var", x, axis, keepdims, torch_alias("var", "ddof", ddof, 0, "correction", correction)
    )


def _var(op: str, x: Any, axis: Axis, keepdims: bool, ddof: Any) -> Any:
    keepdims = check_flag(op, "keepdims", keepdims)
    ddof = as_real(op, "ddof", ddof)
    a = asarray(x)
    if a.meta.dtype.kind in "bi":
        a = astype(a, float64)
    axes = _axes(a, axis, op)
    kept = tuple(i for i in range(a.meta.ndim) if i not in axes)
    centered = lax.sub(a, lax.broadcast_in_dim(mean(a, axes), a.meta.shape, kept))
    if is_complex(a.meta.dtype):
        squared = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        squared = lax.mul(centered, centered)
    total = lax.reduce_sum(squared, axes)
    count = math.prod(a.meta.shape[i] for i in axes)
    # numpy divides by max(n - ddof, 0): nan (or inf) when ddof leaves no degrees of freedom.
    result = lax.div(total, lax.full_like(total, builtins.max(count - ddof, 0)))
    return _keep(a, result, axes, keepdims)


@preserving
def std(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    ddof: int = 0,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
    correction: Any = None,
) -> Any:
    """Standard deviation: ``sqrt(var)``. Where the variance is 0 (constant values, a
    length-1 axis) the derivative is the subgradient 0, as PyTorch's (the root is taken
    on a guarded value, so its derivative never divides by zero)."""
    axis, keepdims = torch_names("std", axis, keepdims, dim, keepdim)
    ddof = torch_alias("std", "ddof", ddof, 0, "correction", correction)
    variance = _var("std", x, axis, keepdims, ddof)
    zero = lax.compare(variance, lax.zeros_like(variance), "eq")
    guarded = lax.select(zero, lax.full_like(variance, 1), variance)
    return lax.select(zero, lax.zeros_like(variance), lax.sqrt(guarded))


def _extremum(op: str, reduce: Any) -> Any:
    def apply(x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
        keepdims = check_flag(op, "keepdims", keepdims)
        a = asarray(x)
        axes = _axes(a, axis, op)
        if builtins.any(a.meta.shape[i] == 0 for i in axes):  # numpy: no identity to start
            raise ShapeError(
                op, f"the {op} of no values is undefined (axes {axes} of shape {a.meta.shape})"
            )
        return _keep(a, reduce(a, axes), axes, keepdims)

    apply.__name__ = op
    apply.__doc__ = f"{op} over ``axis``; ties share the derivative equally."
    return apply


_max = _extremum("max", lax.reduce_max)
_min = _extremum("min", lax.reduce_min)


@preserving
def max(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """The largest element along ``axis`` (all axes by default); complex values compare
    as numpy compares them (real parts, then imaginary parts); NaN propagates."""
    if dim is not None:
        raise _values_and_indices("max", "argmax")
    axis, keepdims = torch_names("max", axis, keepdims, None, keepdim)
    return _max(x, axis, keepdims)


@preserving
def min(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """The smallest element along ``axis`` (all axes by default); complex values compare
    as numpy compares them (real parts, then imaginary parts); NaN propagates."""
    if dim is not None:
        raise _values_and_indices("min", "argmin")
    axis, keepdims = torch_names("min", axis, keepdims, None, keepdim)
    return _min(x, axis, keepdims)


amax = max
amin = min


def _values_and_indices(op: str, indices: str) -> ParameterError:
    """``torch.max(x, dim=...)`` returns values and indices; refusing ``dim=`` keeps such a
    call from unpacking the values along axis 0 silently."""
    return ParameterError(
        op,
        f"dim= is PyTorch's {op} along an axis, which returns (values, indices); "
        f"tenferro's {op} returns the values: use axis= for them and tf.{indices}(x, axis) "
        f"for the indices",
    )


@preserving
def any(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """Whether any element along ``axis`` is true (non-zero)."""
    axis, keepdims = torch_names("any", axis, keepdims, dim, keepdim)
    keepdims = check_flag("any", "keepdims", keepdims)
    a = asarray(x)
    counts = sum(lax.compare(a, lax.zeros_like(a), "ne"), _axes(a, axis, "any"), keepdims)
    return lax.compare(counts, lax.zeros_like(counts), "gt")


@preserving
def all(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """Whether every element along ``axis`` is true (non-zero)."""
    axis, keepdims = torch_names("all", axis, keepdims, dim, keepdim)
    keepdims = check_flag("all", "keepdims", keepdims)
    a = asarray(x)
    counts = sum(lax.compare(a, lax.zeros_like(a), "eq"), _axes(a, axis, "all"), keepdims)
    return lax.compare(counts, lax.zeros_like(counts), "eq")


@preserving
def count_nonzero(
    x: Any,
    axis: Axis = None,
    keepdims: bool = False,
    *,
    dim: Axis = None,
    keepdim: bool | None = None,
) -> Any:
    """How many elements along ``axis`` are non-zero (true; NaN counts), as int64."""
    axis, keepdims = torch_names("count_nonzero", axis, keepdims, dim, keepdim)
    keepdims = check_flag("count_nonzero", "keepdims", keepdims)
    a = asarray(x)
    nonzero = lax.compare(a, lax.zeros_like(a), "ne")
    return sum(nonzero, _axes(a, axis, "count_nonzero"), keepdims)
