"""Random programs over the op surface, differentially: values against numpy, and
derivatives in every mode against finite differences of numpy.

A program is a short random DAG over 1-3 input leaves of broadcast-compatible shapes
in one of the four float/complex dtypes: elementwise functions, arithmetic with
broadcasting and weak Python scalars, reductions, flips, gathers, transposes and
matrix products. For each program:

* its value on plain tensors, on the eager tape and under ``tf.jit`` equals numpy's
  (numpy evaluates the same program in double precision; the result dtype is the one
  numpy gives in the program's own precision);
* the gradient of a real loss ``Re <w, f(x)>``, the JVP along a random direction and
  the Hessian-vector product, each by the traced transforms and by the eager tape,
  equal central finite differences of the numpy program in double precision (the
  Hessian-vector product: differences of the finite-difference gradient).

Tolerances come from the dtype (the precision the derivatives are computed in), scaled
by the size of the reference. Points where the finite differences are not reliable
(a kink, a branch cut or an overflow within reach of the step: the difference at two
step sizes disagrees) are rejected rather than loosening any tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import scipy.special
from fuzz_support import fuzz_settings
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

import tenferro as tf

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Op:
    """One operation of the surface: how tenferro and numpy compute it."""

    name: str
    arity: int
    tf_fn: Callable[..., Any]
    np_fn: Callable[..., Any]
    real_only: bool = False
    distinct: bool = False  # operands must be different nodes
    needs: str = "any"  # "square": operands (n, n) or (n,); "rank2": rank >= 2; "many": size >= 2


def _ramp(x: Any) -> Array:
    """0, 0.25, 0.5, ... in ``x``'s shape and dtype."""
    return (np.arange(np.size(x)).reshape(np.shape(x)) * 0.25).astype(x.dtype)


def _positive(x: Any) -> Any:
    """A smooth map into the right half plane near 1 (domain of log, sqrt, ...)."""
    return x * x + 0.5


def _perm(x: Any) -> list[int]:
    """Indices along the last axis, reversed-ish and with a repeat (same length)."""
    n = x.shape[-1]
    return [n - 1, 0, 0][:n] if n >= 2 else [0] * n


class TieError(Exception):
    """An exact tie of clip's operand with a bound: clip's strict masks give such a point
    no derivative by design (seed 001), so programs reaching one are not compared."""


def _untied_clip(x: Any, lower: Any, upper: Any) -> Any:
    if np.any(x == lower) or np.any(x == upper):
        raise TieError
    return np.minimum(np.maximum(x, lower), upper)


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


