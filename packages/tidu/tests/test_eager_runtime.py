"""The eager runtime beyond the reference suite: a recording frontend, differentiating
through backward (HVP, third order), replay of unsaved values, the derivative cache,
misuse errors and a 100,000-node tape."""

from __future__ import annotations

import gc
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings
from tidu_support import EXT_SCALAR, Op

from computegraph import GraphBuilder, Input, Local, ValueKey
from tidu import ReleasedGraphError, RuleContractError, TransformError
from tidu.eager import (
    DerivativeCache,
    EagerInput,
    ProgramExecutor,
    RecordedGraph,
    Recorder,
    Trace,
    backward,
    contributing_nodes,
    forward,
)

Add, Mul, Neg, Sin, Exp = (EXT_SCALAR.op(n) for n in ("Add", "Mul", "Neg", "Sin", "Exp"))
CANONICAL = ("a0", "a1", "a2")


@dataclass
class Var:
    """A frontend value: eager key, producer trace, whether it is tracked, and its number."""

    key: ValueKey
    trace: Trace | None
    requires_grad: bool
    data: float


class Frontend:
    """A minimal eager frontend over tidu.eager: every op executes and records.

    Recorded graphs use canonical input keys, so identical ops share one structure
    (and one cached derivative). Nodes save their inputs as tracked ``Var`` values and
    retain nothing else, so the backward pass replays what it needs through ``apply``
    and is itself recorded when its operands are tracked.
    """

    def __init__(self, cache: DerivativeCache | None = None) -> None:
        self.recorder = Recorder()
        self.cache = cache
        self.executor = ProgramExecutor(Add, apply=self.apply)

    def leaf(self, name: str, value: float, requires_grad: bool = True) -> Var:
        return Var(Input(name), None, requires_grad, value)

    def constant(self, value: float) -> Var:
        return Var(Input(self.recorder.key_source.fresh_input_key()), None, False, value)

    def apply(self, op: Op, inputs: Sequence[Any], ctx: Any = None) -> list[Var]:
        args = [v if isinstance(v, Var) else self.constant(v) for v in inputs]
        values = op.eval([v.data for v in args], None)
        graph = RecordedGraph.from_primitive(op, CANONICAL[: len(args)])
        eager = [EagerInput(v.key, v.trace, v.requires_grad, v) for v in args]
        outputs = self.recorder.record_graph(graph, eager, values)
        return [
            Var(o.key, o.trace, o.requires_grad, value)
            for o, value in zip(outputs, values, strict=True)
        ]

    def __call__(self, op: Op, *inputs: Any) -> Var:
        (out,) = self.apply(op, inputs)
        return out

    def grad(self, out: Var, wrt: Sequence[Var], seed: float = 1.0) -> list[Var]:
        cotangents = backward(
            out.key, out.trace, self.constant(seed), self.executor, cache=self.cache
        )
        return [cotangents.get(w.key, self.constant(0.0)) for w in wrt]


def f(fe: Frontend, x0: Var, x1: Var) -> Var:
    """x0² sin(x1) + exp(x0 x1)."""
    return fe(Add, fe(Mul, fe(Mul, x0, x0), fe(Sin, x1)), fe(Exp, fe(Mul, x0, x1)))


def test_gradient_through_replayed_and_in_graph_coefficients():
    fe = Frontend()
    a, b = 0.7, -1.2
    x0, x1 = fe.leaf("x0", a), fe.leaf("x1", b)
    g0, g1 = fe.grad(f(fe, x0, x1), [x0, x1])
    e = math.exp(a * b)
    assert math.isclose(g0.data, 2 * a * math.sin(b) + b * e, rel_tol=1e-13)
    assert math.isclose(g1.data, a * a * math.cos(b) + a * e, rel_tol=1e-13)


def test_hessian_vector_product_by_differentiating_through_backward():
    fe = Frontend()
    a, b, v0, v1 = 0.7, -1.2, 0.3, -2.0
    x0, x1 = fe.leaf("x0", a), fe.leaf("x1", b)
    g0, g1 = fe.grad(f(fe, x0, x1), [x0, x1])
    assert g0.requires_grad
    assert g1.requires_grad
    directional = fe(Add, fe(Mul, g0, v0), fe(Mul, g1, v1))
    h0, h1 = fe.grad(directional, [x0, x1])
    e = math.exp(a * b)
    hessian = [
        [2 * math.sin(b) + b * b * e, 2 * a * math.cos(b) + e + a * b * e],
        [2 * a * math.cos(b) + e + a * b * e, -a * a * math.sin(b) + a * a * e],
    ]
    assert math.isclose(h0.data, hessian[0][0] * v0 + hessian[0][1] * v1, rel_tol=1e-12)
    assert math.isclose(h1.data, hessian[1][0] * v0 + hessian[1][1] * v1, rel_tol=1e-12)


