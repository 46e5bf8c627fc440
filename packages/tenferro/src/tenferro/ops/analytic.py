"""Analytic primitives: exp, log, log2, log10, sin, cos, tan, sinh, cosh, tanh, sqrt,
rsqrt, expm1, log1p, pow.

Holomorphic on complex inputs: the JVP multiplies by f'(x) and, through the
transpose of that multiplication, the VJP by conj(f'(x)). Coefficients are
computed from the primal input or output, reused rather than recomputed.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from tenferro import lax
from tenferro.core.primitive import primitive
from tenferro.core.rules import RuleValue, Ts, Xs, present
from tenferro.errors import ExecutionError
from tenferro.ops.elementwise import Elementwise

__all__ = [
    "Cos",
    "Cosh",
    "Exp",
    "Expm1",
    "Log",
    "Log1p",
    "Log2",
    "Log10",
    "Pow",
    "Rsqrt",
    "Sin",
    "Sinh",
    "Sqrt",
    "Tan",
    "Tanh",
]


class Analytic(Elementwise):
    """A unary holomorphic function: ``jvp = dx * coefficient(x, y)``."""

    __slots__ = ()
    kinds = "fc"

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        raise NotImplementedError

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (dx,) = ts
        assert dx is not None
        return [lax.mul(dx, self.coefficient(xs[0], ys[0]))]


@primitive
class Exp(Analytic):
    name = "exp"
    lax_name = "exp"

    ufunc = np.exp

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return y


@primitive
class Log(Analytic):
    name = "log"
    lax_name = "log"

    ufunc = np.log

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.div(present(ts[0]), xs[0])]


class _LogBase(Analytic):
    """A logarithm to a fixed base with numpy's kernel (exact at exact powers of the base:
    ``log10(1000) == 3``, unlike ``log(x) / log(10)``); derivative ``1 / (x ln base)``."""

    __slots__ = ()
    base: ClassVar[float]

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.lax.div(lo.lax.log(x), lo.lax.log(lo.full((), self.base, x.dtype)))

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,) = xs
        return [lax.div(present(ts[0]), lax.mul(x, lax.full_like(x, math.log(self.base))))]


@primitive
class Log2(_LogBase):
    name = "log2"
    base = 2.0

    ufunc = np.log2


@primitive
class Log10(_LogBase):
    name = "log10"
    base = 10.0

    ufunc = np.log10


@primitive
class Sin(Analytic):
    name = "sin"
    lax_name = "sin"

    ufunc = np.sin

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.cos(x)


@primitive
class Cos(Analytic):
    name = "cos"
    lax_name = "cos"

    ufunc = np.cos

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.neg(lax.sin(x))


@primitive
class Tan(Analytic):
    """``tan`` with numpy's kernel (finite at large imaginary parts, where ``sin / cos``
    overflows); derivative ``1 + tan(x)**2``."""

    name = "tan"

    ufunc = np.tan
    lax_name = "tan"

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.add(lax.full_like(y, 1), lax.mul(y, y))


@primitive
class Sinh(Analytic):
    """``sinh`` with numpy's kernel (accurate near 0, finite up to the overflow of the
    result, C99's special values for complex input); derivative ``cosh``."""

    name = "sinh"

    ufunc = np.sinh
    lax_name = "sinh"

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.cosh(x)


@primitive
class Cosh(Analytic):
    """``cosh`` with numpy's kernel; derivative ``sinh``."""

    name = "cosh"

    ufunc = np.cosh
    lax_name = "cosh"

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.sinh(x)


@primitive
class Tanh(Analytic):
    name = "tanh"
    lax_name = "tanh"

    ufunc = np.tanh

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.sub(lax.full_like(y, 1), lax.mul(y, y))


@primitive
class Sqrt(Analytic):
    name = "sqrt"
    lax_name = "sqrt"

    ufunc = np.sqrt

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (y,) = ys
        return [lax.div(present(ts[0]), lax.add(y, y))]


@primitive
class Rsqrt(Analytic):
    """``1 / sqrt(x)``; derivative ``-y / (2 x)``."""

    name = "rsqrt"
    lax_name = "rsqrt"

    def impl(self, x: Any) -> Any:
        return np.reciprocal(np.sqrt(x))

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.mul(lax.full_like(y, -0.5), lax.div(y, x))


@primitive
class Expm1(Analytic):
    """``exp(x) - 1``, accurate near 0. numpy's complex kernel misses the standard's special
    values, which are set here: ``expm1(±0 + 0j) = +0 ± 0j`` and, where the input is not
    finite, ``exp(x) - 1`` (``expm1(inf + 0j) = inf + 0j``, ``expm1(-inf + i y) = -1 + 0j``)."""

    name = "expm1"
    lax_name = "expm1"

    def impl(self, x: Any) -> Any:
        out = np.expm1(x)
        if x.dtype.kind != "c":
            return out
        zero = x == 0
        infinite = ~np.isfinite(x)
        if not (zero.any() or infinite.any()):
            return out
        out = np.array(out, copy=True)
        out.real[zero] = 0.0
        out.imag[zero] = x.imag[zero]
        with np.errstate(all="ignore"):
            out[infinite] = np.exp(x[infinite]) - 1
        return out

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.add(y, lax.full_like(y, 1))


@primitive
class Log1p(Analytic):
    name = "log1p"
    lax_name = "log1p"

    ufunc = np.log1p

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,) = xs
        return [lax.div(present(ts[0]), lax.add(x, lax.full_like(x, 1)))]


@primitive
class Pow(Elementwise):
    """``x ** y``. Integers: non-negative exponents only (primal only).

    ``d/dx = y x^(y-1)`` (0 for y = 0; finite at x = 0 for integer exponents >= 1, to
    every order, like a polynomial) and
    ``d/dy = log(x) x^y``, taken as 0 where x = 0 (where x^y is 0 for y > 0).
    """

    name = "pow"

    def impl(self, x: Any, y: Any) -> Any:
        if self.inputs[0].dtype.kind == "i":
            if np.any(np.asarray(y) < 0):
                raise ExecutionError(self.name, "integers cannot be raised to negative powers")
            return np.power(x, y)
        return np.power(x, y)

    def kernel(self) -> Any:
        return self.impl if self.inputs[0].dtype.kind == "i" else np.power

    def lower(self, lo: Any, x: Any, y: Any) -> Any:
        if self.inputs[0].dtype.kind == "i":  # repeated squaring (XLA gives 0 for y < 0)
            return lo.jnp.power(x, y)
        return lo.lax.pow(x, y)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        x, y = xs
        (z,) = ys
        dx, dy = ts
        by_x = by_y = None
        if dx is not None:
            one = lax.full_like(y, 1)
            # y == 0 has derivative 0 everywhere; its unused lane reads x = 1 so that no
            # 0 * inf appears at x = 0 in this derivative or the ones taken of it.
            constant = lax.compare(y, lax.zeros_like(y), "eq")
            safe_x = lax.select(constant, lax.full_like(x, 1), x)
            slope = lax.mul(y, lax.pow(safe_x, lax.sub(y, one)))
            by_x = lax.mul(dx, lax.select(constant, lax.zeros_like(slope), slope))
        if dy is not None:
            zero = lax.zeros_like(x)
            at_zero = lax.compare(x, zero, "eq")
            safe_x = lax.select(at_zero, lax.full_like(x, 1), x)  # no log(0) even where unused
            by_y = lax.mul(dy, lax.select(at_zero, zero, lax.mul(lax.log(safe_x), z)))
        return [lax.add_tangents(by_x, by_y)]
