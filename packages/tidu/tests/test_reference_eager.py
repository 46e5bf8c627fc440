"""Ports of ``eager_record_tests.rs`` (§3.10) and ``eager_backward_tests.rs`` (§3.11)."""

from __future__ import annotations

from typing import Any

from tidu_support import family

from computegraph import Derived, GraphBuilder, Input, Local
from tidu import linear_transpose_with_builder, linearize
from tidu.eager import (
    CountingKeySource,
    EagerInput,
    EagerKey,
    ProgramExecutor,
    RecordedGraph,
    Recorder,
    backward,
)

RECORDER_OPS = family("RecorderOp", ["Add", "Mul", "Neg", "Split", "Sum3"])
TWO_OUTPUT = family("TwoOutputOp", ["Add", "Double"])


class ExecutingBuilder:
    """A PrimitiveBuilder that executes each operation at once (the reference's fixture).

    External keys resolve from ``data``; every new value gets the next local id.
    """

    def __init__(self, data: dict[Any, Any] | None = None, allow_external: bool = True) -> None:
        self.values: list[Any] = []
        self.data = data or {}
        self.allow_external = allow_external

    @property
    def value_count(self) -> int:
        return len(self.values)

    def push(self, value: Any) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def add_primitive(self, op, inputs, role):  # type: ignore[no-untyped-def]
        args = []
        for ref in inputs:
            if isinstance(ref, Local):
                args.append(self.values[ref.id])
            else:
                assert self.allow_external, f"unexpected External {ref!r}"
                args.append(self.data[ref.key])
        return tuple(self.push(v) for v in op.eval(args, None))


def record(recorder: Recorder, op, inputs: list[EagerInput]):
    graph = RecordedGraph.from_primitive(op, recorder.fresh_input_keys(op.input_count()))
    outputs = op.eval([i.data for i in inputs], None)
    retained = dict(zip(graph.output_keys, outputs, strict=True))
    return recorder.record_graph(graph, inputs, outputs, retained), outputs


def leaf(key: str, data: float, requires_grad: bool = True) -> EagerInput:
    return EagerInput(Input(key), None, requires_grad, data)


def from_output(output, data) -> EagerInput:
    return EagerInput(output.key, output.trace, output.requires_grad, data)


# --------------------------------------------------------------------------- §3.10


def test_record_eager_binary_op_and_skips_inactive_input_cotangents():
    recorder = Recorder(CountingKeySource())
    (out,), values = record(
        recorder, RECORDER_OPS.op("Mul"), [leaf("x", 3.0), leaf("y", 4.0, False)]
    )
    assert values == [12.0]
    cotangents = backward(out.key, out.trace, 1.0, ProgramExecutor())
    assert cotangents[Input("x")] == 4.0
    assert Input("y") not in cotangents


def test_record_eager_nary_op_builds_all_input_edges():
    recorder = Recorder()
    inputs = [leaf("a", 1.0), leaf("b", 2.0, False), leaf("c", 3.0)]
    (out,), _ = record(recorder, RECORDER_OPS.op("Sum3"), inputs)
    assert len(out.trace.input_edges) == 3
    cotangents = backward(out.key, out.trace, 1.0, ProgramExecutor())
    assert cotangents[Input("a")] == 1.0
    assert cotangents[Input("c")] == 1.0
    assert Input("b") not in cotangents


def test_record_eager_multi_output_op_uses_one_node_and_seeds_nonzero_slot():
    recorder = Recorder()
    outs, values = record(recorder, RECORDER_OPS.op("Split"), [leaf("x", 3.0)])
    assert values == [3.0, -3.0]
    assert len(outs) == 2
    assert outs[0].trace is outs[1].trace is not None
    assert [o.output_slot for o in outs] == [0, 1]
    cotangents = backward(outs[1].key, outs[1].trace, 1.0, ProgramExecutor())
    assert cotangents[Input("x")] == -1.0
    saved = outs[1].trace.saved_values()
    assert any(
        isinstance(k, Derived) and k.output_slot == 1 and v == -3.0 for k, v in saved.items()
    )
    assert any(isinstance(k, Input) and v == 3.0 for k, v in saved.items())