def test_third_derivative_by_repeated_backward():
    fe = Frontend()
    x = fe.leaf("x", 0.4)
    y = fe(Exp, fe(Sin, x))  # y = exp(sin x)
    (d1,) = fe.grad(y, [x])
    (d2,) = fe.grad(d1, [x])
    (d3,) = fe.grad(d2, [x])
    s, c = math.sin(0.4), math.cos(0.4)
    e = math.exp(s)
    assert math.isclose(d1.data, c * e, rel_tol=1e-13)
    assert math.isclose(d2.data, (c * c - s) * e, rel_tol=1e-13)
    assert math.isclose(d3.data, (c**3 - 3 * s * c - c) * e, rel_tol=1e-12)


def test_derivative_cache_shares_structures_and_seeded_slots():
    cache = DerivativeCache(maxsize=8)
    fe = Frontend(cache)
    x = fe.leaf("x", 2.0)
    y = x
    for _ in range(5):
        y = fe(Mul, y, x)  # one structure, five nodes
    (g,) = fe.grad(y, [x])
    assert g.data == 6 * 2.0**5
    stats = cache.stats()
    assert (stats.misses, stats.hits) == (1, 0)  # one structure: derived once per call
    fe.grad(y, [x])
    assert (cache.stats().misses, cache.stats().hits) == (1, 1)  # reused across calls
    cache.clear()
    assert cache.stats() == (0, 0, 0, 0, 8)


def test_plain_executors_share_each_structures_bound_transpose():
    """Executors without ``apply`` (and with one ``eval_ctx``/``specialize``) bind a
    structure's transpose once for all of them; one with ``apply`` binds its own."""
    cache = DerivativeCache()
    recorder = Recorder()
    graph = RecordedGraph.from_primitive(EXT_SCALAR.op("SinCos"), ["a0"])
    x = EagerInput(Input("x"), None, True, 0.3)
    outs = recorder.record_graph(graph, [x], [math.sin(0.3), math.cos(0.3)])
    linear = cache.derivative(graph, (0,), None, (0,)).linear
    first, second = ProgramExecutor(), ProgramExecutor(Add)
    runner = first.transposer(linear, None)
    assert runner is not None
    assert second.transposer(linear, None) is runner
    assert ProgramExecutor(eval_ctx="other").transposer(linear, None) is not runner
    frontend = Frontend(cache)
    assert frontend.executor.transposer(linear, None) is not runner
    for executor in (first, second, frontend.executor):  # each gives the same gradient
        got = backward(outs[0].key, outs[0].trace, 1.0, executor, cache=cache)[Input("x")]
        assert math.isclose(getattr(got, "data", got), math.cos(0.3))  # a Var under apply


def test_derivative_cache_is_bounded_and_keys_seeded_slots():
    cache = DerivativeCache(maxsize=2)
    recorder = Recorder()
    double = EXT_SCALAR.op("SinCos")
    graph = RecordedGraph.from_primitive(double, ["a0"])
    x = EagerInput(Input("x"), None, True, 0.3)
    outs = recorder.record_graph(graph, [x], [math.sin(0.3), math.cos(0.3)])
    executor = ProgramExecutor(Add)
    first = backward(outs[0].key, outs[0].trace, 1.0, executor, cache=cache)
    second = backward(outs[1].key, outs[1].trace, 1.0, executor, cache=cache)
    assert math.isclose(first[Input("x")], math.cos(0.3))
    assert math.isclose(second[Input("x")], -math.sin(0.3))
    assert len(cache) == 2  # slot (0,) and slot (1,) are different derivatives
    fe = Frontend(cache)
    fe.grad(fe(Neg, fe.leaf("z", 1.0)), [])
    assert cache.stats().evictions == 1
    with pytest.raises(ValueError, match="maxsize must be an int >= 0"):
        DerivativeCache(maxsize=-3)


