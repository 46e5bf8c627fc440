"""Deferred conjugation in the XLA lowering (``tenferro.ops.lowering._Forms``).

The lowering computes no ``conj`` by itself: it swaps a value's two forms, and an
operation marked ``conj_commutes`` runs on its operands' conjugates when those are at
hand. That is exact only if the operation really commutes with conjugation (up to the
sign of a zero imaginary part), so:

* every marked primitive's lowering is checked to commute exactly, on operands drawn
  for it, and the set of marked primitives must equal this file's table (marking a
  new one needs a case here);
* random chains of conjugates and marked and unmarked operations give the numpy
  backend's values and gradients (hypothesis);
* the point of it, as structure rather than time: conjugates that cancel emit
  nothing, and the MPS-norm gradient emits no more conjugations than JAX's own
  ``jax.grad`` of the same algorithm.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from fuzz_support import fuzz_settings  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_primitive_rules import _exported_primitives  # noqa: E402
from xla_support import assert_same  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.core.primitive import AddAny, TensorPrimitive  # noqa: E402
from tenferro.models import mps  # noqa: E402
from tenferro.ops.lowering import Lowering  # noqa: E402

RNG = np.random.default_rng(7)


def _complex(shape: tuple[int, ...], dtype: Any = np.complex128) -> np.ndarray[Any, Any]:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _real(shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape)


# Per marked primitive: operands, and the tenferro function applying it to them.
COMMUTING: dict[str, tuple[Callable[[], list[Any]], Callable[..., Any]]] = {
    "transpose": (lambda: [_complex((2, 3, 4))], lambda x: tf.lax.transpose(x, (2, 0, 1))),
    "reshape": (lambda: [_complex((2, 3, 4))], lambda x: tf.lax.reshape(x, (6, 4))),
    "broadcast_in_dim": (
        lambda: [_complex((3, 1))],
        lambda x: tf.lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
    ),
    "reverse": (lambda: [_complex((3, 4))], lambda x: tf.lax.rev(x, (0, 1))),
    "convert": (
        lambda: [_complex((5,))],
        lambda x: tf.lax.convert_element_type(x, np.complex64),
    ),
    "add": (lambda: [_complex((3, 4)), _complex((3, 4))], lambda a, b: a + b),
    "sub": (lambda: [_complex((3, 4)), _complex((3, 4))], lambda a, b: a - b),
    "mul": (lambda: [_complex((3, 4)), _complex((3, 4))], lambda a, b: a * b),
    "neg": (lambda: [_complex((3, 4))], lambda x: -x),
    "real": (lambda: [_complex((3, 4))], tf.real),
    "select": (
        lambda: [_real((3, 4)) > 0, _complex((3, 4)), _complex((3, 4))],
        tf.lax.select,
    ),
    "reduce_sum": (lambda: [_complex((3, 4, 5))], lambda x: tf.lax.reduce_sum(x, (0, 2))),
    "dot_general": (
        lambda: [_complex((2, 3, 7)), _complex((2, 7, 5))],
        lambda a, b: tf.lax.dot_general(a, b, (2,), (1,), (0,), (0,)),
    ),
}

MORE_CONVERTS: list[tuple[Any, Any]] = [
    (np.complex128, np.float64),  # the real part
    (np.float64, np.complex128),  # a real value, complex
    (np.complex64, np.complex128),
    (np.complex128, np.bool_),  # nonzero
    (np.complex128, np.int32),  # the real part, truncated
]


def _applied(f: Callable[..., Any], args: list[Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The primitive instance ``f`` applies last (observed on concrete tensors)."""
    seen: list[Any] = []
    original = tf.Tensor.__dict__["_bind"].__func__

    def spy(cls: Any, op: Any, operands: Any, like: Any = None) -> Any:
        seen.append(op)
        return original(cls, op, operands, like)

    with monkeypatch.context() as patch:
        patch.setattr(tf.Tensor, "_bind", classmethod(spy))
        f(*[tf.asarray(a) for a in args])
    assert seen, "the function applied no primitive"
    return seen[-1]


def _conj(value: Any) -> Any:
    return jnp.conj(value) if jnp.iscomplexobj(value) else value


