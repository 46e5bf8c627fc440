"""tidu.spec (seed 004) as a referee, and transforms of 100,000-operation chains."""

from __future__ import annotations

import math
import sys

import pytest
from tidu_support import (
    EXT_SCALAR,
    FT,
    SCALAR,
    GraphMaker,
    User,
    emit,
    evaluate,
    family,
    next_pass,
    tangent_input_key,
    tangent_output_key,
)

from computegraph import External, Local
from tidu import linear_transpose, linearize
from tidu.spec import OpSpec, check_vjp, primitive_spec

Add, Mul, Neg, Sin, Cos, Exp = (
    EXT_SCALAR.op(n) for n in ("Add", "Mul", "Neg", "Sin", "Cos", "Exp")
)

HAND_WRITTEN = {
    Add: OpSpec(lambda x: (x[0] + x[1],), lambda x, dy: (dy[0], dy[0]), "add"),
    Mul: OpSpec(lambda x: (x[0] * x[1],), lambda x, dy: (dy[0] * x[1], dy[0] * x[0]), "mul"),
    Neg: OpSpec(lambda x: (-x[0],), lambda x, dy: (-dy[0],), "neg"),
    Sin: OpSpec(lambda x: (math.sin(x[0]),), lambda x, dy: (dy[0] * math.cos(x[0]),), "sin"),
    Cos: OpSpec(lambda x: (math.cos(x[0]),), lambda x, dy: (-dy[0] * math.sin(x[0]),), "cos"),
    Exp: OpSpec(lambda x: (math.exp(x[0]),), lambda x, dy: (dy[0] * math.exp(x[0]),), "exp"),
}


@pytest.mark.parametrize("primitive", list(HAND_WRITTEN), ids=repr)
@pytest.mark.parametrize("point", [(0.3, -1.1), (2.0, 0.5)])
def test_primitive_rules_match_hand_written_specs(primitive, point):
    inputs = point[: primitive.input_count()]
    check_vjp(primitive, HAND_WRITTEN[primitive], inputs, (0.75,))


def test_check_vjp_catches_a_wrong_rule():
    def wrong_sin(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
        return [emit(b, op.sibling("Mul"), [External(pin[0]), Local(t[0])], FT)]  # x, not cos x

    buggy = family("Buggy", ["Add", "Mul", "Neg", "Sin", "Cos"], jvp={"Sin": wrong_sin})
    with pytest.raises(AssertionError, match="VJP"):
        check_vjp(buggy.op("Sin"), HAND_WRITTEN[Sin], (0.3,), (1.0,))


def test_identity_and_composition_by_the_reverse_chain_rule():
    identity = OpSpec.identity()
    assert identity.vjp(3.0, 5.0) == (3.0, 5.0)
    sin = OpSpec(math.sin, lambda x, dy: dy * math.cos(x), "sin")
    exp = OpSpec(math.exp, lambda x, dy: dy * math.exp(x), "exp")
    composed = sin.compose(exp)  # exp ∘ sin
    assert composed.name == "exp∘sin"
    y, dx = composed.vjp(0.4, 2.0)
    assert y == math.exp(math.sin(0.4))
    assert math.isclose(dx, 2.0 * math.exp(math.sin(0.4)) * math.cos(0.4))
    assert identity.compose(sin).vjp(0.4, 1.0) == sin.vjp(0.4, 1.0)


def test_composed_primitive_specs_agree_with_tidu_on_the_composite_graph():
    def unary(spec: OpSpec) -> OpSpec:  # tuple-in/tuple-out primitive spec -> scalar spec
        return OpSpec(lambda x: spec.forward((x,))[0], lambda x, dy: spec.backward((x,), (dy,))[0])

    chain = (
        unary(primitive_spec(Sin))
        .compose(unary(primitive_spec(Exp)))
        .compose(unary(primitive_spec(Cos)))
    )
    g = GraphMaker("x")
    graph, (y,) = g.build(g.apply(Cos, g.apply(Exp, g.apply(Sin, g["x"]))))
    lin = linearize([graph], [y], [User("x")])
    tr = linear_transpose(lin)
    (ct,) = evaluate(
        [tr.graph], [tangent_output_key(tr, 0)], {User("x"): 0.9, tangent_input_key(tr, 0): 1.5}
    )
    assert math.isclose(chain.backward(0.9, 1.5), ct, rel_tol=1e-14)


def test_primitive_spec_reports_proven_zeros_as_none():
    spec = primitive_spec(SCALAR.op("Mul"))
    assert spec.vjp((2.0, 3.0), (1.0,)) == ((6.0,), (3.0, 2.0))
    constant_family = family(
        "Const", ["Add", "Neg"], jvp={"Neg": lambda op, b, pin, pout, t, ctx: [None]}
    )
    assert primitive_spec(constant_family.op("Neg")).backward((1.0,), (1.0,)) == (None,)


CHAIN = 100_000


@pytest.mark.slow
def test_linearize_and_transpose_a_100k_chain():
    assert sys.getrecursionlimit() < CHAIN
    g = GraphMaker("x", "c")
    value = g["x"]
    for _ in range(CHAIN):
        value = g.apply(SCALAR.op("Mul"), value, g["c"])
    graph, (y,) = g.build(value)
    lin = linearize([graph], [y], [User("x")], next_pass())
    assert len(lin.graph.operation_keys) == CHAIN
    tr = linear_transpose(lin)
    assert len(tr.graph.operation_keys) == CHAIN
    (ct,) = evaluate(
        [tr.graph],
        [tangent_output_key(tr, 0)],
        {User("x"): 1.0, User("c"): 1.00001, tangent_input_key(tr, 0): 1.0},
    )
    assert math.isclose(ct, 1.00001**CHAIN, rel_tol=1e-9)
