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

import gc
import itertools
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import assume, given

import tenferro as tf
from tenferro import ops
from tenferro.core.primitive import TensorPrimitive
from tenferro.eager import extents, record_plans
from tenferro.eager.record_plans import canonical_names
from tenferro.linalg.degeneracy import TieCheck, TieGuard
from tenferro.linalg.factorizations import QR
from tenferro.linalg.gaps import ClusterBlocks, GapScale, SpectralBlock, TiedInverse
from tenferro.linalg.hermitian_eigen import Eigh
from tenferro.linalg.pseudo_inverse import Lstsq, Pinv, PinvSolve
from tenferro.linalg.singular_values import Svd, SvdTruncate
from tenferro.linalg.solvers import TriangularSolve
from tenferro.meta import Meta
from tenferro.ops import dot_plans
from tidu.eager import RESPECIALIZABLE, RecordedGraph, default_derivative_cache, derivatives
from tidu.eager.executor import _BoundProgram

DTYPES = [np.dtype(np.float64), np.dtype(np.complex128)]
F64 = np.dtype(np.float64)
EXTENT = st.integers(0, 3)
WIDE = st.integers(0, 5)
"""Extents of classes keyed by their extent pattern: three instances of one pattern
need more values than 0-3 to differ."""

Case = tuple[dict[str, Any], list[list[tuple[int, ...]]]]
"""Parameters and operand shapes at three extents (parameters holding extents, e.g. a
reshape's target, are given per extent set as ``params["per"][i]``)."""


@st.composite
def dot_generals(draw: Any) -> Case:
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


def _shapes(draw: Any, rank: int, extent: Any = EXTENT) -> tuple[int, ...]:
    return tuple(draw(st.lists(extent, min_size=rank, max_size=rank)))


@st.composite
def transposes(draw: Any) -> Case:
    rank = draw(st.integers(0, 4))
    params = {"permutation": tuple(draw(st.permutations(range(rank))))}
    return params, [[_shapes(draw, rank)] for _ in range(3)]


@st.composite
def reshapes(draw: Any) -> Case:
    """Consecutive axes merged (and 1s inserted) into the target shape."""
    rank = draw(st.integers(0, 3))
    cuts = sorted(draw(st.sets(st.integers(1, max(rank - 1, 1)), max_size=2))) if rank else []
    cuts = [c for c in cuts if c < rank]
    ones = draw(st.integers(0, 1))
    shapes, per = [], []
    for _ in range(3):
        shape = _shapes(draw, rank, WIDE)
        bounds = [0, *cuts, rank]
        target = [int(np.prod(shape[a:b])) for a, b in itertools.pairwise(bounds) if b > a]
        per.append({"shape": (*target, *(1,) * ones)})
        shapes.append([shape])
    return {"per": per}, shapes


@st.composite
def broadcasts(draw: Any) -> Case:
    rank = draw(st.integers(0, 2))
    out_rank = draw(st.integers(rank, 3))
    dims = tuple(draw(st.permutations(range(out_rank)))[:rank])
    expanded = [draw(st.booleans()) for _ in range(rank)]
    shapes, per = [], []
    for _ in range(3):
        target = _shapes(draw, out_rank, WIDE)
        shapes.append([tuple(1 if e else target[d] for d, e in zip(dims, expanded, strict=True))])
        per.append({"shape": target})
    return {"dims": dims, "per": per}, shapes


@st.composite
def slices(draw: Any) -> Case:
    rank = draw(st.integers(1, 3))
    starts = tuple(draw(st.lists(st.integers(0, 1), min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank)))
    shapes, per = [], []
    for _ in range(3):
        counts = _shapes(draw, rank)
        limits = tuple(
            s + ((c - 1) * t + 1 if c else 0)
            for s, t, c in zip(starts, strides, counts, strict=True)
        )
        extras = _shapes(draw, rank, st.integers(0, 2))
        shapes.append([tuple(lim + e for lim, e in zip(limits, extras, strict=True))])
        per.append({"limits": limits})
    return {"starts": starts, "strides": strides, "per": per}, shapes


@st.composite
def pads(draw: Any) -> Case:
    rank = draw(st.integers(1, 2))
    low = tuple(draw(st.lists(st.integers(0, 1), min_size=rank, max_size=rank)))
    shapes, per = [], []
    for _ in range(3):
        shapes.append([_shapes(draw, rank, WIDE)])
        per.append({"high": _shapes(draw, rank, st.integers(0, 2))})
    return {"low": low, "interior": (0,) * rank, "per": per}, shapes