def test_composite_node_replays_unsaved_intermediates():
    builder = GraphBuilder()
    a = builder.add_input("a0")
    (s,) = builder.add_operation(Sin, [Local(a)])
    (y,) = builder.add_operation(Exp, [Local(s)])
    builder.set_outputs([y])
    graph = builder.build()
    recorded = RecordedGraph(graph, ["a0"], [graph.key_of(y)])
    replays = []

    class Counting(ProgramExecutor):
        def execute_forward_subset(self, graph, initial_data, wanted):  # type: ignore[no-untyped-def]
            replays.append(set(wanted))
            return super().execute_forward_subset(graph, initial_data, wanted)

    class Plain:  # only the required protocol: the whole graph is replayed
        def __init__(self) -> None:
            self.inner = ProgramExecutor(Add)

        def execute_forward(self, graph, initial_data):  # type: ignore[no-untyped-def]
            replays.append("all")
            return self.inner.execute_forward(graph, initial_data)

        def run_transposed_linear(self, *args):  # type: ignore[no-untyped-def]
            return self.inner.run_transposed_linear(*args)

        def add_operands(self, a, b):  # type: ignore[no-untyped-def]
            return self.inner.add_operands(a, b)

    (out,) = Recorder().record_graph(recorded, [EagerInput(Input("x"), None, True, 0.4)], [None])
    expected = math.cos(0.4) * math.exp(math.sin(0.4))
    result = backward(out.key, out.trace, 1.0, Counting(Add))
    assert math.isclose(result[Input("x")], expected)
    # exp's derivative reads exp(sin x), which was not saved: only it is replayed
    assert replays == [{graph.key_of(y)}]
    replays.clear()
    result = backward(out.key, out.trace, 1.0, Plain())
    assert math.isclose(result[Input("x")], expected)
    assert replays == ["all"]
    # When the node retains what the derivative reads, nothing is replayed.
    retained = {graph.key_of(s): math.sin(0.4), graph.key_of(y): math.exp(math.sin(0.4))}
    (kept,) = Recorder().record_graph(
        recorded, [EagerInput(Input("x"), None, True, 0.4)], [None], retained
    )
    backward(kept.key, kept.trace, 1.0, Counting(Add))
    assert replays == ["all"]


def test_eager_misuse_is_reported():
    recorder = Recorder()
    graph = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    x = EagerInput(Input("x"), None, True, 2.0)
    with pytest.raises(
        TransformError, match=r"record_graph: 1 input\(s\) for a recorded graph with 2"
    ):
        recorder.record_graph(graph, [x], [4.0])
    with pytest.raises(
        TransformError, match=r"2 output value\(s\) for a recorded graph with 1 output"
    ):
        recorder.record_graph(graph, [x, x], [4.0, 4.0])
    (out,) = recorder.record_graph(graph, [x, x], [4.0])
    with pytest.raises(TransformError, match="is not an output of the given trace"):
        backward(Input("x"), out.trace, 1.0, ProgramExecutor(Add))
    with pytest.raises(TypeError, match="output_trace must be a Trace"):
        backward(out.key, "trace", 1.0, ProgramExecutor(Add))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output_key must be a ValueKey"):
        backward("y", out.trace, 1.0, ProgramExecutor(Add))  # type: ignore[arg-type]

    class Short(ProgramExecutor):
        def run_transposed_linear(self, linear, cotangent_out, external_data, ctx):  # type: ignore[no-untyped-def]
            return [1.0]

    with pytest.raises(
        RuleContractError, match=r"returned 1 cotangent\(s\) for 2 input\(s\) that require grad"
    ):
        backward(out.key, out.trace, 1.0, Short(Add))


def test_reverse_mode_differentiates_only_inputs_that_require_grad():
    cache = DerivativeCache()
    recorder = Recorder()
    graph = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    x = EagerInput(Input("x"), None, True, 3.0)
    c = EagerInput(Input("c"), None, False, None)  # the frontend saves nothing for it
    (out,) = recorder.record_graph(graph, [x, c], [12.0], {graph.output_keys[0]: 12.0})
    assert out.trace is not None
    assert out.trace.active == (0,)
    assert Input("a1") not in out.trace.saved_data
    # d(x*c)/dx needs c, which was not saved: the derivative says so before any run
    derivative = cache.derivative(graph, (0,), None, (0,))
    assert derivative.needed == {Input("a1")}
    only_x = cache.derivative(graph, (0,), None, (1,))
    assert only_x.needed == {Input("a0")}
    assert len(derivative.linear.tangent_inputs) == 1


