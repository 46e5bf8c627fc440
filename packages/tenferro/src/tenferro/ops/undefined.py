"""``no_derivative``: the tangent of an output that has no derivative.

Some outputs of differentiable operations have no derivative we can provide (the
permutation matrix of an LU factorisation, eigenvectors of a general matrix where
the family does not support them). Their JVP rule returns
``lax.no_derivative(...)`` for such an output: a linear operation whose evaluation
(forward mode) and transposition (reverse mode) raise :class:`tidu.ADRuleError`
naming the operation. A derivative that never flows through that output never
evaluates or transposes it (unused tangents are pruned from derivative programs),
so the error is raised exactly when a derivative is requested through it, in every
mode, and never a silent zero.
"""

from __future__ import annotations

from typing import Any

from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.rules import RuleValue
from tenferro.meta import Meta
from tidu import ADRuleError

__all__ = ["NoDerivative"]


@primitive
class NoDerivative(TensorPrimitive):
    """Stands for the tangent of output ``slot`` of ``operation``, which has none.

    Its single operand is any tangent of the operation's inputs (it makes the value
    depend on the tangents, so it is linear and active); ``result`` is the meta of the
    output whose tangent it stands for.
    """

    name = "no_derivative"
    batch_loop = "stands for an absent derivative: evaluating it raises in any case"
    linear = True
    operation: str
    slot: int
    result: Meta
    reason: str

    def infer(self) -> tuple[Meta]:
        return (self.result,)

    def _error(self, rule: Any) -> ADRuleError:
        return ADRuleError(
            self.operation, rule, f"output {self.slot} has no derivative ({self.reason})"
        )

    def impl(self, *arrays: Any) -> Any:
        raise self._error("jvp")

    def kernel(self) -> Any:
        return self.impl

    def lower(self, lo: Any, *values: Any) -> Any:
        raise self._error("jvp")  # a derivative through this output: no program to run

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> list[RuleValue | None]:
        raise self._error("transpose")