UNARY = [
    Op("neg", 1, lambda x: -x, lambda x: -x),
    Op("exp", 1, tf.exp, np.exp),
    Op("sin", 1, tf.sin, np.sin),
    Op("cos", 1, tf.cos, np.cos),
    Op("tanh", 1, tf.tanh, np.tanh),
    Op("sinh", 1, tf.sinh, np.sinh),
    Op("cosh", 1, tf.cosh, np.cosh),
    Op("expm1", 1, tf.expm1, np.expm1),
    Op("sigmoid", 1, tf.sigmoid, _sigmoid),
    Op("exp2", 1, tf.exp2, np.exp2),
    Op("square", 1, tf.square, np.square),
    Op("conj", 1, tf.conj, np.conj),
    Op("cube", 1, lambda x: x**3, lambda x: x**3),
    Op("log", 1, lambda x: tf.log(_positive(x)), lambda x: np.log(_positive(x))),
    Op("log2", 1, lambda x: tf.log2(_positive(x)), lambda x: np.log2(_positive(x))),
    Op("log10", 1, lambda x: tf.log10(_positive(x)), lambda x: np.log10(_positive(x))),
    Op("log1p", 1, lambda x: tf.log1p(x * x), lambda x: np.log1p(x * x)),
    Op("sqrt", 1, lambda x: tf.sqrt(_positive(x)), lambda x: np.sqrt(_positive(x))),
    Op("rsqrt", 1, lambda x: tf.rsqrt(_positive(x)), lambda x: 1 / np.sqrt(_positive(x))),
    Op("power_half", 1, lambda x: _positive(x) ** 0.5, lambda x: _positive(x) ** 0.5),
    Op(
        "reciprocal",
        1,
        lambda x: tf.reciprocal(_positive(x)),
        lambda x: np.reciprocal(_positive(x)),
    ),
    Op("tan", 1, lambda x: tf.tan(tf.tanh(x)), lambda x: np.tan(np.tanh(x))),
    Op("abs", 1, tf.abs, np.abs),
    Op("real", 1, tf.real, np.real),
    Op("imag", 1, tf.imag, lambda x: np.imag(x) if np.iscomplexobj(x) else np.zeros_like(x)),
    Op("scale", 1, lambda x: x * 0.75 - 0.25, lambda x: x * 0.75 - 0.25),
    Op("floor_mix", 1, lambda x: x - tf.floor(x), lambda x: x - np.floor(x), real_only=True),
    Op("flip", 1, lambda x: tf.flip(x, -1), lambda x: np.flip(x, -1), needs="rank1"),
    Op("reverse_index", 1, lambda x: x[..., ::-1], lambda x: x[..., ::-1], needs="rank1"),
    Op("gather_last", 1, lambda x: x[..., _perm(x)], lambda x: x[..., _perm(x)], needs="rank1"),
    Op("tril", 1, tf.tril, np.tril, needs="rank2"),
    Op("transpose", 1, lambda x: tf.transpose(x), lambda x: np.transpose(x), needs="square"),
    Op("sum", 1, lambda x: tf.sum(x), np.sum),
    Op(
        "sum_keep",
        1,
        lambda x: tf.sum(x, axis=-1, keepdims=True),
        lambda x: np.sum(x, axis=-1, keepdims=True),
        needs="rank1",
    ),
    Op("mean0", 1, lambda x: tf.mean(x, axis=0), lambda x: np.mean(x, axis=0), needs="rank1"),
    Op(
        "prod",
        1,
        lambda x: tf.prod(x, axis=-1, keepdims=True),
        lambda x: np.prod(x, axis=-1, keepdims=True),
        needs="rank1",
    ),
    Op("var", 1, lambda x: tf.var(x), np.var),
    # A ramp keeps the spread away from 0, where sqrt has no derivative (a node such as
    # x - x is constant there).
    Op("std", 1, lambda x: tf.std(x + _ramp(x)), lambda x: np.std(x + _ramp(x)), needs="many"),
    Op(
        "max",
        1,
        lambda x: tf.max(x, axis=-1, keepdims=True),
        lambda x: np.max(x, axis=-1, keepdims=True),
        real_only=True,
        needs="rank1",
    ),
    Op("min_all", 1, lambda x: tf.min(x), np.min, real_only=True),
    Op("rsub", 1, lambda x: 2.0 - x, lambda x: 2.0 - x),
    Op("rdiv", 1, lambda x: 1.5 / _positive(x), lambda x: 1.5 / _positive(x)),
    Op("rpow", 1, lambda x: 2.0 ** tf.tanh(x), lambda x: 2.0 ** np.tanh(x)),
    Op("int_power", 1, lambda x: x**2 * 0.5 + x**1, lambda x: x**2 * 0.5 + x**1),
    Op("abs_builtin", 1, lambda x: abs(x) + x.conj(), lambda x: abs(x) + np.conj(x)),
    Op("mean_all", 1, lambda x: x.mean(), np.mean),
    Op(
        "remainder",
        1,
        lambda x: tf.remainder(x, 1.5),
        lambda x: np.remainder(x, 1.5),
        real_only=True,
    ),
    Op("fmod", 1, lambda x: tf.fmod(x, 1.5), lambda x: np.fmod(x, 1.5), real_only=True),
    Op(
        "where_real",
        1,
        lambda x: tf.where(tf.real(x) > 0, x, x * 0.5),
        lambda x: np.where(np.real(x) > 0, x, x * 0.5),
    ),
    Op(
        "split_join",
        1,
        lambda x: tf.concatenate([x[..., 1:], x[..., :1]], axis=-1),
        lambda x: np.concatenate([x[..., 1:], x[..., :1]], axis=-1),
        needs="rank1",
    ),
    Op(
        "flat_round_trip",
        1,
        lambda x: tf.reshape(tf.reshape(x, (-1,)) * 1.5, x.shape),
        lambda x: np.reshape(np.reshape(x, (-1,)) * 1.5, np.shape(x)),
    ),
    Op(
        "take",
        1,
        lambda x: tf.take(x, [0, -1], axis=0)[:1],
        lambda x: np.take(x, [0, -1], axis=0)[:1],
        needs="rank1",
    ),
    Op(
        "logsumexp",
        1,
        lambda x: tf.logsumexp(x, axis=-1, keepdims=True),
        lambda x: np.log(np.sum(np.exp(x), axis=-1, keepdims=True)),
        needs="rank1",
    ),
    Op(
        "softmax",
        1,
        tf.softmax,
        lambda x: np.exp(x) / np.sum(np.exp(x), -1, keepdims=True),
        needs="rank1",
    ),
    Op(
        "log_softmax",
        1,
        lambda x: tf.log_softmax(x, axis=0),
        lambda x: x - np.log(np.sum(np.exp(x), 0, keepdims=True)),
        needs="rank1",
    ),
    Op("erf", 1, lambda x: tf.erf(x * 0.5), lambda x: scipy.special.erf(x * 0.5)),
    Op(
        "arcsin",
        1,
        lambda x: tf.arcsin(tf.tanh(x) * 0.8),
        lambda x: np.arcsin(np.tanh(x) * 0.8),
    ),
    Op(
        "arccos",
        1,
        lambda x: tf.arccos(tf.tanh(x) * 0.8),
        lambda x: np.arccos(np.tanh(x) * 0.8),
    ),
    Op("arctan", 1, lambda x: tf.arctan(x * 0.5), lambda x: np.arctan(x * 0.5)),
    Op("arcsinh", 1, lambda x: tf.arcsinh(x * 0.5), lambda x: np.arcsinh(x * 0.5)),
    Op(
        "arccosh",
        1,
        lambda x: tf.arccosh(_positive(x) + 1.0),
        lambda x: np.arccosh(_positive(x) + 1.0),
    ),
    Op(
        "arctanh",
        1,
        lambda x: tf.arctanh(tf.tanh(x) * 0.8),
        lambda x: np.arctanh(np.tanh(x) * 0.8),
    ),
    Op("angle", 1, tf.angle, np.angle),
    Op("roll", 1, lambda x: tf.roll(x, 1, -1), lambda x: np.roll(x, 1, -1), needs="rank1"),
    Op(
        "diff_padded",
        1,
        lambda x: tf.diff(x, axis=0, prepend=0.5),
        lambda x: np.diff(x, axis=0, prepend=np.asarray(0.5, x.dtype)),  # a weak 0.5
        needs="rank1",
    ),
    Op("erfc", 1, tf.erfc, scipy.special.erfc, real_only=True),
    Op("cumsum", 1, lambda x: tf.cumsum(x, axis=-1), lambda x: np.cumsum(x, -1), needs="rank1"),
    Op("cumprod", 1, lambda x: tf.cumprod(x, axis=0), lambda x: np.cumprod(x, 0), needs="rank1"),
    Op("nansum", 1, lambda x: tf.nansum(x, axis=0), lambda x: np.nansum(x, axis=0), needs="rank1"),
    Op("trace", 1, tf.trace, np.trace, needs="square2"),
    Op("diagonal", 1, tf.diagonal, np.diagonal, needs="square2"),
    Op(
        "swapaxes",
        1,
        lambda x: tf.swapaxes(x, 0, 1),
        lambda x: np.swapaxes(x, 0, 1),
        needs="square2",
    ),
    Op(
        "triu_k",
        1,
        lambda x: tf.triu(x, 1) + tf.tril(x, -1).T,
        lambda x: np.triu(x, 1) + np.tril(x, -1).T,
        needs="square2",
    ),
]