def test_recorded_graph_validates_its_keys():
    builder = GraphBuilder()
    a = builder.add_input("a0")
    (n,) = builder.add_operation(Neg, [Local(a)])
    builder.set_outputs([n])
    graph = builder.build()
    with pytest.raises(TransformError, match=r"2 input key\(s\) for a graph with 1 input"):
        RecordedGraph(graph, ["a0", "a1"], graph.output_keys())
    with pytest.raises(
        TransformError, match="graph input 0 is Input\\('a0'\\), not Input\\('b'\\)"
    ):
        RecordedGraph(graph, ["b"], graph.output_keys())
    with pytest.raises(TransformError, match="graph output 0 is"):
        RecordedGraph(graph, ["a0"], [Input("a0")])
    assert RecordedGraph(graph, ["a0"], graph.output_keys()) == RecordedGraph(
        graph, ["a0"], graph.output_keys()
    )
    assert RecordedGraph.from_primitive(Neg, ["a0"]) is RecordedGraph.from_primitive(Neg, ["a0"])


@pytest.mark.slow
def test_a_100k_node_tape():
    assert sys.getrecursionlimit() < 100_000
    recorder = Recorder()
    graph = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    c = EagerInput(Input("c"), None, False, 1.0000001)
    value = EagerInput(Input("x"), None, True, 1.0)
    for _ in range(100_000):
        data = value.data * c.data
        (out,) = recorder.record_graph(graph, [value, c], [data], {graph.output_keys[0]: data})
        value = EagerInput(out.key, out.trace, True, data)
    cotangents = backward(value.key, value.trace, 1.0, ProgramExecutor(Add))
    assert math.isclose(cotangents[Input("x")], 1.0000001**100_000, rel_tol=1e-9)
    del value, out, cotangents
    gc.collect()  # freeing the long chain of trace nodes must not recurse either


def test_forward_mode_on_the_tape():
    fe = Frontend()
    a, b, v0, v1 = 0.7, -1.2, 0.3, -2.0
    x0, x1 = fe.leaf("x0", a), fe.leaf("x1", b)
    y = f(fe, x0, x1)
    tangents = forward({x0.key: v0, x1.key: v1}, [y.trace], fe.executor)
    e = math.exp(a * b)
    expected = (2 * a * math.sin(b) + b * e) * v0 + (a * a * math.cos(b) + a * e) * v1
    assert math.isclose(tangents[y.key].data, expected, rel_tol=1e-13)
    only_x1 = forward({x1.key: 1.0}, [y.trace], fe.executor)
    assert math.isclose(only_x1[y.key].data, a * a * math.cos(b) + a * e, rel_tol=1e-13)
    assert forward({}, [y.trace], fe.executor) == {}


def test_hessian_vector_product_forward_over_reverse():
    fe = Frontend()
    a, b, v0, v1 = 0.7, -1.2, 0.3, -2.0
    x0, x1 = fe.leaf("x0", a), fe.leaf("x1", b)
    g0, g1 = fe.grad(f(fe, x0, x1), [x0, x1])  # recorded: the backward pass is on the tape
    tangents = forward({x0.key: v0, x1.key: v1}, [g0.trace, g1.trace], fe.executor)
    e = math.exp(a * b)
    h01 = 2 * a * math.cos(b) + e + a * b * e
    assert math.isclose(
        tangents[g0.key].data, (2 * math.sin(b) + b * b * e) * v0 + h01 * v1, rel_tol=1e-12
    )
    assert math.isclose(
        tangents[g1.key].data, h01 * v0 + (-a * a * math.sin(b) + a * a * e) * v1, rel_tol=1e-12
    )


def test_executors_may_supply_primal_values():
    fe = Frontend()
    x = fe.leaf("x", 0.5)
    y = fe(Sin, x)
    seen: list[Any] = []

    class Supplying(ProgramExecutor):
        def primal_values(self, node: Trace) -> Any:
            seen.append(node)
            return dict.fromkeys(node.saved_data, 2.0)  # pretend x were 2.0

    executor = Supplying(Add)
    cotangents = backward(y.key, y.trace, 1.0, executor)
    assert seen == [y.trace]
    assert math.isclose(cotangents[x.key], math.cos(2.0), rel_tol=1e-15)
    tangents = forward({x.key: 1.0}, [y.trace], executor)
    assert math.isclose(tangents[y.key], math.cos(2.0), rel_tol=1e-15)


