"""The base of the iterative solvers' primitive families."""

from __future__ import annotations

from typing import ClassVar

from tenferro.core.families import FamilyPrimitive

__all__ = ["SolverOp"]


class SolverOp(FamilyPrimitive):
    """An iterative solver as one primitive: its evaluation runs the iteration on numpy
    arrays (nothing recorded), its JVP applies the implicit function theorem at the
    solution, so derivatives cost what one more solve costs, whatever the number of
    iterations. ``caller`` names the public function in errors."""

    __slots__ = ()
    batch_loop: ClassVar[str] = (
        "an iterative solver converges per example (its iteration count and stopping "
        "point are data): applied per example"
    )
    no_lowering: ClassVar[str] = (
        "is an iterative solver: its iteration runs in Python on the host and stops at a "
        "data-dependent step, which a static XLA program cannot express"
    )
    caller: str

    def __str__(self) -> str:
        operands = " ".join(m.describe() for m in self.inputs)
        return f"{self.name}[{self.caller}]({operands})"
