"""``stop_gradient``: the identity whose derivative is zero by contract.

Its value is its operand; its JVP is zero (no tangent) in every mode and to every
order, so nothing flows back through it (JAX's ``lax.stop_gradient``; PyTorch's
``detach`` on a tape).
"""

from __future__ import annotations

from typing import Any, ClassVar

from tenferro.core.primitive import primitive
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.ops.elementwise import Elementwise

__all__ = ["StopGradient"]


@primitive
class StopGradient(Elementwise):
    """``x`` unchanged; a zero derivative (no tangent) by contract."""

    name = "stop_gradient"
    kinds: ClassVar[str] = "bifc"

    def impl(self, x: Any) -> Any:
        return x

    def lower(self, lo: Any, x: Any) -> Any:
        return x

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]
