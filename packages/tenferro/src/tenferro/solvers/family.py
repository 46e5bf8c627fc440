"""The base of the iterative solvers' primitive families."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from tenferro.core.families import FamilyPrimitive
from tenferro.errors import LinAlgError

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "impl" in cls.__dict__:
            cls.impl = _finite_operands(cls.__dict__["impl"])  # type: ignore[method-assign]

    def __str__(self) -> str:
        operands = " ".join(m.describe() for m in self.inputs)
        return f"{self.name}[{self.caller}]({operands})"


def _finite_operands(impl: Callable[..., Any]) -> Callable[..., Any]:
    """``impl`` refusing non-finite operands: an iteration cannot converge on NaN or Inf
    (its stopping test is meaningless there), so every iterative solver raises
    ``LinAlgError`` naming its public function, as the factorizing functions do."""

    @functools.wraps(impl)
    def checked(self: SolverOp, *arrays: Any) -> Any:
        for position, array in enumerate(arrays):
            values = np.asarray(array)
            if values.dtype.kind in "fc" and not np.isfinite(values).all():
                raise LinAlgError(
                    self.caller,
                    f"operand {position} (of shape {values.shape}: the matrix, b, v0 or a "
                    f"parameter of the operator) holds NaN or Inf; an iterative solver "
                    f"needs finite values",
                )
        return impl(self, *arrays)

    return checked
