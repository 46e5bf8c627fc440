"""Elementwise primitives: arithmetic, comparison, selection, complex parts.

Operands of one primitive share one shape and dtype (the numpy-style surface
inserts the broadcasts and conversions). Tie and boundary rules: maximum/minimum
split ties in half; clamp uses strict masks (exact ties give zero); abs'(0) = 0;
sign' = 0; comparisons are not differentiable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from tenferro import algebra, lax
from tenferro.core.checks import check_kind, check_same
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.dtypes import bool_, complex_dtype, is_complex, real_dtype
from tenferro.errors import DTypeError, ExecutionError, ParameterError, ShapeError
from tenferro.meta import Meta
from tenferro.ops.batching import elementwise

__all__ = [
    "Abs",
    "Add",
    "Compare",
    "Complex",
    "Conj",
    "Div",
    "Imag",
    "Maximum",
    "Minimum",
    "Mul",
    "Neg",
    "Real",
    "Rem",
    "Round",
    "Select",
    "Sign",
    "Sub",
]


class Elementwise(TensorPrimitive):
    """Shape rule shared by elementwise primitives: one shape and dtype in, same shape out."""

    __slots__ = ()
    kinds: ClassVar[str] = "ifc"

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return dtype

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        return elementwise(self, xs, dims)

    def infer(self) -> tuple[Meta]:
        meta = check_same(self.name, self.inputs)
        check_kind(self.name, meta, self.kinds)
        weak = all(m.weak for m in self.inputs)
        return (Meta(meta.shape, self.result_dtype(meta.dtype), weak, meta.dynamic),)


# ---------------------------------------------------------------------- arithmetic


@primitive
class Add(Elementwise):
    conj_commutes = True
    name = "add"
    linear = True

    ufunc = np.add
    lax_name = "add"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.add_tangents(ts[0], ts[1])]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [cts[0] if is_active else None for is_active in active]


@primitive
class Sub(Elementwise):
    conj_commutes = True
    name = "sub"
    linear = True

    ufunc = np.subtract
    lax_name = "sub"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        dx, dy = ts
        if dy is None:
            return [dx]
        return [lax.neg(dy) if dx is None else lax.sub(dx, dy)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        return [ct if active[0] else None, lax.neg(ct) if active[1] else None]


@primitive
class Mul(Elementwise):
    conj_commutes = True
    name = "mul"

    ufunc = np.multiply
    lax_name = "mul"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x, y), (dx, dy) = xs, ts
        return [algebra.bilinear(lax.mul, x, y, dx, dy)]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        x, y = xs
        if active[0] and active[1]:
            raise lax.not_linear(self, "both operands")
        return [
            lax.mul(ct, lax.conj(y)) if active[0] else None,
            lax.mul(lax.conj(x), ct) if active[1] else None,
        ]


@primitive
class Neg(Elementwise):
    conj_commutes = True
    name = "neg"
    linear = True

    ufunc = np.negative
    lax_name = "neg"

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.neg(present(cts[0]))]


@primitive
class Conj(Elementwise):
    """Complex conjugate: real-linear (its transpose is itself)."""

    name = "conj"
    linear = True

    ufunc = np.conj

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.conj(x) if is_complex(self.inputs[0].dtype) else x  # lax's would be complex

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        return [lax.conj(present(cts[0]))]


@primitive
class Div(Elementwise):
    """``x / y``; on integers it truncates toward zero (StableHLO) and rejects zero divisors."""

    name = "div"
    extent_generic = True  # elementwise, without a ufunc (integer division checks zeros)
    lax_name = "div"  # truncates integers; XLA gives -1 for an integer division by zero

    def impl(self, x: Any, y: Any) -> Any:
        if self.inputs[0].dtype.kind == "i":
            return _integer_divide(self.name, x, y)
        return np.true_divide(x, y)

    def kernel(self) -> Any:
        return self.impl if self.inputs[0].dtype.kind == "i" else np.true_divide

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        _, y = xs
        (z,) = ys
        dx, dy = ts
        return [
            lax.sub_tangents(
                None if dx is None else lax.div(dx, y),
                None if dy is None else lax.mul(dy, lax.div(z, y)),
            )
        ]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        if active[1]:
            raise lax.not_linear(self, "its denominator")
        ct = present(*cts)
        return [lax.div(ct, lax.conj(xs[1])), None]


def _integer_divide(op: str, x: Any, y: Any) -> Any:
    y = np.asarray(y)
    if np.any(y == 0):
        raise ExecutionError(op, "integer division by zero")
    x = np.asarray(x)
    quotient = np.floor_divide(x, y)
    # floor -> truncation: one up where the signs differ and the division is inexact
    adjust = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return (quotient + adjust).astype(x.dtype)


@primitive
class Rem(Elementwise):
    """Remainder with the sign of the dividend (C fmod; StableHLO ``remainder``).

    Its derivative is the a.e. one: ``dx - trunc(x / y) dy``.
    """

    name = "rem"
    kinds = "if"
    lax_name = "rem"  # C fmod: the sign of the dividend

    def impl(self, x: Any, y: Any) -> Any:
        if self.inputs[0].dtype.kind == "i" and np.any(np.asarray(y) == 0):
            raise ExecutionError(self.name, "integer remainder by zero")
        return np.fmod(x, y)

    def kernel(self) -> Any:
        return self.impl if self.inputs[0].dtype.kind == "i" else np.fmod

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, y = xs
        (z,) = ys
        dx, dy = ts
        # trunc(x / y): (x - z) / y is within rounding of that integer; rounding it makes
        # the quotient exact and, being piecewise constant, free of derivatives.
        quotient = lax.round(lax.div(lax.sub(x, z), y), "nearest_even")
        return [lax.sub_tangents(dx, None if dy is None else lax.mul(dy, quotient))]


@primitive
class Abs(Elementwise):
    """``|x|``; complex input gives a real output. Derivative sign(x) (0 at 0)."""

    name = "abs"

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return real_dtype(dtype) if is_complex(dtype) else dtype

    ufunc = np.abs
    lax_name = "abs"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,), (y,), (dx,) = xs, ys, ts
        assert dx is not None
        if is_complex(x.dtype):
            # conj(x)/|x| rather than conj(sign(x)): Sign's derivative is zero by contract,
            # and this coefficient must be differentiable for second order to be right.
            magnitude = lax.convert_element_type(y, x.dtype)
            safe = lax.select(
                lax.compare(magnitude, lax.zeros_like(magnitude), "eq"),
                lax.full_like(magnitude, 1),
                magnitude,
            )
            return [lax.real(lax.mul(lax.div(lax.conj(x), safe), dx))]
        return [lax.mul(lax.sign(x), dx)]


_ROUNDING = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "nearest_even": np.rint}


@primitive
class Round(Elementwise):
    """Round to an integral value: ``floor``, ``ceil``, ``trunc`` or ``nearest_even``.

    Piecewise constant, so its derivative is zero (no tangent)."""

    name = "round"
    kinds = "f"
    method: Literal["floor", "ceil", "trunc", "nearest_even"]

    def infer(self) -> tuple[Meta]:
        if self.method not in _ROUNDING:
            raise ParameterError(
                self.name, f"unknown method {self.method!r}; use one of {list(_ROUNDING)}"
            )
        return super().infer()

    def impl(self, x: Any) -> Any:
        return _ROUNDING[self.method](x)

    def lower(self, lo: Any, x: Any) -> Any:
        if self.method == "nearest_even":
            return lo.lax.round(x, lo.lax.RoundingMethod.TO_NEAREST_EVEN)
        if self.method == "trunc":
            return lo.jnp.trunc(x)
        return lo.lax.floor(x) if self.method == "floor" else lo.lax.ceil(x)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


@primitive
class Sign(Elementwise):
    """-1, 0, 1 (complex: ``z / |z|``, 0 at 0). Its derivative is zero."""

    lax_name = "sign"

    name = "sign"

    def impl(self, x: Any) -> Any:
        if is_complex(self.inputs[0].dtype):
            x = np.asarray(x)
            magnitude = np.abs(x)
            return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude)).astype(
                x.dtype
            )
        return np.sign(x)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


class _Extremum(Elementwise):
    """maximum / minimum over real values; ties split the derivative in half."""

    __slots__ = ()
    kinds = "if"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, y = xs
        (z,) = ys
        dx, dy = ts
        on_x = lax.convert_element_type(lax.compare(x, z, "eq"), x.dtype)
        on_y = lax.convert_element_type(lax.compare(y, z, "eq"), x.dtype)
        total = lax.add(on_x, on_y)
        return [
            lax.add_tangents(
                None if dx is None else lax.mul(dx, lax.div(on_x, total)),
                None if dy is None else lax.mul(dy, lax.div(on_y, total)),
            )
        ]


@primitive
class Maximum(_Extremum):
    name = "max"

    ufunc = np.maximum
    lax_name = "max"


@primitive
class Minimum(_Extremum):
    name = "min"

    ufunc = np.minimum
    lax_name = "min"


# ---------------------------------------------------------------------- comparison and selection

Direction = Literal["eq", "ne", "lt", "le", "gt", "ge"]
_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@primitive
class Compare(Elementwise):
    """An elementwise comparison giving bool; complex values compare only for (in)equality."""

    name = "compare"
    kinds = "bifc"
    direction: Direction

    def infer(self) -> tuple[Meta]:
        if self.direction not in _COMPARE:
            raise ParameterError(
                self.name, f"unknown direction {self.direction!r}; use one of {list(_COMPARE)}"
            )
        (meta,) = super().infer()
        if is_complex(meta.dtype) and self.direction not in ("eq", "ne"):
            raise DTypeError(self.name, f"complex values have no order ({self.direction})")
        return (meta._replace(dtype=bool_, weak=False),)

    def impl(self, x: Any, y: Any) -> Any:
        return _COMPARE[self.direction](x, y)

    def lower(self, lo: Any, x: Any, y: Any) -> Any:
        return getattr(lo.lax, self.direction)(x, y)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


@primitive
class Select(TensorPrimitive):
    """``where(pred, on_true, on_false)``; the predicate is never differentiated."""

    conj_commutes = True

    name = "select"
    extent_generic = True  # elementwise, without a ufunc
    lax_name = "select"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        return elementwise(self, xs, dims)

    def infer(self) -> tuple[Meta]:
        pred, on_true, on_false = self.inputs
        if pred.dtype != bool_:
            raise DTypeError(self.name, f"the predicate must be bool, got {pred.dtype}")
        value = check_same(self.name, (on_true, on_false), "values")
        if pred.shape != value.shape or pred.dynamic != value.dynamic:
            raise ShapeError(
                self.name,
                f"the predicate {pred.describe()} and the values {value.describe()} must have "
                f"one shape, or the predicate none (use the numpy-style where to broadcast)",
            )
        return (value._replace(weak=on_true.weak and on_false.weak),)

    def impl(self, pred: Any, on_true: Any, on_false: Any) -> Any:
        return np.where(pred, on_true, on_false)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        pred, on_true, on_false = xs
        _, dt, df = ts
        if dt is None and df is None:
            return [None]
        return [
            lax.select(
                pred,
                dt if dt is not None else lax.zeros_like(on_true),
                df if df is not None else lax.zeros_like(on_false),
            )
        ]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        pred = xs[0]
        if active[0]:
            raise lax.not_linear(self, "its predicate")
        zeros = lax.zeros_like(ct)
        return [
            None,
            lax.select(pred, ct, zeros) if active[1] else None,
            lax.select(pred, zeros, ct) if active[2] else None,
        ]


@primitive
class Clamp(TensorPrimitive):
    """``min(max(x, lower), upper)`` with strict masks:

    x active iff lower < x < upper; lower iff lower > x and lower < upper;
    upper iff upper < max(x, lower) (so with lower > upper the result, upper, gets it, as
    in jax's ``clip``). Exact ties give no derivative to anyone.
    """

    name = "clamp"

    def batch(self, xs: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], list[Any]]:
        return elementwise(self, xs, dims)

    def infer(self) -> tuple[Meta]:
        meta = check_same(self.name, self.inputs)
        check_kind(self.name, meta, "if")
        return (meta._replace(weak=all(m.weak for m in self.inputs)),)

    def impl(self, x: Any, lower: Any, upper: Any) -> Any:
        return np.minimum(np.maximum(x, lower), upper)

    def lower(self, lo: Any, x: Any, lower: Any, upper: Any) -> Any:
        return lo.lax.min(lo.lax.max(x, lower), upper)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, lower, upper = xs
        masks = (
            lax.logical_and(lax.compare(lower, x, "lt"), lax.compare(x, upper, "lt")),
            lax.logical_and(lax.compare(lower, x, "gt"), lax.compare(lower, upper, "lt")),
            lax.logical_or(lax.compare(upper, x, "lt"), lax.compare(upper, lower, "lt")),
        )
        total: RuleValue | None = None
        for mask, tangent in zip(masks, ts, strict=True):
            if tangent is not None:
                total = lax.add_tangents(total, lax.select(mask, tangent, lax.zeros_like(tangent)))
        return [total]


# ---------------------------------------------------------------------- complex parts


@primitive
class Real(Elementwise):
    """The real part of a complex value (real-linear)."""

    conj_commutes = True

    name = "real"
    kinds = "c"
    linear = True

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return real_dtype(dtype)

    ufunc = staticmethod(np.real)
    lax_name = "real"

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        return [lax.complex(ct, lax.zeros_like(ct))]


@primitive
class Imag(Elementwise):
    """The imaginary part of a complex value (real-linear)."""

    name = "imag"
    kinds = "c"
    linear = True

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return real_dtype(dtype)

    ufunc = staticmethod(np.imag)
    lax_name = "imag"

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        return [lax.complex(lax.zeros_like(ct), ct)]


@primitive
class Complex(Elementwise):
    """``re + i im`` from two real values (real-linear)."""

    name = "complex"
    kinds = "f"
    linear = True
    extent_generic = True  # elementwise, without a ufunc
    lax_name = "complex"

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return complex_dtype(dtype)

    def impl(self, re: Any, im: Any) -> Any:
        out = np.empty(np.shape(re), dtype=self.outputs[0].dtype)
        out.real = re
        out.imag = im
        return out

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        dre, dim = ts
        return [
            lax.complex(
                dre if dre is not None else lax.zeros_like(xs[0]),
                dim if dim is not None else lax.zeros_like(xs[1]),
            )
        ]

    def transpose(self, cts: Ts, xs: Xs, active: tuple[bool, ...]) -> list[RuleValue | None]:
        (ct,) = cts
        assert ct is not None
        return [lax.real(ct) if active[0] else None, lax.imag(ct) if active[1] else None]