@st.composite
def reductions(draw: Any) -> Case:
    rank = draw(st.integers(0, 3))
    axes = tuple(sorted(draw(st.sets(st.integers(0, max(rank - 1, 0)), max_size=rank))))
    return {"axes": axes if rank else ()}, [[_shapes(draw, rank, WIDE)] for _ in range(3)]


@st.composite
def diagonals(draw: Any) -> Case:
    rank = draw(st.integers(2, 3))
    a, b = draw(st.permutations(range(rank)))[:2]
    return {"axis_a": a, "axis_b": b}, [[_shapes(draw, rank, WIDE)] for _ in range(3)]


@st.composite
def embeddings(draw: Any) -> Case:
    rank = draw(st.integers(1, 2))
    a, b = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank))
    return {"axis_a": a, "axis_b": b}, [[_shapes(draw, rank)] for _ in range(3)]


@st.composite
def triangles(draw: Any) -> Case:
    rank = draw(st.integers(2, 3))
    return {"k": draw(st.integers(-1, 1))}, [[_shapes(draw, rank)] for _ in range(3)]


@st.composite
def elementwise(draw: Any, arity: int = 1, **params: Any) -> Case:
    rank = draw(st.integers(0, 3))
    shapes = []
    for _ in range(3):
        shape = _shapes(draw, rank)
        shapes.append([shape] * arity)
    return dict(params), shapes


@st.composite
def spectra(draw: Any, arity: int = 1, **params: Any) -> Case:
    """Operands ``[..., K]`` (one batch axis at most)."""
    batch = draw(st.integers(0, 1))
    shapes = []
    for _ in range(3):
        shape = (*_shapes(draw, batch), draw(EXTENT))
        shapes.append([shape] * arity)
    return {k: draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in params.items()}, (
        shapes
    )


@st.composite
def gap_operands(draw: Any, matrices: int = 1, **params: Any) -> Case:
    """A spectrum ``[..., K]`` followed by ``matrices`` operands ``[..., K, K]``."""
    batch = draw(st.integers(0, 1))
    shapes = []
    for _ in range(3):
        lead, k = _shapes(draw, batch), draw(EXTENT)
        shapes.append([(*lead, k)] + [(*lead, k, k)] * matrices)
    return {k: draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in params.items()}, (
        shapes
    )


@st.composite
def gap_scales(draw: Any) -> Case:
    reverse, pair = draw(st.booleans()), draw(st.sampled_from([0, 1, -1]))
    return draw(
        gap_operands(
            3 if reverse and pair else 2,
            eps=1e-12,
            kind=st.sampled_from(["difference", "sum"]),
            pre=st.sampled_from(["hermitian", "antihermitian", "full"]),
            post=st.sampled_from(["hermitian", "full"]),
            conjugate=False,
            reverse=reverse,
            family_name="linalg.svd",
            pair=pair,
        )
    )


@st.composite
def spectral_blocks(draw: Any) -> Case:
    """``SpectralBlock`` of an SVD (``s, a, u, vh``) or of eigh (``w, a, v``)."""
    batch = draw(st.integers(0, 1))
    family = draw(st.sampled_from(["svd", "eigh"]))
    shapes = []
    for _ in range(3):
        lead = _shapes(draw, batch)
        m, n = draw(WIDE), draw(WIDE)
        if family == "eigh":
            shapes.append([(*lead, m), (*lead, m, m), (*lead, m, m)])
        else:
            k = min(m, n)
            shapes.append([(*lead, k), (*lead, m, n), (*lead, m, k), (*lead, k, n)])
    return {"decomposition": family, "eps": 1e-12}, shapes


@st.composite
def matrices(draw: Any, square: bool = False, tall: bool = False, **params: Any) -> Case:
    batch = draw(st.integers(0, 1))
    wide = draw(st.booleans())  # which of M, N is larger: the class keeps it
    shapes = []
    for _ in range(3):
        m, n = draw(WIDE), draw(WIDE)
        if square:
            n = m
        elif tall or not wide:
            m, n = max(m, n), min(m, n)
        else:
            m, n = min(m, n), max(m, n)
        shapes.append([(*_shapes(draw, batch), m, n)])
    return {k: draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in params.items()}, (
        shapes
    )


@st.composite
def triangular_solves(draw: Any) -> Case:
    batch = draw(st.integers(0, 1))
    left = draw(st.booleans())
    shapes = []
    for _ in range(3):
        lead, n, k = _shapes(draw, batch), draw(EXTENT), draw(EXTENT)
        shapes.append([(*lead, n, n), (*lead, n, k) if left else (*lead, k, n)])
    params = {
        "upper": draw(st.booleans()),
        "left": left,
        "unitriangular": draw(st.booleans()),
        "caller": "linalg.solve_triangular",
    }
    return params, shapes


