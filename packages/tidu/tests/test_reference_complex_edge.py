"""Ports of ``complex_ad_tests.rs`` (§3.4) and ``edge_case_tests.rs`` (§3.5)."""

from __future__ import annotations

import cmath
import math

from tidu_support import (
    COMPLEX,
    COMPLEX_VECTOR,
    EXT_SCALAR,
    NUM_TOL,
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

CAdd, CMul, CExp, CConj = (COMPLEX.op(n) for n in ("Add", "Mul", "Exp", "Conj"))


def jvp_value(roots, output, wrt, bindings, tangents, pass_id=None):
    lin = linearize(roots, [output], [User(w) for w in wrt], pass_id or next_pass())
    binds = {User(k): v for k, v in bindings.items()}
    binds.update({tangent_input_key(lin, i): t for i, t in enumerate(tangents)})
    return evaluate([*roots, lin.graph], [tangent_output_key(lin, 0)], binds)[0], lin


def vjp_values(roots, outputs, wrt, bindings, cts):
    lin = linearize(roots, outputs, [User(w) for w in wrt], next_pass())
    tr = linear_transpose(lin)
    binds = {User(k): v for k, v in bindings.items()}
    binds.update({tangent_input_key(tr, i): c for i, c in enumerate(cts)})
    outs = [tangent_output_key(tr, i) for i in range(len(wrt))]
    return evaluate([*roots, tr.graph], outs, binds), lin, tr


# --------------------------------------------------------------------------- §3.4


def unary(op):
    g = GraphMaker("z")
    return g.build(g.apply(op, g["z"]))


def test_jvp_conj_z():
    graph, (y,) = unary(CConj)
    value, _ = jvp_value([graph], y, ["z"], {"z": 2 - 3j}, [1 + 1j])
    assert value == 1 - 1j


def test_vjp_conj_z():
    graph, (y,) = unary(CConj)
    (ct,), _, _ = vjp_values([graph], [y], ["z"], {"z": -0.5 + 0.75j}, [1 + 1j])
    assert ct == 1 - 1j


def test_jvp_z_times_w():
    g = GraphMaker("z", "w")
    graph, (y,) = g.build(g.apply(CMul, g["z"], g["w"]))
    value, _ = jvp_value(
        [graph], y, ["z", "w"], {"z": 1 + 2j, "w": -3 + 0.5j}, [0.5 - 1j, -2 + 1.5j]
    )
    assert abs(value - (-6 + 0.75j)) < TOL


def test_vjp_c_times_z_uses_conjugated_constant():
    g = GraphMaker("c", "z")
    graph, (y,) = g.build(g.apply(CMul, g["c"], g["z"]))
    (ct,), lin, tr = vjp_values([graph], [y], ["z"], {"c": 2 + 1j, "z": 1 + 1j}, [1.0 + 0j])
    assert ct == 2 - 1j
    # Golden test 3 of seed 003: Conj appears only in the transpose.
    assert all(k.operation.name != "Conj" for k in lin.graph.operation_keys)
    assert any(k.operation.name == "Conj" for k in tr.graph.operation_keys)


def abs_squared(op_set, reduce_shape=None):
    g = GraphMaker("z")
    conj = g.apply(op_set.op("Conj"), g["z"])
    y = g.apply(op_set.op("Mul"), g["z"], conj)
    if reduce_shape is not None:
        y = g.apply(op_set.op("ReduceSum", (0,), reduce_shape), y)
    return g.build(y)


def test_vjp_abs_squared_returns_two_z():
    graph, (y,) = abs_squared(COMPLEX)
    (ct,), _, _ = vjp_values([graph], [y], ["z"], {"z": 1 + 2j}, [1.0 + 0j])
    assert abs(ct - (2 + 4j)) < TOL


def test_numerical_gradient_exp_z_matches_vjp_for_real_and_imag_losses():
    z0 = 0.4 - 0.2j
    graph, (y,) = unary(CExp)
    for seed in (1.0 + 0j, 1j):
        (ct,), _, _ = vjp_values([graph], [y], ["z"], {"z": z0}, [seed])

        def loss(z: complex, seed: complex = seed) -> float:
            return (seed.conjugate() * cmath.exp(z)).real

        d_re = five_point_derivative(lambda t: loss(complex(t, z0.imag)), z0.real, 1e-4)
        d_im = five_point_derivative(lambda t: loss(complex(z0.real, t)), z0.imag, 1e-4)
        assert abs(ct - complex(d_re, d_im)) <= NUM_TOL
        assert abs(ct - seed * cmath.exp(z0).conjugate()) < TOL


# --------------------------------------------------------------------------- §3.5

SinCos, EAdd, EMul = EXT_SCALAR.op("SinCos"), EXT_SCALAR.op("Add"), EXT_SCALAR.op("Mul")


def sincos_graph():
    g = GraphMaker("x")
    sin, cos = g.apply(SinCos, g["x"])
    total = g.apply(EAdd, sin, cos)
    return g.build(sin, cos, total)


def test_multi_output_sincos_jvp_sum_matches_expected():
    graph, (_sin, _cos, total) = sincos_graph()
    lin = linearize([graph], [total], [User("x")], next_pass())
    value, dsum = evaluate(
        [graph, lin.graph],
        [total, tangent_output_key(lin, 0)],
        {User("x"): 1.0, tangent_input_key(lin, 0): 1.0},
    )
    assert approx(value, math.sin(1) + math.cos(1))
    assert approx(dsum, math.cos(1) - math.sin(1))


def test_multi_output_sincos_vjp_matches_expected():
    graph, (sin, cos, _) = sincos_graph()
    (ct,), _, _ = vjp_values([graph], [sin, cos], ["x"], {"x": 1.0}, [1.0, 1.0])
    assert approx(ct, math.cos(1) - math.sin(1))


def test_multi_output_sincos_adjoint_consistency():
    graph, (sin, cos, _) = sincos_graph()
    lin = linearize([graph], [sin, cos], [User("x")], next_pass())
    dy_sin, dy_cos = evaluate(
        [graph, lin.graph],
        [tangent_output_key(lin, 0), tangent_output_key(lin, 1)],
        {User("x"): 1.0, tangent_input_key(lin, 0): 0.4},
    )
    (ct,), _, _ = vjp_values([graph], [sin, cos], ["x"], {"x": 1.0}, [1.5, -0.25])
    assert approx(ct, 1.5 * math.cos(1) + 0.25 * math.sin(1))
    assert abs(ct - 1.02082) < 1e-5
    assert approx(1.5 * dy_sin - 0.25 * dy_cos, ct * 0.4)


def test_deep_chain_exp_10x():
    g = GraphMaker("x", "a")
    v = g["x"]
    for _ in range(10):
        v = g.apply(EXT_SCALAR.op("Exp"), g.apply(EMul, v, g["a"]))
    graph, (y,) = g.build(v)
    x, a, dx, ct = 0.01, 0.3, 0.7, -0.4
    value, derivative = x, 1.0
    for _ in range(10):
        value = math.exp(a * value)
        derivative *= a * value
    assert abs(derivative - 3.42061e-4) < 1e-9
    dy, _ = jvp_value([graph], y, ["x"], {"x": x, "a": a}, [dx])
    (ct_x,), _, _ = vjp_values([graph], [y], ["x"], {"x": x, "a": a}, [ct])
    assert approx(dy, derivative * dx)
    assert approx(ct_x, derivative * ct)
    assert abs(ct * dy - ct_x * dx) < TOL

    def f(t: float) -> float:
        v = t
        for _ in range(10):
            v = math.exp(a * v)
        return v

    assert abs(five_point_derivative(f, x, 1e-4) - derivative) < NUM_TOL


def nth_derivative(graph, output, wrt, bindings, order):
    """Linearise ``order`` times over growing roots; every tangent seed is 1."""
    roots, current, binds = [graph], output, {User(k): v for k, v in bindings.items()}
    for _ in range(order):
        lin = linearize(roots, [current], [User(wrt)], next_pass())
        roots.append(lin.graph)
        binds[tangent_input_key(lin, 0)] = bindings.get("seed", 1.0)
        current = tangent_output_key(lin, 0)
    return evaluate(roots, [current], binds)[0]


def test_third_order_x_cubed():
    g = GraphMaker("x")
    x2 = g.apply(EMul, g["x"], g["x"])
    graph, (y,) = g.build(g.apply(EMul, x2, g["x"]))
    assert nth_derivative(graph, y, "x", {"x": 2.0}, 3) == 6.0


def test_fourth_order_x_fourth_with_structurally_identical_halves():
    g = GraphMaker("x")
    left = g.apply(EMul, g["x"], g["x"])
    right = g.apply(EMul, g["x"], g["x"])  # a second node with the same key
    graph, (y,) = g.build(g.apply(EMul, left, right))
    assert graph.key_of(left) == graph.key_of(right)
    assert nth_derivative(graph, y, "x", {"x": 1.0}, 4) == 24.0


def test_third_order_for_then_f():
    graph, (y,) = unary(EXT_SCALAR.op("Exp"))
    lin = linearize([graph], [y], [User("z")], next_pass())
    tr = linear_transpose(lin)
    roots, current = [graph, tr.graph], tangent_output_key(tr, 0)
    binds = {User("z"): 1.0, tangent_input_key(tr, 0): 1.0}
    for _ in range(2):
        lin = linearize(roots, [current], [User("z")], next_pass())
        roots.append(lin.graph)
        binds[tangent_input_key(lin, 0)] = 1.0
        current = tangent_output_key(lin, 0)
    assert approx(evaluate(roots, [current], binds)[0], math.e)


def test_fofof_vector_x_cubed():
    g = GraphMaker("x")
    x2 = g.apply(VECTOR.op("Mul"), g["x"], g["x"])
    graph, (y,) = g.build(g.apply(VECTOR.op("Mul"), x2, g["x"]))
    result = nth_derivative(graph, y, "x", {"x": Vec.of([2.0, 3.0]), "seed": Vec.of([1.0, 1.0])}, 3)
    assert result == Vec.of([6.0, 6.0])


def test_fof_vector_adjoint_consistency():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(VECTOR.op("Exp"), g["x"]))
    x, dx1, dx2 = Vec.of([1.0, 2.0]), Vec.of([0.3, 0.7]), Vec.of([0.5, 0.4])
    lin1 = linearize([graph], [y], [User("x")], next_pass())
    lin2 = linearize([graph, lin1.graph], [tangent_output_key(lin1, 0)], [User("x")], next_pass())
    (fof,) = evaluate(
        [graph, lin1.graph, lin2.graph],
        [tangent_output_key(lin2, 0)],
        {User("x"): x, tangent_input_key(lin1, 0): dx1, tangent_input_key(lin2, 0): dx2},
    )
    tr = linear_transpose(lin1)
    lin3 = linearize([graph, tr.graph], [tangent_output_key(tr, 0)], [User("x")], next_pass())
    (for_,) = evaluate(
        [graph, tr.graph, lin3.graph],
        [tangent_output_key(lin3, 0)],
        {User("x"): x, tangent_input_key(tr, 0): dx2, tangent_input_key(lin3, 0): dx1},
    )
    expected = Vec.of([0.15 * math.e, 0.28 * math.e**2])
    assert approx(fof, expected)
    assert approx(for_, expected)
    assert approx(fof, for_)


