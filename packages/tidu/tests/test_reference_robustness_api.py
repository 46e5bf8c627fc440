"""Ports of ``robustness_tests.rs`` (§3.6), ``adcontext_tests.rs`` (§3.7),
``fallible_ad_tests.rs`` (§3.8) and ``rules_public_api_tests.rs`` (§3.9)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from tidu_support import (
    COMPLEX,
    SCALAR,
    T1,
    TOL,
    VECTOR,
    GraphMaker,
    User,
    Vec,
    approx,
    emit,
    evaluate,
    family,
    next_pass,
    tangent_input_key,
    tangent_output_key,
    transpose_add,
)

import tidu
from computegraph import External, GraphBuilder, Input, Local
from tidu import ADRuleError, Tangent, linear_transpose, linear_transpose_with_builder, linearize

Add, Mul, Exp = SCALAR.op("Add"), SCALAR.op("Mul"), SCALAR.op("Exp")


def jvp_and_vjp(graph, y, wrt, bindings, dx, ct):
    lin = linearize([graph], [y], [User(w) for w in wrt], next_pass())
    tr = linear_transpose(lin)
    binds = {User(k): v for k, v in bindings.items()}
    binds.update({tangent_input_key(lin, i): d for i, d in enumerate(dx)})
    binds[tangent_input_key(tr, 0)] = ct
    outs = [tangent_output_key(lin, 0)] + [tangent_output_key(tr, i) for i in range(len(wrt))]
    values = evaluate([graph, lin.graph, tr.graph], outs, binds)
    return values[0], values[1:]


# --------------------------------------------------------------------------- §3.6


def test_adjoint_consistency_exp_ax():
    g = GraphMaker("x", "a")
    graph, (y,) = g.build(g.apply(Exp, g.apply(Mul, g["a"], g["x"])))
    dy, (ct_x,) = jvp_and_vjp(graph, y, ["x"], {"x": 1.0, "a": 2.0}, [0.7], 0.3)
    assert approx(dy, 2 * math.e**2 * 0.7)
    assert approx(ct_x, 2 * math.e**2 * 0.3)
    assert abs(0.3 * dy - ct_x * 0.7) < TOL


def test_adjoint_consistency_x_plus_x_times_x():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Mul, g.apply(Add, g["x"], g["x"]), g["x"]))
    dy, (ct_x,) = jvp_and_vjp(graph, y, ["x"], {"x": 3.0}, [0.5], 0.7)
    assert (dy, ct_x) == (6.0, pytest.approx(8.4))
    assert abs(0.7 * dy - ct_x * 0.5) < TOL


def test_adjoint_consistency_complex():
    g = GraphMaker("z")
    graph, (y,) = g.build(g.apply(COMPLEX.op("Mul"), g["z"], g.apply(COMPLEX.op("Conj"), g["z"])))
    z, dz, ct = 1 + 2j, 0.3 + 0.4j, 0.5 + 0.6j
    dy, (ct_z,) = jvp_and_vjp(graph, y, ["z"], {"z": z}, [dz], ct)
    assert abs(dy - 2.2) < TOL
    assert abs(ct_z - (1 + 2j)) < TOL
    assert abs((ct.conjugate() * dy).real - (ct_z.conjugate() * dz).real) < TOL


def test_inactive_tangent_returns_none():
    g = GraphMaker("x", "y")
    graph, (out,) = g.build(g.apply(Exp, g["y"]))
    lin = linearize([graph], [out], [User("x")], next_pass())
    assert tangent_output_key(lin, 0) is None
    assert lin.graph.outputs == ()


def test_diamond_pattern_shared_subexpression():
    g = GraphMaker("x")
    left, right = g.apply(Exp, g["x"]), g.apply(Exp, g["x"])  # two identical nodes
    graph, (y,) = g.build(g.apply(Add, left, right))
    dy, (ct_x,) = jvp_and_vjp(graph, y, ["x"], {"x": 1.0}, [1.0], 1.0)
    assert approx(dy, 2 * math.e)
    assert approx(ct_x, 2 * math.e)


def test_multi_variable_vjp():
    g = GraphMaker("x", "y")
    graph, (out,) = g.build(g.apply(Mul, g["x"], g["y"]))
    _, cts = jvp_and_vjp(graph, out, ["x", "y"], {"x": 2.0, "y": 3.0}, [0.0, 0.0], 1.0)
    assert cts == [3.0, 2.0]


def test_ror_x_plus_x_times_x():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Mul, g.apply(Add, g["x"], g["x"]), g["x"]))
    lin = linearize([graph], [y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    ror = linear_transpose(tr)
    (result,) = evaluate(
        [graph, tr.graph, ror.graph],
        [tangent_output_key(ror, 0)],
        {User("x"): 3.0, tangent_input_key(ror, 0): 1.0},
    )
    assert result == 12.0


def test_for_complex_z_squared():
    g = GraphMaker("z")
    graph, (y,) = g.build(g.apply(COMPLEX.op("Mul"), g["z"], g["z"]))
    lin = linearize([graph], [y], [User("z")], next_pass())
    tr = linear_transpose(lin)
    lin2 = linearize([graph, tr.graph], [tangent_output_key(tr, 0)], [User("z")], next_pass())
    (result,) = evaluate(
        [graph, tr.graph, lin2.graph],
        [tangent_output_key(lin2, 0)],
        {
            User("z"): 1 + 2j,
            tangent_input_key(tr, 0): 1.0 + 0j,
            tangent_input_key(lin2, 0): 1.0 + 0j,
        },
    )
    assert abs(result - 2) < TOL


def test_jvp_identity():
    g = GraphMaker("x")
    graph, (y,) = g.build(g["x"])
    dy, (ct_x,) = jvp_and_vjp(graph, y, ["x"], {"x": 4.0}, [1.0], 1.0)
    assert (dy, ct_x) == (1.0, 1.0)


def test_vjp_constant_output():
    g = GraphMaker("x", "y")
    graph, (y,) = g.build(g["y"])
    lin = linearize([graph], [y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    assert lin.tangent_outputs == (None,)
    assert tr.tangent_inputs == ()
    assert tr.tangent_outputs == (None,)


def test_fof_vector_x_squared():
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(VECTOR.op("Mul"), g["x"], g["x"]))
    lin1 = linearize([graph], [y], [User("x")], next_pass())
    lin2 = linearize([graph, lin1.graph], [tangent_output_key(lin1, 0)], [User("x")], next_pass())
    ones = Vec.of([1.0, 1.0])
    (result,) = evaluate(
        [graph, lin1.graph, lin2.graph],
        [tangent_output_key(lin2, 0)],
        {
            User("x"): Vec.of([2.0, 3.0]),
            tangent_input_key(lin1, 0): ones,
            tangent_input_key(lin2, 0): ones,
        },
    )
    assert result == Vec.of([2.0, 2.0])


# --------------------------------------------------------------------------- §3.7


@dataclass
class CountingContext:
    linearize_count: int = 0
    transpose_count: int = 0


def counting_family():
    def lin_identity(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
        ctx.linearize_count += 1
        return [emit(b, op, [Local(t[0])], T1)]

    def tr_identity(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
        ctx.transpose_count += 1
        return [ct[0]]

    return family(
        "CountingOp",
        ["Add", "Identity"],
        jvp={"Identity": lin_identity},
        transpose={"Identity": tr_identity, "Add": transpose_add},
    )


def identity_chain():
    counting = counting_family()
    g = GraphMaker("x")
    graph, (y,) = g.build(
        g.apply(counting.op("Identity"), g.apply(counting.op("Identity"), g["x"]))
    )
    return graph, y


def test_linearize_threads_ctx_to_all_ops():
    graph, y = identity_chain()
    ctx = CountingContext()
    linearize([graph], [y], [User("x")], next_pass(), ctx)
    assert ctx.linearize_count == 2


def test_linear_transpose_threads_ctx_to_all_ops():
    graph, y = identity_chain()
    ctx = CountingContext()
    lin = linearize([graph], [y], [User("x")], next_pass(), ctx)
    ctx.linearize_count = ctx.transpose_count = 0
    linear_transpose(lin, ctx)
    assert (ctx.transpose_count, ctx.linearize_count) == (2, 0)


# --------------------------------------------------------------------------- §3.8

FALLIBLE = family("Op", ["Add", "Missing", "EmitMissing"])


def missing_graph(name):
    g = GraphMaker("x")
    return g.build(g.apply(FALLIBLE.op(name), g["x"]))


def test_linearize_propagates_jvp_rule_error():
    graph, (y,) = missing_graph("Missing")
    with pytest.raises(ADRuleError) as info:
        linearize([graph], [y], [User("x")], next_pass())
    assert info.value.rule == "jvp"
    assert str(info.value) == "unsupported jvp AD rule for Op::Missing"


def test_linear_transpose_propagates_transpose_error():
    graph, (y,) = missing_graph("EmitMissing")
    lin = linearize([graph], [y], [User("x")], next_pass())
    with pytest.raises(ADRuleError) as info:
        linear_transpose(lin)
    assert info.value.rule == "transpose"
    assert info.value.op == "Op::Missing"


def test_linear_transpose_with_builder_propagates_transpose_error():
    graph, (y,) = missing_graph("EmitMissing")
    lin = linearize([graph], [y], [User("x")], next_pass())

    class Dummy:
        def __init__(self) -> None:
            self.count = 1

        def add_primitive(self, op, inputs, role):  # type: ignore[no-untyped-def]
            self.count += 1
            return (self.count - 1,)

    with pytest.raises(ADRuleError) as info:
        linear_transpose_with_builder(lin, Dummy(), [0])
    assert info.value.rule == "transpose"


# --------------------------------------------------------------------------- §3.9


def test_root_reexports_match_rules_module_contract():
    from tidu import errors, keys, primitive

    assert tidu.ADRuleError is errors.ADRuleError
    assert tidu.Primitive is primitive.Primitive
    assert tidu.PrimitiveBuilder is primitive.PrimitiveBuilder
    assert tidu.ADKey is keys.ADKey
    assert isinstance(User("x").tangent_of(7), type(User("x").tangent_of(8)))
    assert User("x").tangent_of(7).pass_id == 7
    assert tidu.tangent_key("x", 7) == Tangent("x", 7)
    assert str(ADRuleError("test::op", "jvp")) == "unsupported jvp AD rule for test::op"
    assert str(ADRuleError("test::transpose", "transpose")) == (
        "unsupported transpose AD rule for test::transpose"
    )
    error = ADRuleError("test::op", "jvp")
    assert error.rule == "jvp"
    assert error.__cause__ is None
    with pytest.raises(ValueError, match="rule must be"):
        ADRuleError("op", "hessian")  # type: ignore[arg-type]


def test_primitive_value_round_trips_computegraph_value_refs():
    assert tidu.PrimitiveValue == Local | External
    assert tidu.Local is Local
    assert tidu.External is External
    builder = GraphBuilder()
    x = builder.add_input("x")
    (_out,) = builder.add_operation(SCALAR.op("Neg"), [External(Input("x"))])
    assert builder.build().operation_inputs(0) == (External(Input("x")),)
    assert Local(x) == Local(0)
