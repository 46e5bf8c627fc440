"""The rule-test case table: every differentiable primitive, how to exercise it.

``CASES`` lists, for each primitive of ``tf.ops`` (and each built-in family), one or
more :class:`Case` builders; ``NOT_DIFFERENTIABLE`` names, with the reason, the
primitives that have no derivative to test. ``test_primitive_rules.py`` checks every
case three ways, and its completeness gate fails when an exported primitive is in
neither table -- so a new primitive is checked by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from tenferro_support import COMPLEX, FLOATS, INEXACT, sample

from tenferro import lax
from tenferro.einsum.sliced import SlicedContraction, sliced_plan

Build = Callable[[np.dtype[Any], tuple[int, ...], np.random.Generator], tuple[Any, list[Any]]]


@dataclass(frozen=True)
class Case:
    name: str
    build: Build
    dtypes: tuple[np.dtype[Any], ...] = INEXACT
    shapes: tuple[tuple[int, ...], ...] = ((), (0,), (2, 3))
    static_output: bool = True
    """False when the output extent is data-dependent (it cannot meet fixed-shape weights
    inside a trace, so the Hessian test uses the padded variant)."""


def unary(fn: Callable[[Any], Any], **kinds: bool) -> Build:
    return lambda dt, shape, rng: (fn, [sample(shape, dt, rng, **kinds)])


def binary(fn: Callable[[Any, Any], Any], x: dict[str, bool], y: dict[str, bool]) -> Build:
    return lambda dt, shape, rng: (fn, [sample(shape, dt, rng, **x), sample(shape, dt, rng, **y)])


def _round(method: str) -> Build:
    # Values a quarter away from integers and half-integers: rounding is locally constant.
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        x = rng.integers(-4, 5, shape) + rng.choice([0.25, 0.75], shape)
        return (lambda v: lax.round(v, method)), [x.astype(dt)]

    return build


def _rem(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    # Keep x / y away from integers: the remainder jumps there.
    y = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    x = y * (rng.integers(-3, 4, shape) + rng.uniform(0.2, 0.8, shape))
    return lax.rem, [x.astype(dt), y.astype(dt)]


def _clamp(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    # lower < upper everywhere; x below, inside and above, with no exact ties.
    lower = rng.uniform(-1.0, 0.0, shape)
    upper = lower + rng.uniform(0.5, 1.5, shape)
    x = rng.uniform(-2.0, 2.5, shape)
    gap = np.minimum(np.abs(x - lower), np.abs(x - upper))
    x = np.where(gap < 0.05, x + 0.1, x)
    return lax.clamp, [lower.astype(dt), x.astype(dt), upper.astype(dt)]


def _select(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    pred = rng.random(shape) < 0.5
    return lax.select, [pred, sample(shape, dt, rng), sample(shape, dt, rng)]


def _extremum(fn: Callable[[Any, Any], Any]) -> Build:
    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        x = sample(shape, dt, rng)
        y = (x + rng.choice([-0.5, 0.5], shape)).astype(dt)
        return fn, [x, y]

    return build


def _pow_complex_safe(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    x = sample(shape, dt, rng, positive=True)
    y = sample(shape, dt, rng) * 0.5
    return lax.pow, [x, y.astype(dt)]


def _within(
    low: float, high: float, imag: tuple[float, float] = (0.0, 0.0), signed: bool = False
) -> Build:
    """Real parts uniform in ``[low, high]`` (with a random sign when ``signed``),
    imaginary parts of complex samples uniform in ``imag`` with a random sign: values
    away from the branch cuts and singular points of the inverse functions."""

    def build(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        values = rng.uniform(low, high, shape)
        if signed:
            values = values * rng.choice([-1.0, 1.0], shape)
        if np.dtype(dt).kind == "c":
            values = values + 1j * rng.uniform(*imag, shape) * rng.choice([-1.0, 1.0], shape)
        return values.astype(dt)

    return build


def _inverse(fn: Callable[[Any], Any], build: Build) -> Build:
    return lambda dt, shape, rng: (fn, [build(dt, shape, rng)])


def _atan2(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    # Points at least 0.3 from the origin, in every quadrant.
    radius = rng.uniform(0.3, 2.0, shape)
    angle = rng.uniform(-np.pi, np.pi, shape)
    return lax.atan2, [(radius * np.sin(angle)).astype(dt), (radius * np.cos(angle)).astype(dt)]


def _structural(fn: Callable[[Any], Any], shape: tuple[int, ...]) -> Build:
    return lambda dt, _shape, rng: (fn, [sample(shape, dt, rng)])


def _dot(
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
    lc: tuple[int, ...],
    rc: tuple[int, ...],
    lb: tuple[int, ...] = (),
    rb: tuple[int, ...] = (),
) -> Build:
    def build(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        return (
            lambda a, b: lax.dot_general(a, b, lc, rc, lb, rb),
            [sample(lhs, dt, rng), sample(rhs, dt, rng)],
        )

    return build


def _gather(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    indices = np.array([[2, 0], [0, 1], [2, 0], [1, 2]], dtype=np.int64)

    def f(x: Any, idx: Any) -> Any:
        return lax.gather(
            x,
            idx,
            offset_dims=(1,),
            collapsed_slice_dims=(0,),
            start_index_map=(0, 1),
            index_vector_dim=1,
            slice_sizes=(1, 2),
        )

    return f, [sample((3, 4), dt, rng), indices]


def _scatter(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    indices = np.array([[1], [3], [1]], dtype=np.int64)

    def f(x: Any, idx: Any, updates: Any) -> Any:
        return lax.scatter_add(
            x,
            idx,
            updates,
            update_window_dims=(1,),
            inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,),
            index_vector_dim=1,
        )

    return f, [sample((5, 2), dt, rng), indices, sample((3, 2), dt, rng)]


def _dynamic_slice(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return (
        lambda x, starts: lax.dynamic_slice(x, starts, (2, 2)),
        [sample((4, 3), dt, rng), np.array([1, 1], dtype=np.int64)],
    )


def _dynamic_update_slice(
    dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator
) -> Any:
    return lax.dynamic_update_slice, [
        sample((4, 3), dt, rng),
        sample((2, 2), dt, rng),
        np.array([2, 0], dtype=np.int64),
    ]


def _concatenate(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return (
        lambda a, b, c: lax.concatenate([a, b, c], 1),
        [sample((2, 1), dt, rng), sample((2, 0), dt, rng), sample((2, 3), dt, rng)],
    )


def _complex(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return lax.complex, [sample(shape, dt, rng), sample(shape, dt, rng)]


def _convert(dt: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    # Conversions that keep the precision (narrowing ones add float32 rounding noise
    # to float64 finite differences; they are covered by the convert golden tests).
    target = {
        "float32": "complex64",
        "float64": "complex128",
        "complex64": "float32",
        "complex128": "float64",
    }[dt.name]
    return (lambda x: lax.convert_element_type(x, target)), [sample(shape, dt, rng)]


def _dynamic_truncate(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return (
        lambda x, n: lax.dynamic_truncate(x, n, 1),
        [sample((2, 5), dt, rng), np.array(3.0)],
    )


def _truncate_then_pad(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return (
        lambda x, n: lax.pad_to_match(lax.dynamic_truncate(x, n, 1), x, 1),
        [sample((2, 5), dt, rng), np.array(2.0)],
    )


def _pad_to_match(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    return (
        lambda x, ref: lax.pad_to_match(x, ref, 0),
        [sample((2, 3), dt, rng), np.zeros((5, 3), dtype=np.int64)],
    )


def _reduce_extremum(fn: Callable[[Any, Any], Any], axes: tuple[int, ...]) -> Build:
    # Distinct values, so no ties at the extremum.
    def build(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        x = rng.permutation(24).reshape(2, 3, 4) * 0.25 + rng.uniform(0, 0.1, (2, 3, 4))
        return (lambda v: fn(v, axes)), [x.astype(dt)]

    return build


def _with_zeros(fn: Callable[[Any], Any], shape: tuple[int, ...]) -> Build:
    # Exact zeros, alone and in pairs: derivatives there must come without division.
    def build(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        x = sample(shape, dt, rng)
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, 3, replace=False)] = 0
        return fn, [x]

    return build


def _distinct(fn: Callable[[Any], Any], shape: tuple[int, ...]) -> Build:
    # Values (real parts) at least 0.15 apart: the sorting permutation is locally constant.
    def build(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
        size = int(np.prod(shape))
        x = rng.permutation(size).reshape(shape) * 0.25 + rng.uniform(0, 0.1, shape)
        if dt.kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return fn, [x.astype(dt)]

    return build


def _apply_permutation(dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    permutation = np.argsort(rng.random((3, 4, 2)), axis=1).astype(np.int64)
    return (
        lambda x, p: lax.apply_permutation(x, p, 1),
        [sample((3, 4, 2), dt, rng), permutation],
    )


def _sliced_contraction(
    dt: np.dtype[Any], _shape: tuple[int, ...], rng: np.random.Generator
) -> Any:
    # memory_limit=4 is below every pairwise intermediate: einsum's sliced primitive,
    # whose derivatives are sliced contractions again
    terms, shapes = ["ab", "bc", "cd"], [(3, 4), (4, 5), (5, 3)]
    pairs, sliced = sliced_plan(terms, "ad", shapes, 4)
    assert sliced

    def contract(a: Any, b: Any, c: Any) -> Any:
        return SlicedContraction.bind(
            a, b, c, subscripts="ab,bc,cd->ad", pairs=pairs, sliced=sliced, memory_limit=4
        )

    return contract, [sample(s, dt, rng) for s in shapes]


ELEMENTWISE = ((), (0,), (2, 3))

CASES = [
    # ---- arithmetic
    Case("add", binary(lax.add, {}, {})),
    Case("sub", binary(lax.sub, {}, {})),
    Case("mul", binary(lax.mul, {}, {})),
    Case("div", binary(lax.div, {}, {"away_from_zero": True})),
    Case("rem", _rem, FLOATS),
    Case("neg", unary(lax.neg)),
    Case("conj", unary(lax.conj)),
    Case("abs", unary(lax.abs, away_from_zero=True)),
    Case("sign", unary(lax.sign, away_from_zero=True), FLOATS),
    *(Case(f"round_{m}", _round(m), FLOATS) for m in ("floor", "ceil", "trunc", "nearest_even")),
    Case("maximum", _extremum(lax.max), FLOATS),
    Case("minimum", _extremum(lax.min), FLOATS),
    Case("select", _select),
    Case("clamp", _clamp, FLOATS),
    Case("real", unary(lax.real), COMPLEX),
    Case("imag", unary(lax.imag), COMPLEX),
    Case("complex", _complex, FLOATS),
    # ---- analytic
    Case("exp", unary(lax.exp)),
    Case("log", unary(lax.log, positive=True)),
    Case("log2", unary(lax.log2, positive=True)),
    Case("log10", unary(lax.log10, positive=True)),
    Case("sin", unary(lax.sin)),
    Case("cos", unary(lax.cos)),
    Case("tanh", unary(lax.tanh)),
    Case("tan", unary(lax.tan)),
    Case("sinh", unary(lax.sinh)),
    Case("cosh", unary(lax.cosh)),
    Case("sqrt", unary(lax.sqrt, positive=True)),
    Case("rsqrt", unary(lax.rsqrt, positive=True)),
    Case("expm1", unary(lax.expm1)),
    Case("log1p", unary(lax.log1p, positive=True)),
    # ---- inverse functions (real parts inside the real domain, complex parts off the cuts)
    Case("asin", _inverse(lax.asin, _within(-0.8, 0.8, (0.0, 0.6)))),
    Case("acos", _inverse(lax.acos, _within(-0.8, 0.8, (0.0, 0.6)))),
    Case("atanh", _inverse(lax.atanh, _within(-0.8, 0.8, (0.0, 0.6)))),
    Case("atan", _inverse(lax.atan, _within(0.3, 2.0, (0.0, 0.7), signed=True))),
    Case("asinh", _inverse(lax.asinh, _within(0.3, 2.0, (0.0, 0.7), signed=True))),
    Case("acosh", _inverse(lax.acosh, _within(1.2, 3.0, (0.3, 1.5)))),
    Case("acosh_left_half_plane", _inverse(lax.acosh, _within(-3.0, -0.5, (0.3, 1.5))), COMPLEX),
    Case("atan2", _atan2, FLOATS),
    Case("nextafter", binary(lax.nextafter, {}, {}), FLOATS),
    Case("pow", binary(lax.pow, {"positive": True}, {}), FLOATS),
    Case("pow_complex", _pow_complex_safe, COMPLEX),
    # ---- contraction
    Case("dot_general_matmul", _dot((3, 4), (4, 2), (1,), (0,)), shapes=((),)),
    Case("dot_general_batched", _dot((4, 3, 2), (2, 3, 5), (1,), (1,), (2,), (0,)), shapes=((),)),
    Case("dot_general_outer", _dot((3,), (2,), (), ()), shapes=((),)),
    Case("dot_general_batched_outer", _dot((2, 3, 4), (3, 5), (), (), (1,), (0,)), shapes=((),)),
    Case("dot_general_inner", _dot((3,), (3,), (0,), (0,)), shapes=((),)),
    Case("dot_general_empty", _dot((2, 0), (0, 3), (1,), (0,)), shapes=((),)),
    Case("einsum_sliced_contraction", _sliced_contraction, shapes=((),)),
    # ---- reductions
    Case("reduce_sum", _structural(lambda x: lax.reduce_sum(x, (0, 2)), (2, 3, 4)), shapes=((),)),
    Case("reduce_sum_all", unary(lambda x: lax.reduce_sum(x, tuple(range(x.ndim))))),
    Case(
        "reduce_sum_squares",
        _structural(lambda x: lax.reduce_sum_squares(x, (1,)), (2, 3)),
        FLOATS,
        shapes=((),),
    ),
    Case("reduce_prod", _structural(lambda x: lax.reduce_prod(x, (1,)), (3, 4)), shapes=((),)),
    Case("reduce_prod_all", unary(lambda x: lax.reduce_prod(x, tuple(range(x.ndim))))),
    Case("reduce_max", _reduce_extremum(lax.reduce_max, (0, 2)), FLOATS, shapes=((),)),
    Case("reduce_min", _reduce_extremum(lax.reduce_min, (1,)), FLOATS, shapes=((),)),
    # ---- structural
    Case("transpose", _structural(lambda x: lax.transpose(x, (2, 0, 1)), (2, 3, 4)), shapes=((),)),
    Case("reshape", _structural(lambda x: lax.reshape(x, (3, 2, 2)), (4, 3)), shapes=((),)),
    Case("reshape_size0", _structural(lambda x: lax.reshape(x, (0, 5)), (5, 0)), shapes=((),)),
    Case(
        "broadcast_in_dim",
        _structural(lambda x: lax.broadcast_in_dim(x, (4, 3, 2), (2, 1)), (1, 3)),
        shapes=((),),
    ),
    Case(
        "broadcast_scalar",
        _structural(lambda x: lax.broadcast_in_dim(x, (2, 3), ()), ()),
        shapes=((),),
    ),
    Case("convert", _convert),
    Case(
        "extract_diag",
        _structural(lambda x: lax.extract_diag(x, 2, 0), (3, 2, 4)),
        shapes=((),),
    ),
    Case("embed_diag", _structural(lambda x: lax.embed_diag(x, 0, 2), (3, 2)), shapes=((),)),
    Case("tril", _structural(lambda x: lax.tril(x, -1), (4, 3, 2)), shapes=((),)),
    Case("triu", _structural(lambda x: lax.triu(x, 1), (3, 4)), shapes=((),)),
    Case("rev", _structural(lambda x: lax.rev(x, (0, 2)), (2, 3, 2)), shapes=((),)),
    # ---- indexing
    Case("gather", _gather, shapes=((),)),
    Case("scatter_add", _scatter, shapes=((),)),
    Case(
        "slice",
        _structural(lambda x: lax.slice(x, (1, 0), (5, 3), (2, 2)), (5, 4)),
        shapes=((),),
    ),
    Case("dynamic_slice", _dynamic_slice, shapes=((),)),
    Case("dynamic_update_slice", _dynamic_update_slice, shapes=((),)),
    Case(
        "pad",
        _structural(lambda x: lax.pad(x, (1, -1), (2, 0), (1, 1)), (3, 4)),
        shapes=((),),
    ),
    Case("concatenate", _concatenate, shapes=((),)),
    Case("dynamic_truncate", _dynamic_truncate, shapes=((),), static_output=False),
    Case("truncate_then_pad", _truncate_then_pad, shapes=((),)),
    Case("pad_to_match", _pad_to_match, shapes=((),)),
    # ---- special functions
    Case("erf", unary(lax.erf)),
    Case("erfc", unary(lax.erfc)),
    # ---- scans
    Case("cumsum", _structural(lambda x: lax.cumsum(x, 1), (3, 4)), shapes=((),)),
    Case(
        "cumsum_reverse",
        _structural(lambda x: lax.cumsum(x, 0, reverse=True), (3, 2, 2)),
        shapes=((),),
    ),
    Case("cumsum_size0", _structural(lambda x: lax.cumsum(x, 0), (0, 3)), shapes=((),)),
    Case("cumprod", _with_zeros(lambda x: lax.cumprod(x, 1), (3, 5)), shapes=((),)),
    Case(
        "cumprod_reverse",
        _with_zeros(lambda x: lax.cumprod(x, 0, reverse=True), (6, 2)),
        shapes=((),),
    ),
    Case("cumprod_long", _with_zeros(lambda x: lax.cumprod(x, 0), (9,)), shapes=((),)),
    # ---- ordering
    Case("sort", _distinct(lambda x: lax.sort(x, 2), (2, 3, 4)), shapes=((),)),
    Case(
        "sort_descending",
        _distinct(lambda x: lax.sort(x, 0, descending=True), (5, 2)),
        shapes=((),),
    ),
    Case("apply_permutation", _apply_permutation, shapes=((),)),
]


# Step and tolerance per precision: float32 finite differences are noisier.
SETTINGS = {
    "float32": {"eps": 2e-3, "atol": 2e-2, "rtol": 2e-2},
    "complex64": {"eps": 2e-3, "atol": 2e-2, "rtol": 2e-2},
    "float64": {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-6},
    "complex128": {"eps": 1e-6, "atol": 1e-6, "rtol": 1e-6},
}


EXEMPT: dict[str, str] = {
    "compare": "comparisons return bool: no tangent to test",
    "linalg.pinv_solve": "bound only by linalg.lstsq's JVP (A^+ times a tangent): its JVP "
    "and transpose run in linalg_lstsq_tied's second-order and reverse-mode checks",
    "shape_of": "returns an integer extent: no tangent to test",
    **dict.fromkeys(
        (
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
            "bitwise_not",
            "shift_left",
            "shift_right_arithmetic",
        ),
        "integer and bool values only: no tangent to test (test_numpy_additions checks "
        "the values against numpy)",
    ),
    "signbit": "returns bool: no tangent to test",
    "searchsorted": "returns int64 positions: no tangent to test (test_numpy_additions checks "
    "the values against numpy)",
    "constant": "has no operands: nothing to differentiate",
    "add_any": "tidu's internal cotangent accumulation; every reverse-mode case runs it",
    "no_derivative": "stands for an absent derivative; test_no_derivative checks it raises",
    "argsort": "returns int64 indices: no tangent to test (test_numerics checks none flows)",
    "argmax": "returns an int64 index: no tangent to test (test_numerics checks none flows)",
    "argmin": "returns an int64 index: no tangent to test (test_numerics checks none flows)",
    "stop_gradient": "its derivative is zero by contract (finite differences see the identity); "
    "test_jax_habits checks the zero in every mode and order",
    "tenferro.custom_jvp": "users' rules; test_custom_rules checks them three ways to second order",
    "tenferro.custom_vjp": "users' rules, reverse mode only by contract; test_custom_rules checks "
    "them against finite differences to second order and the forward-mode error",
    "tenferro.custom_vjp_linear": "the linear map of a custom_vjp (its transpose is the user's "
    "bwd; linear in its tangents, whose JVP is itself); test_custom_rules and "
    "test_checkpoint_custom_vjp (a checkpointed segment's JVP, transposed) cover it",
}
"""Primitives without a rule test, each with the reason (by primitive name)."""
