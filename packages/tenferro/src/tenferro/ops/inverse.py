"""Inverse trigonometric and hyperbolic primitives: asin, acos, atan, asinh, acosh,
atanh (numpy's kernels, real and complex) and atan2 (real).

The unary ones are holomorphic off their branch cuts (numpy's principal branches), so
on complex inputs the JVP multiplies by the derivative and the VJP by its conjugate,
like every analytic primitive:

* ``asin' = 1 / (sqrt(1 - x) sqrt(1 + x))``, ``acos' = -asin'``,
  ``acosh' = 1 / (sqrt(x - 1) sqrt(x + 1))``;
* ``asinh'(x) = asin'(ix)`` (``1 / sqrt(1 + x^2)`` on real values);
* ``atanh' = asin'^2 = 1 / (1 - x^2)`` and ``atan' = asinh'^2 = 1 / (1 + x^2)``.

These are Kahan's forms (those of C99's and numpy's kernels): the square roots are
taken of ``1 - x`` and ``1 + x`` separately, which is exact to rounding near
``|x| = 1`` and is the principal branch's derivative on the whole plane. On a branch
cut the sign of the zero imaginary (asin, acos, acosh, atanh) or real (asinh, atan)
part selects the side numpy's value takes, so the derivative must read that sign:
``1 - x``, ``1 + x``, ``x - 1`` and ``ix`` are formed so that the zero keeps it
(``1 - x`` as ``-(x - 1)``, ``1 + x`` as ``x - (-1)``, ``ix`` from the parts), where
``(1 - x)(1 + x)``, ``1 + x`` or ``1j * x`` would turn ``-0.0`` into ``+0.0`` and give
the other side's derivative. Outside the real domain (``asin(2.0)``, ``acosh(0.5)``,
``atanh(2.0)``) value and derivative are NaN, as numpy's value is (the squares keep
atanh's real domain).

At complex infinity (either part infinite) every derivative is 0, its limit (it
decays like ``1/x`` or ``1/x^2``); the formulas alone would give ``inf * 0 = nan``
there. (A finite value whose modulus overflows counts as infinite; its derivative is
then below the smallest normal number.)

``atan2(y, x)`` is the angle of the point ``(x, y)``; its derivative is
``(x dy - y dx) / (x^2 + y^2)``, taken as 0 at the origin, where the angle jumps (the
same convention as ``abs'(0) = 0`` and ``hypot``'s derivative at the origin).
"""

from __future__ import annotations

import numpy as np

from tenferro import lax
from tenferro.core.primitive import primitive
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import is_complex
from tenferro.ops.analytic import Analytic
from tenferro.ops.elementwise import Elementwise

__all__ = ["Acos", "Acosh", "Asin", "Asinh", "Atan", "Atan2", "Atanh"]


def _one_minus(x: RuleValue) -> RuleValue:
    """``1 - x``, its imaginary part exactly ``-Im x`` (signed zeros flipped, not lost)."""
    return lax.neg(lax.sub(x, lax.full_like(x, 1)))


def _one_plus(x: RuleValue) -> RuleValue:
    """``1 + x``, its imaginary part exactly ``Im x`` (``-0.0 + 0.0`` would be ``+0.0``)."""
    return lax.sub(x, lax.full_like(x, -1))


def _minus_one(x: RuleValue) -> RuleValue:
    return lax.sub(x, lax.full_like(x, 1))


def _times_i(x: RuleValue) -> RuleValue:
    """``ix`` of complex ``x``, assembled from the parts (``1j * x`` loses signed zeros
    and gives NaN for infinite parts)."""
    return lax.complex(lax.neg(lax.imag(x)), lax.real(x))


def _asin_slope(x: RuleValue) -> RuleValue:
    return lax.mul(lax.rsqrt(_one_minus(x)), lax.rsqrt(_one_plus(x)))


