"""Port of the reference suite ``computegraph/tests/scalar_tests.rs`` (spec §3.1, 29 tests)
and of the observed behaviours listed in spec §1."""

from __future__ import annotations

import math

import pytest
from cg_support import ScalarOp, evaluate

from computegraph import (
    PRIMARY,
    Derived,
    External,
    GraphBuilder,
    Input,
    InputDef,
    Local,
    OperationKey,
    ProducedDef,
    ValueKeyInterner,
    compile,
    materialize_merge,
    resolve,
)

Add, Mul, Exp, Neg, Dup = ScalarOp.ADD, ScalarOp.MUL, ScalarOp.EXP, ScalarOp.NEG, ScalarOp.DUP


def exp_of_mul_graphs():
    """F0 computes Mul(x, a); F1 (parent F0) computes Exp(External(mul_key))."""
    b0 = GraphBuilder()
    x = b0.add_input("x")
    a = b0.add_input("a")
    (m,) = b0.add_operation(Mul, [Local(x), Local(a)])
    b0.set_outputs([m])
    f0 = b0.build()
    mul_key = f0.key_of(m)
    b1 = GraphBuilder()
    b1.add_parent(f0)
    (e,) = b1.add_operation(Exp, [External(mul_key)])
    b1.set_outputs([e])
    f1 = b1.build()
    return f0, f1, mul_key, f1.key_of(e)


# --------------------------------------------------------------------------- operations


def test_scalar_op_eval_add():
    assert Add.input_count() == 2
    assert Add.output_count() == 1
    assert Add.eval([3.0, 4.0], None) == [7.0]


def test_scalar_op_eval_exp():
    assert Exp.eval([0.0], None) == [1.0]


def test_scalar_op_eval_dup():
    assert Dup.output_count() == 2
    assert Dup.eval([5.0], None) == [5.0, 5.0]


# --------------------------------------------------------------------------- interner


def test_interner_intern_and_resolve():
    interner = ValueKeyInterner()
    key = Input("x")
    assert interner.resolve(interner.intern(key)) == key


def test_interner_deduplicates():
    interner = ValueKeyInterner()
    assert interner.intern(Input("x")) == interner.intern(Input("x"))
    assert len(interner) == 1


def test_interner_distinct_keys_get_distinct_ids():
    interner = ValueKeyInterner()
    assert interner.intern(Input("x")) != interner.intern(Input("y"))
    assert [interner.intern(Input("x")), interner.intern(Input("y"))] == [0, 1]


def test_interner_get_returns_none_for_unknown():
    assert ValueKeyInterner().get(Input("x")) is None


def test_interner_derived_key():
    interner = ValueKeyInterner()
    key = Derived(OperationKey(Add, [Input("x"), Input("y")], PRIMARY), 0)
    key_id = interner.intern(key)
    assert interner.resolve(key_id) == key
    assert interner.get(key) == key_id


def test_derived_keys_with_distinct_op_arcs_are_structurally_equal():
    first = Derived(OperationKey(Add, [Input("x"), Input("y")], PRIMARY), 0)
    second = Derived(OperationKey(Add, (Input("x"), Input("y")), PRIMARY), 0)
    assert first == second
    assert hash(first) == hash(second)
    assert first.fingerprint == second.fingerprint


# --------------------------------------------------------------------------- graph builder


def test_graph_builder_single_input():
    builder = GraphBuilder()
    x = builder.add_input("x")
    builder.set_outputs([x])
    graph = builder.build()
    assert x == 0
    assert len(graph.inputs) == 1
    assert len(graph.outputs) == 1
    assert graph.values[x].key == Input("x")
    assert graph.values[x].producer is None


def test_graph_builder_add_operation():
    builder = GraphBuilder()
    x = builder.add_input("x")
    y = builder.add_input("y")
    outputs = builder.add_operation(Add, [Local(x), Local(y)])
    assert len(outputs) == 1
    graph = builder.build()
    assert len(graph.operations) == 1
    assert graph.values[outputs[0]].producer == (0, 0)
    expected = Derived(OperationKey(Add, [Input("x"), Input("y")], PRIMARY), 0)
    assert graph.values[outputs[0]].key == expected