@st.composite
def truncations(draw: Any) -> Case:
    """U [..., M, K], S [..., K] and Vh [..., K, N] kept to a rank R < K (distinct
    extents, or a rank of 0 or 1 throughout: one extent pattern)."""
    batch = draw(st.integers(0, 1))
    low_rank = draw(st.sampled_from([None, 0, 1]))
    shapes, per = [], []
    for _ in range(3):
        m, n, k, r = draw(st.lists(st.integers(2, 9), min_size=4, max_size=4, unique=True))
        k, r = max(k, r), min(k, r) if low_rank is None else low_rank
        lead = (draw(st.integers(10, 11)),) * batch
        shapes.append([(*lead, m, k), (*lead, k), (*lead, k, n)])
        per.append({"rank": r})
    return {"per": per}, shapes


@st.composite
def pseudo_inverses(draw: Any) -> Case:
    """A [..., M, N] (the class keeps whether M >= N: the JVP's product order),
    Hermitian ones square."""
    hermitian = draw(st.booleans())
    params, shapes = draw(matrices(square=hermitian))
    params |= {"rtol": draw(st.sampled_from([1e-15, 0.3])), "hermitian": hermitian}
    return params, shapes


@st.composite
def pseudo_solves(draw: Any) -> Case:
    """A [..., M, N], a right-hand side b [..., M, R] and the factors U [..., M, K], S
    [..., K], Vh [..., K, N] of A (K = min(M, N))."""
    params, shapes = draw(matrices())
    solves = []
    for [a] in shapes:
        *lead, m, n = a
        k = min(m, n)
        b = (*lead, m, draw(EXTENT))
        solves.append([a, b, (*lead, m, k), (*lead, k), (*lead, k, n)])
    return {**params, "rtol": draw(st.sampled_from([1e-15, 0.3]))}, solves


@st.composite
def least_squares(draw: Any) -> Case:
    """A [..., M, N] and a right-hand side b [..., M, R]."""
    params, shapes = draw(matrices())
    problems = [[a, (*a[:-1], draw(EXTENT))] for [a] in shapes]
    return {**params, "rtol": draw(st.sampled_from([1e-15, 0.3]))}, problems


EPS = {"eps": 1e-12}
CASES: dict[type[TensorPrimitive], Any] = {
    ops.DotGeneral: dot_generals(),
    ops.Transpose: transposes(),
    ops.Reshape: reshapes(),
    ops.BroadcastInDim: broadcasts(),
    ops.Slice: slices(),
    ops.Pad: pads(),
    ops.ReduceSum: reductions(),
    ops.ExtractDiag: diagonals(),
    ops.EmbedDiag: embeddings(),
    ops.Tril: triangles(),
    ops.Triu: triangles(),
    ops.Convert: elementwise(dtype=np.dtype(np.complex128)),
    ops.Complex: elementwise(2),
    ops.Div: elementwise(2),
    ops.Select: elementwise(3),
    GapScale: gap_scales(),
    ClusterBlocks: gap_operands(**EPS),
    TiedInverse: gap_operands(**EPS),
    SpectralBlock: spectral_blocks(),
    TieGuard: spectra(2, family_name="linalg.svd", **EPS),
    TieCheck: spectra(2, family_name="linalg.svd", **EPS),
    Svd: matrices(gauge=st.sampled_from(["raw", "canonical"]), **EPS),
    SvdTruncate: truncations(),
    Eigh: matrices(square=True, uplo=st.sampled_from("LU"), gauge=st.just("raw"), **EPS),
    QR: matrices(tall=True, complete=st.just(False), positive=st.booleans()),
    TriangularSolve: triangular_solves(),
    Pinv: pseudo_inverses(),
    PinvSolve: pseudo_solves(),
    Lstsq: least_squares(),
}
"""A generator of (parameters, operand shapes at three extents) per declared class."""

REAL_ONLY = {ops.Complex, TieGuard, TieCheck}
"""Classes whose operands are real (the others are drawn real and complex)."""

NO_NODE_CLASS = {ops.Concatenate: ({"axis": 0}, [(2, 3), (1, 3)])}
"""Declared for re-making as an instruction only: as a node, no class (its transpose
slices at offsets that follow from extents); an instance to check that on."""

