"""``tf.custom_jvp`` and ``tf.custom_vjp`` (issue 13): users' own rules with JAX's API,
in every mode (eager tape, traced values, every transform) and to second order.

Each rule is checked three ways where its contract allows: against finite differences,
by the adjoint identity between its JVP and its transpose, and at second order
(``check_grads(order=2)``). ``custom_vjp`` has no forward mode by contract, so its checks
are reverse-mode ones: the VJP against finite differences through the adjoint identity,
reverse over reverse, and forward over reverse (HVP). Rules that deliberately differ
from the true derivative prove that the user's rule is the one used.
"""

from __future__ import annotations

import collections
import functools
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro.errors import ShapeError, TenferroError
from tidu import ADRuleError

Pair = collections.namedtuple("Pair", "first second")
RNG = np.random.default_rng(1)
FLOAT_DTYPES = [np.float64, np.complex128]


def sample(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    x = RNG.uniform(0.3, 1.5, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.uniform(-0.5, 0.5, shape)
    return x.astype(dtype)


# ---------------------------------------------------------------------- correct rules


@tf.custom_jvp
def sin_times(x: Any, y: Any) -> Any:
    return tf.sin(x) * y


@sin_times.defjvp
def _sin_times_jvp(primals: Any, tangents: Any) -> Any:
    x, y = primals
    dx, dy = tangents
    return sin_times(x, y), tf.cos(x) * dx * y + tf.sin(x) * dy


@tf.custom_vjp
def exp_times(x: Any, y: Any) -> Any:
    return tf.exp(x) * y


def _exp_times_fwd(x: Any, y: Any) -> Any:
    e = tf.exp(x)
    return e * y, (e, y)


def _exp_times_bwd(residuals: Any, g: Any) -> Any:
    e, y = residuals
    # conjugate convention: the cotangent is multiplied by conj(f'(z))
    return (tf.conj(e * y) * g, tf.conj(e) * g)


exp_times.defvjp(_exp_times_fwd, _exp_times_bwd)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_custom_jvp_rule_three_ways_to_second_order(dtype, shape):
    x, y = sample(shape, dtype), sample(shape, dtype)
    tf.testing.check_grads(sin_times, [x, y], order=2, modes=("fwd", "rev"))


def check_reverse(f: Any, primals: list[np.ndarray], order: int = 2) -> None:
    """The VJP of ``f`` against finite differences (adjoint identity), recursively on
    ``x -> J(x)^H c`` (reverse over reverse) up to ``order``."""
    tangents = [sample(p.shape, p.dtype) for p in primals]
    out, pullback = tf.vjp(f, *primals)
    cotangent = sample(np.shape(out), np.asarray(out).dtype)
    pulled = pullback(cotangent)
    fd = tf.testing.numerical_jvp(f, primals, tangents, 1e-6)[0]
    forward = np.real(np.vdot(cotangent, fd))
    reverse = sum(np.real(np.vdot(p.numpy(), t)) for p, t in zip(pulled, tangents, strict=True))
    np.testing.assert_allclose(reverse, forward, rtol=1e-6, atol=1e-8)
    if order > 1:
        check_reverse(lambda *xs: tf.vjp(f, *xs)[1](cotangent)[0], primals, order - 1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 2)])
def test_custom_vjp_rule_against_finite_differences_to_second_order(dtype, shape):
    x, y = sample(shape, dtype), sample(shape, dtype)
    check_reverse(exp_times, [x, y], order=2)
    real = sample(shape)
    loss = lambda v: tf.sum(tf.real(exp_times(v, y)))  # noqa: E731
    # forward over reverse (HVP) equals the finite difference of the gradient
    direction = sample(shape)
    hvp = tf.hvp(loss, (real,), (direction,)).numpy()
    step = 1e-6
    fd = (tf.grad(loss)(real + step * direction) - tf.grad(loss)(real - step * direction)) / (
        2 * step
    )
    np.testing.assert_allclose(hvp, fd.numpy(), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------- rules that differ


@st.composite
def scaled_inputs(draw: Any) -> tuple[float, np.ndarray]:
    k = draw(st.sampled_from([-2.0, 0.5, 3.0]))
    n = draw(st.integers(1, 4))
    values = draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n))
    return k, np.array(values)


