"""Property tests: random DAGs evaluate like a direct interpreter, before and after CSE
and across graph splits.

Operations work modulo a prime so every comparison is exact.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from computegraph import (
    External,
    Graph,
    GraphBuilder,
    Local,
    ValueKey,
    compile,
    materialize_merge,
    resolve,
)

P = 1_000_003


class ModOp(enum.Enum):
    ADD = ("Add", 2, 1)
    MUL = ("Mul", 2, 1)
    NEG = ("Neg", 1, 1)
    SQUARE = ("Square", 1, 1)
    SPLIT = ("Split", 1, 2)  # [x, x + 1]
    AFFINE = ("Affine", 3, 1)  # a * b + c

    def input_count(self) -> int:
        return self.value[1]

    def output_count(self) -> int:
        return self.value[2]

    def eval(self, xs: Sequence[int], ctx: Any) -> list[int]:
        match self:
            case ModOp.ADD:
                return [(xs[0] + xs[1]) % P]
            case ModOp.MUL:
                return [(xs[0] * xs[1]) % P]
            case ModOp.NEG:
                return [(-xs[0]) % P]
            case ModOp.SQUARE:
                return [(xs[0] * xs[0]) % P]
            case ModOp.SPLIT:
                return [xs[0], (xs[0] + 1) % P]
            case ModOp.AFFINE:
                return [(xs[0] * xs[1] + xs[2]) % P]
        raise AssertionError(self)


@dataclass(frozen=True)
class Spec:
    """A random DAG: ``ops[i] = (op, argument value ids)``; values 0..n_inputs-1 are inputs."""

    n_inputs: int
    ops: tuple[tuple[ModOp, tuple[int, ...]], ...]
    outputs: tuple[int, ...]

    def value_count(self) -> int:
        return self.n_inputs + sum(op.output_count() for op, _ in self.ops)


@st.composite
def dags(draw: st.DrawFn) -> Spec:
    n_inputs = draw(st.integers(1, 4))
    count = n_inputs
    ops: list[tuple[ModOp, tuple[int, ...]]] = []
    for _ in range(draw(st.integers(0, 25))):
        if ops and draw(st.booleans()) and draw(st.booleans()):
            op, args = draw(st.sampled_from(ops))  # an exact duplicate: CSE must merge it
        else:
            op = draw(st.sampled_from(list(ModOp)))
            args = tuple(draw(st.integers(0, count - 1)) for _ in range(op.input_count()))
        ops.append((op, args))
        count += op.output_count()
    outputs = tuple(draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=5)))
    return Spec(n_inputs, tuple(ops), outputs)


def interpret(spec: Spec, inputs: Sequence[int]) -> list[int]:
    """Direct evaluation in construction order (no graph machinery, no recursion)."""
    values = list(inputs)
    for op, args in spec.ops:
        values.extend(op.eval([values[a] for a in args], None))
    return [values[o] for o in spec.outputs]


def build(spec: Spec, splits: Sequence[int] = ()) -> tuple[list[Graph], list[ValueKey]]:
    """Build ``spec`` as one graph, or as several split before the given op indices.

    A value from an earlier piece is referenced through ``External``; each piece
    lists the previous piece as a parent.
    """
    keys: list[ValueKey] = []
    graphs: list[Graph] = []
    builder = GraphBuilder()
    local: dict[int, int] = {}
    for i in range(spec.n_inputs):
        local[i] = builder.add_input(f"in{i}")
        keys.append(builder.global_key(local[i]))
    for position, (op, args) in enumerate(spec.ops):
        if position in splits:
            graphs.append(builder.build())
            builder = GraphBuilder()
            builder.add_parent(graphs[-1])
            local = {}
        refs = [Local(local[a]) if a in local else External(keys[a]) for a in args]
        for value_id in builder.add_operation(op, refs):
            local[len(keys)] = value_id
            keys.append(builder.global_key(value_id))
    graphs.append(builder.build())
    return graphs, [keys[o] for o in spec.outputs]


def run(roots: Sequence[Graph], outputs: Sequence[ValueKey], inputs: Sequence[int]) -> list[int]:
    program = compile(materialize_merge(resolve(roots), outputs))
    return program.eval_with({f"in{i}": v for i, v in enumerate(inputs)})


input_values = st.lists(st.integers(0, P - 1), min_size=4, max_size=4)


@settings(max_examples=200, deadline=None)
@given(spec=dags(), inputs=input_values)
def test_single_graph_matches_interpreter(spec: Spec, inputs: list[int]):
    graphs, outputs = build(spec)
    assert run(graphs, outputs, inputs) == interpret(spec, inputs[: spec.n_inputs])


@settings(max_examples=200, deadline=None)
@given(spec=dags(), inputs=input_values, data=st.data())
def test_split_graphs_match_interpreter(spec: Spec, inputs: list[int], data: st.DataObject):
    splits = data.draw(st.sets(st.integers(1, max(1, len(spec.ops)))))
    graphs, outputs = build(spec, sorted(splits))
    expected = interpret(spec, inputs[: spec.n_inputs])
    assert run(graphs[-1:], outputs, inputs) == expected  # ancestors found through parents
    assert run(graphs, outputs, inputs) == expected


@settings(max_examples=200, deadline=None)
@given(spec=dags())
def test_cse_merges_exactly_the_structurally_equal_operations(spec: Spec):
    graphs, outputs = build(spec)
    materialized = materialize_merge(resolve(graphs), outputs)
    # Distinct operation keys reachable from the outputs, found by a plain walk.
    reachable: set[Any] = set()
    stack = list(outputs)
    while stack:
        key = stack.pop()
        operation_key = getattr(key, "operation_key", None)
        if operation_key is not None and operation_key not in reachable:
            reachable.add(operation_key)
            stack.extend(operation_key.inputs)
    assert len(materialized.operations) == len(reachable)
    assert len({value.key for value in materialized.values}) == len(materialized.values)
    # Operations are topologically ordered and every input precedes its use.
    produced = {i for i, v in enumerate(materialized.values) if v.producer is None}
    for op in materialized.operations:
        assert set(op.inputs) <= produced
        produced.update(op.outputs)


@settings(max_examples=100, deadline=None)
@given(spec=dags(), inputs=input_values)
def test_program_reuse_and_cse_do_not_change_results(spec: Spec, inputs: list[int]):
    graphs, outputs = build(spec)
    program = compile(materialize_merge(resolve(graphs), outputs))
    bindings = {f"in{i}": v for i, v in enumerate(inputs)}
    first = program.eval_with(bindings)
    assert program.eval_with(bindings) == first
    # Building the same structure again yields the same keys, hence the same program.
    again_graphs, again_outputs = build(spec)
    assert again_outputs == outputs
    assert (
        compile(materialize_merge(resolve(again_graphs), again_outputs)).eval_with(bindings)
        == first
    )
