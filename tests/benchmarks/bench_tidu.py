"""tidu: linearize + transpose of long chains; eager record + backward per tape node.

The primitive set is tidu's test set (scalar floats). Eager figures: recording
(execute + record) per node, then backward per node on the first call (cold
derivative cache) and in steady state (warm cache), wall clock and, for the steady
state, this thread's CPU time (a short chain's pass is preempted or not as a whole on a
loaded machine, so its wall-clock median can sit far above its cost). Target:
steady-state eager backward <= 5 us per scalar node.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "packages" / "tidu" / "tests"))

from bench_common import QUICK, Report, header, median, timings  # noqa: E402
from tidu_support import EXT_SCALAR, GraphMaker, User  # noqa: E402

from computegraph import Input  # noqa: E402
from tidu import linear_transpose, linearize  # noqa: E402
from tidu.eager import (  # noqa: E402
    DerivativeCache,
    EagerInput,
    ProgramExecutor,
    RecordedGraph,
    Recorder,
    backward,
)

Add, Mul, Sin = EXT_SCALAR.op("Add"), EXT_SCALAR.op("Mul"), EXT_SCALAR.op("Sin")


def chain_graph(n: int):
    g = GraphMaker("x", "c")
    value = g["x"]
    for step in range(n):
        value = g.apply(Sin, value) if step % 2 else g.apply(Mul, value, g["c"])
    return g.build(value)


def bench_transforms(report: Report, n: int, repeat: int) -> None:
    graph, (y,) = chain_graph(n)
    lin_t = median(timings(lambda: linearize([graph], [y], [User("x")]), repeat))
    lin = linearize([graph], [y], [User("x")])
    tr_t = median(timings(lambda: linear_transpose(lin), repeat))
    report.add(
        workload="linearize+transpose chain",
        ops=n,
        linearize_us_per_op=lin_t / n * 1e6,
        transpose_us_per_op=tr_t / n * 1e6,
    )


SIN = RecordedGraph.from_primitive(Sin, ["a0"])
MUL = RecordedGraph.from_primitive(Mul, ["a0", "a1"])


def record_chain(recorder: Recorder, n: int) -> EagerInput:
    """x -> (x * c) -> sin -> (* c) -> ... with float data; outputs retained."""
    c = EagerInput(Input("c"), None, False, 0.999)
    value = EagerInput(Input("x"), None, True, 0.5)
    for step in range(n):
        if step % 2:
            data = math.sin(value.data)
            (out,) = recorder.record_graph(SIN, [value], (data,), {SIN.output_keys[0]: data})
        else:
            data = value.data * c.data
            (out,) = recorder.record_graph(MUL, [value, c], (data,), {MUL.output_keys[0]: data})
        value = EagerInput(out.key, out.trace, True, data)
    return value


def backward_samples(tip: EagerInput, repeat: int, warm: bool) -> list[float]:
    """Backward times; cold samples get a fresh derivative cache and executor each."""
    state: dict[str, Any] = {}

    def fresh() -> None:
        state["cache"], state["executor"] = DerivativeCache(), ProgramExecutor(Add)

    def run() -> None:
        backward(tip.key, tip.trace, 1.0, state["executor"], cache=state["cache"])

    if warm:
        fresh()
        run()
        return timings(run, repeat)
    return timings(run, repeat, setup=fresh)


def backward_cpu_samples(tip: EagerInput, repeat: int) -> list[float]:
    """Steady backward times in this thread's CPU seconds: what a pass costs whether or
    not the machine's other processes preempt it (a 1000-node pass takes milliseconds,
    so on a loaded machine its wall-clock samples are bimodal: run through, or
    preempted)."""
    cache, executor = DerivativeCache(), ProgramExecutor(Add)
    backward(tip.key, tip.trace, 1.0, executor, cache=cache)
    samples = []
    for _ in range(max(1, repeat // 5) if QUICK else repeat):
        start = time.thread_time()
        backward(tip.key, tip.trace, 1.0, executor, cache=cache)
        samples.append(time.thread_time() - start)
    return samples


def bench_eager(report: Report, n: int, repeat: int) -> None:
    recorder = Recorder()
    record = timings(lambda: record_chain(recorder, n), repeat)
    tip = record_chain(recorder, n)
    cold = backward_samples(tip, min(repeat, 20), warm=False)
    warm = backward_samples(tip, repeat, warm=True)
    cpu = backward_cpu_samples(tip, repeat)
    report.add(
        workload="eager scalar chain",
        nodes=n,
        record_us_per_node_median=median(record) / n * 1e6,
        record_us_per_node_min=min(record) / n * 1e6,
        backward_first_us_per_node_median=median(cold) / n * 1e6,
        backward_steady_us_per_node_median=median(warm) / n * 1e6,
        backward_steady_us_per_node_min=min(warm) / n * 1e6,
        backward_steady_cpu_us_per_node_median=median(cpu) / n * 1e6,
        target_us=5.0,
    )


def main() -> None:
    header("tidu: transforms of long chains, eager record + backward")
    report = Report("tidu")
    for n, repeat in ((10_000, 5), (100_000, 3)):
        bench_transforms(report, n, repeat)
    for n, repeat in ((1_000, 200), (100_000, 5)):
        bench_eager(report, n, repeat)
    print(f"   saved {report.save()}")


if __name__ == "__main__":
    main()
