"""Primitives declared ``extent_generic`` share one derivation per extent class.

The declaration (beside the primitive's rules) claims that its derivative programs
depend on its parameters, ranks and dtypes only. For random instances (size-1 and
empty extents included), the programs derived at one shape and re-instantiated at
another (:func:`tenferro.eager.extents.reinstantiate`) equal, instruction by
instruction, the programs derived afresh at that shape; and tape gradients,
forward-mode tangents and Hessian-vector products at never-seen shapes equal traced
mode's (derived per shape, independently of the tape).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import given, settings

import tenferro as tf
from tenferro import lax, ops
from tenferro.core.primitive import TensorPrimitive
from tenferro.eager import extents
from tenferro.eager.tape import _canonical
from tenferro.meta import Meta
from tidu.eager import RESPECIALIZABLE, RecordedGraph, default_derivative_cache
from tidu.eager.executor import _BoundProgram

DTYPES = [np.dtype(np.float64), np.dtype(np.complex128)]
EXTENT = st.integers(0, 3)


@st.composite
def dot_generals(draw: Any) -> tuple[dict[str, Any], list[list[tuple[int, ...]]]]:
    """Dimension numbers and three sets of operand shapes for them."""
    nb, nc = draw(st.integers(0, 1)), draw(st.integers(0, 2))
    fl, fr = draw(st.integers(0, 2)), draw(st.integers(0, 1))
    lhs_axes = draw(st.permutations(range(nb + nc + fl)))
    rhs_axes = draw(st.permutations(range(nb + nc + fr)))
    params = {
        "lhs_batch": tuple(lhs_axes[:nb]),
        "rhs_batch": tuple(rhs_axes[:nb]),
        "lhs_contracting": tuple(lhs_axes[nb : nb + nc]),
        "rhs_contracting": tuple(rhs_axes[nb : nb + nc]),
    }

    def shapes() -> list[tuple[int, ...]]:
        shared = draw(st.lists(EXTENT, min_size=nb + nc, max_size=nb + nc))
        lhs = [0] * len(lhs_axes)
        rhs = [0] * len(rhs_axes)
        for i, n in enumerate(shared):
            lhs[lhs_axes[i]] = rhs[rhs_axes[i]] = n
        for a in lhs_axes[nb + nc :]:
            lhs[a] = draw(EXTENT)
        for a in rhs_axes[nb + nc :]:
            rhs[a] = draw(EXTENT)
        return [tuple(lhs), tuple(rhs)]

    return params, [shapes() for _ in range(3)]


@st.composite
def transposes(draw: Any) -> tuple[dict[str, Any], list[list[tuple[int, ...]]]]:
    rank = draw(st.integers(0, 4))
    params = {"permutation": tuple(draw(st.permutations(range(rank))))}
    shape = st.lists(EXTENT, min_size=rank, max_size=rank).map(tuple)
    return params, [[draw(shape)] for _ in range(3)]


CASES: dict[type[TensorPrimitive], Any] = {
    ops.DotGeneral: dot_generals(),
    ops.Transpose: transposes(),
}
"""A generator of (parameters, operand shapes at three extents) per declared class."""


def test_every_extent_generic_primitive_has_a_generator() -> None:
    declared = {
        value
        for value in vars(ops).values()
        if isinstance(value, type) and issubclass(value, TensorPrimitive) and value.extent_generic
    }
    assert declared == set(CASES)


def _instance(cls: type[TensorPrimitive], params: dict[str, Any], shapes: Any, dtype: Any) -> Any:
    return cls.make(tuple(Meta(s, dtype) for s in shapes), **params)


def _programs(recorded: RecordedGraph, active: tuple[int, ...]) -> list[Any]:
    slots = tuple(range(len(recorded.output_keys)))
    linear = default_derivative_cache.derivative(recorded, slots, None, active).linear
    forward = default_derivative_cache.forward_derivative(recorded, active, None).linear
    return [_BoundProgram.transposed(linear, None), _BoundProgram.forward(forward)]


def _inputs(bound: Any, recorded: RecordedGraph, op: Any, seeds: tuple[Any, ...]) -> list[Any]:
    """Zeros with the shapes ``op`` gives the program's inputs."""
    values: list[Any] = []
    for binding in bound.bindings:
        if type(binding) is int:
            meta = seeds[binding]
        elif binding in recorded.input_value_keys:
            meta = op.inputs[recorded.input_value_keys.index(binding)]
        else:
            meta = op.outputs[recorded.output_keys.index(binding)]
        values.append(np.zeros(meta.shape, meta.dtype))
    return values


def _structure(program: Any) -> list[tuple[Any, ...]]:
    return [(i.operation, i.inputs, i.outputs) for i in program.instructions]