BINARY = [
    Op("add", 2, tf.add, np.add),
    Op("subtract", 2, tf.subtract, np.subtract),
    Op("multiply", 2, tf.multiply, np.multiply),
    Op("divide", 2, lambda x, y: x / _positive(y), lambda x, y: x / _positive(y)),
    Op(
        "power", 2, lambda x, y: _positive(x) ** tf.tanh(y), lambda x, y: _positive(x) ** np.tanh(y)
    ),
    Op("maximum", 2, tf.maximum, np.maximum, real_only=True),
    Op("minimum", 2, tf.minimum, np.minimum, real_only=True),
    Op("hypot", 2, tf.hypot, np.hypot, real_only=True),
    Op("arctan2", 2, tf.arctan2, np.arctan2, real_only=True),
    Op("logaddexp", 2, tf.logaddexp, np.logaddexp, real_only=True),
    Op(
        "where",
        2,
        lambda x, y: tf.where(x > y, x, y * 2),
        lambda x, y: np.where(x > y, x, y * 2),
        real_only=True,
    ),
    Op(
        "clip",
        2,
        lambda x, y: tf.clip(x, y, y + 1.0),
        lambda x, y: _untied_clip(x, y, y + 1.0),
        real_only=True,
    ),
    Op("matmul", 2, tf.matmul, np.matmul, needs="square"),
    Op("matmul_operator", 2, lambda x, y: x @ y, lambda x, y: x @ y, needs="square"),
    Op("dot", 2, tf.dot, np.dot, needs="square"),
    Op("vdot", 2, tf.vdot, lambda x, y: np.vdot(x, y), needs="same3"),
    Op("inner", 2, tf.inner, np.inner, needs="same3"),
    Op(
        "stack_sum",
        2,
        lambda x, y: tf.sum(tf.stack([x, y * 2.0]), axis=0),
        lambda x, y: np.sum(np.stack([x, y * 2.0]), axis=0),
        needs="same",
    ),
]

