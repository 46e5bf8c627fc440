"""Property tests on random DAGs, real and complex.

* the adjoint identity Re<ct, J t> = Re<J^T ct, t> between linearize and transpose;
* first, second and third directional derivatives (forward over forward) against
  five-point finite differences of the order below;
* forward-over-reverse agrees with forward-over-forward: <t, D(J^T s)[u]> = <s, D^2 f[t, u]>.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tidu_support import COMPLEX, EXT_SCALAR, Family, Op, User, family

from computegraph import GraphBuilder, Local, ValueKey, compile, materialize_merge, resolve
from tidu import LinearizedGraph, linear_transpose, linearize

COMPLEX_SET = family(
    "ComplexSet", ["Add", "Mul", "Neg", "Exp", "Conj", "Sin", "Cos"], complex_mul=True
)
REAL_OPS = ["Add", "Mul", "Neg", "Sin", "Cos", "Exp", "SinCos"]
COMPLEX_OPS = ["Add", "Mul", "Neg", "Exp", "Conj", "Sin"]


@dataclass(frozen=True)
class Spec:
    n_inputs: int
    ops: tuple[tuple[str, tuple[int, ...]], ...]
    outputs: tuple[int, ...]


@st.composite
def dags(draw: st.DrawFn, names: list[str], max_ops: int = 10) -> Spec:
    n_inputs = draw(st.integers(1, 3))
    count = n_inputs
    ops = []
    for _ in range(draw(st.integers(1, max_ops))):
        name = draw(st.sampled_from(names))
        arity = 2 if name in ("Add", "Mul") else 1
        args = tuple(draw(st.integers(max(0, count - 6), count - 1)) for _ in range(arity))
        ops.append((name, args))
        count += 2 if name == "SinCos" else 1
    outputs = tuple(draw(st.lists(st.integers(n_inputs, count - 1), min_size=1, max_size=3)))
    return Spec(n_inputs, tuple(ops), outputs)


def build(spec: Spec, op_set: Family) -> tuple[Any, list[ValueKey], list[User]]:
    builder = GraphBuilder()
    names = [User(f"x{i}") for i in range(spec.n_inputs)]
    values = [builder.add_input(name) for name in names]
    for name, args in spec.ops:
        values.extend(builder.add_operation(op_set.op(name), [Local(values[a]) for a in args]))
    graph = builder.build()
    return graph, [graph.key_of(values[o]) for o in spec.outputs], names


def program(
    roots: Sequence[Any], outputs: Sequence[ValueKey | None]
) -> Callable[[dict[Any, Any]], list[Any]]:
    keys = [k for k in outputs if k is not None]
    compiled = compile(materialize_merge(resolve(list(roots)), keys))

    def run(bindings: dict[Any, Any]) -> list[Any]:
        values = iter(compiled.eval_with(bindings))
        return [0.0 if k is None else next(values) for k in outputs]

    return run


def inner(a: Sequence[Any], b: Sequence[Any]) -> float:
    return sum((complex(x).conjugate() * y).real for x, y in zip(a, b, strict=True))


def tangent_keys(lin: LinearizedGraph) -> list[Any]:
    return [lin.graph.value_keys[local].key for _, local in lin.tangent_inputs]  # type: ignore[attr-defined]


def output_keys(lin: LinearizedGraph) -> list[ValueKey | None]:
    return [None if t is None else lin.graph.value_keys[t] for t in lin.tangent_outputs]


def five_point(f: Callable[[float], list[Any]], h: float) -> list[Any]:
    a, b, c, d = f(2 * h), f(h), f(-h), f(-2 * h)
    return [(-p + 8 * q - 8 * r + s) / (12 * h) for p, q, r, s in zip(a, b, c, d, strict=True)]


def close(got: Sequence[Any], want: Sequence[Any], tol: float) -> bool:
    scale = 1.0 + max((abs(w) for w in want), default=0.0)
    return all(abs(g - w) <= tol * scale for g, w in zip(got, want, strict=True))


def numbers(complex_values: bool) -> st.SearchStrategy[Any]:
    real = st.floats(-1.0, 1.0)
    if not complex_values:
        return real
    return st.builds(complex, real, real)


@st.composite
def setup(
    draw: st.DrawFn, complex_values: bool
) -> tuple[Spec, list[Any], list[Any], list[Any], list[Any]]:
    spec = draw(dags(COMPLEX_OPS if complex_values else REAL_OPS))
    value = numbers(complex_values)
    x = [draw(value) for _ in range(spec.n_inputs)]
    t = [draw(value) for _ in range(spec.n_inputs)]
    u = [draw(value) for _ in range(spec.n_inputs)]
    s = [draw(value) for _ in spec.outputs]
    return spec, x, t, u, s


def op_set_for(complex_values: bool) -> Family:
    return COMPLEX_SET if complex_values else EXT_SCALAR


@settings(max_examples=80, deadline=None)
@given(data=st.data(), complex_values=st.booleans())
def test_adjoint_identity(data: st.DataObject, complex_values: bool):
    spec, x, t, _, s = data.draw(setup(complex_values))
    graph, outputs, names = build(spec, op_set_for(complex_values))
    lin = linearize([graph], outputs, names)
    tr = linear_transpose(lin)
    primal = dict(zip(names, x, strict=True))
    jt = program([graph, lin.graph], output_keys(lin))(
        {**primal, **dict(zip(tangent_keys(lin), t, strict=True))}
    )
    seeds = [s[i] for i, out in enumerate(lin.tangent_outputs) if out is not None]
    jts = program([graph, tr.graph], output_keys(tr))(
        {**primal, **dict(zip(tangent_keys(tr), seeds, strict=True))}
    )
    left, right = inner(s, jt), inner(jts, t)
    assert abs(left - right) <= 1e-9 * (1 + abs(left))


def directional(graph: Any, outputs: list[ValueKey], names: list[User], order: int):
    """f ↦ D^order f[t, ..., t] as a function of (x, t), by repeated linearize."""
    roots, current, tangent_names = [graph], list(outputs), []
    for _ in range(order):
        lin = linearize(roots, [k for k in current if k is not None], names)
        keys = iter(output_keys(lin))
        current = [None if k is None else next(keys) for k in current]
        roots.append(lin.graph)
        tangent_names.append(tangent_keys(lin))
    run = program(roots, current)

    def evaluate(x: list[Any], t: list[Any]) -> list[Any]:
        bindings: dict[Any, Any] = dict(zip(names, x, strict=True))
        for keys in tangent_names:
            bindings.update(zip(keys, t, strict=True))
        return run(bindings)

    return evaluate


@settings(max_examples=60, deadline=None)
@given(data=st.data(), complex_values=st.booleans(), order=st.integers(1, 3))
def test_higher_order_directional_derivatives_match_finite_differences(
    data: st.DataObject, complex_values: bool, order: int
):
    spec, x, t, _, _ = data.draw(setup(complex_values))
    graph, outputs, names = build(spec, op_set_for(complex_values))
    higher = directional(graph, outputs, names, order)
    lower = directional(graph, outputs, names, order - 1) if order > 1 else None
    primal = program([graph], outputs)

    def lower_along(h: float) -> list[Any]:
        shifted = [xi + h * ti for xi, ti in zip(x, t, strict=True)]
        if lower is None:
            return primal(dict(zip(names, shifted, strict=True)))
        return lower(shifted, t)

    assert close(higher(x, t), five_point(lower_along, 1e-3), 1e-5)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), complex_values=st.booleans())
def test_forward_over_reverse_agrees_with_forward_over_forward(
    data: st.DataObject, complex_values: bool
):
    spec, x, t, u, s = data.draw(setup(complex_values))
    graph, outputs, names = build(spec, op_set_for(complex_values))
    primal = dict(zip(names, x, strict=True))
    lin1 = linearize([graph], outputs, names)
    active = [k for k in output_keys(lin1) if k is not None]
    if not active:
        return
    # Forward over forward: D²f[t, u], paired with s.
    lin2 = linearize([graph, lin1.graph], active, names)
    fof_values = iter(
        program([graph, lin1.graph, lin2.graph], output_keys(lin2))(
            {
                **primal,
                **dict(zip(tangent_keys(lin1), t, strict=True)),
                **dict(zip(tangent_keys(lin2), u, strict=True)),
            }
        )
    )
    fof = [0.0 if out is None else next(fof_values) for out in lin1.tangent_outputs]
    # Forward over reverse: D(J^T s)[u], paired with t.
    tr = linear_transpose(lin1)
    seeds = [s[i] for i, out in enumerate(lin1.tangent_outputs) if out is not None]
    gradient = [k for k in output_keys(tr) if k is not None]
    if not gradient:
        return
    lin3 = linearize([graph, tr.graph], gradient, names)
    values = iter(
        program([graph, tr.graph, lin3.graph], output_keys(lin3))(
            {
                **primal,
                **dict(zip(tangent_keys(tr), seeds, strict=True)),
                **dict(zip(tangent_keys(lin3), u, strict=True)),
            }
        )
    )
    for_ = [0.0 if k is None else next(values) for k in output_keys(tr)]
    left, right = inner(s, fof), inner(for_, t)
    assert abs(left - right) <= 1e-8 * (1 + abs(left))


def test_families_are_distinct():
    assert op_set_for(True) is COMPLEX_SET
    assert isinstance(COMPLEX.op("Mul"), Op)