def test_backward_reports_reached_inputs_and_frees_unkept_cotangents():
    recorder = Recorder()
    mul = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    neg = RecordedGraph.from_primitive(Neg, ["a0"])
    x = EagerInput(Input("x"), None, True, 3.0)
    w = EagerInput(Input("w"), None, True, 2.0)
    unused = EagerInput(Input("u"), None, True, 5.0)
    del unused  # never recorded: never reached
    (h,) = recorder.record_graph(mul, [x, w], [6.0])
    (y,) = recorder.record_graph(neg, [EagerInput(h.key, h.trace, True, 6.0)], [-6.0])
    reached: set[ValueKey] = set()
    everything = backward(y.key, y.trace, 1.0, ProgramExecutor(Add), reached=reached)
    assert reached == {Input("x"), Input("w"), h.key}
    assert everything[h.key] == -1.0  # without keep, intermediates are returned too
    lean = backward(y.key, y.trace, 1.0, ProgramExecutor(Add), keep=())
    assert lean == {Input("x"): -2.0, Input("w"): -3.0}  # only the inputs remain
    kept = backward(y.key, y.trace, 1.0, ProgramExecutor(Add), keep={h.key})
    assert kept[h.key] == -1.0


def test_backward_without_retaining_releases_saved_values():
    recorder = Recorder()
    mul = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    neg = RecordedGraph.from_primitive(Neg, ["a0"])
    x = EagerInput(Input("x"), None, True, 3.0)
    w = EagerInput(Input("w"), None, True, 2.0)
    (h,) = recorder.record_graph(mul, [x, w], [6.0])
    (y,) = recorder.record_graph(neg, [EagerInput(h.key, h.trace, True, None)], [-6.0])
    assert h.trace is not None
    assert y.trace is not None
    assert h.trace.saved_values()
    assert not y.trace.saved_values()
    executor = ProgramExecutor(Add)
    retained = backward(y.key, y.trace, 1.0, executor, keep=())
    assert not h.trace.released
    released = backward(y.key, y.trace, 1.0, executor, keep=(), retain_graph=False)
    assert released == retained == {Input("x"): -2.0, Input("w"): -3.0}
    assert h.trace.released
    assert not h.trace.saved_values()
    assert not y.trace.released  # nothing saved, nothing released: usable again
    with pytest.raises(ReleasedGraphError, match="retain_graph=True") as caught:
        backward(y.key, y.trace, 1.0, executor)
    assert caught.value.node is h.trace
    assert caught.value.mode == "backward"
    with pytest.raises(ReleasedGraphError) as caught:
        forward({Input("x"): 1.0}, [y.trace], executor)
    assert caught.value.node is h.trace
    assert caught.value.mode == "forward"
    assert isinstance(caught.value, TransformError)


def test_a_pass_restricted_to_the_contributing_nodes():
    recorder = Recorder()
    mul = RecordedGraph.from_primitive(Mul, ["a0", "a1"])
    sin = RecordedGraph.from_primitive(Sin, ["a0"])
    x = EagerInput(Input("x"), None, True, 0.5)
    (h,) = recorder.record_graph(sin, [x], [math.sin(0.5)])
    hin = EagerInput(h.key, h.trace, True, math.sin(0.5))
    (y,) = recorder.record_graph(mul, [hin, hin], [math.sin(0.5) ** 2])
    assert y.trace is not None
    assert contributing_nodes(y.trace, {h.key}) == {y.trace}
    assert contributing_nodes(y.trace, {Input("x")}) == {y.trace, h.trace}
    reached: set[ValueKey] = set()
    only = contributing_nodes(y.trace, {h.key})
    got = backward(
        y.key, y.trace, 1.0, ProgramExecutor(Add), keep={h.key}, retain_graph=False,
        only=only, reached=reached,
    )  # fmt: skip
    assert got == {h.key: 2 * math.sin(0.5)}
    assert reached == {h.key, Input("x")}  # the walk still reaches below
    assert h.trace is not None
    assert not h.trace.released  # not run, not freed
    assert y.trace.released


