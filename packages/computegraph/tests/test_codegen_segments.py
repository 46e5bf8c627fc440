"""Generated code split into segments (long programs) computes what the loop computes.

Random DAG programs over scalar operations, with segments as short as one
instruction, so every kind of boundary occurs: values carried across several
segments, values dying inside a segment, multi-output operations at a boundary,
program inputs read late and outputs produced early.
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

import pytest
from cg_support import ScalarOp
from hypothesis import given
from hypothesis import strategies as st

from computegraph import GraphBuilder, Local, codegen, compile, materialize_merge, resolve

_OPS = [ScalarOp.ADD, ScalarOp.MUL, ScalarOp.NEG, ScalarOp.DUP]


@st.composite
def programs(draw: Any) -> tuple[Any, list[float]]:
    builder = GraphBuilder()
    inputs = draw(st.integers(1, 3))
    values = [builder.add_input(f"x{i}") for i in range(inputs)]
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(_OPS))
        operands = [
            Local(values[draw(st.integers(0, len(values) - 1))]) for _ in range(op.input_count())
        ]
        values.extend(builder.add_operation(op, operands))
    outputs = draw(st.lists(st.integers(0, len(values) - 1), min_size=1, max_size=4))
    graph = builder.build()
    keys = [graph.key_of(values[i]) for i in outputs]
    data = draw(st.lists(st.floats(-2, 2, allow_nan=False), min_size=inputs, max_size=inputs))
    return materialize_merge(resolve(graph), keys), data


@given(programs(), st.integers(1, 4))
def test_segmented_code_equals_the_loop(program_and_data, segment):
    materialized, data = program_and_data
    ordered = [data[int(key.key[1:])] for key in materialized.inputs]
    expected = compile(materialized).eval(ordered)  # first run: the loop tier
    original = codegen.SEGMENT
    codegen.SEGMENT = segment
    try:
        program = compile(materialized)
        program.eval(ordered)
        assert program.eval(ordered) == expected
        assert program.generated
    finally:
        codegen.SEGMENT = original


def test_a_failure_in_a_later_segment_names_its_instruction(monkeypatch):
    class FailsOnNegative:
        def input_count(self) -> int:
            return 1

        def output_count(self) -> int:
            return 1

        def eval(self, inputs: Any, ctx: Any) -> list[Any]:
            if inputs[0] < 0:
                raise ValueError("negative")
            return [inputs[0] - 1]

        def __hash__(self) -> int:
            return 1

        def __eq__(self, other: object) -> bool:
            return type(other) is type(self)

    monkeypatch.setattr(codegen, "SEGMENT", 2)
    builder = GraphBuilder()
    value = builder.add_input("x")
    for _ in range(7):
        (value,) = builder.add_operation(FailsOnNegative(), [Local(value)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(value)]))
    assert program.eval([10]) == [3]
    assert program.eval([10]) == [3]
    assert program.generated
    with pytest.raises(ValueError, match="negative") as info:
        program.eval([5])  # 5 -> ... -> 0 -> -1 fails at instruction 6 (segment 4)
    assert any("instruction 6 of 7" in note for note in info.value.__notes__)


class _Box:
    """A value whose liveness a test can observe (weak references)."""

    live: ClassVar[weakref.WeakSet[_Box]] = weakref.WeakSet()

    def __init__(self, value: float) -> None:
        self.value = value
        _Box.live.add(self)


def _step(fn: Any, args: tuple[int, ...], out: int, dead: tuple[int, ...] = ()) -> tuple[Any, ...]:
    return (object(), lambda inputs, ctx: [fn(*inputs)], args, out, dead)


def _chain_keeping_every_value(length: int) -> Any:
    """``length`` steps, each value read by the next and all of them outputs (as a
    gradient keeps its forward values): every one crosses every later boundary."""
    steps = [_step(lambda v: v + 1.0, (slot,), slot + 1) for slot in range(length)]
    return codegen.generate(steps, [0], list(range(1, length + 1)), {})


def test_code_for_values_crossing_many_segments_grows_linearly(monkeypatch):
    monkeypatch.setattr(codegen, "SEGMENT", 10)
    short, long = _chain_keeping_every_value(200), _chain_keeping_every_value(400)
    assert long.function([0.0], None) == [float(i) for i in range(1, 401)]

    def size(run: Any) -> int:
        return sum(len(code.co_code) for code in run.codes)

    # handing every live value on at each boundary would make this about 4
    assert size(long) / size(short) < 2.3


def test_a_value_carried_across_segments_is_freed_at_its_last_use(monkeypatch):
    monkeypatch.setattr(codegen, "SEGMENT", 2)
    steps = [_step(_Box, (0,), 1)]  # made in the first segment
    filler = [_step(lambda v: -v, (0,), 2)] + [
        _step(lambda v: -v, (slot,), slot + 1, (slot,)) for slot in range(2, 7)
    ]
    steps += filler  # slots 2..7, segments 0..3
    steps.append(_step(lambda box, v: box.value + v, (1, 7), 8, (1, 7)))  # last use of the box
    steps += [_step(lambda v: v * 2, (8,), 9, (8,)), _step(lambda v: v * 2, (9,), 10, (9,))]
    steps.append(_step(lambda v: (v, len(_Box.live)), (10,), 11, (10,)))
    run = codegen.generate(steps, [0], [11], {})
    (result,) = run.function([3.0], None)
    assert result == (4 * (3.0 + 3.0), 0)  # computed, and the box was gone by the probe
