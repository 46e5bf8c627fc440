"""Test operation set and helpers for computegraph's tests (spec §3.0).

``ScalarOp`` is the reference fixture: Add, Mul (2 inputs), Exp, Neg, Dup (1
input; Dup has two outputs ``[x, x]``), over Python floats, with string input keys.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

from computegraph import Graph, ValueKey, compile, materialize_merge, resolve


class ScalarOp(enum.Enum):
    ADD = ("Add", 2, 1)
    MUL = ("Mul", 2, 1)
    EXP = ("Exp", 1, 1)
    NEG = ("Neg", 1, 1)
    DUP = ("Dup", 1, 2)

    def input_count(self) -> int:
        return self.value[1]

    def output_count(self) -> int:
        return self.value[2]

    def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
        if self is ScalarOp.ADD:
            return [inputs[0] + inputs[1]]
        if self is ScalarOp.MUL:
            return [inputs[0] * inputs[1]]
        if self is ScalarOp.EXP:
            return [math.exp(inputs[0])]
        if self is ScalarOp.NEG:
            return [-inputs[0]]
        return [inputs[0], inputs[0]]

    def __repr__(self) -> str:
        return self.value[0]

    __str__ = __repr__


def evaluate(
    roots: Graph | Iterable[Graph],
    outputs: Sequence[ValueKey],
    bindings: Mapping[Hashable, Any],
    ctx: Any = None,
) -> list[Any]:
    """resolve -> materialize_merge -> bind by materialised input order -> compile -> eval."""
    materialized = materialize_merge(resolve(roots), outputs)
    ordered = []
    for key in materialized.inputs:
        assert key.key in bindings, f"missing binding for {key!r}"
        ordered.append(bindings[key.key])
    return compile(materialized).eval(ordered, ctx)