def test_graph_builder_chain():
    _f0, f1, _, _ = exp_of_mul_graphs()
    builder = GraphBuilder()
    x = builder.add_input("x")
    a = builder.add_input("a")
    (m,) = builder.add_operation(Mul, [Local(x), Local(a)])
    (e,) = builder.add_operation(Exp, [Local(m)])
    graph = builder.build()
    assert len(graph.operations) == 2
    assert len(graph.values) == 4
    assert graph.key_of(e) == f1.output_keys()[0]


def test_graph_builder_dup_two_outputs():
    builder = GraphBuilder()
    x = builder.add_input("x")
    outputs = builder.add_operation(Dup, [Local(x)])
    graph = builder.build()
    assert len(outputs) == 2
    assert [graph.values[i].producer[1] for i in outputs] == [0, 1]
    assert [graph.key_of(i).output_slot for i in outputs] == [0, 1]


# --------------------------------------------------------------------------- resolve


def test_resolve_single_graph():
    builder = GraphBuilder()
    x = builder.add_input("x")
    y = builder.add_input("y")
    (s,) = builder.add_operation(Add, [Local(x), Local(y)])
    graph = builder.build()
    view = resolve([graph])
    assert view.resolve_value(Input("x")) == InputDef("x")
    produced = view.resolve_value(graph.key_of(s))
    assert isinstance(produced, ProducedDef)
    assert produced.operation is Add
    assert produced.input_keys == (Input("x"), Input("y"))
    assert produced.role == PRIMARY
    assert produced.output_slot == 0


def test_resolve_external_ref_across_graphs():
    f0, f1, mul_key, exp_key = exp_of_mul_graphs()
    view = resolve([f0, f1])
    assert view.resolve_value(mul_key) is not None
    produced = view.resolve_value(exp_key)
    assert produced.input_keys == (mul_key,)
    # F1 lists F0 as a parent, so resolving F1 alone finds mul_key too.
    assert resolve(f1).resolve_value(mul_key) is not None


def test_resolve_unknown_key_returns_none():
    assert resolve([GraphBuilder().build()]).resolve_value(Input("x")) is None


# --------------------------------------------------------------------------- materialize


def add_xy_graph():
    builder = GraphBuilder()
    x = builder.add_input("x")
    y = builder.add_input("y")
    (s,) = builder.add_operation(Add, [Local(x), Local(y)])
    builder.set_outputs([s])
    graph = builder.build()
    return graph, graph.key_of(s)


def test_materialize_single_op():
    graph, out = add_xy_graph()
    materialized = materialize_merge(resolve([graph]), [out])
    assert len(materialized.operations) == 1
    assert len(materialized.values) == 3
    assert len(materialized.inputs) == 2
    assert len(materialized.outputs) == 1


def test_materialize_chain():
    _f0, _f1, _, _exp_key = exp_of_mul_graphs()
    builder = GraphBuilder()
    x = builder.add_input("x")
    a = builder.add_input("a")
    (m,) = builder.add_operation(Mul, [Local(x), Local(a)])
    (e,) = builder.add_operation(Exp, [Local(m)])
    graph = builder.build()
    materialized = materialize_merge(resolve([graph]), [graph.key_of(e)])
    assert len(materialized.operations) == 2
    assert len(materialized.values) == 4
    assert [op.operation for op in materialized.operations] == [Mul, Exp]


def test_materialize_cse_deduplicates():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (s,) = builder.add_operation(Add, [Local(x), Local(x)])
    graph = builder.build()
    materialized = materialize_merge(resolve([graph]), [graph.key_of(s)])
    assert len(materialized.values) == 2
    assert len(materialized.operations) == 1
    op = materialized.operations[0]
    assert op.inputs[0] == op.inputs[1]


def test_materialize_across_graphs():
    f0, f1, _, exp_key = exp_of_mul_graphs()
    materialized = materialize_merge(resolve([f0, f1]), [exp_key])
    assert len(materialized.operations) == 2
    assert len(materialized.values) == 4


# --------------------------------------------------------------------------- compile + eval


def test_compile_and_eval_add():
    graph, out = add_xy_graph()
    program = compile(materialize_merge(resolve([graph]), [out]))
    assert len(program.input_slots) == 2
    assert len(program.output_slots) == 1
    assert len(program.instructions) == 1
    assert program.eval([3.0, 4.0]) == [7.0]


def test_compile_and_eval_chain():
    f0, f1, _, exp_key = exp_of_mul_graphs()
    (result,) = evaluate([f0, f1], [exp_key], {"x": 1.0, "a": 2.0})
    assert result == pytest.approx(math.exp(2.0), abs=1e-12)