def _assert_lowering_commutes(op: TensorPrimitive, args: list[Any]) -> None:
    lo = Lowering(jax, "cpu")
    with jax.enable_x64(True):
        values = [jnp.asarray(a) for a in args]
        direct = np.asarray(_conj(op.lower(lo, *values)))
        deferred = np.asarray(op.lower(lo, *[_conj(v) for v in values]))
    assert direct.dtype == deferred.dtype
    # exactly, the sign of a zero aside: conj(x + 0j) is x - 0j, and +0.0 + -0.0 is
    # +0.0 whichever way round (XLA's own simplifier takes the same freedom)
    assert np.array_equal(direct, deferred), op.name


def test_the_marked_primitives_are_exactly_those_with_a_case():
    marked = {name for name, cls in _exported_primitives().items() if cls.conj_commutes}
    # tidu's cotangent sums (a bare lax.add, bound by transposes only): their own test
    assert "add_any" in marked
    marked.discard("add_any")
    assert marked == set(COMMUTING), (
        f"marked without a case: {sorted(marked - set(COMMUTING))}; "
        f"a case but not marked: {sorted(set(COMMUTING) - marked)}"
    )


@pytest.mark.parametrize("name", sorted(COMMUTING))
def test_each_marked_lowering_commutes_with_conjugation_exactly(name, monkeypatch):
    make, f = COMMUTING[name]
    args = make()
    op = _applied(f, args, monkeypatch)
    assert op.name == name
    _assert_lowering_commutes(op, args)


@pytest.mark.parametrize(("source", "target"), MORE_CONVERTS, ids=str)
def test_every_kind_of_convert_commutes_with_conjugation(source, target, monkeypatch):
    x = _complex((6,), source) * 3 if np.dtype(source).kind == "c" else _real((6,)) * 3
    op = _applied(lambda x: tf.lax.convert_element_type(x, target), [x], monkeypatch)
    _assert_lowering_commutes(op, [x])


def test_cotangent_sums_commute_with_conjugation():
    _assert_lowering_commutes(AddAny(), [_complex((3, 4)), _complex((3, 4))])


# ---------------------------------------------------------------------- random chains

UNARY: dict[str, Callable[[Any], Any]] = {
    "conj": tf.conj,
    "transpose": lambda x: tf.lax.transpose(x, (1, 0)),
    "reshape": lambda x: tf.reshape(tf.reshape(x, (9,)), (3, 3)),
    "neg": lambda x: -x,
    "row sums": lambda x: tf.broadcast_to(tf.sum(x, axis=0, keepdims=True), (3, 3)),
    "rev": lambda x: tf.lax.rev(x, (1,)),
    "real, as complex": lambda x: tf.real(x) * (1.0 + 0.0j),
    "exp (not marked)": lambda x: tf.exp(x * 0.3),
    "imag (not marked)": lambda x: tf.imag(x) + x,
}
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b * 0.5,
    "matmul": lambda a, b: (a @ b) * 0.5,
    "select": lambda a, b: tf.where(tf.real(a) > 0, a, b),
}


