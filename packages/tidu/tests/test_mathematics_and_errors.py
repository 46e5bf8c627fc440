"""Where tidu follows the mathematics rather than the reference, and its error paths.

* repeated ``wrt`` entries get separate tangent inputs whose sum is the tangent;
* an output requested twice accumulates both seeds (also with no operations at all);
* structurally identical operations in a linear graph are transposed once;
* transposes never share seed keys; a reused pass id is detected;
* unresolvable keys are errors, not constants; aliases work and cycles are caught;
* rules breaking the contract are reported naming the operation.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from tidu_support import (
    SCALAR,
    T1,
    TOL,
    TT,
    GraphMaker,
    User,
    emit,
    evaluate,
    family,
    next_pass,
    tangent_input_key,
    tangent_output_key,
)

from computegraph import PRIMARY, External, GraphBuilder, Linearized, Local, UnresolvedKeyError
from tidu import (
    ADRuleError,
    LinearizedGraph,
    PassReuseError,
    RuleContractError,
    TransformError,
    linear_transpose,
    linearize,
)

Add, Mul, Neg, Exp = (SCALAR.op(n) for n in ("Add", "Mul", "Neg", "Exp"))


def square():
    g = GraphMaker("x")
    return g.build(g.apply(Mul, g["x"], g["x"]))


def test_repeated_wrt_entries_are_separate_tangents_that_sum():
    graph, (y,) = square()
    lin = linearize([graph], [y], [User("x"), User("x")], next_pass())
    assert tangent_input_key(lin, 0) != tangent_input_key(lin, 1)
    x, t1, t2 = 3.0, 0.25, -2.0
    (dy,) = evaluate(
        [graph, lin.graph],
        [tangent_output_key(lin, 0)],
        {User("x"): x, tangent_input_key(lin, 0): t1, tangent_input_key(lin, 1): t2},
    )
    assert dy == 2 * x * (t1 + t2)
    tr = linear_transpose(lin)
    ct = 1.5
    c1, c2 = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0), tangent_output_key(tr, 1)],
        {User("x"): x, tangent_input_key(tr, 0): ct},
    )
    assert (c1, c2) == (2 * x * ct, 2 * x * ct)
    assert abs(ct * dy - (c1 * t1 + c2 * t2)) < TOL  # the adjoint identity holds


def test_output_requested_twice_accumulates_both_seeds():
    graph, (y,) = square()
    lin = linearize([graph], [y, y], [User("x")], next_pass())
    tr = linear_transpose(lin)
    (ct_x,) = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0)],
        {User("x"): 3.0, tangent_input_key(tr, 0): 1.0, tangent_input_key(tr, 1): 10.0},
    )
    assert ct_x == 6.0 * 11.0


def test_identity_listed_twice_accumulates_without_operations():
    g = GraphMaker("x")
    graph, (x,) = g.build(g["x"])
    lin = linearize([graph], [x, x], [User("x")], next_pass())
    assert lin.graph.operation_keys == ()
    with pytest.raises(TransformError, match="no operation is known to supply add"):
        linear_transpose(lin)
    tr = linear_transpose(lin, add=Add)
    (ct_x,) = evaluate(
        [graph, tr.graph],
        [tangent_output_key(tr, 0)],
        {tangent_input_key(tr, 0): 2.0, tangent_input_key(tr, 1): 5.0},
    )
    assert ct_x == 7.0
    # When the view holds any primitive, its add() is found without help.
    h = GraphMaker("x")
    h.apply(Neg, h["x"])
    other, _ = h.build(h["x"])
    lin2 = linearize([other], [other.key_of(other.inputs[0])] * 2, [User("x")], next_pass())
    assert lin2.add_operation == Add
    assert linear_transpose(lin2).graph.operation_keys[0].operation == Add


def hand_linear(build):
    """A LinearizedGraph built by hand: ``build(builder, dx)`` returns the output id."""
    builder = GraphBuilder()
    dx = builder.add_input("dx")
    out = build(builder, dx)
    builder.set_outputs([out])
    return LinearizedGraph(builder.build(), (("x", dx),), (out,), Add)


def transpose_value(linear, ct=1.0):
    tr = linear_transpose(linear)
    (value,) = evaluate([tr.graph], [tangent_output_key(tr, 0)], {tangent_input_key(tr, 0): ct})
    return value


def test_structurally_identical_linear_operations_are_transposed_once():
    def build(b, dx):
        (t1,) = b.add_operation(Neg, [Local(dx)], T1)
        (t2,) = b.add_operation(Neg, [Local(dx)], T1)  # same key as t1
        (out,) = b.add_operation(Add, [Local(t1), Local(t2)], TT)
        return out

    assert transpose_value(hand_linear(build)) == -2.0  # f(dx) = -2 dx


def test_duplicate_with_a_consumer_in_between():
    def build(b, dx):
        (t,) = b.add_operation(Neg, [Local(dx)], T1)
        (u,) = b.add_operation(Neg, [Local(t)], T1)
        (t_again,) = b.add_operation(Neg, [Local(dx)], T1)
        (out,) = b.add_operation(Add, [Local(u), Local(t_again)], TT)
        return out

    assert transpose_value(hand_linear(build), 3.0) == 0.0  # f(dx) = dx - dx


def test_transposes_never_share_seed_keys():
    graph, (y,) = square()
    g = GraphMaker("x")
    cube_graph, (cube,) = g.build(g.apply(Mul, g.apply(Mul, g["x"], g["x"]), g["x"]))
    tr1 = linear_transpose(linearize([graph], [y], [User("x")], next_pass()))
    tr2 = linear_transpose(linearize([cube_graph], [cube], [User("x")], next_pass()))
    assert tangent_input_key(tr1, 0) != tangent_input_key(tr2, 0)
    a, b = evaluate(
        [graph, cube_graph, tr1.graph, tr2.graph],
        [tangent_output_key(tr1, 0), tangent_output_key(tr2, 0)],
        {User("x"): 2.0, tangent_input_key(tr1, 0): 1.0, tangent_input_key(tr2, 0): 10.0},
    )
    assert (a, b) == (4.0, 120.0)


def test_reused_pass_id_is_detected():
    graph, (y,) = square()
    lin = linearize([graph], [y], [User("x")], 41)
    with pytest.raises(PassReuseError, match="pass id 41 was used by an earlier linearize"):
        linearize([graph, lin.graph], [tangent_output_key(lin, 0)], [User("x")], 41)
    fresh = linearize([graph, lin.graph], [tangent_output_key(lin, 0)], [User("x")])
    assert fresh.tangent_outputs[0] is not None


def test_unresolvable_key_is_an_error_not_a_constant():
    _graph, (y,) = square()
    builder = GraphBuilder()
    (n,) = builder.add_operation(Neg, [External(y)])  # the square's graph is not a root
    outer = builder.build()
    with pytest.raises(UnresolvedKeyError, match=r"reached from output"):
        linearize([outer], [outer.key_of(n)], [User("x")], next_pass())


def test_aliases_carry_tangents_through_checkpoint_boundaries():
    graph, (u,) = square()
    g = GraphMaker("c")
    boundary, (out,) = g.build(g.apply(Neg, g["c"]))
    aliases = {User("c"): u}
    lin = linearize([graph, boundary], [out], [User("x")], next_pass(), aliases=aliases)
    (dy,) = evaluate(
        [graph, lin.graph],
        [tangent_output_key(lin, 0)],
        {User("x"): 3.0, tangent_input_key(lin, 0): 1.0},
    )
    assert dy == -6.0
    assert linearize([graph, boundary], [out], [User("x")], next_pass()).tangent_outputs == (None,)
    cyclic = {User("c"): out}
    with pytest.raises(TransformError, match="aliases form a cycle"):
        linearize([boundary], [out], [User("x")], next_pass(), aliases=cyclic)


# --------------------------------------------------------------------------- contract errors


def broken(name, **tables):
    return family(name, ["Add", "Mul", "Neg"], **tables)


def unary_graph(op):
    g = GraphMaker("x")
    return g.build(g.apply(op, g["x"]))


def test_jvp_rule_returning_the_wrong_arity():
    fam = broken("Arity", jvp={"Neg": lambda op, b, pin, pout, t, ctx: [t[0], t[0]]})
    graph, (y,) = unary_graph(fam.op("Neg"))
    with pytest.raises(
        RuleContractError,
        match=r"Neg\.jvp_rule returned 2 value\(s\); expected one per output \(1\)",
    ):
        linearize([graph], [y], [User("x")])


def test_jvp_rule_returning_a_foreign_id():
    fam = broken("Foreign", jvp={"Neg": lambda op, b, pin, pout, t, ctx: [99]})
    graph, (y,) = unary_graph(fam.op("Neg"))
    with pytest.raises(RuleContractError, match="returned 99 for output 0"):
        linearize([graph], [y], [User("x")])
    fam2 = broken("NotAList", jvp={"Neg": lambda op, b, pin, pout, t, ctx: 5})
    graph2, (y2,) = unary_graph(fam2.op("Neg"))
    with pytest.raises(RuleContractError, match="must return a sequence"):
        linearize([graph2], [y2], [User("x")])


def test_transpose_rule_cotangent_for_a_fixed_operand():
    def bad(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
        scaled = emit(b, op, [inputs[0], Local(ct[0])], Linearized((False, True)))
        return [scaled, scaled]

    fam = broken("Leaky", transpose={"Mul": bad})
    g = GraphMaker("x", "c")
    graph, (y,) = g.build(g.apply(fam.op("Mul"), g["c"], g["x"]))
    lin = linearize([graph], [y], [User("x")])
    with pytest.raises(RuleContractError, match="cotangent for input 0, which is not active"):
        linear_transpose(lin)


def test_primary_role_on_the_active_path():
    def primary_neg(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
        (out,) = b.add_primitive(op, [Local(t[0])], PRIMARY)
        return [out]

    fam = broken("Mislabelled", jvp={"Neg": primary_neg})
    graph, (y,) = unary_graph(fam.op("Neg"))
    lin = linearize([graph], [y], [User("x")])
    with pytest.raises(RuleContractError, match="has role Primary"):
        linear_transpose(lin)


@dataclass(frozen=True)
class RuleLess:
    """A graph operation with no AD rules at all."""

    def input_count(self) -> int:
        return 1

    def output_count(self) -> int:
        return 1


def test_operation_without_rules_raises_ad_rule_error():
    graph, (y,) = unary_graph(RuleLess())
    with pytest.raises(ADRuleError, match=r"unsupported jvp AD rule for RuleLess\(\)") as info:
        linearize([graph], [y], [User("x")])
    assert info.value.rule == "jvp"
    builder = GraphBuilder()
    dx = builder.add_input("dx")
    (out,) = builder.add_operation(RuleLess(), [Local(dx)], T1)
    builder.set_outputs([out])
    lin = LinearizedGraph(builder.build(), (("x", dx),), (out,), Add)
    with pytest.raises(ADRuleError, match="unsupported transpose AD rule"):
        linear_transpose(lin)


def test_inactive_operations_call_no_rule():
    fam = family("Counted", ["Add", "Mul", "Neg", "Exp"])
    g = GraphMaker("x", "y")
    graph, (y,) = g.build(g.apply(fam.op("Add"), g.apply(fam.op("Exp"), g["y"]), g["x"]))
    linearize([graph], [y], [User("x")])
    assert fam.counts["jvp"] == 1  # only Add; exp(y) is constant


def test_transform_argument_errors():
    graph, (_y,) = square()
    with pytest.raises(TypeError, match="output 0 is not a ValueKey"):
        linearize([graph], ["y"], [User("x")])  # type: ignore[list-item]
    g = GraphMaker("c")
    with_c, (neg_c,) = g.build(g.apply(Neg, g["c"]))
    with pytest.raises(TypeError, match="alias of"):
        linearize([with_c], [neg_c], [User("x")], aliases={User("c"): "u"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="expected a LinearizedGraph"):
        linear_transpose(graph)  # type: ignore[arg-type]


def test_linearize_with_builder_applies_the_jvp_to_existing_values():
    from computegraph import GraphBuilder, structural_view
    from tidu import linearize_with_builder

    graph, (y,) = square()
    builder = GraphBuilder()
    builder.add_parent(graph)
    tangent = builder.add_input("t")  # a value the caller already has
    (result,) = linearize_with_builder([graph], [y], [User("x")], _Adapter(builder), [tangent])
    out = builder.build()
    (dy,) = evaluate([graph, out], [out.key_of(result)], {User("x"): 3.0, "t": 0.5})
    assert dy == 3.0
    # Over a structural view no graph needs to be passed at all.
    (again,) = linearize_with_builder(
        structural_view(), [y], [User("x")], _Adapter(builder), [tangent]
    )
    assert builder.build().key_of(again) == out.key_of(result)
    with pytest.raises(TransformError, match=r"1 tangent seed\(s\) for 2 wrt entries"):
        linearize_with_builder([graph], [y], [User("x"), User("x")], _Adapter(builder), [tangent])


class _Adapter:
    """A PrimitiveBuilder over a plain GraphBuilder."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder

    @property
    def value_count(self) -> int:
        return self.builder.value_count

    def add_primitive(self, op, inputs, role):  # type: ignore[no-untyped-def]
        return self.builder.add_operation(op, inputs, role)


def test_pass_reuse_is_judged_on_reachable_tangents():
    from computegraph import structural_view

    _graph, (y,) = square()
    lin = linearize(structural_view(), [y], [User("x")], 77)
    again = linearize(structural_view(), [y], [User("x")], 77)  # unrelated: fine
    assert again.tangent_outputs[0] is not None
    with pytest.raises(PassReuseError):
        linearize(structural_view(), [tangent_output_key(lin, 0)], [User("x")], 77)