def _asinh_slope(x: RuleValue) -> RuleValue:
    if is_complex(x.meta.dtype):
        return _asin_slope(_times_i(x))
    return lax.rsqrt(lax.add(lax.full_like(x, 1), lax.mul(x, x)))


def _square(x: RuleValue) -> RuleValue:
    return lax.mul(x, x)


class _Inverse(Analytic):
    """An inverse function: ``coefficient`` is ``slope(x)``, and 0 at complex infinity.

    The infinite lanes are evaluated at 0 before being replaced by 0, so that no
    ``inf * 0`` appears in this derivative or in the ones taken of it."""

    __slots__ = ()

    def slope(self, x: RuleValue) -> RuleValue:
        raise NotImplementedError

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        if not is_complex(x.meta.dtype):
            return self.slope(x)
        modulus = lax.abs(x)
        infinite = lax.compare(modulus, lax.full_like(modulus, np.inf), "eq")
        zero = lax.zeros_like(x)
        return lax.select(infinite, zero, self.slope(lax.select(infinite, zero, x)))


@primitive
class Asin(_Inverse):
    """The inverse sine (numpy's ``arcsin``; branch cuts below -1 and above 1)."""

    name = "asin"
    lax_name = "asin"

    ufunc = np.arcsin

    def slope(self, x: RuleValue) -> RuleValue:
        return _asin_slope(x)


@primitive
class Acos(_Inverse):
    """The inverse cosine (numpy's ``arccos``; branch cuts below -1 and above 1)."""

    name = "acos"
    lax_name = "acos"

    ufunc = np.arccos

    def slope(self, x: RuleValue) -> RuleValue:
        return lax.neg(_asin_slope(x))


@primitive
class Atan(_Inverse):
    """The inverse tangent (numpy's ``arctan``; branch cuts on the imaginary axis beyond
    ``+-i``)."""

    name = "atan"
    lax_name = "atan"

    ufunc = np.arctan

    def slope(self, x: RuleValue) -> RuleValue:
        return _square(_asinh_slope(x))


@primitive
class Asinh(_Inverse):
    """The inverse hyperbolic sine (numpy's ``arcsinh``; branch cuts on the imaginary
    axis beyond ``+-i``)."""

    name = "asinh"
    lax_name = "asinh"

    ufunc = np.arcsinh

    def slope(self, x: RuleValue) -> RuleValue:
        return _asinh_slope(x)


@primitive
class Acosh(_Inverse):
    """The inverse hyperbolic cosine (numpy's ``arccosh``; branch cut below 1)."""

    name = "acosh"
    lax_name = "acosh"

    ufunc = np.arccosh

    def slope(self, x: RuleValue) -> RuleValue:
        return lax.mul(lax.rsqrt(_minus_one(x)), lax.rsqrt(_one_plus(x)))


@primitive
class Atanh(_Inverse):
    """The inverse hyperbolic tangent (numpy's ``arctanh``; branch cuts below -1 and
    above 1)."""

    name = "atanh"
    lax_name = "atanh"

    ufunc = np.arctanh

    def slope(self, x: RuleValue) -> RuleValue:
        return _square(_asin_slope(x))


@primitive
class Atan2(Elementwise):
    """``atan2(y, x)``, the angle of ``(x, y)`` in ``[-pi, pi]`` (real operands)."""

    name = "atan2"
    lax_name = "atan2"
    kinds = "f"

    ufunc = np.arctan2

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        y, x = xs
        dy, dx = ts
        zero = lax.zeros_like(x)
        radius2 = lax.add(lax.mul(x, x), lax.mul(y, y))
        origin = lax.compare(radius2, zero, "eq")
        safe = lax.select(origin, lax.full_like(x, 1), radius2)  # no 0 / 0, at any order
        by_y = None if dy is None else lax.mul(dy, lax.div(x, safe))
        by_x = None if dx is None else lax.mul(dx, lax.div(lax.neg(y), safe))
        return [lax.add_tangents(by_y, by_x)]
