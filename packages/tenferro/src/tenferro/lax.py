"""``tenferro.lax``: one strict function per primitive, for any tensor kind.

No broadcasting and no promotion: operands of a primitive share shapes and dtypes
as the primitive requires (the numpy-style functions of ``tenferro`` insert
``broadcast_in_dim`` and ``convert_element_type`` for you). The same functions
serve concrete tensors, eager tensors, traced tensors and AD rules, where they
emit operations into the transform's graph. Semantics follow ``jax.lax`` and
StableHLO.

As in ``jax.lax``, operands may also be numpy arrays and Python or numpy scalars
(they become concrete tensors, see :mod:`tenferro.core.operands`), and integer
parameters (axes, extents, positions, padding, dimension numbers) are integers in
numpy's sense, read by :mod:`tenferro.core.params`: a bool, a float, a string,
``None`` or a sequence of the wrong length raises a tenferro error naming the
function and the value, never a silent truncation.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

from tenferro import ops
from tenferro.core.bind import lift
from tenferro.core.flags import check_flag
from tenferro.core.kinds import asarray
from tenferro.core.operands import declarer
from tenferro.core.params import as_int, as_ints
from tenferro.core.primitive import register_default_rules
from tenferro.dtypes import dtype as as_dtype
from tenferro.dtypes import int64, is_complex, is_integer
from tenferro.errors import (
    ArgumentTypeError,
    AxisError,
    DTypeError,
    ParameterError,
    ScalarOverflowError,
    ShapeError,
)
from tenferro.meta import HasMeta, Meta, normalize_axes, normalize_axis
from tenferro.ops.batching import loop
from tenferro.ops.elementwise import Direction
from tenferro.typing import Scalar, TensorLike
from tidu import RuleContractError

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from tenferro.core.primitive import TensorPrimitive

T = TypeVar("T", bound=TensorLike)
"""The kind of a function's tensor operands, which it gives back: ``exp(x: T) -> T``."""

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "add_tangents",
    "apply_permutation",
    "argmax",
    "argmin",
    "argsort",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "broadcast_in_dim",
    "clamp",
    "compare",
    "complex",
    "concatenate",
    "conj",
    "constant",
    "convert_element_type",
    "cos",
    "cumprod",
    "cumsum",
    "div",
    "dot_general",
    "dynamic_slice",
    "dynamic_truncate",
    "dynamic_update_slice",
    "embed_diag",
    "erf",
    "erfc",
    "exp",
    "expm1",
    "extract_diag",
    "full",
    "full_like",
    "gather",
    "imag",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "max",
    "min",
    "mul",
    "neg",
    "no_derivative",
    "not_linear",
    "pad",
    "pad_to_match",
    "pow",
    "real",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reduce_sum_squares",
    "rem",
    "reshape",
    "rev",
    "round",
    "rsqrt",
    "scatter_add",
    "select",
    "shape_of",
    "sign",
    "sin",
    "slice",
    "sort",
    "sqrt",
    "stop_gradient",
    "sub",
    "sub_tangents",
    "tanh",
    "transpose",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]


def _unify(
    op: str, names: tuple[str, ...], same: tuple[bool, ...], spread: tuple[bool, ...], *values: Any
) -> tuple[Any, ...]:
    """The elementwise operands ``values`` (tensors, named ``names``) made to agree as
    ``jax.lax`` makes them (see :mod:`tenferro.core.operands`): weak operands of the ``same``
    group take the dtype of its strong ones when of their kind; rank-0 operands that may
    ``spread`` are broadcast to the shape of the first operand that may not (or of the
    first of rank 1 or more). Whatever still disagrees is left to the primitive, whose
    error names the shapes and dtypes."""
    metas = [v.meta for v in values]
    if (
        len({m.shape for m in metas}) == 1
        and len({m.dtype for m, g in zip(metas, same, strict=True) if g}) <= 1
    ):
        return values  # nothing to do (dtypes equal but not identical objects)
    values = tuple(lift(values))
    metas = [v.meta for v in values]
    strong = [m.dtype for m, grouped in zip(metas, same, strict=True) if grouped and not m.weak]
    fixed = [m for m, may in zip(metas, spread, strict=True) if not may]
    target = fixed[0] if fixed else next((m for m in metas if m.shape != ()), None)
    found = []
    for name, value, meta, grouped, may in zip(names, values, metas, same, spread, strict=True):
        if grouped and strong and meta.weak:
            dtype = strong[0]
            if meta.dtype != dtype and meta.dtype.kind == dtype.kind:
                _check_fits(op, name, value, dtype)
                value = convert_element_type(value, dtype)
        if may and meta.shape == () and target is not None and target.shape != ():
            value = broadcast_in_dim(value, target.shape, ())
        found.append(value)
    return tuple(found)