def test_compile_and_eval_reuse():
    graph, out = add_xy_graph()
    program = compile(materialize_merge(resolve([graph]), [out]))
    assert program.eval([1.0, 2.0]) == [3.0]
    assert program.eval([10.0, 20.0]) == [30.0]


def test_compile_and_eval_multi_output():
    f0, f1, mul_key, exp_key = exp_of_mul_graphs()
    results = evaluate([f0, f1], [mul_key, exp_key], {"x": 1.0, "a": 2.0})
    assert results == [2.0, pytest.approx(math.exp(2.0), abs=1e-12)]


# --------------------------------------------------------------------------- end to end


def test_e2e_exp_ax_single_graph():
    builder = GraphBuilder()
    x = builder.add_input("x")
    a = builder.add_input("a")
    (m,) = builder.add_operation(Mul, [Local(a), Local(x)])
    (e,) = builder.add_operation(Exp, [Local(m)])
    graph = builder.build()
    (result,) = evaluate([graph], [graph.key_of(e)], {"x": 2.0, "a": 3.0})
    assert result == pytest.approx(math.exp(6.0), rel=1e-12)


def test_e2e_exp_ax_multi_graph():
    f0, f1, _, exp_key = exp_of_mul_graphs()
    assert evaluate([f0, f1], [exp_key], {"x": 2.0, "a": 3.0})[0] == pytest.approx(math.exp(6.0))
    assert evaluate([f0, f1], [exp_key], {"x": 1.0, "a": 1.0})[0] == pytest.approx(math.e)


def test_e2e_x_plus_x():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (s,) = builder.add_operation(Add, [Local(x), Local(x)])
    graph = builder.build()
    assert evaluate([graph], [graph.key_of(s)], {"x": 5.0}) == [10.0]


def test_e2e_neg_exp():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (e,) = builder.add_operation(Exp, [Local(x)])
    (n,) = builder.add_operation(Neg, [Local(e)])
    graph = builder.build()
    assert evaluate([graph], [graph.key_of(n)], {"x": 0.0}) == [-1.0]


def test_e2e_dup_and_add():
    builder = GraphBuilder()
    x = builder.add_input("x")
    d0, d1 = builder.add_operation(Dup, [Local(x)])
    (s,) = builder.add_operation(Add, [Local(d0), Local(d1)])
    graph = builder.build()
    assert evaluate([graph], [graph.key_of(s)], {"x": 7.0}) == [14.0]


# --------------------------------------------------------------------------- observed (spec §1)


def test_observed_input_order_by_discovery_and_duplicate_outputs():
    builder = GraphBuilder()
    x = builder.add_input("x")
    y = builder.add_input("y")
    builder.add_input("unused")
    (m,) = builder.add_operation(Add, [Local(y), Local(x)])
    (n,) = builder.add_operation(Neg, [Local(m)])
    graph = builder.build()
    m_key, n_key = graph.key_of(m), graph.key_of(n)
    materialized = materialize_merge(resolve([graph]), [n_key, m_key, n_key])
    assert materialized.inputs == (Input("y"), Input("x"))
    assert [value.key for value in materialized.values] == [Input("y"), Input("x"), m_key, n_key]
    assert [(op.operation, op.inputs, op.outputs) for op in materialized.operations] == [
        (Add, (0, 1), (2,)),
        (Neg, (2,), (3,)),
    ]
    program = compile(materialized)
    assert program.output_slots == (3, 2, 3)
    assert program.eval([10.0, 1.0]) == [-11.0, 11.0, -11.0]


def test_observed_cse_of_identical_ops_from_two_graphs():
    graphs = []
    for _ in range(2):
        builder = GraphBuilder()
        x = builder.add_input("x")
        (e,) = builder.add_operation(Exp, [Local(x)])
        (n,) = builder.add_operation(Neg, [Local(e)])
        builder.set_outputs([n])
        graphs.append(builder.build())
    first, second = (graph.output_keys()[0] for graph in graphs)
    assert first == second
    materialized = materialize_merge(resolve(graphs), [first, second])
    assert len(materialized.operations) == 2
    assert compile(materialized).eval([0.0]) == [-1.0, -1.0]