FIXED = {
    ops.Select: (0,),
    TieGuard: (0,),
    TieCheck: (0,),
    PinvSolve: (2, 3, 4),
    GapScale: (0, 1),
    ClusterBlocks: (0,),
    TiedInverse: (0,),
    SpectralBlock: (0,),
}
"""Operand positions never tracked (a predicate; the values that only locate ties or
cut gaps, whose derivative flows through a spectral block; a factorization passed as a
cache)."""

SPECTRUM_FIRST = {GapScale, ClusterBlocks, TiedInverse, SpectralBlock}
"""Classes whose first operand is a real spectrum (the others take the test's dtype)."""


def _primitives() -> set[type[TensorPrimitive]]:
    # ``dataclass(slots=True)`` replaces each class; the class it replaces stays among
    # the subclasses (held by reference cycles) until the collector runs.
    gc.collect()
    found: set[type[TensorPrimitive]] = set()
    pending = [TensorPrimitive]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if not sub.__name__.startswith("_"):
                found.add(sub)
    return found


def _declared() -> set[type[TensorPrimitive]]:
    return {cls for cls in _primitives() if cls.extent_generic}


def test_every_extent_generic_primitive_has_a_generator() -> None:
    assert _declared() == set(CASES) | set(NO_NODE_CLASS)


def test_any_extent_kernels_are_declared_by_extent_generic_primitives_only() -> None:
    """A primitive's own any-extent kernel (beyond its ufunc) is checked against fresh
    derivations by the generators of its class."""
    overriding = {
        cls for cls in _primitives() if "any_extent_kernel" in vars(cls) and cls is not TieCheck
    }
    assert overriding == {
        ops.DotGeneral,
        ops.Transpose,
        ops.ReduceSum,
        ops.ExtractDiag,
        ops.EmbedDiag,
        GapScale,
        ClusterBlocks,
        TiedInverse,
        SpectralBlock,
    }
    assert overriding <= set(CASES)
    assert "any_extent_kernel" in vars(TieCheck.__mro__[1])  # the tie identities' own
    assert {TieCheck, TieGuard} <= set(CASES)


def test_extent_kernels_are_declared_by_primitives_with_extent_params_only() -> None:
    """Such a kernel stands for the instance ``remake`` makes: the generators of its
    class check it against fresh derivations."""
    overriding = {cls for cls in _primitives() if "extent_kernel" in vars(cls)}
    assert overriding == {ops.Reshape, ops.BroadcastInDim, ops.Slice, ops.Pad}
    assert all(cls.extent_params for cls in overriding)
    assert overriding <= set(CASES)


def test_instruction_only_declarations_have_no_node_class() -> None:
    for cls, (params, shapes) in NO_NODE_CLASS.items():
        op = _instance(cls, params, shapes, F64)
        assert op.extent_facts() is None
        assert extents.extent_class(op, (0,), canonical_names(len(shapes))) is None


def _dtypes(cls: type[TensorPrimitive], dtype: Any, count: int) -> list[Any]:
    if cls is ops.Select:
        return [np.dtype(bool), dtype, dtype]
    if cls is SvdTruncate:  # real singular values
        return [dtype, np.empty(0, dtype).real.dtype, dtype]
    if cls is PinvSolve:  # real singular values
        real = np.empty(0, dtype).real.dtype
        return [dtype] * (count - 2) + [real, dtype]
    if cls in SPECTRUM_FIRST:
        return [np.empty(0, dtype).real.dtype] + [dtype] * (count - 1)
    return [F64 if cls in REAL_ONLY else dtype] * count


def _instance(cls: type[TensorPrimitive], params: dict[str, Any], shapes: Any, dtype: Any) -> Any:
    dtypes = _dtypes(cls, dtype, len(shapes))
    return cls.make(tuple(Meta(s, d) for s, d in zip(shapes, dtypes, strict=True)), **params)


def _params(params: dict[str, Any], i: int) -> dict[str, Any]:
    own = {k: v for k, v in params.items() if k != "per"}
    if "per" in params:
        own.update(params["per"][i])
    return own


def _instances(cls: type[TensorPrimitive], case: Case, dtype: Any) -> list[Any]:
    """The three instances of one extent class (examples of other classes discarded)."""
    params, shape_sets = case
    made = [_instance(cls, _params(params, i), s, dtype) for i, s in enumerate(shape_sets)]
    facts = made[0].extent_facts()
    assume(facts is not None and all(op.extent_facts() == facts for op in made))
    return made


def _active(cls: type[TensorPrimitive], count: int, data: st.DataObject) -> tuple[int, ...]:
    fixed = FIXED.get(cls, ())
    free = [i for i in range(count) if i not in fixed]
    active = tuple(sorted(data.draw(st.sets(st.sampled_from(free), min_size=1))))
    if cls in (ops.DotGeneral, ops.Div) and len(active) == 2:
        active = data.draw(st.sampled_from([(0,), (1,)]))  # one operand per transpose
    return active


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