OPS = {op.name: op for op in UNARY + BINARY}

BASE_SHAPES = [(), (3,), (2, 3), (3, 3)]


def _leaf_shapes(base: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Shapes that broadcast to ``base``: itself, its suffixes, and with a 1 in front."""
    shapes = {base, base[1:], ()}
    if len(base) == 2:
        shapes |= {(1, base[1]), (base[0], 1)}
    return sorted(shapes)


@dataclass(frozen=True)
class Program:
    dtype: np.dtype[Any]
    leaves: tuple[Array, ...]
    steps: tuple[tuple[str, tuple[int, ...]], ...]  # (op name, operand node indices)

    def __call__(self, *leaves: Any) -> Any:
        nodes = list(leaves)
        for name, args in self.steps:
            nodes.append(OPS[name].tf_fn(*(nodes[i] for i in args)))
        return nodes[-1]

    def numpy(self, *leaves: Array) -> Array:
        nodes = list(leaves)
        with np.errstate(all="ignore"):
            for name, args in self.steps:
                nodes.append(np.asarray(OPS[name].np_fn(*(nodes[i] for i in args))))
        return nodes[-1]

    def __repr__(self) -> str:
        names = [f"x{i}{tuple(a.shape)}" for i, a in enumerate(self.leaves)]
        for name, args in self.steps:
            names.append(f"{name}({', '.join(names[i] for i in args)})")
        return f"Program[{self.dtype}]: {names[-1]}"


def _fits(op: Op, shapes: list[tuple[int, ...]], complex_: bool) -> bool:
    if op.real_only and complex_:
        return False
    if op.needs == "square":
        return all(s in ((3, 3), (3,)) for s in shapes) and not (
            op.arity == 2 and shapes[0] == (3,) and shapes[1] == (3,) and False
        )
    if op.needs == "square2":
        return all(s == (3, 3) for s in shapes)
    if op.needs == "same3":
        return all(s == (3,) for s in shapes)
    if op.needs == "same":
        return len(set(shapes)) == 1
    if op.needs == "rank1":
        return all(len(s) >= 1 for s in shapes)
    if op.needs == "many":
        return all(int(np.prod(s)) >= 2 for s in shapes)
    if op.needs == "rank2":
        return all(len(s) == 2 for s in shapes)
    return True


@st.composite
def programs(draw: Any, dtype: np.dtype[Any]) -> Program:
    base = draw(st.sampled_from(BASE_SHAPES))
    n_leaves = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(_leaf_shapes(base))) for _ in range(n_leaves)]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    leaves = []
    for shape in shapes:
        values = rng.standard_normal(shape)
        if dtype.kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        leaves.append(np.asarray(values, dtype=dtype))
    node_shapes = list(shapes)
    node_dtypes = [np.dtype(dtype)] * n_leaves
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(UNARY + BINARY))
        args = tuple(draw(st.integers(0, len(node_shapes) - 1)) for _ in range(op.arity))
        # Prefer the newest node as the first operand: programs grow deep, not wide.
        if draw(st.booleans()):
            args = (len(node_shapes) - 1, *args[1:])
        arg_shapes = [node_shapes[i] for i in args]
        if op.distinct and len(set(args)) < len(args):
            continue
        if not _fits(op, arg_shapes, any(node_dtypes[i].kind == "c" for i in args)):
            continue
        with np.errstate(all="ignore"):
            probe = np.asarray(
                op.np_fn(
                    *(
                        np.zeros(node_shapes[i], node_dtypes[i]) + 0.5 + 0.25 * k
                        for k, i in enumerate(args)
                    )
                )
            )
        if probe.shape not in [*_leaf_shapes(base), base]:
            continue  # keep every node broadcast-compatible with the base shape
        steps.append((op.name, args))
        node_shapes.append(probe.shape)
        node_dtypes.append(probe.dtype)
    assume(steps)
    return Program(np.dtype(dtype), tuple(leaves), tuple(steps))


# ---------------------------------------------------------------------- references


def _wide(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


def _directions(leaf: Array) -> list[tuple[tuple[int, ...], complex]]:
    units = [1.0] + ([1j] if leaf.dtype.kind == "c" else [])
    return [(index, unit) for index in np.ndindex(leaf.shape) for unit in units]


def _fd_gradient(loss: Callable[..., float], points: list[Array], h: float) -> list[Array]:
    """The gradient of a real function by central differences, in tenferro's convention
    (``dL/dRe + i dL/dIm`` for complex inputs)."""
    result = []
    for position, leaf in enumerate(points):
        gradient = np.zeros(leaf.shape, dtype=leaf.dtype)
        for index, unit in _directions(leaf):
            shifted_up = [np.array(p) for p in points]
            shifted_down = [np.array(p) for p in points]
            shifted_up[position][index] += h * unit
            shifted_down[position][index] -= h * unit
            slope = (loss(*shifted_up) - loss(*shifted_down)) / (2 * h)
            gradient[index] += slope * (1 if unit == 1.0 else 1j)
        result.append(gradient)
    return result


@dataclass
class Reference:
    value: Array
    gradient: list[Array]
    jvp: Array
    hvp: list[Array]


def _reference(program: Program, weights: Array, tangents: list[Array], h: float) -> Reference:
    # Overflowing references (exp(exp(...))) are rejected by the caller, not warned about.
    with np.errstate(all="ignore"):
        return _differences(program, weights, tangents, h)


def _differences(program: Program, weights: Array, tangents: list[Array], h: float) -> Reference:
    wide = _wide(program.dtype)
    points = [leaf.astype(wide) for leaf in program.leaves]
    directions = [t.astype(wide) for t in tangents]

    def loss(*xs: Array) -> float:
        return float(np.real(np.sum(np.conj(weights) * program.numpy(*xs))))

    def shifted(sign: float, step: float) -> list[Array]:
        return [np.asarray(p + sign * step * d) for p, d in zip(points, directions, strict=True)]

    value = program.numpy(*points)
    gradient = _fd_gradient(loss, points, h)
    jvp = (program.numpy(*shifted(1, h)) - program.numpy(*shifted(-1, h))) / (2 * h)
    outer = 10 * h
    up = _fd_gradient(loss, shifted(1, outer), h)
    down = _fd_gradient(loss, shifted(-1, outer), h)
    hvp = [(a - b) / (2 * outer) for a, b in zip(up, down, strict=True)]
    return Reference(value, gradient, jvp, hvp)


def _tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    """(values and first derivatives, Hessian-vector products), relative to the scale."""
    return (2e-3, 5e-3) if dtype in (np.float32, np.complex64) else (1e-6, 2e-5)


def _close(actual: Any, expected: Array, tol: float, what: str, program: Program) -> None:
    actual = np.asarray(actual)
    scale = 1.0 + float(np.max(np.abs(expected), initial=0.0))
    assert actual.shape == np.shape(expected), (what, program, actual.shape, np.shape(expected))
    error = float(np.max(np.abs(actual - expected), initial=0.0))
    assert error <= tol * scale, f"{what}: error {error:.3g} > {tol * scale:.3g} in {program!r}"


def _reliable(program: Program, weights: Array, tangents: list[Array], tol: float) -> Reference:
    """The reference at two step sizes; examples where they disagree are rejected."""
    h = 1e-5
    fine = _reference(program, weights, tangents, h)
    coarse = _reference(program, weights, tangents, 2 * h)
    values = [fine.value, fine.jvp, *fine.gradient, *fine.hvp]
    assume(all(np.all(np.isfinite(v)) for v in values))
    assume(all(float(np.max(np.abs(v), initial=0.0)) < 1e4 for v in values))
    for a, b in zip(
        [fine.jvp, *fine.gradient, *fine.hvp],
        [coarse.jvp, *coarse.gradient, *coarse.hvp],
        strict=True,
    ):
        scale = 1.0 + float(np.max(np.abs(a), initial=0.0))
        assume(float(np.max(np.abs(a - b), initial=0.0)) <= tol * scale / 10)
    return fine


# ---------------------------------------------------------------------- the property


def _as_tuple(result: Any) -> list[Any]:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def check_program(program: Program) -> None:
    rng = np.random.default_rng(len(program.steps))
    tol, hvp_tol = _tolerance(program.dtype)
    try:
        expected_dtype = program.numpy(*program.leaves).dtype
    except TieError:
        reject()
    out_shape = np.shape(program.numpy(*program.leaves))
    weights = rng.standard_normal(out_shape)
    if expected_dtype.kind == "c":
        weights = weights + 1j * rng.standard_normal(out_shape)
    tangents = []
    for leaf in program.leaves:
        t = rng.standard_normal(leaf.shape)
        if leaf.dtype.kind == "c":
            t = t + 1j * rng.standard_normal(leaf.shape)
        tangents.append(np.asarray(t, dtype=leaf.dtype))
    try:
        ref = _reliable(program, weights, tangents, hvp_tol)
    except TieError:
        reject()
    leaves = list(program.leaves)
    argnums = tuple(range(len(leaves)))

    def loss(*xs: Any) -> Any:
        return tf.sum(tf.real(tf.conj(tf.asarray(weights.astype(expected_dtype))) * program(*xs)))

    # values: plain tensors, eager tape, jit
    plain = program(*(tf.Tensor(x) for x in leaves))
    assert np.asarray(plain).dtype == expected_dtype, (program, np.asarray(plain).dtype)
    _close(plain, ref.value, tol, "value", program)
    _close(tf.jit(program)(*leaves), ref.value, tol, "jit value", program)

    # traced transforms
    _close_all(tf.grad(loss, argnums=argnums)(*leaves), ref.gradient, tol, "traced grad", program)
    _, tangent = tf.jvp(program, tuple(leaves), tuple(tangents))
    _close(tangent, ref.jvp, tol, "traced jvp", program)
    hvp = tf.hvp(loss, tuple(leaves), tuple(tangents))
    _close_all(hvp, ref.hvp, hvp_tol, "traced hvp", program)

    # eager tape
    tape = tf.Tape()
    tracked = [tape.track(x) for x in leaves]
    eager_grad = tape.grad(loss(*tracked), tracked, allow_unused=True)
    eager_grad = [
        np.zeros_like(x) if g is None else g for g, x in zip(eager_grad, leaves, strict=True)
    ]
    _close_all(eager_grad, ref.gradient, tol, "eager grad", program)
    _, eager_tangent = tf.Tape().jvp(program, leaves, tangents)
    _close(eager_tangent, ref.jvp, tol, "eager jvp", program)
    _close_all(tf.Tape().hvp(loss, leaves, tangents), ref.hvp, hvp_tol, "eager hvp", program)


def _close_all(actual: Any, expected: list[Array], tol: float, what: str, program: Program) -> None:
    results = _as_tuple(actual)
    assert len(results) == len(expected)
    for i, (a, e) in enumerate(zip(results, expected, strict=True)):
        _close(a, e, tol, f"{what}[{i}]", program)


DTYPES = [np.dtype(d) for d in ("float32", "float64", "complex64", "complex128")]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@fuzz_settings(25)
@given(data=st.data())
def test_random_programs_match_numpy_and_finite_differences(dtype, data):
    check_program(data.draw(programs(dtype)))


# ---------------------------------------------------------------------- the check catches bugs


def _fixed(dtype: np.dtype[Any], *steps: tuple[str, tuple[int, ...]]) -> Program:
    rng = np.random.default_rng(7)
    leaves = []
    for _ in range(2):
        values = rng.standard_normal((2, 3))
        if dtype.kind == "c":
            values = values + 1j * rng.standard_normal((2, 3))
        leaves.append(np.asarray(values, dtype=dtype))
    return Program(dtype, tuple(leaves), steps)


def _half_cos(self: Any, x: Any, y: Any) -> Any:
    return tf.lax.mul(tf.lax.cos(x), tf.lax.full_like(x, 0.5))


def _mul_transpose_without_conj(self: Any, cts: Any, xs: Any, active: Any) -> Any:
    (ct,) = cts
    x, y = xs
    return [tf.lax.mul(ct, y) if active[0] else None, tf.lax.mul(x, ct) if active[1] else None]


@pytest.mark.parametrize(
    ("cls", "method", "replacement", "program"),
    [
        pytest.param(
            tf.ops.Sin, "coefficient", _half_cos, _fixed(DTYPES[1], ("sin", (0,))), id="sin-half"
        ),
        pytest.param(
            tf.ops.Mul,
            "transpose",
            _mul_transpose_without_conj,
            _fixed(DTYPES[3], ("multiply", (0, 1))),
            id="mul-transpose-no-conj",
        ),
    ],
)
def test_a_broken_rule_fails_the_program_check(cls, method, replacement, program, monkeypatch):
    @settings(max_examples=1, database=None, deadline=None)
    @given(st.just(program))
    def check(p: Program) -> None:
        check_program(p)

    check()  # sound rules pass
    tf.clear_caches()
    monkeypatch.setattr(cls, method, replacement)
    try:
        with pytest.raises(AssertionError):
            check()
    finally:
        monkeypatch.undo()
        tf.clear_caches()
