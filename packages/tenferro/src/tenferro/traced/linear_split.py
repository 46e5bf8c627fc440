"""Splitting a JVP computation into its primal part and its linear part.

``jax.linearize`` promises a function that evaluates only the linear map: the primal
values the tangent computation reads (its *residuals*) are computed once, with the
primal outputs, and each later call applies the linear part to new tangents alone.
:class:`LinearSplit` finds the residuals of a traced JVP (the values that do not
depend on the tangents but are read by operations that do) by an iterative walk,
and compiles the two programs: primal inputs -> (primal outputs, residuals), and
(residuals, tangents) -> tangent outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from computegraph import (
    CompiledProgram,
    Derived,
    ValueKey,
    compile,
    materialize_merge,
    structural_view,
)
from tenferro.traced.program import SUBSTITUTIONS, TracedProgram

__all__ = ["LinearSplit", "residuals"]


def residuals(
    tangent_outputs: Sequence[ValueKey], is_tangent_input: Callable[[ValueKey], bool]
) -> list[ValueKey]:
    """The keys the computation of ``tangent_outputs`` reads that do not depend on the
    tangent inputs (tangent outputs that do not depend on them are residuals too)."""
    depends: dict[int, bool] = {}
    found: dict[ValueKey, None] = {}
    stack: list[ValueKey] = list(tangent_outputs)
    while stack:
        key = stack[-1]
        if id(key) in depends:
            stack.pop()
            continue
        if type(key) is Derived:
            inputs = key.operation_key.inputs
            pending = [k for k in inputs if id(k) not in depends]
            if pending:
                stack.extend(pending)
                continue
            tangent = any(depends[id(k)] for k in inputs)
            if tangent:
                found.update((k, None) for k in inputs if not depends[id(k)])
            depends[id(key)] = tangent
        else:
            depends[id(key)] = is_tangent_input(key)
        stack.pop()
    found.update((k, None) for k in tangent_outputs if not depends[id(k)])
    return list(found)


class LinearSplit:
    """The primal program (outputs and residuals) and the linear program of a JVP."""

    __slots__ = ("linear", "linear_sources", "primal", "primal_count")

    def __init__(
        self,
        primal_outputs: Sequence[ValueKey],
        tangent_outputs: Sequence[ValueKey],
        is_tangent_input: Callable[[ValueKey], bool],
        tangent_position: Callable[[ValueKey], int],
    ) -> None:
        residual_keys = residuals(tangent_outputs, is_tangent_input)
        self.primal_count = len(primal_outputs)
        self.primal = TracedProgram((*primal_outputs, *residual_keys))
        materialized = materialize_merge(
            structural_view(),
            tuple(tangent_outputs),
            substitute=SUBSTITUTIONS,
            boundary=residual_keys,
        )
        with np.errstate(all="ignore"):
            self.linear: CompiledProgram = compile(materialized)
        index = {key: position for position, key in enumerate(residual_keys)}
        self.linear_sources: tuple[tuple[str, int], ...] = tuple(
            ("residual", index[key]) if key in index else ("tangent", tangent_position(key))
            for key in self.linear.input_keys
        )

    def primal_values(
        self, args: Sequence[Any], slots: Sequence[Any]
    ) -> tuple[list[Any], list[Any]]:
        """The primal outputs and the residuals at these arguments."""
        values = self.primal.run(args, slots)
        return values[: self.primal_count], values[self.primal_count :]

    def apply(self, residual_values: Sequence[Any], tangents: Sequence[Any]) -> list[Any]:
        """The tangent outputs for ``tangents`` (the linear program only)."""
        inputs = [
            residual_values[i] if kind == "residual" else tangents[i]
            for kind, i in self.linear_sources
        ]
        with np.errstate(all="ignore"):
            return self.linear.eval(inputs)
