"""Special functions: erf and erfc (scipy.special's kernels, real and complex).

Both are entire functions, so on complex inputs the JVP multiplies by the
derivative and the VJP by its conjugate, like every analytic primitive:
``erf'(x) = 2/sqrt(pi) exp(-x^2)`` and ``erfc' = -erf'``. ``erfc`` is a primitive of
its own because ``1 - erf(x)`` loses every digit for large x.
"""

from __future__ import annotations

import math
from typing import Any

from tenferro import lax
from tenferro.core.primitive import primitive
from tenferro.core.rules import RuleValue
from tenferro.ops.analytic import Analytic

__all__ = ["Erf", "Erfc"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _special() -> Any:
    # scipy.special is imported on first use: importing tenferro stays light.
    import scipy.special  # type: ignore[import-untyped]

    return scipy.special


def _gaussian(x: RuleValue, scale: float) -> RuleValue:
    """``scale * exp(-x^2)``."""
    return lax.mul(lax.full_like(x, scale), lax.exp(lax.neg(lax.mul(x, x))))


class _ErrorFunction(Analytic):
    __slots__ = ()

    def lower(self, lo: Any, x: Any) -> Any:
        if self.inputs[0].dtype.kind == "c":
            raise lo.refuse(self, "XLA has no complex error function (JAX's erf is real only)")
        return getattr(lo.lax, self.name)(x)


@primitive
class Erf(_ErrorFunction):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``."""

    name = "erf"

    def impl(self, x: Any) -> Any:
        return _special().erf(x)

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return _gaussian(x, _TWO_OVER_SQRT_PI)


@primitive
class Erfc(_ErrorFunction):
    """The complementary error function ``1 - erf(x)``, accurate where erf(x) is near 1."""

    name = "erfc"

    def impl(self, x: Any) -> Any:
        return _special().erfc(x)

    def coefficient(self, x: RuleValue, y: RuleValue) -> RuleValue:
        return _gaussian(x, -_TWO_OVER_SQRT_PI)