def _check_fits(op: str, name: str, value: Any, dtype: np.dtype[Any]) -> None:
    """A concrete weak integer operand fits the integer ``dtype`` it is converted to."""
    data = getattr(value, "_value", None)
    if dtype.kind != "i" or data is None:
        return
    info = np.iinfo(dtype)
    data = np.asarray(data).ravel()
    outside = data[(data < info.min) | (data > info.max)]
    if outside.size:
        raise ScalarOverflowError(
            op,
            f"operand {name} holds {outside[0]}, out of bounds for {dtype}, the dtype of "
            f"the other operands",
        )


takes = declarer(_unify)
"""Declares a lax function's operands (see :mod:`tenferro.core.operands`)."""


# ---------------------------------------------------------------------- arithmetic


@overload
def add(x: T, y: T | Scalar) -> T: ...
@overload
def add(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def add(x: Any, y: Any) -> Any:
    """``x + y``; ``x`` and ``y`` share shape and dtype (integer, floating or complex)."""
    return ops.Add.bind(x, y)


@overload
def sub(x: T, y: T | Scalar) -> T: ...
@overload
def sub(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def sub(x: Any, y: Any) -> Any:
    """``x - y``; ``x`` and ``y`` share shape and dtype (integer, floating or complex)."""
    return ops.Sub.bind(x, y)


@overload
def mul(x: T, y: T | Scalar) -> T: ...
@overload
def mul(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def mul(x: Any, y: Any) -> Any:
    """``x * y``; ``x`` and ``y`` share shape and dtype (integer, floating or complex)."""
    return ops.Mul.bind(x, y)


@overload
def div(x: T, y: T | Scalar) -> T: ...
@overload
def div(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def div(x: Any, y: Any) -> Any:
    """``x / y``; one shape and dtype; integers truncate toward zero, a zero divisor raises."""
    return ops.Div.bind(x, y)


@overload
def rem(x: T, y: T | Scalar) -> T: ...
@overload
def rem(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def rem(x: Any, y: Any) -> Any:
    """``fmod(x, y)``: the remainder with the sign of ``x``; one integer or floating dtype."""
    return ops.Rem.bind(x, y)


@takes("x")
def neg(x: T) -> T:
    """``-x``."""
    return ops.Neg.bind(x)


@takes("x")
def abs(x: T) -> T:
    """``|x|``; a complex ``x`` gives its real dtype's modulus."""
    return ops.Abs.bind(x)


@takes("x")
def sign(x: T) -> T:
    """-1, 0 or 1 by the sign of ``x`` (complex: ``x / |x|``, 0 at 0); zero derivative."""
    return ops.Sign.bind(x)


@takes("x")
def round(x: T, method: str) -> T:
    """Floating ``x`` rounded by ``method``: floor, ceil, trunc or nearest_even."""
    return ops.Round.bind(x, method=method)


@takes("x")
def stop_gradient(x: T) -> T:
    """``x``, with a zero derivative by contract (every mode, every order)."""
    return ops.StopGradient.bind(x)


@overload
def max(x: T, y: T | Scalar) -> T: ...
@overload
def max(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def max(x: Any, y: Any) -> Any:
    """Elementwise maximum of real ``x`` and ``y`` (one shape and dtype); ties split the
    derivative in half."""
    return ops.Maximum.bind(x, y)


@overload
def min(x: T, y: T | Scalar) -> T: ...
@overload
def min(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def min(x: Any, y: Any) -> Any:
    """Elementwise minimum of real ``x`` and ``y`` (one shape and dtype); ties split the
    derivative in half."""
    return ops.Minimum.bind(x, y)


@overload
def clamp(lower: T | Scalar, x: T, upper: T | Scalar) -> T: ...
@overload
def clamp(lower: Any, x: Any, upper: Any) -> Any: ...
@takes("lower", "x", "upper", elementwise=("lower", "x", "upper"), scalars=("lower", "upper"))
def clamp(lower: Any, x: Any, upper: Any) -> Any:
    """``min(max(x, lower), upper)`` of real values of one dtype, in ``jax.lax.clamp``'s
    order (bounds around the operand); a bound has ``x``'s shape or is rank-0."""
    return ops.Clamp.bind(x, lower, upper)


# ---------------------------------------------------------------------- analytic functions


@takes("x")
def exp(x: T) -> T:
    """``e ** x`` of floating or complex ``x``."""
    return ops.Exp.bind(x)


@takes("x")
def log(x: T) -> T:
    """The natural logarithm (principal branch for complex) of floating or complex ``x``."""
    return ops.Log.bind(x)


@takes("x")
def sin(x: T) -> T:
    """``sin(x)`` of floating or complex ``x``."""
    return ops.Sin.bind(x)


@takes("x")
def cos(x: T) -> T:
    """``cos(x)`` of floating or complex ``x``."""
    return ops.Cos.bind(x)


@takes("x")
def tanh(x: T) -> T:
    """``tanh(x)`` of floating or complex ``x``."""
    return ops.Tanh.bind(x)


@takes("x")
def asin(x: T) -> T:
    """The inverse sine (principal branch) of floating or complex ``x``."""
    return ops.Asin.bind(x)


@takes("x")
def acos(x: T) -> T:
    """The inverse cosine (principal branch) of floating or complex ``x``."""
    return ops.Acos.bind(x)


@takes("x")
def atan(x: T) -> T:
    """The inverse tangent (principal branch) of floating or complex ``x``."""
    return ops.Atan.bind(x)


@takes("x")
def asinh(x: T) -> T:
    """The inverse hyperbolic sine (principal branch) of floating or complex ``x``."""
    return ops.Asinh.bind(x)


@takes("x")
def acosh(x: T) -> T:
    """The inverse hyperbolic cosine (principal branch) of floating or complex ``x``."""
    return ops.Acosh.bind(x)


@takes("x")
def atanh(x: T) -> T:
    """The inverse hyperbolic tangent (principal branch) of floating or complex ``x``."""
    return ops.Atanh.bind(x)


@overload
def atan2(y: T, x: T | Scalar) -> T: ...
@overload
def atan2(y: Scalar, x: T) -> T: ...
@takes("y", "x", elementwise=("y", "x"))
def atan2(y: Any, x: Any) -> Any:
    """The angle of the point ``(x, y)``, in ``[-pi, pi]``, of real ``y`` and ``x`` (one
    shape and dtype)."""
    return ops.Atan2.bind(y, x)


@takes("x")
def sqrt(x: T) -> T:
    """The (principal) square root of floating or complex ``x``."""
    return ops.Sqrt.bind(x)


@takes("x")
def rsqrt(x: T) -> T:
    """``1 / sqrt(x)`` of floating or complex ``x``."""
    return ops.Rsqrt.bind(x)


@takes("x")
def expm1(x: T) -> T:
    """``exp(x) - 1``, accurate near 0, of floating or complex ``x``."""
    return ops.Expm1.bind(x)


@takes("x")
def log1p(x: T) -> T:
    """``log(1 + x)``, accurate near 0, of floating or complex ``x``."""
    return ops.Log1p.bind(x)


@takes("x")
def log2(x: T) -> T:
    """The base-2 logarithm of floating or complex ``x`` (exact at powers of two)."""
    return ops.Log2.bind(x)


@takes("x")
def log10(x: T) -> T:
    """The base-10 logarithm of floating or complex ``x`` (exact at powers of ten)."""
    return ops.Log10.bind(x)


@takes("x")
def erf(x: T) -> T:
    """The error function of floating or complex ``x``."""
    return ops.Erf.bind(x)


@takes("x")
def erfc(x: T) -> T:
    """The complementary error function ``1 - erf(x)``, accurate for large ``x``."""
    return ops.Erfc.bind(x)


@overload
def pow(x: T, y: T | Scalar) -> T: ...
@overload
def pow(x: Scalar, y: T) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def pow(x: Any, y: Any) -> Any:
    """``x ** y`` of one shape and dtype, or (as in ``jax.lax``) of a floating or complex
    ``x`` and an integer ``y``, taken in ``x``'s dtype; integers take non-negative
    exponents only."""
    if y.meta.dtype.kind == "i" and x.meta.dtype.kind in "fc":
        y = convert_element_type(y, x.meta.dtype, y.meta.weak)
    return ops.Pow.bind(x, y)


# ---------------------------------------------------------------------- comparison and selection


@overload
def compare(x: T, y: T | Scalar, direction: Direction) -> T: ...
@overload
def compare(x: Scalar, y: T, direction: Direction) -> T: ...
@takes("x", "y", elementwise=("x", "y"))
def compare(x: Any, y: Any, direction: Direction) -> Any:
    """Bool ``x <direction> y`` (eq, ne, lt, le, gt, ge) of one shape and dtype; complex
    values compare only for eq and ne."""
    return ops.Compare.bind(x, y, direction=direction)


@overload
def select(pred: TensorLike | bool, on_true: T, on_false: T | Scalar) -> T: ...
@overload
def select(pred: TensorLike | bool, on_true: Scalar, on_false: T) -> T: ...
@takes("pred", "on_true", "on_false", elementwise=("on_true", "on_false"), scalars=("pred",))
def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where the bool ``pred`` holds, else ``on_false``: the cases share one
    shape and dtype; ``pred`` has their shape or is rank-0 (one choice for all)."""
    return ops.Select.bind(pred, on_true, on_false)


# ---------------------------------------------------------------------- complex parts


@takes("x")
def conj(x: T) -> T:
    """The complex conjugate; ``x`` itself (no operation) for real values."""
    if not is_complex(x.meta.dtype):
        return x
    return ops.Conj.bind(x)


@takes("x")
def real(x: T) -> T:
    """The real part of complex ``x``, in the matching real dtype."""
    return ops.Real.bind(x)


@takes("x")
def imag(x: T) -> T:
    """The imaginary part of complex ``x``, in the matching real dtype."""
    return ops.Imag.bind(x)


@overload
def complex(re: T, im: T | Scalar) -> T: ...
@overload
def complex(re: Scalar, im: T) -> T: ...
@takes("re", "im", elementwise=("re", "im"))
def complex(re: Any, im: Any) -> Any:
    """``re + i im`` from two floating values of one shape and dtype."""
    return ops.Complex.bind(re, im)


# ---------------------------------------------------------------------- reductions


def _reduced_axes(x: Any, axes: Sequence[int], op: str) -> tuple[int, ...]:
    return tuple(sorted(normalize_axes(axes, x.meta.ndim, op)))


@takes("x")
def reduce_sum(x: T, axes: Sequence[int]) -> T:
    """The sum over ``axes`` (unique, negative counted from the end), which are dropped.
    A data-dependent axis summed over is first padded with zeros to its static bound."""
    reduced = _reduced_axes(x, axes, "reduce_sum")
    for axis in x.meta.dynamic:
        if axis in reduced:
            bound = Meta((x.meta.shape[axis],) + (1,) * (x.meta.ndim - 1), x.meta.dtype)
            reference = transpose(full(bound, 0, x), _moved(x.meta.ndim, axis))
            x = pad_to_match(x, reference, axis)
    return ops.ReduceSum.bind(x, axes=reduced)


def _moved(ndim: int, axis: int) -> tuple[int, ...]:
    """The permutation that moves axis 0 to ``axis``."""
    order = list(range(1, ndim))
    order.insert(axis, 0)
    return tuple(order)


@takes("x")
def reduce_sum_squares(x: T, axes: Sequence[int]) -> T:
    """The sum of squares of floating ``x`` over ``axes``, which are dropped."""
    return ops.ReduceSumSquares.bind(x, axes=_reduced_axes(x, axes, "reduce_sum_squares"))


@takes("x")
def reduce_prod(x: T, axes: Sequence[int]) -> T:
    """The product over ``axes``, which are dropped."""
    return ops.ReduceProd.bind(x, axes=_reduced_axes(x, axes, "reduce_prod"))


@takes("x")
def reduce_max(x: T, axes: Sequence[int]) -> T:
    """The maximum of real ``x`` over ``axes`` (dropped); ties share the derivative equally."""
    return ops.ReduceMax.bind(x, axes=_reduced_axes(x, axes, "reduce_max"))


@takes("x")
def reduce_min(x: T, axes: Sequence[int]) -> T:
    """The minimum of real ``x`` over ``axes`` (dropped); ties share the derivative equally."""
    return ops.ReduceMin.bind(x, axes=_reduced_axes(x, axes, "reduce_min"))


# ---------------------------------------------------------------------- scans and ordering


def _axis(x: Any, axis: int, op: str) -> int:
    if x.meta.ndim == 0:
        raise AxisError(op, f"needs an axis; the operand {x.meta.describe()} has none")
    return normalize_axis(axis, x.meta.ndim, op)


@takes("x")
def cumsum(x: T, axis: int, reverse: bool = False) -> T:
    """The inclusive cumulative sum along ``axis`` (from the end when ``reverse``)."""
    flag = check_flag("cumsum", "reverse", reverse)
    return ops.Cumsum.bind(x, axis=_axis(x, axis, "cumsum"), reverse=flag)


@takes("x")
def cumprod(x: T, axis: int, reverse: bool = False) -> T:
    """The inclusive cumulative product along ``axis``; its derivative is exact at zeros."""
    flag = check_flag("cumprod", "reverse", reverse)
    return ops.Cumprod.bind(x, axis=_axis(x, axis, "cumprod"), reverse=flag)


@takes("x")
def sort(x: T, axis: int, descending: bool = False) -> T:
    """``x`` sorted along ``axis`` (stable; NaNs last ascending)."""
    flag = check_flag("sort", "descending", descending)
    return ops.Sort.bind(x, axis=_axis(x, axis, "sort"), descending=flag)


@takes("x")
def argsort(x: T, axis: int, descending: bool = False) -> T:
    """The int64 indices of the stable sort of ``x`` along ``axis``."""
    flag = check_flag("argsort", "descending", descending)
    return ops.Argsort.bind(x, axis=_axis(x, axis, "argsort"), descending=flag)


@takes("x")
def argmax(x: T, axis: int) -> T:
    """The int64 index of the first maximum along ``axis`` (dropped)."""
    return ops.ArgMax.bind(x, axis=_axis(x, axis, "argmax"))


@takes("x")
def argmin(x: T, axis: int) -> T:
    """The int64 index of the first minimum along ``axis`` (dropped)."""
    return ops.ArgMin.bind(x, axis=_axis(x, axis, "argmin"))


@takes("x", "permutation")
def apply_permutation(x: T, permutation: TensorLike, axis: int) -> T:
    """``take_along_axis(x, permutation, axis)`` for a ``permutation`` along ``axis`` (as
    ``argsort`` gives); linear in ``x``, transposed by the inverse permutation."""
    return ops.ApplyPermutation.bind(x, permutation, axis=_axis(x, axis, "apply_permutation"))


# ---------------------------------------------------------------------- structural


@takes("x")
def transpose(x: T, permutation: Sequence[int]) -> T:
    """Permute axes: output axis ``i`` is axis ``permutation[i]`` of ``x``."""
    perm = as_ints("transpose", "permutation", permutation, x.meta.ndim, AxisError)
    if perm == tuple(range(len(perm))) and len(perm) == x.meta.ndim:
        return x
    return ops.Transpose.bind(x, permutation=perm)


@takes("x")
def reshape(x: T, shape: Sequence[int]) -> T:
    """The elements of ``x`` in row-major (C) order, in ``shape`` (same size)."""
    target = as_ints("reshape", "shape", shape)
    if target == x.meta.shape and not x.meta.dynamic:
        return x
    return ops.Reshape.bind(x, shape=target)


@takes("x")
def broadcast_in_dim(x: T, shape: Sequence[int], dims: Sequence[int]) -> T:
    """``x`` broadcast to ``shape``: its axis ``j`` becomes axis ``dims[j]`` (extent equal,
    or 1 to expand), the other axes repeat it."""
    target = as_ints("broadcast_in_dim", "shape", shape)
    positions = as_ints("broadcast_in_dim", "dims", dims, x.meta.ndim, AxisError)
    if target == x.meta.shape and positions == tuple(range(len(target))) and not x.meta.dynamic:
        return x
    return ops.BroadcastInDim.bind(x, shape=target, dims=positions)


@takes("x")
def convert_element_type(x: T, dtype: DTypeLike, weak_type: bool = False) -> T:
    """``x`` cast to ``dtype`` (complex to real keeps the real part; to bool is ``!= 0``);
    ``weak_type``: the result is weak (a Python scalar promoted with another one)."""
    weak = weak_type is not False and check_flag("convert_element_type", "weak_type", weak_type)
    target = as_dtype(dtype, "convert")
    if target == x.meta.dtype:
        return x
    return (
        ops.Convert.bind(x, dtype=target, weak=True) if weak else ops.Convert.bind(x, dtype=target)
    )


@takes("x")
def extract_diag(x: T, axis_a: int, axis_b: int) -> T:
    """The diagonal between ``axis_a`` and ``axis_b``: ``axis_b`` is dropped and the
    diagonal (the shorter extent) takes ``axis_a``'s place."""
    return ops.ExtractDiag.bind(
        x,
        axis_a=as_int("extract_diag", "axis_a", axis_a, AxisError),
        axis_b=as_int("extract_diag", "axis_b", axis_b, AxisError),
    )


@takes("x")
def embed_diag(x: T, axis_a: int, axis_b: int) -> T:
    """A new output axis ``axis_b`` as long as ``axis_a``, with ``x`` on the diagonal of
    the two and zeros elsewhere (the inverse of ``extract_diag``)."""
    return ops.EmbedDiag.bind(
        x,
        axis_a=as_int("embed_diag", "axis_a", axis_a, AxisError),
        axis_b=as_int("embed_diag", "axis_b", axis_b, AxisError),
    )


@takes("x")
def tril(x: T, k: int = 0) -> T:
    """The lower triangle of the last two axes (column - row <= ``k``), zeros above."""
    return ops.Tril.bind(x, k=_diagonal("tril", x, k))


@takes("x")
def triu(x: T, k: int = 0) -> T:
    """The upper triangle of the last two axes (column - row >= ``k``), zeros below."""
    return ops.Triu.bind(x, k=_diagonal("triu", x, k))


def _diagonal(op: str, x: Any, k: Any) -> int:
    """``k`` read as an integer, limited to ``[-rows, columns]`` (beyond, every diagonal
    is on one side: the same triangle, and no integer too large for numpy's kernels)."""
    diagonal = as_int(op, "k", k)
    shape: tuple[int, ...] = x.meta.shape
    if len(shape) < 2:
        return diagonal
    return builtins.min(builtins.max(diagonal, -shape[-2]), shape[-1])


@takes("x")
def rev(x: T, axes: Sequence[int]) -> T:
    """``x`` with the order of elements along ``axes`` reversed."""
    normalized = tuple(sorted(normalize_axes(axes, x.meta.ndim, "rev")))
    if not normalized:
        return x
    return ops.Reverse.bind(x, axes=normalized)


# ---------------------------------------------------------------------- indexing


@takes("x")
def slice(
    x: T, starts: Sequence[int], limits: Sequence[int], strides: Sequence[int] | None = None
) -> T:
    """``x[starts[i]:limits[i]:strides[i]]`` on every axis (static bounds, positive strides)."""
    ndim = x.meta.ndim
    starts_t = as_ints("slice", "starts", starts, ndim)
    limits_t = as_ints("slice", "limits", limits, ndim)
    strides_t = as_ints("slice", "strides", strides, ndim) if strides is not None else (1,) * ndim
    if (
        starts_t == (0,) * x.meta.ndim
        and limits_t == x.meta.shape
        and strides_t == (1,) * x.meta.ndim
    ):
        return x
    return ops.Slice.bind(x, starts=starts_t, limits=limits_t, strides=strides_t)


@takes("x")
def pad(x: T, low: Sequence[int], high: Sequence[int], interior: Sequence[int]) -> T:
    """Zero padding: ``low`` and ``high`` per axis (negative crops), ``interior`` zeros
    between neighbouring elements."""
    ndim = x.meta.ndim
    config = (
        as_ints("pad", "low", low, ndim),
        as_ints("pad", "high", high, ndim),
        as_ints("pad", "interior", interior, ndim),
    )
    if all(v == 0 for part in config for v in part):
        return x
    return ops.Pad.bind(x, low=config[0], high=config[1], interior=config[2])


@takes("operands[]")
def concatenate(operands: Sequence[T], axis: int) -> T:
    """The operands joined along ``axis`` (one dtype; other extents equal)."""
    position = as_int("concatenate", "axis", axis, AxisError)
    if not operands:
        raise ShapeError("concatenate", "needs at least one operand")
    if len(operands) == 1:
        ndim = operands[0].meta.ndim
        if not 0 <= position < ndim:
            raise AxisError("concatenate", f"axis {position} invalid for operands of rank {ndim}")
        return operands[0]
    return ops.Concatenate.bind(*operands, axis=position)


@takes("x")
def dynamic_slice(x: T, starts: Any, sizes: Sequence[int]) -> T:
    """The ``sizes`` window of ``x`` at ``starts``, clamped to fit: ``starts`` is a rank-1
    integer tensor or array, or (as in ``jax.lax``) a sequence of scalar integers."""
    sizes_t = as_ints("dynamic_slice", "slice sizes", sizes, x.meta.ndim)
    return ops.DynamicSlice.bind(x, _start_indices("dynamic_slice", starts, x), sizes=sizes_t)


@takes("x", "update")
def dynamic_update_slice(x: T, update: T, starts: Any) -> T:
    """A copy of ``x`` with ``update`` written at ``starts`` (as for :func:`dynamic_slice`),
    clamped to fit."""
    return ops.DynamicUpdateSlice.bind(x, update, _start_indices("dynamic_update_slice", starts, x))


def _start_indices(op: str, starts: Any, x: Any) -> Any:
    """``jax.lax``'s start indices as one rank-1 integer operand: a tensor as it is (its
    dtype and shape are the primitive's to check), integers (a sequence or a 1-d integer
    array) as an int64 array, a sequence holding integer scalar tensors as their
    concatenation."""
    if isinstance(starts, HasMeta):
        return starts
    if isinstance(starts, np.ndarray) or not any(isinstance(s, HasMeta) for s in _items(starts)):
        values = as_ints(op, "start indices", starts, x.meta.ndim)
        clamped = [_fit(v, n) for v, n in zip(values, x.meta.shape, strict=True)]
        return asarray(np.array(clamped, dtype=np.int64), op=op)
    ndim = x.meta.ndim
    tensors = [s for s in starts if isinstance(s, HasMeta)]
    if len(starts) != ndim:
        raise ShapeError(op, f"{len(starts)} start indices for the rank-{ndim} operand")
    pieces = []
    for position, start in enumerate(starts):
        if isinstance(start, HasMeta):
            if start.meta.shape != () or not is_integer(start.meta.dtype):
                shown = start.meta.describe()
                raise DTypeError(
                    op, f"start index {position} must be an integer scalar, got {shown}"
                )
            scalar = convert_element_type(start, int64)
        else:
            index = as_int(op, f"start index {position}", start, ShapeError)
            scalar = full(Meta((), int64), _fit(index, x.meta.shape[position]), tensors[0])
        pieces.append(reshape(scalar, (1,)))
    return concatenate(pieces, 0)


def _fit(start: int, extent: int) -> int:
    """A Python start index limited to ``[0, extent]``: the primitive clamps starts into
    that range anyway (``jax.lax``'s rule), and int64 then holds every one."""
    return builtins.min(builtins.max(start, 0), extent)


def _items(starts: Any) -> Sequence[Any]:
    """The entries of a list or tuple of start indices (none for anything else)."""
    return starts if isinstance(starts, (list, tuple)) else ()


@takes("operand", "indices")
def gather(
    operand: T,
    indices: TensorLike,
    *,
    offset_dims: Sequence[int],
    collapsed_slice_dims: Sequence[int],
    start_index_map: Sequence[int],
    index_vector_dim: int,
    slice_sizes: Sequence[int],
) -> T:
    """StableHLO gather (``jax.lax.gather`` dimension numbers); start indices are clamped
    so that the slices fit."""
    return ops.Gather.bind(
        operand,
        indices,
        offset_dims=as_ints("gather", "offset_dims", offset_dims, error=AxisError),
        collapsed_slice_dims=as_ints(
            "gather", "collapsed_slice_dims", collapsed_slice_dims, error=AxisError
        ),
        start_index_map=as_ints("gather", "start_index_map", start_index_map, error=AxisError),
        index_vector_dim=as_int("gather", "index_vector_dim", index_vector_dim, AxisError),
        slice_sizes=as_ints("gather", "slice_sizes", slice_sizes, operand.meta.ndim),
    )


@takes("operand", "indices", "updates")
def scatter_add(
    operand: T,
    indices: TensorLike,
    updates: T,
    *,
    update_window_dims: Sequence[int],
    inserted_window_dims: Sequence[int],
    scatter_dims_to_operand_dims: Sequence[int],
    index_vector_dim: int,
) -> T:
    """StableHLO scatter with addition: ``operand`` plus ``updates`` added at the windows
    ``indices`` select (``jax.lax.scatter_add`` dimension numbers); windows out of bounds
    are dropped."""
    return ops.Scatter.bind(
        operand,
        indices,
        updates,
        update_window_dims=as_ints(
            "scatter_add", "update_window_dims", update_window_dims, error=AxisError
        ),
        inserted_window_dims=as_ints(
            "scatter_add", "inserted_window_dims", inserted_window_dims, error=AxisError
        ),
        scatter_dims_to_operand_dims=as_ints(
            "scatter_add",
            "scatter_dims_to_operand_dims",
            scatter_dims_to_operand_dims,
            error=AxisError,
        ),
        index_vector_dim=as_int("scatter_add", "index_vector_dim", index_vector_dim, AxisError),
    )


# ---------------------------------------------------------------------- contraction


@takes("lhs", "rhs")
def dot_general(
    lhs: T,
    rhs: T,
    lhs_contracting: Sequence[int],
    rhs_contracting: Sequence[int],
    lhs_batch: Sequence[int] = (),
    rhs_batch: Sequence[int] = (),
) -> T:
    """Contract ``lhs_contracting[i]`` with ``rhs_contracting[i]`` and pair the batch axes
    (one dtype, no conjugation); the output axes are the batch axes, then the free axes of
    ``lhs``, then those of ``rhs``."""
    return ops.DotGeneral.bind(
        lhs,
        rhs,
        lhs_contracting=as_ints("dot_general", "lhs_contracting", lhs_contracting, error=AxisError),
        rhs_contracting=as_ints("dot_general", "rhs_contracting", rhs_contracting, error=AxisError),
        lhs_batch=as_ints("dot_general", "lhs_batch", lhs_batch, error=AxisError),
        rhs_batch=as_ints("dot_general", "rhs_batch", rhs_batch, error=AxisError),
    )


# ---------------------------------------------------------------------- constants, dynamic shapes


@takes("like")
def constant(value: Any, dtype: DTypeLike, like: T) -> T:
    """A rank-0 constant of ``dtype``, of the same tensor kind (and rule) as ``like``."""
    target = as_dtype(dtype, "constant")
    try:
        bits = np.asarray(value, dtype=target).tobytes()
    except (TypeError, ValueError, OverflowError):
        raise ParameterError("constant", f"value {value!r} is not a {target} scalar") from None
    return ops.Constant.bind(like=like, dtype=target, bits=bits)


@takes("x")
def shape_of(x: T, axis: int) -> T:
    """The runtime extent of ``x`` along ``axis`` (non-negative) as a float64 scalar; not
    differentiable."""
    return ops.ShapeOf.bind(x, axis=as_int("shape_of", "axis", axis, AxisError))


@takes("x", "size")
def dynamic_truncate(x: T, size: TensorLike, axis: int) -> T:
    """The prefix of length ``size`` (a real scalar, rounded and clamped to the extent)
    along ``axis``, which becomes data-dependent."""
    return ops.DynamicTruncate.bind(
        x, size, axis=as_int("dynamic_truncate", "axis", axis, AxisError)
    )


@takes("x", "reference")
def pad_to_match(x: T, reference: TensorLike, axis: int) -> T:
    """``x`` zero-padded at the end of ``axis`` to ``reference``'s (static) extent there."""
    return ops.PadToMatch.bind(x, reference, axis=as_int("pad_to_match", "axis", axis, AxisError))


@takes()
def no_derivative(operation: str, slot: int, tangent: T, result: Meta, reason: str) -> T:
    """In a JVP rule: the tangent of output ``slot`` of ``operation`` (meta ``result``),
    which has no derivative for ``reason``; ``tangent`` is any tangent of the rule's inputs.
    Evaluating or transposing it raises :class:`tidu.ADRuleError`."""
    return ops.NoDerivative.bind(
        tangent,
        operation=operation,
        slot=as_int("no_derivative", "slot", slot),
        result=result,
        reason=reason,
    )


# ---------------------------------------------------------------------- compositions


@takes("like")
def full(meta: Meta, value: Any, like: T) -> T:
    """A value of ``meta``'s shape and dtype filled with ``value`` (kind taken from ``like``).

    Data-dependent axes of ``meta`` take their runtime extent from ``like``.
    """
    _check_meta("full", meta)
    filled = broadcast_in_dim(constant(value, meta.dtype, like), meta.shape, ())
    for axis in meta.dynamic:
        filled = dynamic_truncate(filled, shape_of(like, axis), axis)
    return filled


@takes("x")
def full_like(x: T, value: Any) -> T:
    """``x``'s shape and dtype filled with ``value``."""
    return full(x.meta, value, x)


@takes("like")
def zeros(meta: Meta, like: T) -> T:
    """Zeros of ``meta``'s shape and dtype (kind taken from ``like``)."""
    _check_meta("zeros", meta)
    return full(meta, 0, like)


def _check_meta(op: str, meta: Any) -> None:
    if not isinstance(meta, Meta):
        raise ArgumentTypeError(
            op, f"meta must be a tenferro Meta (shape and dtype), got {type(meta).__name__}"
        )


@takes("x")
def zeros_like(x: T) -> T:
    """Zeros of ``x``'s shape and dtype."""
    return full(x.meta, 0, x)


@overload
def add_tangents(a: T, b: T | None) -> T: ...
@overload
def add_tangents(a: None, b: T) -> T: ...
@overload
def add_tangents(a: T | None, b: T | None) -> T | None: ...
@takes()
def add_tangents(a: T | None, b: T | None) -> T | None:
    """``a + b`` where ``None`` is a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


@overload
def sub_tangents(a: T, b: T | None) -> T: ...
@overload
def sub_tangents(a: None, b: T) -> T: ...
@overload
def sub_tangents(a: T | None, b: T | None) -> T | None: ...
@takes()
def sub_tangents(a: T | None, b: T | None) -> T | None:
    """``a - b`` where ``None`` is a symbolic zero."""
    if b is None:
        return a
    if a is None:
        return neg(b)
    return sub(a, b)


@overload
def logical_and(a: T, b: T | Scalar) -> T: ...
@overload
def logical_and(a: Scalar, b: T) -> T: ...
@takes("a", "b", elementwise=("a", "b"))
def logical_and(a: Any, b: Any) -> Any:
    """``a and b`` of bool values."""
    _check_bool("logical_and", a, b)
    return select(a, b, zeros_like(b))


@overload
def logical_or(a: T, b: T | Scalar) -> T: ...
@overload
def logical_or(a: Scalar, b: T) -> T: ...
@takes("a", "b", elementwise=("a", "b"))
def logical_or(a: Any, b: Any) -> Any:
    """``a or b`` of bool values."""
    _check_bool("logical_or", a, b)
    return select(a, full_like(a, True), b)


@takes("a")
def logical_not(a: T) -> T:
    """``not a`` of bool values."""
    _check_bool("logical_not", a)
    return compare(a, zeros_like(a), "eq")


def _check_bool(op: str, *operands: Any) -> None:
    dtypes = [o.meta.dtype for o in operands]
    if any(d.kind != "b" for d in dtypes):
        raise DTypeError(op, f"operands must be bool, got {', '.join(map(str, dtypes))}")


@takes()
def not_linear(primitive: TensorPrimitive, what: str) -> RuleContractError:
    """The error for a transpose asked of a primitive used non-linearly."""
    return RuleContractError(
        f"{primitive.name} is not linear in {what}; it cannot be transposed so"
    )


# The base class of primitives writes its default rules (the JVP of a linear primitive,
# the batching loop) with these; it sits below this module, so they are given to it here.
register_default_rules(zeros_like=zeros_like, loop=loop)
