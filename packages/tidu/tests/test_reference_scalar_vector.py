"""Ports of the reference's ``scalar_ad_tests.rs`` (§3.2) and ``vector_ad_tests.rs`` (§3.3)."""

from __future__ import annotations

import math

from tidu_support import (
    NUM_TOL,
    SCALAR,
    TOL,
    VECTOR,
    GraphMaker,
    User,
    Vec,
    approx,
    evaluate,
    five_point_derivative,
    next_pass,
    tangent_input_key,
    tangent_output_key,
)

from tidu import linear_transpose, linearize

Add, Mul, Exp = SCALAR.op("Add"), SCALAR.op("Mul"), SCALAR.op("Exp")
E = math.e


def exp_ax():
    g = GraphMaker("x", "a")
    m = g.apply(Mul, g["x"], g["a"])
    y = g.apply(Exp, m)
    return g.build(y)


def jvp(graph, outputs, wrt, bindings, tangents):
    lin = linearize([graph], outputs, [User(w) for w in wrt], next_pass())
    binds = {User(k): v for k, v in bindings.items()}
    for i, t in enumerate(tangents):
        binds[tangent_input_key(lin, i)] = t
    values = evaluate(
        [graph, lin.graph],
        [*outputs, *[tangent_output_key(lin, j) for j in range(len(outputs))]],
        binds,
    )
    return values[: len(outputs)], values[len(outputs) :]


def vjp(graph, output, wrt, bindings, ct):
    lin = linearize([graph], [output], [User(w) for w in wrt], next_pass())
    tr = linear_transpose(lin)
    binds = {User(k): v for k, v in bindings.items()}
    binds[tangent_input_key(tr, 0)] = ct
    return evaluate([graph, tr.graph], [tangent_output_key(tr, i) for i in range(len(wrt))], binds)


# --------------------------------------------------------------------------- §3.2


def test_jvp_x_plus_x():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Add, g["x"], g["x"]))
    (value,), (dy,) = jvp(graph, [y], ["x"], {"x": 3.0}, [1.0])
    assert (value, dy) == (6.0, 2.0)


def test_jvp_x_times_y():
    g = GraphMaker("x", "y")
    graph, (out,) = g.build(g.apply(Mul, g["x"], g["y"]))
    (value,), (dy,) = jvp(graph, [out], ["x"], {"x": 2.0, "y": 3.0}, [1.0])
    assert (value, dy) == (6.0, 3.0)


def test_jvp_exp_ax():
    graph, (y,) = exp_ax()
    (value,), (dy,) = jvp(graph, [y], ["x"], {"x": 1.0, "a": 2.0}, [1.0])
    assert approx(value, E**2)
    assert approx(dy, 2 * E**2)


def test_vjp_exp_ax_needs_no_tangent_binding():
    graph, (y,) = exp_ax()
    (ct_x,) = vjp(graph, y, ["x"], {"x": 1.0, "a": 2.0}, 1.0)
    assert approx(ct_x, 2 * E**2)


def test_vjp_x_plus_x_times_x():
    g = GraphMaker("x")
    s = g.apply(Add, g["x"], g["x"])
    graph, (y,) = g.build(g.apply(Mul, s, g["x"]))
    assert vjp(graph, y, ["x"], {"x": 3.0}, 1.0) == [12.0]


def test_fof_x_squared():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Mul, g["x"], g["x"]))
    lin1 = linearize([graph], [y], [User("x")], 6)
    lin2 = linearize([graph, lin1.graph], [tangent_output_key(lin1, 0)], [User("x")], 7)
    (result,) = evaluate(
        [graph, lin1.graph, lin2.graph],
        [tangent_output_key(lin2, 0)],
        {User("x"): 3.0, tangent_input_key(lin1, 0): 1.0, tangent_input_key(lin2, 0): 1.0},
    )
    assert result == 2.0


def test_for_exp_ax():
    graph, (y,) = exp_ax()
    lin = linearize([graph], [y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    lin2 = linearize([graph, tr.graph], [tangent_output_key(tr, 0)], [User("x")], next_pass())
    (result,) = evaluate(
        [graph, tr.graph, lin2.graph],
        [tangent_output_key(lin2, 0)],
        {
            User("x"): 1.0,
            User("a"): 2.0,
            tangent_input_key(tr, 0): 1.0,
            tangent_input_key(lin2, 0): 1.0,
        },
    )
    assert approx(result, 4 * E**2)


def test_numerical_gradient_exp_ax():
    graph, (y,) = exp_ax()
    (ct_x,) = vjp(graph, y, ["x"], {"x": 1.0, "a": 2.0}, 1.0)
    numeric = five_point_derivative(lambda x: math.exp(2.0 * x), 1.0, 1e-3)
    assert abs(ct_x - numeric) < TOL  # the five-point rule's error here is ~1e-11


# --------------------------------------------------------------------------- §3.3

VAdd, VMul, VExp = VECTOR.op("Add"), VECTOR.op("Mul"), VECTOR.op("Exp")


def vector_exp_ax(reduce: bool):
    g = GraphMaker("x", "a")
    m = g.apply(VMul, g["a"], g["x"])
    y = g.apply(VExp, m)
    if reduce:
        y = g.apply(VECTOR.op("ReduceSum", (0,), (2,)), y)
    return g.build(y)


X, A, ONES = Vec.of([1.0, 2.0]), Vec.of([2.0, 3.0]), Vec.of([1.0, 1.0])


def test_jvp_elementwise_exp_ax():
    graph, (y,) = vector_exp_ax(reduce=False)
    _, (dy,) = jvp(graph, [y], ["x"], {"x": X, "a": A}, [ONES])
    assert approx(dy, Vec.of([2 * E**2, 3 * E**6]))


def test_vjp_elementwise_exp_ax():
    graph, (y,) = vector_exp_ax(reduce=False)
    (ct,) = vjp(graph, y, ["x"], {"x": X, "a": A}, ONES)
    assert approx(ct, Vec.of([2 * E**2, 3 * E**6]))


def test_jvp_sum_exp_ax():
    graph, (y,) = vector_exp_ax(reduce=True)
    _, (dy,) = jvp(graph, [y], ["x"], {"x": X, "a": A}, [ONES])
    assert dy.shape == ()
    assert approx(dy.data[0], 2 * E**2 + 3 * E**6)
    assert abs(dy.data[0] - 1225.0645) < 1e-3


def test_vjp_sum_exp_ax_broadcasts_scalar_cotangent():
    graph, (y,) = vector_exp_ax(reduce=True)
    (ct,) = vjp(graph, y, ["x"], {"x": X, "a": A}, Vec.of(2.0))
    assert approx(ct, Vec.of([4 * E**2, 6 * E**6]))


def test_numerical_gradient_sum_exp_ax_matches_vjp():
    graph, (y,) = vector_exp_ax(reduce=True)
    (ct,) = vjp(graph, y, ["x"], {"x": X, "a": A}, Vec.of(1.0))
    for i in range(2):

        def f(xi: float, i: int = i) -> float:
            data = list(X.data)
            data[i] = xi
            return sum(math.exp(a * x) for a, x in zip(A.data, data, strict=True))

        numeric = five_point_derivative(f, X.data[i], 1e-4)
        assert abs(ct.data[i] - numeric) / abs(numeric) < NUM_TOL