@settings(max_examples=60)
@given(
    st.sampled_from(sorted(CASES, key=lambda c: c.name)).flatmap(
        lambda cls: st.tuples(st.just(cls), CASES[cls])
    ),
    st.sampled_from(DTYPES),
    st.data(),
)
def test_reinstantiated_programs_equal_fresh_derivations(
    case: Any, dtype: Any, data: st.DataObject
) -> None:
    cls, (params, (shapes_a, shapes_b, _)) = case
    op_a = _instance(cls, params, shapes_a, dtype)
    op_b = _instance(cls, params, shapes_b, dtype)
    count = len(op_a.inputs)
    active = tuple(
        sorted(data.draw(st.sets(st.integers(0, count - 1), min_size=1, max_size=count)))
    )
    if cls is ops.DotGeneral and len(active) == 2:
        active = data.draw(st.sampled_from([(0,), (1,)]))  # bilinear: one operand per transpose
    keys = _canonical(count)
    template = extents._admit(op_a, active, keys)
    assert template is not False
    assert template.derivative_signature is RESPECIALIZABLE
    fresh = RecordedGraph.from_primitive(op_b, keys)
    for at_a, at_b, seeds in zip(
        _programs(template, active),
        _programs(fresh, active),
        [op_b.outputs, tuple(op_b.inputs[i] for i in active)],
        strict=True,
    ):
        specialized = extents.reinstantiate(at_a.program, _inputs(at_a, template, op_b, seeds))
        assert _structure(specialized) == _structure(at_b.program)
        assert specialized.input_slots == at_b.program.input_slots
        assert specialized.output_slots == at_b.program.output_slots


def _data(shape: tuple[int, ...], dtype: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    value = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        value = value + 1j * rng.standard_normal(shape)
    return value.astype(dtype)


@settings(max_examples=25)
@given(
    st.sampled_from(sorted(CASES, key=lambda c: c.name)).flatmap(
        lambda cls: st.tuples(st.just(cls), CASES[cls])
    ),
    st.sampled_from(DTYPES),
)
def test_tape_derivatives_at_never_seen_extents_equal_traced_ones(case: Any, dtype: Any) -> None:
    """Every operand tracked; each shape after the first uses the first one's derivation."""
    cls, (params, shape_sets) = case
    tf.clear_caches()

    def f(*xs: Any) -> Any:
        if cls is ops.DotGeneral:
            y = lax.dot_general(*xs, **params)
        else:
            y = lax.transpose(xs[0], params["permutation"])
        return tf.sum(tf.real(y * tf.conj(tf.sin(y))))

    for shapes in shape_sets:
        args = [_data(s, dtype, i) for i, s in enumerate(shapes)]
        tape = tf.Tape()
        leaves = [tape.track(a) for a in args]
        got = tape.grad(f(*leaves), leaves)
        expected = tf.grad(f, argnums=tuple(range(len(args))))(*args)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-10, atol=1e-12)
        directions = [_data(s, dtype, 7 + i) for i, s in enumerate(shapes)]
        _, tangent = tf.Tape().jvp(f, args, directions)
        _, expected_tangent = tf.jvp(f, tuple(args), tuple(directions))
        np.testing.assert_allclose(np.asarray(tangent), expected_tangent, rtol=1e-10, atol=1e-12)
        if dtype.kind == "f":
            hvp = tf.Tape().hvp(f, args, directions)
            expected_hvp = tf.hvp(f, tuple(args), tuple(directions))
            if len(args) == 1:
                hvp, expected_hvp = [hvp], [expected_hvp]
            for h, e in zip(hvp, expected_hvp, strict=True):
                np.testing.assert_allclose(np.asarray(h), e, rtol=1e-9, atol=1e-12)


def test_nodes_of_new_extents_share_the_class_derivation() -> None:
    tf.clear_caches()
    for rows, columns in [(2, 3), (4, 1), (1, 5), (3, 3)]:
        tape = tf.Tape()
        m = tape.track(_data((rows, columns), np.float64, rows))
        p = m @ m.T
        assert p.node.recorded.derivative_signature is RESPECIALIZABLE
        first = p.node.recorded.graph.operations[0].operation
        assert first.inputs[0].shape == (2, 3)  # the class's first instance stands for all
        grad = tape.grad(tf.sum(tf.sin(p)), m)
        a = np.asarray(m)
        c = np.cos(a @ a.T)
        np.testing.assert_allclose(np.asarray(grad), (c + c.T) @ a, rtol=1e-12)
    assert len(extents._CLASSES) == 2  # the matmul and the transpose
    tf.clear_caches()
    assert len(extents._CLASSES) == 0
    assert len(extents._SPECIALIZED) == 0


@settings(max_examples=40)
@given(dot_generals())
def test_dot_general_shape_rule_agrees_with_its_evaluation(case: Any) -> None:
    """The shape rule (its axis structure validated once per dimension numbers and ranks)
    gives the shape evaluation from the arrays' own shapes gives, at every extent."""
    params, shape_sets = case
    for shapes in shape_sets:
        op = _instance(ops.DotGeneral, params, shapes, np.dtype(np.float64))
        arrays = [np.zeros(s) for s in shapes]
        assert op.outputs[0].shape == op._general(*arrays).shape
