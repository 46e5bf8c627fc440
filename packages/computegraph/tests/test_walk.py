"""fold and rewrite: post-order walks over the computation behind value keys."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest
from cg_support import ScalarOp
from hypothesis import given
from hypothesis import strategies as st

from computegraph import After, Derived, Input, OperationKey, ValueKey, fold, rewrite

Add, Mul, Neg, Dup = ScalarOp.ADD, ScalarOp.MUL, ScalarOp.NEG, ScalarOp.DUP


def apply(op: OperationKey, inputs: list[float]) -> list[float]:
    return op.operation.eval(inputs, None)


def pick(result: list[float], key: Derived) -> float:
    return result[key.output_slot]


def node(op: ScalarOp, *inputs: ValueKey, slot: int = 0) -> Derived:
    return Derived(OperationKey(op, list(inputs)), slot)


def test_fold_evaluates_each_operation_once_and_leaves_in_order():
    x, y = Input("fold-x"), Input("fold-y")
    shared = node(Dup, node(Add, x, y))
    left, right = node(Dup, node(Add, x, y), slot=1), shared
    out = node(Mul, left, right)
    calls: list[Any] = []
    seen: list[Any] = []

    def counting(op: OperationKey, inputs: list[float]) -> list[float]:
        calls.append(op.operation)
        return apply(op, inputs)

    def leaf(key: ValueKey) -> float:
        seen.append(key.key)  # type: ignore[attr-defined]
        return {"fold-x": 2.0, "fold-y": 3.0}[key.key]  # type: ignore[attr-defined]

    assert fold([out, shared], counting, pick, leaf) == [25.0, 5.0]
    assert calls == [Add, Dup, Mul]  # Dup once although both of its outputs are used
    assert seen == ["fold-x", "fold-y"]


def test_after_walks_the_origin_first_and_continues_once():
    origin = node(Neg, Input("origin-x"))
    alias = Input(("alias-of", "origin-x"))
    out = node(Add, alias, origin)
    order: list[str] = []

    def leaf(key: ValueKey) -> Any:
        name = key.key  # type: ignore[attr-defined]
        if name == "origin-x":
            order.append("x")
            return 4.0
        return After(origin, lambda value: order.append("alias") or 10 * value)

    assert fold([out], apply, pick, leaf) == [-44.0]
    assert order == ["x", "alias"]


@pytest.mark.slow
def test_fold_and_rewrite_need_no_recursion_at_100k_operations():
    depth = 100_000
    assert sys.getrecursionlimit() < depth
    value: ValueKey = Input("deep-x")
    for _ in range(depth):
        value = node(Neg, value)
    assert fold([value], apply, pick, lambda key: 1.5) == [1.5]
    (renamed,) = rewrite([value], lambda key: Input("deep-y"))
    hops = 0
    while isinstance(renamed, Derived):
        renamed = renamed.operation_key.inputs[0]
        hops += 1
    assert hops == depth
    assert renamed == Input("deep-y")


def test_rewrite_keeps_unchanged_computations_identical():
    x, y = Input("keep-x"), Input("keep-y")
    out = node(Mul, node(Add, x, y), node(Neg, y))
    assert rewrite([out], lambda key: key)[0] is out
    (swapped,) = rewrite([out], lambda key: y if key is x else key)
    assert swapped is node(Mul, node(Add, y, y), node(Neg, y))
    assert swapped.operation_key.inputs[1] is out.operation_key.inputs[1]  # shared part kept


_OPS = st.sampled_from([Add, Mul, Neg, Dup])


@given(st.lists(st.tuples(_OPS, st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=30))
def test_fold_agrees_with_direct_evaluation(program: list[tuple[ScalarOp, int, int]]):
    """A random DAG over two leaves: fold gives the values a direct forward evaluation
    gives, and rewriting a leaf to another leaf equals evaluating with that value."""
    keys: list[ValueKey] = [Input("gen-a"), Input("gen-b")]
    direct: list[float] = [0.5, -1.25]
    for op, i, j in program:
        a, b = i % len(keys), j % len(keys)
        operands = [keys[a], keys[b]][: op.input_count()]
        values = [direct[a], direct[b]][: op.input_count()]
        keys.append(node(op, *operands))
        direct.append(op.eval(values, None)[0])
    leaves = {"gen-a": 0.5, "gen-b": -1.25}
    got = fold(keys, apply, pick, lambda key: leaves[key.key])  # type: ignore[attr-defined]
    assert all(
        math.isclose(g, d) or (math.isnan(g) and math.isnan(d))
        for g, d in zip(got, direct, strict=True)
    )
    renamed = rewrite(keys, lambda key: Input("gen-b"))
    again = fold(renamed, apply, pick, lambda key: -1.25)
    expected = fold(keys, apply, pick, lambda key: -1.25)
    assert all(
        math.isclose(g, d) or (math.isnan(g) and math.isnan(d))
        for g, d in zip(again, expected, strict=True)
    )