def scaled_sin_jvp(k: float) -> tf.custom_jvp:
    """``sin`` whose rule claims ``k·cos``: a derivative only the rule can produce."""

    @tf.custom_jvp
    def f(x: Any) -> Any:
        return tf.sin(x)

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (dx,) = primals, tangents
        return f(x), k * tf.cos(x) * dx

    return f


def scaled_sin_vjp(k: float) -> tf.custom_vjp:
    @tf.custom_vjp
    def f(x: Any) -> Any:
        return tf.sin(x)

    f.defvjp(lambda x: (f(x), (x,)), lambda res, g: (k * tf.cos(res[0]) * g,))
    return f


@fuzz_settings(12)
@given(scaled_inputs())
def test_the_users_jvp_rule_is_used_in_every_mode(case):
    k, x = case
    f = scaled_sin_jvp(k)
    loss = lambda v: tf.sum(f(v))  # noqa: E731
    expected = k * np.cos(x)
    np.testing.assert_allclose(f(x).numpy(), np.sin(x))
    np.testing.assert_allclose(tf.grad(loss)(x).numpy(), expected)
    np.testing.assert_allclose(tf.jvp(f, (x,), (np.ones_like(x),))[1].numpy(), expected)
    np.testing.assert_allclose(tf.linearize(f, x)[1](np.ones_like(x)).numpy(), expected)
    np.testing.assert_allclose(tf.jit(tf.grad(loss))(x).numpy(), expected)
    np.testing.assert_allclose(tf.vjp(f, x)[1](np.ones_like(x))[0].numpy(), expected)
    # second order differentiates the rule: d/dx (k cos x) = -k sin x
    second = -k * np.sin(x)
    np.testing.assert_allclose(tf.hvp(loss, (x,), (np.ones_like(x),)).numpy(), second)
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(tf.grad(loss)(v)))(x).numpy(), second)
    # the eager tape, backward and forward, and traced values
    tape = tf.Tape()
    v = tape.track(x)
    np.testing.assert_allclose(tape.grad(loss(v), v).numpy(), expected)
    w = tf.EagerTensor(x, requires_grad=True)
    loss(w).backward()
    np.testing.assert_allclose(w.grad.numpy(), expected)
    _, tangent = tf.Tape().jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(tangent.numpy(), expected)
    leaf = tf.traced(x)
    np.testing.assert_allclose(loss(leaf).grad(leaf).eval().numpy(), expected)


@fuzz_settings(12)
@given(scaled_inputs())
def test_the_users_vjp_rule_is_used_in_every_reverse_mode(case):
    k, x = case
    f = scaled_sin_vjp(k)
    loss = lambda v: tf.sum(f(v))  # noqa: E731
    expected = k * np.cos(x)
    np.testing.assert_allclose(f(x).numpy(), np.sin(x))
    np.testing.assert_allclose(tf.grad(loss)(x).numpy(), expected)
    np.testing.assert_allclose(tf.jit(tf.grad(loss))(x).numpy(), expected)
    np.testing.assert_allclose(tf.vjp(f, x)[1](np.ones_like(x))[0].numpy(), expected)
    second = -k * np.sin(x)
    np.testing.assert_allclose(tf.hvp(loss, (x,), (np.ones_like(x),)).numpy(), second)
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(tf.grad(loss)(v)))(x).numpy(), second)
    tape = tf.Tape()
    v = tape.track(x)
    np.testing.assert_allclose(tape.grad(loss(v), v).numpy(), expected)
    w = tf.EagerTensor(x, requires_grad=True)
    loss(w).backward()
    np.testing.assert_allclose(w.grad.numpy(), expected)
    leaf = tf.traced(x)
    np.testing.assert_allclose(loss(leaf).grad(leaf).eval().numpy(), expected)