def test_complex_vector_jvp_conj_elementwise():
    g = GraphMaker("z")
    graph, (y,) = g.build(g.apply(COMPLEX_VECTOR.op("Conj"), g["z"]))
    value, _ = jvp_value(
        [graph], y, ["z"], {"z": Vec.of([1 + 1j, 2 + 3j])}, [Vec.of([0.5 + 0.3j, 0.7 + 0.1j])]
    )
    assert value == Vec.of([0.5 - 0.3j, 0.7 - 0.1j])


def test_complex_vector_vjp_sum_abs_squared():
    graph, (y,) = abs_squared(COMPLEX_VECTOR, reduce_shape=(2,))
    (ct,), _, _ = vjp_values([graph], [y], ["z"], {"z": Vec.of([1 + 1j, 2 + 3j])}, [Vec.of(1 + 0j)])
    assert approx(ct, Vec.of([2 + 2j, 4 + 6j]))


def test_complex_vector_adjoint_consistency():
    graph, (y,) = abs_squared(COMPLEX_VECTOR)
    z, dz = Vec.of([1 + 2j, 3 + 4j]), Vec.of([0.2 - 0.4j, -0.1 + 0.3j])
    ct = Vec.of([1 - 0.5j, -0.25 + 0.75j])
    dy, _ = jvp_value([graph], y, ["z"], {"z": z}, [dz])
    (ct_z,), _, _ = vjp_values([graph], [y], ["z"], {"z": z}, [ct])
    assert abs(ct.inner(dy) - ct_z.inner(dz)) < TOL
