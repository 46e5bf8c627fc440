"""computegraph: build, resolve, materialise, compile and evaluate large graphs.

Workloads: a chain and a random DAG (fixed seed) of 10k and 100k operations with a
trivial operation. Reports medians in milliseconds and the evaluation overhead
per instruction in microseconds (time per instruction minus a bare call of the
operation's ``eval``).
"""

from __future__ import annotations

import random
import sys
import timeit
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_common import Report, header, median, timings

from computegraph import (
    GraphBuilder,
    Local,
    ProgramCache,
    compile,
    materialize_merge,
    resolve,
)


class Trivial:
    """A do-nothing operation with ``arity`` inputs: returns its first input."""

    __slots__ = ("arity",)

    def __init__(self, arity: int) -> None:
        self.arity = arity

    def input_count(self) -> int:
        return self.arity

    def output_count(self) -> int:
        return 1

    def eval(self, inputs: Sequence[Any], ctx: Any) -> tuple[Any]:
        return (inputs[0],)

    def __hash__(self) -> int:
        return hash(("Trivial", self.arity))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trivial) and other.arity == self.arity

    def __repr__(self) -> str:
        return f"Trivial{self.arity}"


OPS = {arity: Trivial(arity) for arity in (1, 2, 3)}


def build_chain(n: int):
    builder = GraphBuilder()
    value = builder.add_input("x")
    op = OPS[1]
    for _ in range(n):
        (value,) = builder.add_operation(op, [Local(value)])
    builder.set_outputs([value])
    return builder.build()


def build_dag(n: int, seed: int = 0):
    rng = random.Random(seed)
    builder = GraphBuilder()
    values = [builder.add_input(f"x{i}") for i in range(4)]
    for _ in range(n):
        arity = rng.choice((1, 2, 3))
        window = values[-64:]
        args = [Local(rng.choice(window)) for _ in range(arity)]
        values.extend(builder.add_operation(OPS[arity], args))
    builder.set_outputs(values[-8:])
    return builder.build()


def bench(report: Report, kind: str, n: int, builder: Any, repeat: int) -> None:
    graph = builder(n)
    outputs = graph.output_keys()
    view = resolve(graph)
    materialized = materialize_merge(view, outputs)
    program = compile(materialized)
    inputs = [1.0] * len(program.input_slots)
    build_t = median(timings(lambda: builder(n), repeat))
    resolve_t = median(timings(lambda: resolve(graph), repeat))
    materialize_t = median(timings(lambda: materialize_merge(view, outputs), repeat))
    compile_t = median(timings(lambda: compile(materialized), repeat))
    eval_t = median(timings(lambda: program.eval(inputs), repeat))
    op = OPS[1]
    bare = min(timeit.repeat(lambda: op.eval((1.0,), None), number=100_000, repeat=5)) / 100_000
    instructions = len(program.instructions)
    cache = ProgramCache()
    cache.get_or_compile(graph, outputs)
    hit = min(timeit.repeat(lambda: cache.get_or_compile(graph, outputs), number=1000, repeat=5))
    report.add(
        graph=kind,
        ops=n,
        build_ms=build_t * 1e3,
        resolve_ms=resolve_t * 1e3,
        materialize_ms=materialize_t * 1e3,
        compile_ms=compile_t * 1e3,
        eval_ms=eval_t * 1e3,
        eval_us_per_instr=eval_t / instructions * 1e6,
        overhead_us_per_instr=(eval_t / instructions - bare) * 1e6,
        cache_hit_us=hit / 1000 * 1e6,
    )


def main() -> None:
    header("computegraph: build / resolve / materialize / compile / eval")
    report = Report("computegraph")
    for n, repeat in ((10_000, 7), (100_000, 3)):
        bench(report, "chain", n, build_chain, repeat)
        bench(report, "random-dag", n, build_dag, repeat)
    print(f"   saved {report.save()}")


if __name__ == "__main__":
    main()