def test_custom_vjp_has_no_forward_mode_as_in_jax():
    f, x = scaled_sin_vjp(2.0), sample((3,))
    with pytest.raises(ADRuleError, match=r"custom_vjp.*no forward-mode derivative"):
        tf.jvp(f, (x,), (x,))
    with pytest.raises(ADRuleError, match="custom_vjp"):
        tf.linearize(f, x)[1](x)
    with pytest.raises(ADRuleError, match="custom_vjp"):
        tf.Tape().jvp(f, (x,), (x,))


def test_a_missing_rule_raises_adruleerror_never_a_zero():
    jvp_only = tf.custom_jvp(lambda x: tf.sin(x))
    vjp_only = tf.custom_vjp(lambda x: tf.sin(x))
    x = sample((2,))
    np.testing.assert_allclose(jvp_only(x).numpy(), np.sin(x))  # evaluation needs no rule
    for f in (jvp_only, vjp_only):
        with pytest.raises(ADRuleError):
            tf.grad(lambda v, f=f: tf.sum(f(v)))(x)


# ---------------------------------------------------------------------- pytrees, nondiff


@tf.custom_jvp
def tree_fn(params: dict[str, Any], pair: Pair) -> Any:
    return {"out": params["w"] * pair.first, "rest": (tf.sum(pair.second),)}


@tree_fn.defjvp
def _tree_fn_jvp(primals: Any, tangents: Any) -> Any:
    (params, pair), (dparams, dpair) = primals, tangents
    out = tree_fn(params, pair)
    return out, {
        "out": dparams["w"] * pair.first + params["w"] * dpair.first,
        "rest": (tf.sum(dpair.second),),
    }


@tf.custom_vjp
def tree_vjp(params: dict[str, Any], pair: Pair) -> Any:
    return Pair(params["w"] * pair.first, tf.sum(pair.second))


def _tree_vjp_fwd(params: Any, pair: Any) -> Any:
    return tree_vjp(params, pair), {"w": params["w"], "first": pair.first, "shape": 3}


def _tree_vjp_bwd(res: Any, g: Any) -> Any:
    assert res["shape"] == 3  # non-tensor residuals come back as they are
    ones = tf.ones_like(res["first"]) * g.second
    return {"w": g.first * res["first"]}, Pair(g.first * res["w"], ones)


tree_vjp.defvjp(_tree_vjp_fwd, _tree_vjp_bwd)


@pytest.mark.parametrize("fn", [tree_fn, tree_vjp], ids=["custom_jvp", "custom_vjp"])
def test_pytree_arguments_and_outputs(fn):
    w, a, b = sample((3,)), sample((3,)), sample((3,))
    params, pair = {"w": w}, Pair(a, b)

    def loss(p: Any, q: Any) -> Any:
        out = fn(p, q)
        leaves = tf.tree_util.tree_leaves(out)
        return tf.sum(leaves[0] ** 2) + 3 * leaves[1]

    gp, gq = tf.grad(loss, argnums=(0, 1))(params, pair)
    assert isinstance(gq, Pair)
    assert set(gp) == {"w"}
    np.testing.assert_allclose(gp["w"].numpy(), 2 * w * a * a)
    np.testing.assert_allclose(gq.first.numpy(), 2 * w * w * a)
    np.testing.assert_allclose(gq.second.numpy(), 3 * np.ones(3))
    if fn is tree_fn:
        tf.testing.check_grads(lambda w_, a_, b_: fn({"w": w_}, Pair(a_, b_)), [w, a, b], order=2)
    else:
        check_reverse(lambda w_, a_, b_: fn({"w": w_}, Pair(a_, b_)).first, [w, a, b])


