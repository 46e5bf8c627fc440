"""Golden tests of seed 003 (§IX) and its vector examples (§V).

Higher order is built by repetition: a step ``F`` linearises the current output
(tangent seed 1); a step ``R`` linearises it and transposes (cotangent seed 1). Mode
strings read innermost first: ``"RF"`` is forward-over-reverse (FoR), ``"FR"`` is
reverse-over-forward (RoF). Every combination must give the same derivative.
"""

from __future__ import annotations

import itertools
import math

import pytest
from tidu_support import (
    SCALAR,
    TOL,
    VECTOR,
    GraphMaker,
    User,
    Vec,
    approx,
    evaluate,
    next_pass,
    tangent_input_key,
    tangent_output_key,
)

from computegraph import External, GraphBuilder, UnresolvedKeyError
from tidu import linear_transpose, linearize

Add, Mul, Exp = SCALAR.op("Add"), SCALAR.op("Mul"), SCALAR.op("Exp")


def derivative(graph, output, bindings, modes: str, wrt: str = "x"):
    """The ``len(modes)``-th derivative of a scalar function by the given mode sequence."""
    roots, current = [graph], output
    binds = {User(k): v for k, v in bindings.items()}
    for mode in modes:
        if current is None:  # a symbolic zero: every further derivative is zero too
            return 0.0
        lin = linearize(roots, [current], [User(wrt)], next_pass())
        if lin.tangent_outputs[0] is None:
            return 0.0
        if mode == "F":
            roots.append(lin.graph)
            binds[tangent_input_key(lin, 0)] = 1.0
            current = tangent_output_key(lin, 0)
        else:
            tr = linear_transpose(lin)
            roots.append(tr.graph)
            binds[tangent_input_key(tr, 0)] = 1.0
            current = tangent_output_key(tr, 0)
    return 0.0 if current is None else evaluate(roots, [current], binds)[0]


def x_squared():
    g = GraphMaker("x")
    return g.build(g.apply(Mul, g["x"], g["x"]))


def exp_ax():
    g = GraphMaker("x", "a")
    return g.build(g.apply(Exp, g.apply(Mul, g["a"], g["x"])))


TABLE = {"FoF": "FF", "FoR": "RF", "RoF": "FR", "RoR": "RR"}


@pytest.mark.parametrize("mode", sorted(TABLE))
def test_second_order_table_x_squared(mode: str):
    graph, (y,) = x_squared()
    assert derivative(graph, y, {"x": 3.0}, TABLE[mode]) == 2.0


@pytest.mark.parametrize("mode", sorted(TABLE))
def test_second_order_table_exp_ax(mode: str):
    graph, (y,) = exp_ax()
    x, a = 0.7, -1.3
    expected = a * a * math.exp(a * x)
    assert approx(derivative(graph, y, {"x": x, "a": a}, TABLE[mode]), expected)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_every_mode_combination_exp_ax(order: int):
    graph, (y,) = exp_ax()
    x, a = 0.4, 1.7
    expected = a**order * math.exp(a * x)
    for modes in itertools.product("FR", repeat=order):
        assert approx(derivative(graph, y, {"x": x, "a": a}, "".join(modes)), expected), modes


@pytest.mark.parametrize("modes", ["".join(m) for m in itertools.product("FR", repeat=3)])
def test_third_order_x_squared_is_zero(modes: str):
    graph, (y,) = x_squared()
    assert derivative(graph, y, {"x": 3.0}, modes) == 0.0


def test_golden_1_x_plus_x_accumulates_by_global_identity():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Add, g["x"], g["x"]))
    lin = linearize([graph], [y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    # Add's transpose sends the seed to both operands, which are one value: one add.
    assert [k.operation.name for k in tr.graph.operation_keys] == ["Add"]
    assert derivative(graph, y, {"x": 5.0}, "R") == 2.0


def test_golden_2_x_times_y_has_distinct_reverse_sinks():
    g = GraphMaker("x", "y")
    graph, (out,) = g.build(g.apply(Mul, g["x"], g["y"]))
    lin = linearize([graph], [out], [User("x"), User("y")], next_pass())
    tr = linear_transpose(lin)
    ct_x, ct_y = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0), tangent_output_key(tr, 1)],
        {User("x"): 2.0, User("y"): 5.0, tangent_input_key(tr, 0): 1.0},
    )
    assert (ct_x, ct_y) == (5.0, 2.0)
    assert tangent_output_key(tr, 0) != tangent_output_key(tr, 1)


def test_golden_5_external_refs_and_resolve_before_linearize():
    graph, (y,) = exp_ax()
    lin = linearize([graph], [y], [User("x")], next_pass())
    externals = {
        ref.key
        for op in range(len(lin.graph.operation_keys))
        for ref in lin.graph.operation_inputs(op)
        if isinstance(ref, External)
    }
    assert externals == {graph.key_of(graph.inputs[1]), y}  # a and exp(a x), not copies
    assert lin.graph.parents == (graph,)  # resolve(linear graph) reaches the primal graph
    tr = linear_transpose(lin)
    assert tr.graph.parents == (lin.graph,)
    (ct_x,) = evaluate(
        [tr.graph],
        [tangent_output_key(tr, 0)],
        {User("x"): 1.0, User("a"): 2.0, tangent_input_key(tr, 0): 1.0},
    )
    assert approx(ct_x, 2 * math.e**2)
    # Without the graph that defines the primal values, a transform cannot trace them.
    builder = GraphBuilder()
    (n,) = builder.add_operation(Exp, [External(y)])
    orphan = builder.build()
    with pytest.raises(UnresolvedKeyError, match="not defined by the resolved view"):
        linearize([orphan], [orphan.key_of(n)], [User("x")], next_pass())


# --------------------------------------------------------------------------- §V


def vector_exp_ax(reduce: bool):
    g = GraphMaker("x", "a")
    y = g.apply(VECTOR.op("Exp"), g.apply(VECTOR.op("Mul"), g["x"], g["a"]))
    if reduce:
        y = g.apply(VECTOR.op("ReduceSum", (0,), (2,)), y)
    return g.build(y)


@pytest.mark.parametrize("reduce", [False, True])
def test_vector_examples(reduce: bool):
    graph, (y,) = vector_exp_ax(reduce)
    x, a = Vec.of([0.3, -0.8]), Vec.of([1.5, 0.5])
    dx = Vec.of([0.25, -1.0])
    ct = Vec.of(0.7) if reduce else Vec.of([0.7, -0.2])
    lin = linearize([graph], [y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    names = [k.operation.name for k in tr.graph.operation_keys]
    assert ("BroadcastInDim" in names) == reduce
    dy, ct_x = evaluate(
        [graph, lin.graph, tr.graph],
        [tangent_output_key(lin, 0), tangent_output_key(tr, 0)],
        {User("x"): x, User("a"): a, tangent_input_key(lin, 0): dx, tangent_input_key(tr, 0): ct},
    )
    e = [math.exp(ai * xi) for ai, xi in zip(a.data, x.data, strict=True)]
    elementwise = [ei * ai * di for ei, ai, di in zip(e, a.data, dx.data, strict=True)]
    expected_dy = Vec.of(sum(elementwise)) if reduce else Vec.of(elementwise)
    c = [ct.data[0]] * 2 if reduce else list(ct.data)
    expected_ct = Vec.of([ai * ei * ci for ai, ei, ci in zip(a.data, e, c, strict=True)])
    assert approx(dy, expected_dy)
    assert approx(ct_x, expected_ct)
    assert abs(ct.inner(dy) - ct_x.inner(dx)) < TOL
