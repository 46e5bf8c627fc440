"""Bad input raises clear errors naming the operation and values, and corrupts nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from cg_support import ScalarOp

from computegraph import (
    BindingError,
    External,
    GraphBuilder,
    GraphBuildError,
    Input,
    Linearized,
    Local,
    OperationContractError,
    UnresolvedKeyError,
    compile,
    materialize_merge,
    resolve,
)

Add, Neg, Exp, Dup = ScalarOp.ADD, ScalarOp.NEG, ScalarOp.EXP, ScalarOp.DUP


def snapshot(builder: GraphBuilder) -> tuple[Any, ...]:
    graph = builder.build()
    return (graph.values, graph.operations, graph.inputs, graph.outputs, graph.parents)


def test_wrong_input_count_names_the_operation_and_changes_nothing():
    builder = GraphBuilder()
    x = builder.add_input("x")
    before = snapshot(builder)
    with pytest.raises(GraphBuildError, match=r"operation Add expects 2 input\(s\), got 1"):
        builder.add_operation(Add, [Local(x)])
    assert snapshot(builder) == before


def test_unknown_local_id():
    builder = GraphBuilder()
    x = builder.add_input("x")
    before = snapshot(builder)
    with pytest.raises(GraphBuildError, match=r"Add.*input 1 refers to unknown local value id 7"):
        builder.add_operation(Add, [Local(x), Local(7)])
    assert snapshot(builder) == before
    with pytest.raises(GraphBuildError, match="unknown local value id 3"):
        builder.global_key(3)
    with pytest.raises(GraphBuildError, match="unknown local value id 5"):
        builder.set_outputs([x, 5])
    assert snapshot(builder) == before
    with pytest.raises(GraphBuildError, match="unknown local value id 9"):
        builder.build().key_of(9)


def test_bad_references_and_parents():
    builder = GraphBuilder()
    x = builder.add_input("x")
    with pytest.raises(TypeError, match=r"input 0 must be Local\(id\) or External\(key\)"):
        builder.add_operation(Neg, [x])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="External: expected a ValueKey"):
        External("x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="local value id must be an int"):
        Local("0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="add_parent: expected a Graph"):
        builder.add_parent("graph")  # type: ignore[arg-type]


def test_role_mask_must_match_inputs():
    builder = GraphBuilder()
    x = builder.add_input("x")
    before = snapshot(builder)
    with pytest.raises(GraphBuildError, match=r"Neg: active mask \[True, False\] has 2 entries"):
        builder.add_operation(Neg, [Local(x)], Linearized([True, False]))
    assert snapshot(builder) == before


def test_unresolvable_key_in_materialize_names_key_and_origin():
    b0 = GraphBuilder()
    x = b0.add_input("x")
    (e,) = b0.add_operation(Exp, [Local(x)])
    primal = b0.build()
    b1 = GraphBuilder()
    (n,) = b1.add_operation(Neg, [External(primal.key_of(e))])
    linear = b1.build()  # no parents: the primal graph must be passed as a root
    with pytest.raises(
        UnresolvedKeyError, match=r"Exp.*not defined.*reached from requested output"
    ):
        materialize_merge(resolve(linear), [linear.key_of(n)])
    assert materialize_merge(resolve([primal, linear]), [linear.key_of(n)]).operations
    with pytest.raises(UnresolvedKeyError, match=r"Input\('nowhere'\)"):
        materialize_merge(resolve(linear), [Input("nowhere")])
    with pytest.raises(TypeError, match="output 0 is not a ValueKey"):
        materialize_merge(resolve(linear), ["x"])  # type: ignore[list-item]


def test_eval_binding_errors():
    builder = GraphBuilder()
    x = builder.add_input("x")
    y = builder.add_input("y")
    (s,) = builder.add_operation(Add, [Local(x), Local(y)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(s)]))
    with pytest.raises(BindingError, match=r"expected 2 input\(s\) \(\['x', 'y'\]\), got 1"):
        program.eval([1.0])
    with pytest.raises(BindingError, match=r"no binding for input\(s\) \['y'\]"):
        program.eval_with({"x": 1.0})
    with pytest.raises(BindingError, match="'z' is not an input"):
        program.input_position("z")
    assert program.eval_with({"x": 1.0, "y": 2.0, "unused": 3.0}) == [3.0]


@dataclass(frozen=True)
class Liar:
    """Declares one output but returns ``returned`` values."""

    returned: int

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Sequence[float], ctx: Any) -> Any:
        return [inputs[0]] * self.returned


@dataclass(frozen=True)
class Explodes:
    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
        raise ZeroDivisionError("boom")


@dataclass(frozen=True)
class Opaque:
    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1


def single_op_program(operation: Any):
    builder = GraphBuilder()
    x = builder.add_input("x")
    (out,) = builder.add_operation(operation, [Local(x)])
    graph = builder.build()
    return compile(materialize_merge(resolve(graph), [graph.key_of(out)]))


@pytest.mark.parametrize("returned", [0, 2])
def test_eval_rejects_wrong_output_count(returned: int):
    program = single_op_program(Liar(returned))
    with pytest.raises(
        OperationContractError,
        match=rf"instruction 0: Liar\(returned={returned}\)\.eval returned {returned} value",
    ):
        program.eval([1.0])


def test_eval_rejects_non_sequence_results_and_multi_output_mismatch():
    @dataclass(frozen=True)
    class Scalar(Liar):
        def eval(self, inputs: Sequence[float], ctx: Any) -> Any:
            return 3.0

    with pytest.raises(OperationContractError, match="returned a non-sequence float"):
        single_op_program(Scalar(1)).eval([1.0])

    @dataclass(frozen=True)
    class HalfDup:
        def input_count(self) -> int:
            return 1

        def output_count(self) -> int:
            return 2

        def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
            return [inputs[0]]

    builder = GraphBuilder()
    x = builder.add_input("x")
    _d0, d1 = builder.add_operation(HalfDup(), [Local(x)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(d1)]))
    with pytest.raises(OperationContractError, match=r"returned 1 value.*expected 2"):
        program.eval([1.0])


def test_operation_exceptions_propagate_with_a_note():
    program = single_op_program(Explodes())
    with pytest.raises(ZeroDivisionError, match="boom") as info:
        program.eval([1.0])
    assert any("instruction 0 of 1: Explodes()" in note for note in info.value.__notes__)
    # The program stays usable.
    with pytest.raises(ZeroDivisionError):
        program.eval([2.0])


def test_non_evaluable_operation():
    program = single_op_program(Opaque())
    with pytest.raises(OperationContractError, match=r"Opaque\(\) is not evaluable"):
        program.eval([1.0])


def test_pipeline_functions_reject_wrong_types():
    with pytest.raises(TypeError, match="root 1 is not a Graph"):
        resolve([GraphBuilder().build(), "graph"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a ResolvedView"):
        materialize_merge([GraphBuilder().build()], [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a MaterializedGraph"):
        compile("graph")  # type: ignore[arg-type]


def test_graph_is_immutable():
    graph = GraphBuilder().build()
    with pytest.raises(AttributeError, match="immutable"):
        graph.outputs = (1,)  # type: ignore[misc]


def test_builder_is_reusable_after_build():
    builder = GraphBuilder()
    x = builder.add_input("x")
    first = builder.build()
    builder.add_operation(Neg, [Local(x)])
    second = builder.build()
    assert len(first.operations) == 0
    assert len(second.operations) == 1