def test_nondiff_argnums_pass_static_values_first_to_the_rules():
    @functools.partial(tf.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo: float, hi: float, x: Any) -> Any:
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (tf.clip(g, lo, hi),))

    @functools.partial(tf.custom_jvp, nondiff_argnums=(0,))
    def apply(fn: Any, x: Any) -> Any:
        return fn(x)

    @apply.defjvp
    def _apply_jvp(fn: Any, primals: Any, tangents: Any) -> Any:
        (x,), (dx,) = primals, tangents
        return apply(fn, x), 10.0 * dx  # a rule no function of fn gives

    x = np.array([-3.0, 0.5, 3.0])
    g = tf.grad(lambda v: tf.sum(clip_gradient(-1.0, 1.0, v) * v))(x)
    np.testing.assert_allclose(g.numpy(), np.clip(x, -1, 1) + x)
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(apply(tf.sin, v)))(x).numpy(), 10.0)
    np.testing.assert_allclose(apply(tf.sin, x).numpy(), np.sin(x))
    # keyword arguments resolve to positions
    np.testing.assert_allclose(tf.grad(lambda v: tf.sum(apply(fn=tf.sin, x=v)))(x).numpy(), 10.0)
    with pytest.raises(TenferroError, match="nondiff_argnums but is a tensor"):
        tf.grad(lambda v: tf.sum(apply(v, v)))(x)


# ---------------------------------------------------------------------- bad rules


def test_bad_rules_are_reported_naming_the_function():
    x = sample((3,))
    captured = sample((3,))

    @tf.custom_jvp
    def captures(v: Any) -> Any:
        return tf.sin(v)

    captures.defjvp(lambda p, t: (captures(p[0]), t[0] * captured))
    with pytest.raises(TenferroError, match=r"custom_jvp\(.*captures\).*captured from outside"):
        tf.grad(lambda v: tf.sum(captures(v)))(x)

    @tf.custom_vjp
    def wrong_structure(v: Any) -> Any:
        return tf.sin(v)

    wrong_structure.defvjp(lambda v: (tf.sin(v), v), lambda r, g: ([g],))
    with pytest.raises(ShapeError, match=r"bwd's cotangent 0 has structure \[\*\]"):
        tf.grad(lambda v: tf.sum(wrong_structure(v)))(x)

    @tf.custom_vjp
    def wrong_count(v: Any) -> Any:
        return tf.sin(v)

    wrong_count.defvjp(lambda v: (tf.sin(v), v), lambda r, g: g)
    with pytest.raises(TenferroError, match="one cotangent per argument"):
        tf.grad(lambda v: tf.sum(wrong_count(v)))(x)

    @tf.custom_jvp
    def wrong_shape(v: Any) -> Any:
        return tf.sin(v)

    wrong_shape.defjvp(lambda p, t: (tf.sin(p[0]), tf.sum(t[0])))
    with pytest.raises(ShapeError, match="tangent of output 0 has shape"):
        tf.jvp(wrong_shape, (x,), (x,))
    with pytest.raises(TenferroError, match="defjvp needs a callable"):
        wrong_shape.defjvp(3)  # type: ignore[arg-type]


def test_defjvps_one_rule_per_argument():
    @tf.custom_jvp
    def mul(x: Any, y: Any) -> Any:
        return x * y

    mul.defjvps(lambda dx, ans, x, y: 2 * dx * y, None)  # y's tangent deliberately dropped
    x, y = sample((3,)), sample((3,))
    gx, gy = tf.grad(lambda a, b: tf.sum(mul(a, b)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.numpy(), 2 * y)
    np.testing.assert_array_equal(gy.numpy(), np.zeros(3))


def test_custom_functions_inside_checkpoint_and_jit_and_the_caches_clear():
    f, x = scaled_sin_jvp(4.0), sample((3,))
    tape = tf.Tape()
    v = tape.track(x)
    segment = tf.checkpoint(lambda u: f(u) * 2.0)
    np.testing.assert_allclose(tape.grad(tf.sum(segment(v)), v).numpy(), 8.0 * np.cos(x))
    jitted = tf.jit(lambda u: f(u) * 2.0)
    np.testing.assert_allclose(jitted(x).numpy(), 2.0 * np.sin(x))
    assert tf.cache_stats()["custom rule signatures"].size > 0
    tf.clear_caches()
    assert tf.cache_stats()["custom rule signatures"].size == 0
    np.testing.assert_allclose(tf.grad(lambda u: tf.sum(f(u)))(x).numpy(), 4.0 * np.cos(x))


# ---------------------------------------------------------------------- composed with transforms


_N = 3
_RNG = np.random.default_rng(11)
_A = _RNG.standard_normal((_N, _N))
_B = _RNG.standard_normal((_N, _N))
_C = _RNG.standard_normal(_N) + 1j * _RNG.standard_normal(_N)


def _close(got: Any, expected: Any, tol: float = 1e-6) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale)


