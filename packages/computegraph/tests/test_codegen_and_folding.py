"""The generated straight-line tier and constant folding behave exactly like the loop."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import pytest
from cg_support import ScalarOp

from computegraph import (
    BindingError,
    GraphBuilder,
    Local,
    OperationContractError,
    compile,
    materialize_merge,
    resolve,
)


@dataclass(frozen=True)
class Counted:
    """x -> x + 1, counting evaluations in a shared list; with a kernel if asked."""

    calls: list[str]
    with_kernel: bool = False

    def __hash__(self) -> int:
        return hash(self.with_kernel)

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Any, ctx: Any) -> list[Any]:
        self.calls.append("eval")
        return [inputs[0] + 1]

    def kernel(self) -> Any:
        if not self.with_kernel:
            return None

        def run(x: Any) -> Any:
            self.calls.append("kernel")
            return x + 1

        return run


@dataclass(frozen=True)
class Literal:
    """A constant without inputs."""

    value: float
    calls: list[str]

    def __hash__(self) -> int:
        return hash(self.value)

    def input_count(self) -> int:
        return 0

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Any, ctx: Any) -> list[Any]:
        self.calls.append("literal")
        return [self.value]


def chain_program(operation: Any, steps: int = 3, **options: Any):
    builder = GraphBuilder()
    value = builder.add_input("x")
    for _ in range(steps):
        (value,) = builder.add_operation(operation, [Local(value)])
    graph = builder.build()
    return compile(materialize_merge(resolve(graph), [graph.key_of(value)]), **options)


def test_second_run_switches_to_generated_code_with_the_same_results():
    calls: list[str] = []
    program = chain_program(Counted(calls), steps=3)
    assert program.eval([1]) == [4]
    assert not program.generated
    assert program.eval([10]) == [13]
    assert program.generated
    assert calls == ["eval"] * 6


def test_kernels_are_called_directly_in_generated_code():
    calls: list[str] = []
    program = chain_program(Counted(calls, with_kernel=True), steps=2)
    program.eval([0])
    calls.clear()
    assert program.eval([5]) == [7]
    assert calls == ["kernel", "kernel"]


def test_generated_code_releases_intermediates():
    class Box:
        def __init__(self, payload: int) -> None:
            self.payload = payload

    refs: list[Any] = []

    @dataclass(frozen=True)
    class Step:
        def input_count(self) -> int:
            return 1

        def output_count(self) -> int:
            return 1

        def eval(self, inputs: Any, ctx: Any) -> list[Any]:
            ctx.append([ref() is not None for ref in refs])
            box = Box(inputs[0].payload + 1)
            refs.append(weakref.ref(box))
            return [box]

    program = chain_program(Step(), steps=4)
    program.eval([Box(0)], [])
    refs.clear()
    alive: list[Any] = []
    (result,) = program.eval([Box(0)], alive)
    assert program.generated
    assert result.payload == 4
    assert alive == [[], [True], [False, True], [False, False, True]]


def test_generated_code_reports_the_failing_instruction_and_output_contracts():
    @dataclass(frozen=True)
    class FailsOnNegative:
        def input_count(self) -> int:
            return 1

        def output_count(self) -> int:
            return 1

        def eval(self, inputs: Any, ctx: Any) -> list[Any]:
            if inputs[0] < 0:
                raise ValueError("negative")
            return [inputs[0] - 1]

    program = chain_program(FailsOnNegative(), steps=3)
    program.eval([10])
    with pytest.raises(ValueError, match="negative") as info:
        program.eval([1])  # 1 -> 0 -> -1 -> fails at instruction 2
    assert program.generated
    assert any("instruction 2 of 3" in note for note in info.value.__notes__)

    @dataclass(frozen=True)
    class Liar:
        def input_count(self) -> int:
            return 1

        def output_count(self) -> int:
            return 1

        def eval(self, inputs: Any, ctx: Any) -> list[Any]:
            return [] if inputs[0] == "lie" else [inputs[0]]

    program = chain_program(Liar(), steps=1)
    program.eval(["ok"])
    with pytest.raises(OperationContractError, match=r"instruction 0: .*returned 0 value"):
        program.eval(["lie"])


def test_multi_output_operations_in_generated_code():
    builder = GraphBuilder()
    x = builder.add_input("x")
    a, b = builder.add_operation(ScalarOp.DUP, [Local(x)])
    (total,) = builder.add_operation(ScalarOp.ADD, [Local(a), Local(b)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(total), graph.key_of(b)]))
    assert program.eval([2.0]) == [4.0, 2.0]
    assert program.eval([3.0]) == [6.0, 3.0]
    assert program.generated


def test_constant_folding_evaluates_input_free_instructions_once():
    calls: list[str] = []
    builder = GraphBuilder()
    x = builder.add_input("x")
    (c,) = builder.add_operation(Literal(2.0, calls), [])
    (c2,) = builder.add_operation(ScalarOp.MUL, [Local(c), Local(c)])
    (y,) = builder.add_operation(ScalarOp.MUL, [Local(x), Local(c2)])
    graph = builder.build()
    materialized = materialize_merge(resolve(graph), [graph.key_of(y), graph.key_of(c2)])
    folded = compile(materialized, fold_constants=True)
    assert calls == ["literal"]
    assert len(folded.instructions) == 1
    assert list(folded.constants.values()) == [4.0]
    for x_value in (1.0, 3.0, 5.0):
        assert folded.eval([x_value]) == [4.0 * x_value, 4.0]
    assert calls == ["literal"]
    assert "folded constant 4.0" in str(folded)
    plain = compile(materialized)
    assert plain.eval([1.0]) == [4.0, 4.0]
    assert len(plain.instructions) == 3


def test_folding_leaves_large_results_to_run_time():
    class Big:
        nbytes = 10**9

    calls: list[str] = []
    builder = GraphBuilder()
    (big,) = builder.add_operation(Literal(Big(), calls), [])  # type: ignore[arg-type]
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(big)]), fold_constants=True)
    assert len(program.instructions) == 1
    assert program.constants == {}


def test_with_operations_runs_other_operations_in_the_same_slots() -> None:
    """``with_operations`` keeps slots and liveness and swaps each instruction's operation,
    in both tiers (the loop, then generated code)."""
    builder = GraphBuilder()
    x, y = builder.add_input("x"), builder.add_input("y")
    (s,) = builder.add_operation(ScalarOp.ADD, [Local(x), Local(y)])
    (t,) = builder.add_operation(ScalarOp.NEG, [Local(s)])
    builder.set_outputs([t])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), graph.output_keys()))
    swapped = program.with_operations([ScalarOp.MUL, ScalarOp.EXP])
    assert [i.operation for i in swapped.instructions] == [ScalarOp.MUL, ScalarOp.EXP]
    assert swapped.free_after == program.free_after
    for _ in range(8):  # a re-made program generates code later than a compiled one
        assert swapped.eval([2.0, 0.5]) == [pytest.approx(2.718281828459045)]
        assert program.eval([2.0, 0.5]) == [-2.5]
    assert swapped.generated
    with pytest.raises(BindingError, match="1 operation"):
        program.with_operations([ScalarOp.ADD])