def _classes() -> Any:
    return st.sampled_from(sorted(CASES, key=lambda c: c.name)).flatmap(
        lambda cls: st.tuples(st.just(cls), CASES[cls])
    )


@pytest.mark.slow
@fuzz_settings(150)
@given(_classes(), st.sampled_from(DTYPES), st.data())
def test_reinstantiated_programs_equal_fresh_derivations(
    case: Any, dtype: Any, data: st.DataObject
) -> None:
    cls, generated = case
    op_a, op_b, _ = _instances(cls, generated, dtype)
    count = len(op_a.inputs)
    active = _active(cls, count, data)
    keys = canonical_names(count)
    template = extents._admit(op_a, active, keys)
    assert template is not False
    assert template.derivative_signature is RESPECIALIZABLE
    fresh = RecordedGraph.from_primitive(op_b, keys)
    outputs = tuple(m for m in op_b.outputs)
    for at_a, at_b, seeds in zip(
        _programs(template, active),
        _programs(fresh, active),
        [outputs, tuple(op_b.inputs[i] for i in active)],
        strict=True,
    ):
        inputs = _inputs(at_a, template, op_b, seeds)
        specialized = extents.reinstantiate(at_a.program, inputs, (op_a, op_b))
        assert _structure(specialized) == _structure(at_b.program)
        assert specialized.input_slots == at_b.program.input_slots
        assert specialized.output_slots == at_b.program.output_slots
        at_any, mapped, single = extents._at_any_extents(at_a.program, op_a)
        if at_any is not None:  # run with extent-reading kernels: the fresh program's values
            runner: Any = at_any
            if mapped:
                runner = extents._AtNode(at_any, extents._flat_extents(op_b), single)
            values = [_data(Meta(np.shape(v), v.dtype), 5 + i) for i, v in enumerate(inputs)]
            expected_values = at_b.program.eval(values)
            for _ in range(8):  # interpreted, then generated code (the node's extents as ctx)
                got_values = runner.eval(values)
                for got, expected in zip(got_values, expected_values, strict=True):
                    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
            assert at_any.generated
            if single is not None:  # the executor's one-kernel lane
                np.testing.assert_allclose(
                    runner.only_kernel()(*values), expected_values[0], rtol=1e-13, atol=1e-13
                )


def _data(meta: Meta, seed: int, cls: Any = None) -> Any:
    rng = np.random.default_rng(seed)
    if meta.dtype == np.dtype(bool):
        return rng.random(meta.shape) < 0.5
    value = rng.standard_normal(meta.shape)
    if meta.dtype.kind == "c":
        value = value + 1j * rng.standard_normal(meta.shape)
    return value.astype(meta.dtype)


def _operands(op: Any, seed: int) -> list[Any]:
    args = [_data(m, seed + i) for i, m in enumerate(op.inputs)]
    if isinstance(op, ops.Div):
        args[1] = (2.0 + np.abs(args[1])).astype(args[1].dtype)  # away from zero
    if isinstance(op, TriangularSolve):
        n = op.inputs[0].shape[-1]
        args[0] = args[0] + 3.0 * np.eye(n)  # well conditioned
    if isinstance(op, (TieGuard, TieCheck)):
        args[0] = np.sort(args[0], axis=-1)[..., ::-1].copy()  # distinct sorted values
    return args


def _loss(op: Any, active: tuple[int, ...], args: list[Any]) -> Any:
    """A real scalar of ``op``'s inexact outputs, as a function of the active operands."""
    params = {f: getattr(op, f) for f in op._field_names if f != "inputs"}

    def f(*xs: Any) -> Any:
        operands = [tf.asarray(a) for a in args]
        for position, x in zip(active, xs, strict=True):
            operands[position] = x
        outs = type(op).bind(*operands, **params)
        total: Any = 0.0
        for y in outs if isinstance(outs, tuple) else (outs,):
            if y.meta.dtype.kind in "fc":
                total = total + tf.sum(tf.real(y * tf.conj(tf.sin(y))))
        return total

    return f


