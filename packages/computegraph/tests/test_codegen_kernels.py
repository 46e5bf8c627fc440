"""Generated code names each distinct kernel once, and never merges two kernels that
merely compare equal.

Instructions calling the same kernel object (a shared function, or bound methods of
one operation object) share one global name, so the globals of a long program stay
few; kernels are told apart by identity, so operations whose kernels look alike
(equal by ``==``, equal hashes, the same method of equal operations) still each run
their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from computegraph import GraphBuilder, Local, compile, materialize_merge, resolve


class _LooksEqual:
    """A callable equal to, and hashing like, every other: only identity tells them apart."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def __call__(self, x: float) -> float:
        return x + self.offset

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class Shift:
    """``x + offset``: its kernel is a bound method, made anew at every ``kernel()`` call;
    shifts with equal offsets are equal operations (distinct objects)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def apply(self, x: float) -> float:
        return x + self.offset

    def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
        return [self.apply(inputs[0])]

    def kernel(self) -> Callable[[float], float]:
        return self.apply

    def __eq__(self, other: object) -> bool:
        return type(other) is Shift and other.offset == self.offset

    def __hash__(self) -> int:
        return hash(("Shift", self.offset))


class Alike:
    """``x + offset`` through a :class:`_LooksEqual` kernel; operations of different
    offsets are different (their kernels compare equal all the same)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset
        self.function = _LooksEqual(offset)

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
        return [self.function(inputs[0])]

    def kernel(self) -> Callable[[float], float]:
        return self.function

    def __eq__(self, other: object) -> bool:
        return type(other) is Alike and other.offset == self.offset

    def __hash__(self) -> int:
        return hash(("Alike", self.offset))


def _negate(x: float) -> float:
    return -x


class Negate:
    """``-x`` through one shared module function."""

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Sequence[float], ctx: Any) -> list[float]:
        return [-inputs[0]]

    def kernel(self) -> Callable[[float], float]:
        return _negate

    def __eq__(self, other: object) -> bool:
        return type(other) is Negate

    def __hash__(self) -> int:
        return hash("Negate")


def _chain(operations: Sequence[Any]) -> Any:
    builder = GraphBuilder()
    value = builder.add_input("x")
    for operation in operations:
        (value,) = builder.add_operation(operation, [Local(value)])
    graph = builder.build()
    return materialize_merge(resolve(graph), [graph.key_of(value)])


def _kernel_globals(program: Any) -> set[str]:
    names = program._fast.function.__globals__
    return {name for name in names if name.startswith("k") and name[1:].isdigit()}


def test_a_long_program_has_one_global_per_distinct_kernel() -> None:
    shift = Shift(1.0)
    operations = [shift if i % 2 else Negate() for i in range(600)]
    program = compile(_chain(operations))
    expected = program.eval([0.5])
    assert program.eval([0.5]) == expected
    assert program.generated
    assert len(_kernel_globals(program)) == 2


def _reference(operations: Sequence[Any], x: float) -> float:
    for operation in operations:
        (x,) = operation.eval([x], None)
    return x


_MAKERS: list[Callable[[float], Any]] = [Shift, Alike, lambda _offset: Negate()]


@settings(max_examples=40)
@given(
    st.lists(
        st.tuples(st.integers(0, len(_MAKERS) - 1), st.sampled_from([0.0, 1.0, -0.0, 2.0, 1.0])),
        min_size=1,
        max_size=30,
    ),
    st.floats(-4, 4, allow_nan=False),
)
def test_lookalike_kernels_each_run_their_own(choices: list[tuple[int, float]], x: float) -> None:
    # Alike kernels all compare equal and hash alike; Shift kernels are fresh bound
    # methods of equal operations: the generated code must still run each one's own.
    operations = [_MAKERS[kind](offset) for kind, offset in choices]
    program = compile(_chain(operations))
    program.eval([x])
    assert program.eval([x]) == [_reference(operations, x)]
    assert program.generated