@st.composite
def chains(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Steps ``(function, operand, operand)`` over a growing list of values that starts
    with two arguments (a unary step reads the first operand)."""
    steps = []
    for count in range(2, 2 + draw(st.integers(3, 10))):
        name = draw(st.sampled_from(sorted(UNARY) + sorted(BINARY) + ["conj"] * 3))
        steps.append((name, draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))))
    return steps


def _run(steps: list[tuple[str, int, int]], a: Any, b: Any) -> Any:
    values = [a, b]
    for name, i, j in steps:
        step = UNARY[name](values[i]) if name in UNARY else BINARY[name](values[i], values[j])
        values.append(step)
    return values[-1]


@fuzz_settings(25)
@given(steps=chains())
def test_random_conjugation_chains_agree_on_both_backends(steps):
    a, b = _complex((3, 3)), _complex((3, 3))
    w = _complex((3, 3))

    def modes(a: Any, b: Any) -> Any:
        def loss(a: Any, b: Any) -> Any:
            return tf.sum(tf.real(tf.conj(w) * _run(steps, a, b)))

        return _run(steps, a, b), tf.grad(loss, argnums=(0, 1))(a, b)

    assert_same(tf.jit(modes, backend="xla")(a, b), tf.jit(modes)(a, b), what=str(steps))


# ---------------------------------------------------------------------- what it saves


def _conjugations(text: str) -> int:
    """Complex conjugations in StableHLO text (JAX lowers ``conj`` to a negated
    imaginary part)."""
    return len(re.findall(r"stablehlo\.negate", text))


def test_conjugates_that_cancel_emit_nothing():
    x = _complex((3, 4))
    f = tf.jit(lambda x: tf.conj(tf.lax.transpose(tf.conj(x), (1, 0)) * 2.0), backend="xla")
    assert _conjugations(f.lower(x).as_stablehlo()) == 0
    np.testing.assert_allclose(np.asarray(f(x)), x.T * 2.0, rtol=1e-15)


def _mps_norm(m: Any, conj: Callable[[Any], Any], real: Callable[[Any], Any], *ts: Any) -> Any:
    env = m.einsum("asb,asc->bc", ts[0], conj(ts[0]))
    for t in ts[1:]:
        env = m.einsum("bc,bsd,cse->de", env, t, conj(t))
    return real(m.sum(env))


def test_an_mps_norm_gradient_conjugates_no_more_than_jax_grad():
    length, chi = 8, 3
    shapes = [(1 if i == 0 else chi, 2, 1 if i == length - 1 else chi) for i in range(length)]
    cores = [_complex(s) for s in shapes]
    argnums = tuple(range(length))
    ours = tf.jit(
        tf.grad(lambda *ts: _mps_norm(tf, tf.conj, tf.real, *ts), argnums=argnums),
        backend="xla",
    )
    with jax.enable_x64(True):
        theirs = jax.jit(
            jax.grad(lambda *ts: _mps_norm(jnp, jnp.conj, jnp.real, *ts), argnums=argnums)
        )
        jax_text = theirs.lower(*cores).as_text()
        jax_grads = theirs(*cores)
    our_text = ours.lower(*cores).as_stablehlo()
    assert _conjugations(our_text) <= _conjugations(jax_text)
    assert _conjugations(our_text) <= 2 * length  # one per core, one per gradient
    for mine, jaxs in zip(ours(*cores), jax_grads, strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.conj(np.asarray(jaxs)), rtol=1e-12)


def test_an_mps_energy_gradient_conjugates_no_more_than_jax_grad():
    length = 6
    mpo = mps.ising_mpo(length)
    cores = mps.random_mps(length, 3, dtype=np.complex128, seed=3)
    complex_mpo = [np.asarray(w, np.complex128) for w in mpo]
    argnums = tuple(range(length))

    def jax_energy(*cs: Any) -> Any:
        env = jnp.ones((1, 1, 1))
        for core, w in zip(cs, complex_mpo, strict=True):
            env = jnp.einsum("awc,atb,wvst,csd->bvd", env, core, w, jnp.conj(core))
        norm = jnp.einsum("asb,asd->bd", cs[0], jnp.conj(cs[0]))
        for core in cs[1:]:
            norm = jnp.einsum("ac,asb,csd->bd", norm, core, jnp.conj(core))
        return jnp.real(jnp.sum(env)) / jnp.real(jnp.sum(norm))

    ours = tf.jit(
        tf.value_and_grad(lambda *cs: mps.energy(cs, mpo), argnums=argnums), backend="xla"
    )
    with jax.enable_x64(True):
        theirs = jax.jit(jax.value_and_grad(jax_energy, argnums=argnums))
        jax_text = theirs.lower(*cores).as_text()
        jax_value, jax_grads = theirs(*cores)
    assert _conjugations(ours.lower(*cores).as_stablehlo()) <= _conjugations(jax_text)
    value, grads = ours(*cores)
    np.testing.assert_allclose(np.asarray(value), np.asarray(jax_value), rtol=1e-13)
    for mine, jaxs in zip(grads, jax_grads, strict=True):
        np.testing.assert_allclose(np.asarray(mine), np.conj(np.asarray(jaxs)), rtol=1e-11)
