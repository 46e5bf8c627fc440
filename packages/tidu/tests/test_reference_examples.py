"""The reference's three examples (§3.12), ported as tests."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from test_reference_eager import ExecutingBuilder
from tidu_support import SCALAR, GraphMaker, User, evaluate, tangent_input_key, tangent_output_key

from computegraph import Input, ValueKey, compile, materialize_merge, resolve
from tidu import (
    LinearizedGraph,
    PrimitiveGraph,
    linear_transpose,
    linear_transpose_with_builder,
    linearize,
)
from tidu.eager import EagerInput, RecordedGraph, Recorder, backward

Add, Mul = SCALAR.op("Add"), SCALAR.op("Mul")


def test_primitive_linearization_example():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Mul, g["x"], g["x"]))
    lin = linearize([graph], [y], [User("x")], 1)
    value, dy = evaluate(
        [graph, lin.graph],
        [y, tangent_output_key(lin, 0)],
        {User("x"): 3.0, tangent_input_key(lin, 0): 1.5},
    )
    assert (value, dy) == (9.0, 9.0)
    tr = linear_transpose(lin)
    (ct_x,) = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0)],
        {User("x"): 3.0, tangent_input_key(tr, 0): 2.0},
    )
    assert abs(ct_x - 12.0) < 1e-12


def test_gradient_two_inputs_example():
    g = GraphMaker("x", "y")
    graph, (f,) = g.build(g.apply(Add, g.apply(Mul, g["x"], g["y"]), g["x"]))
    lin = linearize([graph], [f], [User("x"), User("y")], 1)
    tr = linear_transpose(lin)
    dfdx, dfdy = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0), tangent_output_key(tr, 1)],
        {User("x"): 2.0, User("y"): 3.0, tangent_input_key(tr, 0): 1.0},
    )
    assert (dfdx, dfdy) == (4.0, 2.0)


class HandWrittenExecutor:
    """A BackwardExecutor written against the protocol alone.

    ``execute_forward`` evaluates the recorded graph and fails loudly on a missing
    input; ``run_transposed_linear`` executes the transpose rules immediately through
    an executing builder (no graph, no compile).
    """

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> dict[ValueKey, Any]:
        recorded = graph.as_graph()
        for key in recorded.input_keys():
            assert key in initial_data, f"missing primal input {key!r}"
        program = compile(materialize_merge(resolve(recorded), recorded.value_keys))
        values = program.eval([initial_data[k] for k in program.input_keys])
        return dict(zip(recorded.value_keys, values, strict=True))

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        builder = ExecutingBuilder(dict(external_data))
        seeds = [builder.push(c) for c in cotangent_out]
        result = linear_transpose_with_builder(linear, builder, seeds, ctx)
        return [None if r is None else builder.values[r] for r in result]

    def add_operands(self, a: Any, b: Any) -> Any:
        return a + b


def test_eager_reverse_mode_example():
    recorder = Recorder()
    graph = RecordedGraph.from_primitive(Mul, recorder.fresh_input_keys(2))
    x = EagerInput(Input("x"), None, True, 3.0)
    (out,) = recorder.record_graph(graph, [x, x], [9.0], {graph.output_keys[0]: 9.0})
    cotangents = backward(out.key, out.trace, 1.0, HandWrittenExecutor())
    assert cotangents[Input("x")] == 6.0


def test_hand_written_executor_replays_unsaved_intermediates():
    """A composite node whose JVP needs an intermediate nobody saved: replayed, not lost."""
    exp = SCALAR.op("Exp")
    g = GraphMaker("e0")
    graph, (y,) = g.build(g.apply(Mul, g.apply(exp, g["e0"]), g.apply(exp, g["e0"])))
    recorded = RecordedGraph(graph, [User("e0")], [y])
    recorder = Recorder()
    (out,) = recorder.record_graph(recorded, [EagerInput(Input("x"), None, True, 0.5)], [None], {})
    cotangents = backward(out.key, out.trace, 1.0, HandWrittenExecutor())
    assert abs(cotangents[Input("x")] - 2 * math.exp(1.0)) < 1e-12