def test_observed_all_slots_of_multi_output_op_materialised():
    builder = GraphBuilder()
    x = builder.add_input("x")
    d0, d1 = builder.add_operation(Dup, [Local(x)])
    (n,) = builder.add_operation(Neg, [Local(d1)])
    graph = builder.build()
    materialized = materialize_merge(resolve([graph]), [graph.key_of(n)])
    assert [value.key for value in materialized.values] == [
        Input("x"),
        graph.key_of(d0),
        graph.key_of(d1),
        graph.key_of(n),
    ]
    assert compile(materialized).eval([4.0]) == [-4.0]


def test_observed_input_as_output_and_duplicate_inputs():
    builder = GraphBuilder()
    x = builder.add_input("x")
    x_again = builder.add_input("x")
    builder.set_outputs([x, x_again, x])
    graph = builder.build()
    assert graph.key_of(x) == graph.key_of(x_again)
    keys = graph.output_keys()
    materialized = materialize_merge(resolve(graph), keys)
    assert materialized.inputs == (Input("x"),)
    assert compile(materialized).eval([2.5]) == [2.5, 2.5, 2.5]


def test_boundary_keys_become_inputs():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (e,) = builder.add_operation(Exp, [Local(x)])
    (n,) = builder.add_operation(Neg, [Local(e)])
    (s,) = builder.add_operation(Add, [Local(n), Local(x)])
    graph = builder.build()
    e_key = graph.key_of(e)
    materialized = materialize_merge(resolve(graph), [graph.key_of(s)], boundary=[e_key])
    assert materialized.inputs == (e_key, Input("x"))
    assert [op.operation for op in materialized.operations] == [Neg, Add]
    program = compile(materialized)
    # The boundary value is supplied, not recomputed: 10 stands in for exp(x).
    assert program.eval([10.0, 2.0]) == [-8.0]
    assert program.eval_with({e_key: 10.0, "x": 2.0}) == [-8.0]
    assert program.input_position(e_key) == 0


def test_boundary_keys_need_not_be_defined_by_the_view():
    outer = GraphBuilder()
    elsewhere = Derived(OperationKey(Exp, [Input("hidden")]), 0)
    (n,) = outer.add_operation(Neg, [External(elsewhere)])
    graph = outer.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(n)], boundary=[elsewhere]))
    assert program.eval([3.0]) == [-3.0]


def test_eval_with_a_custom_evaluator():
    builder = GraphBuilder()
    x = builder.add_input("x")
    (e,) = builder.add_operation(Exp, [Local(x)])
    (n,) = builder.add_operation(Neg, [Local(e)])
    graph = builder.build()
    program = compile(materialize_merge(resolve(graph), [graph.key_of(n)]))
    seen = []

    def apply(operation, inputs, ctx):
        seen.append((operation, list(inputs), ctx))
        return operation.eval(inputs, ctx)

    assert program.eval([0.0], "context", apply=apply) == [-1.0]
    assert seen == [(Exp, [0.0], "context"), (Neg, [1.0], "context")]
    assert program.eval([0.0]) == [-1.0]  # the plain path is unaffected


def test_structural_view_defines_every_key_by_its_structure():
    from computegraph import StructuralView, structural_view

    view = structural_view()
    assert isinstance(view, StructuralView)
    key = Derived(OperationKey(Neg, [Derived(OperationKey(Exp, [Input("x")]), 0)]), 0)
    assert view.defines(key)
    assert view.resolve_value(key) == ProducedDef(Neg, key.operation_key.inputs, PRIMARY, 0)
    assert view.resolve_value(Input("x")) == InputDef("x")
    program = compile(materialize_merge(view, [key]))  # no graph object was ever built
    assert program.eval([0.0]) == [-1.0]
    with pytest.raises(TypeError, match="cannot be listed"):
        list(view.defined_keys)


def test_substitute_inputs_by_values():
    from computegraph import structural_view

    x_squared = Derived(OperationKey(Mul, [Input("x"), Input("x")]), 0)
    out = Derived(OperationKey(Add, [Input("p"), Input("x")]), 0)  # p stands for x*x
    materialized = materialize_merge(structural_view(), [out], substitute={"p": x_squared})
    assert materialized.inputs == (Input("x"),)
    assert [op.operation for op in materialized.operations] == [Mul, Add]
    assert compile(materialized).eval([3.0]) == [12.0]
    assert materialized.index_of(Input("p")) == materialized.index_of(x_squared)
    with pytest.raises(TypeError, match="substitute of"):
        materialize_merge(structural_view(), [out], substitute={"p": "not a key"})