@pytest.mark.slow
@fuzz_settings(60)
@given(_classes(), st.sampled_from(DTYPES), st.data())
def test_tape_derivatives_at_never_seen_extents_equal_traced_ones(
    case: Any, dtype: Any, data: st.DataObject
) -> None:
    """Each instance after the first uses the first one's derivation."""
    cls, generated = case
    instances = _instances(cls, generated, dtype)
    active = _active(cls, len(instances[0].inputs), data)
    if cls is ops.Div:
        active = tuple(range(2))
    tf.clear_caches()
    recorded = []
    for op in instances:
        args = _operands(op, 3)
        f = _loss(op, active, args)
        primals = [args[i] for i in active]
        tape = tf.Tape()
        leaves = [tape.track(a) for a in primals]
        loss = f(*leaves)
        recorded.append(_node_of(loss, op))
        got = tape.grad(loss, leaves, allow_unused=True)
        expected = tf.grad(f, argnums=tuple(range(len(primals))))(*primals)
        for g, e in zip(got, expected, strict=True):
            g = np.zeros_like(e) if g is None else np.asarray(g)
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)
        directions = [_data(op.inputs[i], 7 + i) for i in active]
        _, tangent = tf.Tape().jvp(f, primals, directions)
        _, expected_tangent = tf.jvp(f, tuple(primals), tuple(directions))
        np.testing.assert_allclose(np.asarray(tangent), expected_tangent, rtol=1e-9, atol=1e-11)
        if dtype.kind == "f" and cls not in (Svd, Eigh, QR):  # second order: cheap classes
            hvp = tf.Tape().hvp(f, primals, directions)
            expected_hvp = tf.hvp(f, tuple(primals), tuple(directions))
            if len(primals) == 1:
                hvp, expected_hvp = [hvp], [expected_hvp]
            for h, e in zip(hvp, expected_hvp, strict=True):
                np.testing.assert_allclose(np.asarray(h), e, rtol=1e-8, atol=1e-10)
    assert all(r is recorded[0] for r in recorded)  # one derivation served the three


def _node_of(loss: Any, op: Any) -> Any:
    """The recorded graph of the node that ran ``op`` (found from the loss's node)."""
    pending, seen = [loss.node], set()
    while pending:
        node = pending.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        first = node.recorded.graph.operations[0].operation
        if type(first) is type(op):
            pair = node.instance
            if (pair is None and first == op) or (pair is not None and pair[1] == op):
                return node.recorded
        pending.extend(node.edges[::3])
    raise AssertionError(f"no node ran {op}")


def test_svd_second_order_at_never_seen_extents_equals_traced() -> None:
    """Forward over reverse through the re-made SVD derivative programs."""
    tf.clear_caches()

    def f(x: Any) -> Any:
        u, s, _ = tf.linalg.svd(x, full_matrices=False)
        return tf.sum(s * s * s) + tf.sum(tf.real(u * tf.conj(tf.sin(u))))

    for shape in [(4, 3), (5, 2), (6, 4)]:
        a, v = _data(Meta(shape, F64), 1), _data(Meta(shape, F64), 2)
        np.testing.assert_allclose(
            np.asarray(tf.Tape().hvp(f, [a], [v])), tf.hvp(f, (a,), (v,)), rtol=1e-8, atol=1e-10
        )


def test_nodes_of_new_extents_share_the_class_derivation() -> None:
    tf.clear_caches()
    for rows, columns in [(2, 3), (4, 1), (1, 5), (3, 3)]:
        tape = tf.Tape()
        m = tape.track(_data(Meta((rows, columns), F64), rows))
        p = m @ m.T
        assert p.node.recorded.derivative_signature is RESPECIALIZABLE
        first = p.node.recorded.graph.operations[0].operation
        assert first.inputs[0].shape == (2, 3)  # the class's first instance stands for all
        grad = tape.grad(tf.sum(tf.sin(p)), m)
        a = np.asarray(m)
        c = np.cos(a @ a.T)
        np.testing.assert_allclose(np.asarray(grad), (c + c.T) @ a, rtol=1e-12)
    classes = [key[0] for key in extents._CLASSES]
    assert classes.count(ops.DotGeneral) == classes.count(ops.Transpose) == 1
    assert classes.count(ops.ReduceSum) == 2  # keyed by its extent pattern: 1x1 and nxn
    tf.clear_caches()
    assert len(extents._CLASSES) == 0
    assert len(extents._SPECIALIZED) == 0