@tf.custom_jvp
def _doubled_sin(x: Any) -> Any:
    return tf.sin(x) * 2.0


@_doubled_sin.defjvp
def _doubled_sin_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return _doubled_sin(x), 2.0 * tf.cos(x) * t


@tf.custom_vjp
def _matvec(x: Any, y: Any) -> Any:
    return tf.einsum("ij,j->i", x, y)


def _matvec_fwd(x: Any, y: Any) -> Any:
    return _matvec(x, y), (x, y)


def _matvec_bwd(residuals: Any, ct: Any) -> Any:
    x, y = residuals
    return tf.einsum("i,j->ij", ct, tf.conj(y)), tf.einsum("ij,i->j", tf.conj(x), ct)


_matvec.defvjp(_matvec_fwd, _matvec_bwd)


def test_custom_jvp_composes_with_every_transform() -> None:
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    loss = lambda y: tf.sum(_doubled_sin(y))  # noqa: E731
    grad, hvp = 2 * np.cos(x), -2 * np.sin(x) * v
    _close(tf.grad(loss)(x), grad, 1e-12)
    _close(tf.jit(tf.grad(loss))(x), grad, 1e-12)
    _close(tf.vmap(tf.grad(loss))(np.stack([x, 2 * x])), [grad, 2 * np.cos(2 * x)], 1e-12)
    _close(tf.hvp(loss, (x,), (v,)), hvp, 1e-12)
    _close(tf.hessian(loss)(x), np.diag(-2 * np.sin(x)), 1e-12)
    _close(tf.jacrev(_doubled_sin)(x), np.diag(grad), 1e-12)
    _close(tf.jacfwd(_doubled_sin)(x), np.diag(grad), 1e-12)
    _close(tf.grad(lambda y: tf.sum(tf.checkpoint(_doubled_sin)(y)))(x), grad, 1e-12)
    _close(tf.hvp(lambda y: tf.sum(tf.checkpoint(_doubled_sin)(y)), (x,), (v,)), hvp, 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(tf.sum(tf.checkpoint(_doubled_sin)(t)), t), grad, 1e-12)
    _close(tf.Tape().hvp(loss, [x], [v]), hvp, 1e-12)


def test_custom_vjp_composes_with_reverse_transforms() -> None:
    x, y, w = _A, _C.real, np.array([1.0, -2.0, 0.5])
    loss = lambda m, u: tf.sum(_matvec(m, u) * w)  # noqa: E731
    _close(tf.grad(loss)(x, y), np.outer(w, y), 1e-12)
    _close(tf.grad(loss, argnums=1)(x, y), x.T @ w, 1e-12)
    _close(tf.jit(tf.grad(loss))(x, y), np.outer(w, y), 1e-12)
    batch = np.stack([x, _B])
    _close(tf.vmap(tf.grad(loss), in_axes=(0, None))(batch, y), [np.outer(w, y)] * 2, 1e-12)
    _close(tf.jacrev(_matvec, argnums=1)(x, y), x, 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(loss(t, y), t), np.outer(w, y), 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(tf.sum(tf.checkpoint(_matvec)(t, y) * w), t), np.outer(w, y), 1e-12)
    with pytest.raises(ADRuleError, match="custom_vjp"):
        tf.jvp(lambda m: _matvec(m, y), (x,), (x,))  # no forward mode, as in JAX
    z, zy = x + 1j * _B, _C
    expected = tf.grad(lambda m: tf.sum(tf.abs(tf.einsum("ij,j->i", m, zy)) ** 2))(z)
    _close(tf.grad(lambda m: tf.sum(tf.abs(_matvec(m, zy)) ** 2))(z), expected, 1e-12)