def test_record_draws_keys_in_order_even_without_grad():
    recorder = Recorder(CountingKeySource())
    graph = RecordedGraph.from_primitive(RECORDER_OPS.op("Add"), recorder.fresh_input_keys(2))
    assert graph.input_keys == (EagerKey(0), EagerKey(1))
    (out,) = recorder.record_graph(graph, [leaf("a", 1.0, False), leaf("b", 2.0, False)], [3.0])
    assert out.key == Input(EagerKey(2))
    assert (out.trace, out.requires_grad) == (None, False)
    assert recorder.fresh_input_keys(2) == [EagerKey(3), EagerKey(4)]


# --------------------------------------------------------------------------- §3.11


def test_linear_transpose_with_builder_propagates_add_cotangents():
    builder = GraphBuilder()
    x, y = builder.add_input("x"), builder.add_input("y")
    (s,) = builder.add_operation(RECORDER_OPS.op("Add"), [Local(x), Local(y)])
    graph = builder.build()
    lin = linearize([graph], [graph.key_of(s)], ["x", "y"])
    executing = ExecutingBuilder()
    seed = executing.push(1.0)
    result = linear_transpose_with_builder(lin, executing, [seed])
    assert [executing.values[i] for i in result] == [1.0, 1.0]


def test_backward_orders_dependencies_before_output():
    recorder = Recorder()
    (s,), (s_value,) = record(recorder, RECORDER_OPS.op("Add"), [leaf("a", 2.0), leaf("b", 5.0)])
    (n,), _ = record(recorder, RECORDER_OPS.op("Neg"), [from_output(s, s_value)])
    cotangents = backward(n.key, n.trace, 1.0, ProgramExecutor())
    assert cotangents[Input("a")] == -1.0
    assert cotangents[Input("b")] == -1.0
    assert cotangents[s.key] == -1.0  # intermediates are reported too
    assert cotangents[n.key] == 1.0


def test_backward_accumulates_x_squared_gradient():
    recorder = Recorder()
    x = leaf("x", 3.0)
    (out,), _ = record(recorder, RECORDER_OPS.op("Mul"), [x, x])
    assert backward(out.key, out.trace, 1.0, ProgramExecutor())[Input("x")] == 6.0


def test_backward_records_multi_op_graph_as_one_node():
    ops = RECORDER_OPS
    builder = GraphBuilder()
    e0, e1 = builder.add_input("e0"), builder.add_input("e1")
    (m,) = builder.add_operation(ops.op("Mul"), [Local(e0), Local(e1)])
    (s,) = builder.add_operation(ops.op("Add"), [Local(m), Local(e1)])
    builder.set_outputs([s])
    graph = builder.build()
    recorded = RecordedGraph(graph, ["e0", "e1"], [graph.key_of(s)])
    recorder = Recorder()
    (out,) = recorder.record_graph(recorded, [leaf("x", 2.0), leaf("y", 3.0)], [9.0], {})
    cotangents = backward(out.key, out.trace, 1.0, ProgramExecutor())
    assert (cotangents[Input("x")], cotangents[Input("y")]) == (3.0, 3.0)


class SeeingExecutor(ProgramExecutor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, int]] = []

    def run_transposed_linear(self, linear, cotangent_out, external_data, ctx):  # type: ignore[no-untyped-def]
        self.seen.append((len(linear.graph.outputs), len(cotangent_out)))
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)


def test_backward_linearizes_only_seeded_multi_output_slots():
    recorder = Recorder()
    outs, values = record(recorder, TWO_OUTPUT.op("Double"), [leaf("x", 3.0)])
    assert values == [3.0, 6.0]
    executor = SeeingExecutor()
    cotangents = backward(outs[1].key, outs[1].trace, 1.0, executor)
    assert executor.seen == [(1, 1)]
    assert cotangents[Input("x")] == 2.0


def test_linear_transpose_with_builder_fan_out_accumulation():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (s,) = builder.add_operation(RECORDER_OPS.op("Add"), [Local(x), Local(x)])
    graph = builder.build()
    lin = linearize([graph], [graph.key_of(s)], ["x"])
    executing = ExecutingBuilder(allow_external=False)
    (result,) = linear_transpose_with_builder(lin, executing, [executing.push(1.0)])
    assert executing.values[result] == 2.0


def test_backward_of_an_untracked_value_is_just_the_seed():
    recorder = Recorder()
    (out,), _ = record(recorder, RECORDER_OPS.op("Neg"), [leaf("x", 1.0, requires_grad=False)])
    assert out.trace is None
    assert backward(out.key, out.trace, 1.0, ProgramExecutor()) == {out.key: 1.0}