def test_truncated_svd_sweep_steps_derive_nothing_after_the_first_of_each_class(
    monkeypatch: Any,
) -> None:
    """Two-site sweep steps at never-seen bonds (einsum, reshape, truncated SVD whose
    rank the data decides, slices, reshapes): gradients equal those derived afresh for
    each step alone, and once the classes are known no step linearises again."""

    def step(a: Any, b: Any) -> Any:
        left, right = a.shape[0], b.shape[2]
        theta = tf.einsum("asb,btc->astc", a, b)
        u, s, vh = tf.linalg.truncated_svd(tf.reshape(theta, (left * 2, 2 * right)), rtol=0.3)
        rank = s.shape[-1]
        new_a = tf.reshape(u, (left, 2, rank))
        new_b = tf.einsum("k,ktc->ktc", s, tf.reshape(vh, (rank, 2, right)))
        return tf.sum(s) + tf.einsum("asb,asc,btd,ctd->", new_a, new_a, new_b, new_b)

    def gradient(a: Any, b: Any) -> list[Any]:
        tape = tf.Tape()
        x, y = tape.track(a), tape.track(b)
        return [np.asarray(g) for g in tape.grad(step(x, y), [x, y])]

    rng = np.random.default_rng(0)
    cores = []
    for left, middle, right in [(3, 4, 5), (4, 5, 6), (5, 3, 7), (6, 4, 3), (7, 6, 4), (4, 7, 6)]:
        a = rng.standard_normal((left, 2, middle)) * np.exp(-np.arange(middle) / 2.0)
        cores.append((a, rng.standard_normal((middle, 2, right))))
    alone = []
    for a, b in cores:
        tf.clear_caches()  # every node derived for its own shapes
        alone.append(gradient(a, b))
    tf.clear_caches()
    derived: list[Any] = []
    derive = derivatives.derive
    monkeypatch.setattr(derivatives, "derive", lambda *a, **k: derived.append(a) or derive(*a, **k))
    first = 0
    for i, ((a, b), expected) in enumerate(zip(cores, alone, strict=True)):
        if i == 0:
            first = len(derived)
        if i == 3:
            derived.clear()
        for g, e in zip(gradient(a, b), expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        if i == 0:
            first = len(derived) - first
    # Three later steps together derive less than one step alone: only the nodes whose
    # extent pattern (which extents coincide) had not been met yet.
    assert first >= 10
    assert len(derived) < first


@fuzz_settings(40)
@given(dot_generals())
def test_dot_general_shape_rule_agrees_with_its_evaluation(case: Any) -> None:
    """The shape rule (its axis structure validated once per dimension numbers and ranks)
    gives the shape evaluation from the arrays' own shapes gives, at every extent."""
    params, shape_sets = case
    for shapes in shape_sets:
        op = _instance(ops.DotGeneral, params, shapes, np.dtype(np.float64))
        arrays = [np.zeros(s) for s in shapes]
        assert op.outputs[0].shape == dot_plans.general(op._numbers(), *arrays).shape


def test_a_repeated_shape_runs_extent_kernels_then_re_made_programs() -> None:
    """Backward at one never-seen shape: with extent-reading kernels at first (no program
    re-made), with re-made programs once its instances have run ``REMAKE_AFTER`` times;
    the gradient is the one derived afresh for that shape every time."""

    def f(x: Any) -> Any:
        u, s, vh = tf.linalg.truncated_svd(tf.reshape(x, (6, 4)), max_rank=3)
        return tf.sum(s * s) + tf.sum(tf.sin(u[1:])) + tf.sum(tf.reshape(vh, (-1,)) ** 2)

    def gradient(a: Any) -> Any:
        tape = tf.Tape()
        x = tape.track(a)
        return np.asarray(tape.grad(f(x), x))

    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 12))
    tf.clear_caches()
    expected = gradient(a)  # derived for this shape alone
    tf.clear_caches()
    gradient(rng.standard_normal((3, 8)))  # the classes' first instances: another shape
    assert len(extents._SPECIALIZED) == 0
    for run in range(1, extents.REMAKE_AFTER + 2):
        np.testing.assert_allclose(gradient(a), expected, rtol=1e-10, atol=1e-12)
        if run == 1:  # a shape met once runs extent-reading kernels: nothing re-made
            assert len(extents._SPECIALIZED) == 0
    assert len(extents._SPECIALIZED) > 0  # met REMAKE_AFTER times and more: re-made


def _sweep_loss(a: Any, b: Any) -> Any:
    """The benchmark's two-site sweep step (einsum, truncated SVD of data-dependent rank,
    reshapes, a three-operand einsum) as a loss of the two cores."""
    left, right = a.shape[0], b.shape[2]
    theta = tf.einsum("asb,btc->astc", a, b)
    u, s, vh = tf.linalg.truncated_svd(tf.reshape(theta, (left * 2, 2 * right)), rtol=1e-2)
    rank = s.shape[-1]
    new_a = tf.reshape(u, (left, 2, rank))
    new_b = tf.einsum("k,ktc->ktc", s, tf.reshape(vh, (rank, 2, right)))
    env = tf.einsum("asb,asc->bc", new_a, new_a)
    return tf.sum(s) + tf.einsum("bc,btd,ctd->", env, new_b, new_b)


