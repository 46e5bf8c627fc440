"""Deep graphs (no recursion anywhere) and release of intermediates after their last use."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from cg_support import ScalarOp

from computegraph import External, GraphBuilder, Local, compile, materialize_merge, resolve

CHAIN = 100_000


@pytest.mark.slow
def test_chain_of_100k_operations_builds_resolves_materializes_compiles_and_evaluates():
    assert sys.getrecursionlimit() < CHAIN
    builder = GraphBuilder()
    x = builder.add_input("x")
    one = builder.add_input("one")
    value = x
    for step in range(CHAIN):
        if step % 2:
            (value,) = builder.add_operation(ScalarOp.NEG, [Local(value)])
        else:
            (value,) = builder.add_operation(ScalarOp.ADD, [Local(value), Local(one)])
    builder.set_outputs([value])
    graph = builder.build()
    materialized = materialize_merge(resolve(graph), graph.output_keys())
    assert len(materialized.operations) == CHAIN
    program = compile(materialized)
    bindings = {"x": 0.0, "one": 1.0}
    # Pairs (x + 1, negate) alternate: the value oscillates between 0 and -1.
    assert program.eval_with(bindings) == [0.0]
    assert str(program).count("\n") > CHAIN


@pytest.mark.slow
def test_chain_of_100k_graphs_linked_by_parents():
    builder = GraphBuilder()
    x = builder.add_input("x")
    graph = builder.build()
    key = graph.key_of(x)
    for _ in range(CHAIN):
        step = GraphBuilder()
        step.add_parent(graph)
        (out,) = step.add_operation(ScalarOp.NEG, [External(key)])
        step.set_outputs([out])
        graph = step.build()
        key = graph.key_of(out)
    view = resolve(graph)
    assert len(view.graphs) == CHAIN + 1
    program = compile(materialize_merge(view, [key]))
    assert program.eval([3.0]) == [3.0]  # an even number of negations


class Box:
    """A value that supports weak references."""

    def __init__(self, payload: int) -> None:
        self.payload = payload


@dataclass(frozen=True)
class Step:
    """Box -> Box; records which earlier boxes are alive when it runs."""

    n_outputs: int = 1

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return self.n_outputs

    def eval(self, inputs: Sequence[Box], ctx: dict[str, Any]) -> list[Box]:
        refs: list[weakref.ref[Box]] = ctx["refs"]
        ctx["alive"].append([ref() is not None for ref in refs])
        outputs = [Box(inputs[0].payload + 1) for _ in range(self.n_outputs)]
        refs.extend(weakref.ref(box) for box in outputs)
        return outputs


def test_intermediates_are_released_after_their_last_use():
    builder = GraphBuilder()
    value = builder.add_input("x")
    for _ in range(4):
        (value,) = builder.add_operation(Step(), [Local(value)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(value)]))
    ctx: dict[str, Any] = {"refs": [], "alive": []}
    x = Box(0)
    (result,) = program.eval([x], ctx)
    assert result.payload == 4
    # When step k runs, only its own input (output of step k-1) is still alive.
    assert ctx["alive"] == [[], [True], [False, True], [False, False, True]]
    assert [ref() is not None for ref in ctx["refs"]] == [False, False, False, True]


def test_unused_output_slots_die_immediately_and_outputs_survive():
    builder = GraphBuilder()
    x = builder.add_input("x")
    kept, _dropped = builder.add_operation(Step(n_outputs=2), [Local(x)])
    (after,) = builder.add_operation(Step(), [Local(kept)])
    (last,) = builder.add_operation(Step(), [Local(after)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(after), graph.key_of(last)]))
    ctx: dict[str, Any] = {"refs": [], "alive": []}
    outputs = program.eval([Box(0)], ctx)
    # Step 2 runs after the dual step: its unused second output is already gone.
    assert ctx["alive"][1] == [True, False]
    # The requested output 'after' survives the run although step 3 consumed it.
    assert [box.payload for box in outputs] == [2, 3]
    # After the dual step: its input (slot 0) and its unread second output (slot 2) die.
    assert program.free_after[0] == (0, 2)
