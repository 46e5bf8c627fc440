"""Test primitive sets and helpers for tidu's tests (spec §3.0), independent of tenferro.

* ``User`` / ``TangentOf``: the reference's key type (``User(name)``, ``Tangent{of, pass}``).
* ``Family``: a primitive set whose evaluation and AD rules are tables of functions;
  ``Op(family, name, params)`` is one primitive. The rule functions below are the
  reference's "macros" (``linearize_add``, ``transpose_mul_complex``, ...).
* ``Vec``: a tiny row-major tensor over Python numbers (tidu's tests may not use numpy).
* ``evaluate``: resolve -> materialize -> bind by key -> compile -> eval.
"""

from __future__ import annotations

import cmath
import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from computegraph import (
    External,
    Graph,
    GraphBuilder,
    Linearized,
    Local,
    ValueKey,
    compile,
    materialize_merge,
    resolve,
)
from tidu import ADRuleError, LinearizedGraph

TOL = 1e-10
NUM_TOL = 1e-5

# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class User:
    name: str

    def tangent_of(self, pass_id: Hashable) -> TangentOf:
        return TangentOf(self, pass_id)


@dataclass(frozen=True)
class TangentOf:
    of: Any
    pass_id: Hashable

    def tangent_of(self, pass_id: Hashable) -> TangentOf:
        return TangentOf(self, pass_id)


# --------------------------------------------------------------------------- tensors


def _unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for extent in reversed(shape):
        out.append(index % extent)
        index //= extent
    return tuple(reversed(out))


def _ravel(position: Sequence[int], shape: tuple[int, ...]) -> int:
    index = 0
    for coordinate, extent in zip(position, shape, strict=True):
        index = index * extent + coordinate
    return index


@dataclass(frozen=True)
class Vec:
    """A row-major tensor of Python numbers (real or complex)."""

    shape: tuple[int, ...]
    data: tuple[Any, ...]

    @staticmethod
    def of(values: Any) -> Vec:
        if isinstance(values, (list, tuple)):
            return Vec((len(values),), tuple(values))
        return Vec((), (values,))

    def map(self, f: Callable[[Any], Any]) -> Vec:
        return Vec(self.shape, tuple(f(v) for v in self.data))

    def zip_with(self, other: Vec, f: Callable[[Any, Any], Any]) -> Vec:
        assert self.shape == other.shape, (self.shape, other.shape)
        return Vec(self.shape, tuple(f(a, b) for a, b in zip(self.data, other.data, strict=True)))

    def reduce_sum(self, axes: tuple[int, ...]) -> Vec:
        kept = [i for i in range(len(self.shape)) if i not in axes]
        shape = tuple(self.shape[i] for i in kept)
        size = math.prod(shape)
        total: list[Any] = [0] * size
        for index, value in enumerate(self.data):
            position = _unravel(index, self.shape)
            total[_ravel([position[i] for i in kept], shape)] += value
        return Vec(shape, tuple(total))

    def broadcast_in_dim(self, shape: tuple[int, ...], dims: tuple[int, ...]) -> Vec:
        for source, target in enumerate(dims):
            assert self.shape[source] in (1, shape[target]), (self.shape, shape, dims)
        data = []
        for index in range(math.prod(shape)):
            position = _unravel(index, shape)
            source = [0 if self.shape[i] == 1 else position[d] for i, d in enumerate(dims)]
            data.append(self.data[_ravel(source, self.shape)])
        return Vec(tuple(shape), tuple(data))

    def inner(self, other: Vec) -> float:
        """Real inner product Re(sum(conj(self) * other))."""
        assert self.shape == other.shape
        return sum(
            (complex(a).conjugate() * b).real for a, b in zip(self.data, other.data, strict=True)
        )

    def __add__(self, other: Vec) -> Vec:
        return self.zip_with(other, lambda a, b: a + b)

    def __mul__(self, other: Vec) -> Vec:
        return self.zip_with(other, lambda a, b: a * b)


def is_vec(value: Any) -> bool:
    return isinstance(value, Vec)