def _sweep_gradient(a: Any, b: Any) -> list[Any]:
    tape = tf.Tape()
    x, y = tape.track(a), tape.track(b)
    return [np.asarray(g) for g in tape.grad(_sweep_loss(x, y), [x, y])]


@pytest.mark.slow
@fuzz_settings(15)
@given(st.lists(st.tuples(*[st.integers(1, 7)] * 3), min_size=4, max_size=8), st.data())
def test_sweep_steps_at_random_bonds_equal_fresh_derivations(bonds: Any, data: Any) -> None:
    """Sweep steps at random bonds (extents 1 and coinciding ones included), each
    differentiated on the tape with whatever extent classes, extent kernels (the node's
    extents read from the evaluation context) and shared plans earlier steps left: the
    gradient equals the same step's with every cache cleared (derived for its shapes
    alone) and a central finite difference along a random direction; the Hessian-vector
    product (second order through the same nodes) equals a central difference of the
    fresh gradients. (Traced mode cannot reshape the data-dependent rank: no oracle.)"""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    steps = []
    for left, middle, right in bonds:
        a = rng.standard_normal((left, 2, middle)) * np.exp(-np.arange(middle) / 2.0)
        steps.append((a, rng.standard_normal((middle, 2, right))))
    expected = []
    for a, b in steps:
        tf.clear_caches()
        expected.append(_sweep_gradient(a, b))
    tf.clear_caches()
    for (a, b), alone in zip(steps * 2, expected * 2, strict=True):  # twice: steps repeat
        for g, e in zip(_sweep_gradient(a, b), alone, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)
    a, b = steps[-1]
    ga, gb = expected[-1]
    va, vb = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    eps = 1e-6

    def loss(x: Any, y: Any) -> float:
        return float(np.asarray(_sweep_loss(tf.asarray(x), tf.asarray(y))))

    slope = (loss(a + eps * va, b + eps * vb) - loss(a - eps * va, b - eps * vb)) / (2 * eps)
    np.testing.assert_allclose(np.sum(ga * va) + np.sum(gb * vb), slope, rtol=1e-5, atol=1e-6)
    got_hvp = tf.Tape().hvp(_sweep_loss, [a, b], [va, vb])
    tf.clear_caches()
    plus = _sweep_gradient(a + eps * va, b + eps * vb)
    minus = _sweep_gradient(a - eps * va, b - eps * vb)
    for g, p, m in zip(got_hvp, plus, minus, strict=True):
        np.testing.assert_allclose(np.asarray(g), (p - m) / (2 * eps), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@fuzz_settings(25)
@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=3, max_size=8),
    st.sampled_from([np.float64, np.complex128]),
)
def test_elementwise_steps_at_random_shapes_share_plans_and_stay_exact(
    shapes: Any, dt: Any
) -> None:
    """Elementwise nodes of never-seen shapes record with their rank-0 stand-in's shared
    plan: gradients (vs the closed form) and forward-over-reverse HVPs (vs the traced
    ones) at every shape, in order, after and without cleared caches."""

    def f(m: Any) -> Any:
        h = tf.sin(m @ tf.conj(m.T)) * 0.5 + 1.0
        r = tf.exp(m) * m - m / (m * m + 2.0)
        return tf.sum(tf.real(h[1:] * tf.conj(h[1:]))) + tf.sum(tf.real(r * tf.conj(r)))

    rng = np.random.default_rng(sum(r * 7 + c for r, c in shapes))
    values = []
    for shape in shapes:
        x = rng.standard_normal(shape) + (
            1j * rng.standard_normal(shape) if dt is not np.float64 else 0
        )
        values.append(np.asarray(x, dtype=dt))
    for x in values * 2:
        tape = tf.Tape()
        m = tape.track(x)
        got = np.asarray(tape.grad(f(m), m))
        np.testing.assert_allclose(got, np.asarray(tf.grad(f)(x)), rtol=1e-9, atol=1e-11)
        v = np.asarray(rng.standard_normal(x.shape), dtype=dt)
        np.testing.assert_allclose(
            np.asarray(tf.Tape().hvp(f, [x], [v])),
            np.asarray(tf.hvp(f, (x,), (v,))),
            rtol=1e-8,
            atol=1e-10,
        )
    tf.clear_caches()
    assert len(record_plans._GENERIC_PLANS) == 0
