"""The operation protocols a graph is generic over.

computegraph has no built-in operations. Any object satisfying
:class:`GraphOperation` can be a node: it must be hashable and compare equal by
value (parameters such as shapes and axes take part in identity), and it
declares a fixed number of inputs and outputs. Operations that can be run by
:meth:`computegraph.CompiledProgram.eval` also satisfy
:class:`EvaluableGraphOperation`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["EvaluableGraphOperation", "GraphOperation"]


@runtime_checkable
class GraphOperation(Hashable, Protocol):
    """A node type of a graph: hashable, equal by value, with a fixed arity."""

    def input_count(self) -> int:
        """Number of inputs the operation consumes."""
        ...

    def output_count(self) -> int:
        """Number of outputs the operation produces."""
        ...


@runtime_checkable
class EvaluableGraphOperation(GraphOperation, Protocol):
    """A graph operation that can be evaluated on concrete operands."""

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        """Evaluate on ``input_count()`` operands; return exactly ``output_count()`` values.

        ``ctx`` is the mutable evaluation context passed to every operation of
        one program run (``None`` unless the caller supplies one).

        Optionally, a single-output operation that ignores ``ctx`` may also define
        ``kernel()``, returning a function ``f(*values) -> value`` (or ``None``);
        generated programs then call it directly instead of ``eval``.
        """
        ...