def _lift(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda v: v.map(f) if is_vec(v) else f(v)


def _lift2(f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: a.zip_with(b, f) if is_vec(a) else f(a, b)


def _exp(v: Any) -> Any:
    return cmath.exp(v) if isinstance(v, complex) else math.exp(v)


def _sin(v: Any) -> Any:
    return cmath.sin(v) if isinstance(v, complex) else math.sin(v)


def _cos(v: Any) -> Any:
    return cmath.cos(v) if isinstance(v, complex) else math.cos(v)


def _conj(v: Any) -> Any:
    return v.conjugate() if isinstance(v, complex) else v


EVALUATORS: dict[str, Callable[[Any, Sequence[Any]], list[Any]]] = {
    "Add": lambda op, xs: [_lift2(lambda a, b: a + b)(xs[0], xs[1])],
    "Mul": lambda op, xs: [_lift2(lambda a, b: a * b)(xs[0], xs[1])],
    "Exp": lambda op, xs: [_lift(_exp)(xs[0])],
    "Neg": lambda op, xs: [_lift(lambda v: -v)(xs[0])],
    "Conj": lambda op, xs: [_lift(_conj)(xs[0])],
    "Sin": lambda op, xs: [_lift(_sin)(xs[0])],
    "Cos": lambda op, xs: [_lift(_cos)(xs[0])],
    "SinCos": lambda op, xs: [_lift(_sin)(xs[0]), _lift(_cos)(xs[0])],
    "Identity": lambda op, xs: [xs[0]],
    "Split": lambda op, xs: [xs[0], -xs[0]],
    "Double": lambda op, xs: [xs[0], 2 * xs[0]],
    "Sum3": lambda op, xs: [xs[0] + xs[1] + xs[2]],
    "ReduceSum": lambda op, xs: [xs[0].reduce_sum(op.params[0])],
    "BroadcastInDim": lambda op, xs: [xs[0].broadcast_in_dim(op.params[0], op.params[1])],
    "Missing": lambda op, xs: [xs[0]],
    "EmitMissing": lambda op, xs: [xs[0]],
}

ARITY = {"Add": 2, "Mul": 2, "Sum3": 3}
OUTPUTS = {"SinCos": 2, "Split": 2, "Double": 2}


# --------------------------------------------------------------------------- primitives


@dataclass(frozen=True, eq=False)
class Family:
    """A primitive set: names, rule tables and the name of its addition."""

    name: str
    names: frozenset[str]
    jvp: Mapping[str, Callable[..., Any]]
    transpose: Mapping[str, Callable[..., Any]]
    add_name: str = "Add"
    counts: dict[str, int] = field(default_factory=lambda: {"jvp": 0, "transpose": 0})

    def op(self, name: str, *params: Any) -> Op:
        assert name in self.names, (self.name, name)
        return Op(self, name, params)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Op:
    """One primitive of a :class:`Family` (hashable, equal by value)."""

    family: Family
    name: str
    params: tuple[Any, ...] = ()

    def input_count(self) -> int:
        return ARITY.get(self.name, 1)

    def output_count(self) -> int:
        return OUTPUTS.get(self.name, 1)

    def eval(self, inputs: Sequence[Any], ctx: Any) -> list[Any]:
        return EVALUATORS[self.name](self, inputs)

    def add(self) -> Op:
        return Op(self.family, self.family.add_name)

    def sibling(self, name: str, *params: Any) -> Op:
        return self.family.op(name, *params)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangents, ctx):  # type: ignore[no-untyped-def]
        rule = self.family.jvp.get(self.name)
        if rule is None:
            raise ADRuleError(f"{self.family.name}::{self.name}", "jvp")
        self.family.counts["jvp"] += 1
        return rule(self, builder, primal_inputs, primal_outputs, tangents, ctx)

    def transpose_rule(self, builder, cotangents, inputs, role, ctx):  # type: ignore[no-untyped-def]
        rule = self.family.transpose.get(self.name)
        if rule is None:
            raise ADRuleError(f"{self.family.name}::{self.name}", "transpose")
        self.family.counts["transpose"] += 1
        return rule(self, builder, cotangents, inputs, role, ctx)

    def __repr__(self) -> str:
        suffix = f"{list(self.params)}" if self.params else ""
        return f"{self.name}{suffix}"


TT = Linearized((True, True))
TF = Linearized((True, False))
FT = Linearized((False, True))
T1 = Linearized((True,))
F1 = Linearized((False,))


def emit(builder: Any, op: Op, inputs: list[Any], role: Linearized) -> int:
    (out,) = builder.add_primitive(op, inputs, role)
    return out


# --- JVP rules (the reference's linearize_* macros) ----------------------------------


def linearize_add(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    dx, dy = t
    if dx is not None and dy is not None:
        return [emit(b, op, [Local(dx), Local(dy)], TT)]
    return [dx if dx is not None else dy]


def linearize_mul(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    terms = []
    if t[0] is not None:
        terms.append(emit(b, op, [Local(t[0]), External(pin[1])], TF))
    if t[1] is not None:
        terms.append(emit(b, op, [External(pin[0]), Local(t[1])], FT))
    if len(terms) == 2:
        return [emit(b, op.add(), [Local(terms[0]), Local(terms[1])], TT)]
    return [terms[0] if terms else None]


def linearize_exp(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [emit(b, op.sibling("Mul"), [External(pout[0]), Local(t[0])], FT)]


def linearize_neg(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [emit(b, op, [Local(t[0])], T1)]


def linearize_conj(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [emit(b, op, [Local(t[0])], T1)]


def linearize_same(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    """Linear unary ops (ReduceSum, BroadcastInDim, Identity): re-emit on the tangent."""
    return [emit(b, op, [Local(t[0])], T1)]


def linearize_sin(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    cos = emit(b, op.sibling("Cos"), [External(pin[0])], F1)
    return [emit(b, op.sibling("Mul"), [Local(cos), Local(t[0])], FT)]


def linearize_cos(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    sin = emit(b, op.sibling("Sin"), [External(pin[0])], F1)
    scaled = emit(b, op.sibling("Mul"), [Local(sin), Local(t[0])], FT)
    return [emit(b, op.sibling("Neg"), [Local(scaled)], T1)]


def linearize_sincos(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    d_sin = emit(b, op.sibling("Mul"), [External(pout[1]), Local(t[0])], FT)
    tmp = emit(b, op.sibling("Mul"), [External(pout[0]), Local(t[0])], FT)
    return [d_sin, emit(b, op.sibling("Neg"), [Local(tmp)], T1)]


def linearize_split(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [t[0], emit(b, op.sibling("Neg"), [Local(t[0])], T1)]


def linearize_double(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [t[0], emit(b, op.sibling("Add"), [Local(t[0]), Local(t[0])], TT)]


def linearize_sum3(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    present = [x for x in t if x is not None]
    total = present[0]
    for other in present[1:]:
        total = emit(b, op.sibling("Add"), [Local(total), Local(other)], TT)
    return [total]


def linearize_emit_missing(op, b, pin, pout, t, ctx):  # type: ignore[no-untyped-def]
    return [emit(b, op.sibling("Missing"), [Local(t[0])], T1)]


# --- transpose rules -------------------------------------------------------------------


def transpose_add(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    if ct[0] is None:
        return [None, None]
    return [ct[0] if role.active_mask[0] else None, ct[0] if role.active_mask[1] else None]


def transpose_mul_real(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    if ct[0] is None:
        return [None, None]
    out: list[Any] = [None, None]
    if role.active_mask[0]:
        out[0] = emit(b, op, [inputs[1], Local(ct[0])], FT)
    if role.active_mask[1]:
        out[1] = emit(b, op, [inputs[0], Local(ct[0])], FT)
    return out


def transpose_mul_complex(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    if ct[0] is None:
        return [None, None]
    out: list[Any] = [None, None]
    for active, constant in ((0, 1), (1, 0)):
        if role.active_mask[active]:
            conj = emit(b, op.sibling("Conj"), [inputs[constant]], F1)
            out[active] = emit(b, op, [Local(conj), Local(ct[0])], FT)
    return out


def transpose_neg(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    return [None if ct[0] is None else emit(b, op, [Local(ct[0])], T1)]


def transpose_conj(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    return [None if ct[0] is None else emit(b, op, [Local(ct[0])], T1)]


def transpose_identity(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    return [ct[0]]


def transpose_reduce_sum(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    axes, input_shape = op.params
    dims = tuple(i for i in range(len(input_shape)) if i not in axes)
    return [emit(b, op.sibling("BroadcastInDim", tuple(input_shape), dims), [Local(ct[0])], T1)]


def transpose_broadcast(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    shape, dims = op.params
    axes = tuple(i for i in range(len(shape)) if i not in dims)
    return [emit(b, op.sibling("ReduceSum", axes, tuple(shape)), [Local(ct[0])], T1)]


def transpose_sum3(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    return [ct[0] if active else None for active in role.active_mask]


def transpose_split(op, b, ct, inputs, role, ctx):  # type: ignore[no-untyped-def]
    raise ADRuleError("Split", "transpose")


def family(name: str, names: Iterable[str], complex_mul: bool = False, **overrides: Any) -> Family:
    jvp_table = {
        "Add": linearize_add,
        "Mul": linearize_mul,
        "Exp": linearize_exp,
        "Neg": linearize_neg,
        "Conj": linearize_conj,
        "Sin": linearize_sin,
        "Cos": linearize_cos,
        "SinCos": linearize_sincos,
        "Identity": linearize_same,
        "ReduceSum": linearize_same,
        "BroadcastInDim": linearize_same,
        "Split": linearize_split,
        "Double": linearize_double,
        "Sum3": linearize_sum3,
        "EmitMissing": linearize_emit_missing,
    }
    transpose_table = {
        "Add": transpose_add,
        "Mul": transpose_mul_complex if complex_mul else transpose_mul_real,
        "Neg": transpose_neg,
        "Conj": transpose_conj,
        "Identity": transpose_identity,
        "ReduceSum": transpose_reduce_sum,
        "BroadcastInDim": transpose_broadcast,
        "Sum3": transpose_sum3,
    }
    jvp_table.update(overrides.pop("jvp", {}))
    transpose_table.update(overrides.pop("transpose", {}))
    chosen = frozenset(names)
    return Family(
        name,
        chosen,
        {k: v for k, v in jvp_table.items() if k in chosen},
        {k: v for k, v in transpose_table.items() if k in chosen},
        **overrides,
    )


# The reference's op sets.
SCALAR = family("ScalarOp", ["Add", "Mul", "Exp", "Neg"])
COMPLEX = family("ComplexScalarOp", ["Add", "Mul", "Exp", "Neg", "Conj"], complex_mul=True)
VECTOR = family("VectorOp", ["Add", "Mul", "Exp", "Neg", "ReduceSum", "BroadcastInDim"])
COMPLEX_VECTOR = family(
    "ComplexVectorOp",
    ["Add", "Mul", "Exp", "Neg", "Conj", "ReduceSum", "BroadcastInDim"],
    complex_mul=True,
)
EXT_SCALAR = family("ExtScalarOp", ["Add", "Mul", "Neg", "SinCos", "Sin", "Cos", "Exp"])


# --------------------------------------------------------------------------- helpers


class GraphMaker:
    """Builds a primal graph with named inputs: ``g.x`` is the local id of input ``x``."""

    def __init__(self, *names: str) -> None:
        self.builder = GraphBuilder()
        self.ids = {name: self.builder.add_input(User(name)) for name in names}

    def __getitem__(self, name: str) -> int:
        return self.ids[name]

    def apply(self, op: Op, *args: int) -> Any:
        outs = self.builder.add_operation(op, [Local(a) for a in args])
        return outs[0] if len(outs) == 1 else outs

    def build(self, *outputs: int) -> tuple[Graph, list[ValueKey]]:
        self.builder.set_outputs(outputs)
        graph = self.builder.build()
        return graph, [graph.key_of(o) for o in outputs]


def evaluate(
    roots: Iterable[Graph], outputs: Sequence[ValueKey | None], bindings: Mapping[Hashable, Any]
) -> list[Any]:
    """resolve -> materialize_merge -> order bindings by materialised input -> compile -> eval."""
    keys = [k for k in outputs if k is not None]
    materialized = materialize_merge(resolve(list(roots)), keys)
    ordered = []
    for key in materialized.inputs:
        assert key.key in bindings, f"missing binding for {key!r}"
        ordered.append(bindings[key.key])
    values = iter(compile(materialized).eval(ordered))
    return [None if k is None else next(values) for k in outputs]


def tangent_input_key(linear: LinearizedGraph, position: int) -> Hashable:
    """The raw input key of ``linear``'s tangent (or seed) input ``position``."""
    return linear.graph.value_keys[linear.tangent_inputs[position][1]].key  # type: ignore[attr-defined]


def tangent_output_key(linear: LinearizedGraph, position: int) -> ValueKey | None:
    local = linear.tangent_outputs[position]
    return None if local is None else linear.graph.value_keys[local]


def five_point_derivative(f: Callable[[float], Any], x: float, h: float) -> Any:
    return (-f(x + 2 * h) + 8 * f(x + h) - 8 * f(x - h) + f(x - 2 * h)) / (12 * h)


def approx(a: Any, b: Any, tol: float = TOL) -> bool:
    if is_vec(a) or is_vec(b):
        return a.shape == b.shape and all(
            abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a.data, b.data, strict=True)
        )
    return abs(a - b) <= tol * max(1.0, abs(b))


_PASSES = itertools.count(1000)


def next_pass() -> int:
    return next(_PASSES)
