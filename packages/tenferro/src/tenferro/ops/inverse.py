"""Inverse trigonometric and hyperbolic primitives: asin, acos, atan, asinh, acosh,
atanh (numpy's kernels, real and complex) and atan2 (real).

The unary ones are holomorphic off their branch cuts (numpy's principal branches), so
on complex inputs the JVP multiplies by the derivative and the VJP by its conjugate,
like every analytic primitive:

* ``asin' = 1 / sqrt((1 - x)(1 + x))``, ``acos' = -asin'``, ``atan' = 1 / (1 + x^2)``;
* ``asinh' = 1 / sqrt(1 + x^2)``, ``acosh' = 1 / (sqrt(x - 1) sqrt(x + 1))``,
  ``atanh' = 1 / ((1 - x)(1 + x))``.

``1 - x^2`` is formed as ``(1 - x)(1 + x)``, exact to rounding near ``|x| = 1``, and
acosh's square roots are taken separately, which is the principal branch's derivative
on the whole complex plane (``sqrt(x^2 - 1)`` has the wrong sign where ``Re x < 0``).
Outside the real domain (``asin(2.0)``, ``acosh(0.5)``) value and derivative are NaN,
as numpy's value is.

``atan2(y, x)`` is the angle of the point ``(x, y)``; its derivative is
``(x dy - y dx) / (x^2 + y^2)``, taken as 0 at the origin, where the angle jumps (the
same convention as ``abs'(0) = 0`` and ``hypot``'s derivative at the origin).
"""

from __future__ import annotations

import numpy as np

from tenferro import lax
from tenferro.core.primitive import RuleValue, Ts, Xs, primitive
from tenferro.ops.analytic import Analytic
from tenferro.ops.elementwise import Elementwise

__all__ = ["Acos", "Acosh", "Asin", "Asinh", "Atan", "Atan2", "Atanh"]


def _one_minus_square(x: RuleValue) -> RuleValue:
    """``(1 - x)(1 + x)``: ``1 - x^2`` without cancellation near ``|x| = 1``."""
    one = lax.full_like(x, 1)
    return lax.mul(lax.sub(one, x), lax.add(one, x))


def _one_plus_square(x: RuleValue) -> RuleValue:
    return lax.add(lax.full_like(x, 1), lax.mul(x, x))


@primitive
class Asin(Analytic):
    """The inverse sine (numpy's ``arcsin``; branch cuts below -1 and above 1)."""

    name = "asin"

    ufunc = np.arcsin

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.rsqrt(_one_minus_square(x))


@primitive
class Acos(Analytic):
    """The inverse cosine (numpy's ``arccos``; branch cuts below -1 and above 1)."""

    name = "acos"

    ufunc = np.arccos

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.neg(lax.rsqrt(_one_minus_square(x)))


@primitive
class Atan(Analytic):
    """The inverse tangent (numpy's ``arctan``; branch cuts on the imaginary axis beyond
    ``+-i``)."""

    name = "atan"

    ufunc = np.arctan

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.div(ts[0], _one_plus_square(xs[0]))]


@primitive
class Asinh(Analytic):
    """The inverse hyperbolic sine (numpy's ``arcsinh``)."""

    name = "asinh"

    ufunc = np.arcsinh

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return lax.rsqrt(_one_plus_square(x))


@primitive
class Acosh(Analytic):
    """The inverse hyperbolic cosine (numpy's ``arccosh``; branch cut below 1)."""

    name = "acosh"

    ufunc = np.arccosh

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        (x,) = xs
        one = lax.full_like(x, 1)
        roots = lax.mul(lax.sqrt(lax.sub(x, one)), lax.sqrt(lax.add(x, one)))
        return [lax.div(ts[0], roots)]


@primitive
class Atanh(Analytic):
    """The inverse hyperbolic tangent (numpy's ``arctanh``; branch cuts below -1 and
    above 1)."""

    name = "atanh"

    ufunc = np.arctanh

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [lax.div(ts[0], _one_minus_square(xs[0]))]


@primitive
class Atan2(Elementwise):
    """``atan2(y, x)``, the angle of ``(x, y)`` in ``[-pi, pi]`` (real operands)."""

    name = "atan2"
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