class _ListsOnly(ProgramExecutor):
    """ProgramExecutor without its one-seed runners: every node takes ``transposer``'s."""

    single_transposer = None  # type: ignore[assignment]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["mul", "mul_c", "sin", "exp", "neg", "add_x"]), max_size=10),
    st.booleans(),
    st.sampled_from([(), None]),
)
def test_one_seed_runners_equal_the_general_runners(
    steps: list[str], retain: bool, keep: Any
) -> None:
    """``single_transposer`` (one seed in, one cotangent out, no lists) gives exactly the
    cotangents of the list runners, on random chains with constants and fan-in."""
    recorder = Recorder()
    graphs = {
        op.name: RecordedGraph.from_primitive(op, CANONICAL[:arity])
        for op, arity in ((Mul, 2), (Add, 2), (Sin, 1), (Exp, 1), (Neg, 1))
    }

    def chain() -> tuple[EagerInput, EagerInput]:
        x = EagerInput(Input("x"), None, True, 0.3)
        c = EagerInput(Input("c"), None, False, 1.5)
        value = x
        for step in steps:
            name, args = {
                "mul": ("Mul", [value, value]),
                "mul_c": ("Mul", [value, c]),
                "sin": ("Sin", [value]),
                "exp": ("Exp", [value]),
                "neg": ("Neg", [value]),
                "add_x": ("Add", [value, x]),
            }[step]
            op = {"Mul": Mul, "Add": Add, "Sin": Sin, "Exp": Exp, "Neg": Neg}[name]
            (data,) = op.eval([a.data for a in args], None)
            (out,) = recorder.record_graph(graphs[name], args, [data], None)
            value = EagerInput(out.key, out.trace, True, data)
        return x, value

    results = []
    for executor in (ProgramExecutor(Add), _ListsOnly(Add)):
        x, value = chain()
        if value.trace is None:
            return
        cotangents = backward(value.key, value.trace, 1.0, executor, retain_graph=retain, keep=keep)
        results.append(cotangents.get(x.key))
    assert results[0] == results[1]
    assert (
        ProgramExecutor(Add, apply=lambda op, xs, ctx: op.eval(xs, ctx)).single_transposer(
            DerivativeCache().derivative(graphs["Sin"], (0,), None, (0,)).linear, None
        )
        is None
    )  # an executor that records what it runs keeps the general path


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Mul", "Add", "Sin", "Exp", "Neg"]),
            st.integers(0, 3),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=16,
    ),
    st.booleans(),
    st.sampled_from([None, ()]),
)
def test_the_walk_visits_random_dags_after_every_consumer(
    steps: list[tuple[str, int, int]], retain: bool, keep: Any
) -> None:
    """Random DAGs of scalar operations (chains, which the walk follows without its
    heap, fan-out and fan-in, a value used twice by one operation; operands among the
    four latest values): each input's cotangent equals forward-mode dual numbers
    computed by hand, so no node runs before all the cotangents of its outputs
    arrived."""
    recorder = Recorder()
    graphs = {
        op.name: RecordedGraph.from_primitive(op, CANONICAL[:arity])
        for op, arity in ((Mul, 2), (Add, 2), (Sin, 1), (Exp, 1), (Neg, 1))
    }
    ops = {"Mul": Mul, "Add": Add, "Sin": Sin, "Exp": Exp, "Neg": Neg}
    x = EagerInput(Input("x"), None, True, 0.3)
    y = EagerInput(Input("y"), None, True, -0.7)
    values = [x, y]
    duals = [(0.3, 1.0, 0.0), (-0.7, 0.0, 1.0)]  # (value, d/dx, d/dy)
    for name, i, j in steps:
        a, b = max(len(values) - 1 - i, 0), max(len(values) - 1 - j, 0)
        (va, xa, ya), (vb, xb, yb) = duals[a], duals[b]
        if name == "Mul":
            args, dual = [values[a], values[b]], (va * vb, xa * vb + va * xb, ya * vb + va * yb)
        elif name == "Add":
            args, dual = [values[a], values[b]], (va + vb, xa + xb, ya + yb)
        elif name == "Sin":
            args, dual = [values[a]], (math.sin(va), math.cos(va) * xa, math.cos(va) * ya)
        elif name == "Exp":
            args, dual = [values[a]], (math.exp(va), math.exp(va) * xa, math.exp(va) * ya)
        else:
            args, dual = [values[a]], (-va, -xa, -ya)
        (data,) = ops[name].eval([arg.data for arg in args], None)
        (out,) = recorder.record_graph(graphs[name], args, [data], None)
        values.append(EagerInput(out.key, out.trace, True, data))
        duals.append(dual)
    last = values[-1]
    cotangents = backward(
        last.key, last.trace, 1.0, ProgramExecutor(Add), retain_graph=retain, keep=keep
    )
    _, dx, dy = duals[-1]
    assert math.isclose(cotangents.get(x.key, 0.0), dx, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(cotangents.get(y.key, 0.0), dy, rel_tol=1e-12, abs_tol=1e-12)
