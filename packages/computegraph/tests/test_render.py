"""Readable listings (jaxpr-like) and Graphviz DOT export."""

from __future__ import annotations

import re

from cg_support import ScalarOp

from computegraph import (
    External,
    GraphBuilder,
    Linearized,
    Local,
    compile,
    describe_key,
    materialize_merge,
    resolve,
)

Add, Mul, Exp, Neg, Dup = ScalarOp.ADD, ScalarOp.MUL, ScalarOp.EXP, ScalarOp.NEG, ScalarOp.DUP


def primal_and_linear():
    b0 = GraphBuilder()
    x = b0.add_input("x")
    a = b0.add_input("a")
    (m,) = b0.add_operation(Mul, [Local(x), Local(a)])
    (e,) = b0.add_operation(Exp, [Local(m)])
    b0.set_outputs([e])
    primal = b0.build()
    b1 = GraphBuilder()
    t = b1.add_input("dx")
    (t1,) = b1.add_operation(Mul, [External(primal.key_of(a)), Local(t)], Linearized([False, True]))
    (t2,) = b1.add_operation(
        Mul, [External(primal.key_of(e)), Local(t1)], Linearized([False, True])
    )
    b1.set_outputs([t2])
    return primal, b1.build()


def test_graph_listing():
    primal, linear = primal_and_linear()
    assert str(primal) == "\n".join(
        [
            "graph(%0: 'x', %1: 'a') -> (%3)",
            "  %2 = Mul(%0, %1)",
            "  %3 = Exp(%2)",
        ]
    )
    text = str(linear)
    lines = text.splitlines()
    assert lines[0] == "graph(%0: 'dx') -> (%2)"
    assert re.fullmatch(r"  %1 = Mul\(\$0, %0\) +linear\(fixed, active\)", lines[1])
    assert re.fullmatch(r"  %2 = Mul\(\$1, %1\) +linear\(fixed, active\)", lines[2])
    assert lines[3] == "  where $0 = 'a'"
    assert lines[4] == "  where $1 = Exp(Mul('x', 'a'))"


def test_multi_output_and_parents_listing():
    primal, _ = primal_and_linear()
    builder = GraphBuilder()
    builder.add_parent(primal)
    d0, d1 = builder.add_operation(Dup, [External(primal.output_keys()[0])])
    builder.set_outputs([d1, d0])
    text = str(builder.build())
    assert "%0, %1 = Dup($0)" in text
    assert "-> (%1, %0)" in text
    assert "parents: 1 graph(s)" in text


def test_materialized_and_program_listing():
    primal, linear = primal_and_linear()
    materialized = materialize_merge(resolve([primal, linear]), linear.output_keys())
    assert str(materialized).splitlines() == [
        "materialized(v0: 'x', v1: 'a', v4: 'dx') -> (v6)",
        "  v2 = Mul(v0, v1)",
        "  v3 = Exp(v2)",
        "  v5 = Mul(v1, v4)                         linear(fixed, active)",
        "  v6 = Mul(v3, v5)                         linear(fixed, active)",
    ]
    program = compile(materialized)
    text = str(program)
    assert text.splitlines()[0] == "program(s0: 'x', s1: 'a', s4: 'dx') -> (s6)"
    assert "s2 = Mul(s0, s1)" in text
    assert "free s0" in text
    assert text.splitlines()[-1] == "  slots: 7"


def test_describe_key_is_bounded():
    builder = GraphBuilder()
    value = builder.add_input("x")
    for _ in range(50):
        (value,) = builder.add_operation(Neg, [Local(value)])
    key = builder.build().key_of(value)
    assert describe_key(key) == "Neg(Neg(Neg(...)))"
    assert describe_key(key, depth=1) == "Neg(...)"


def test_dot_export_is_well_formed():
    primal, linear = primal_and_linear()
    for dot in (
        linear.to_dot(),
        primal.to_dot(),
        materialize_merge(resolve(primal), primal.output_keys()).to_dot(),
    ):
        assert dot.startswith("digraph ")
        assert dot.rstrip().endswith("}")
        declared = set(re.findall(r"^  (\w+) \[", dot, flags=re.MULTILINE))
        for source, target in re.findall(r"^  (\w+) -> (\w+)", dot, flags=re.MULTILINE):
            assert source in declared
            assert target in declared
    assert "style=dashed" in linear.to_dot()  # external references
    assert "linear(fixed, active)" in linear.to_dot()
