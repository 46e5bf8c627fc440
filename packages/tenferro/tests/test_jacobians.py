"""``tf.jacfwd``, ``tf.jacrev``, ``tf.jacobian`` and ``tf.hessian``: against hand Jacobians
and finite differences, argnums/has_aux/pytrees as JAX, complex conventions."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf

RNG = np.random.default_rng(11)
W = RNG.standard_normal((4, 3))


def layer(v: Any) -> Any:
    return tf.tanh(W @ v)


def layer_jacobian(v: np.ndarray) -> np.ndarray:
    return (1 - np.tanh(W @ v) ** 2)[:, None] * W


def finite_jacobian(fun: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences along each real input direction: shape out + in."""
    out = np.asarray(fun(x))
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(fun(x + step)) - np.asarray(fun(x - step))) / (2 * eps))
    return np.moveaxis(
        np.array(columns).reshape((*x.shape, *out.shape)), range(x.ndim), range(-x.ndim, 0)
    )


@pytest.mark.parametrize("transform", [tf.jacfwd, tf.jacrev, tf.jacobian])
def test_hand_jacobian(transform):
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(transform(layer)(x), layer_jacobian(x), rtol=1e-12)


@fuzz_settings(15)
@given(
    in_shape=st.sampled_from([(), (3,), (2, 2)]),
    out_kind=st.sampled_from(["scalar", "same", "outer"]),
)
def test_jacobians_match_finite_differences_for_any_shapes(in_shape, out_kind):
    rng = np.random.default_rng(zlib.crc32(repr((in_shape, out_kind)).encode()))
    x = rng.standard_normal(in_shape)

    def fun(v: Any) -> Any:
        if out_kind == "scalar":
            return tf.sum(tf.sin(v) * v)
        if out_kind == "same":
            return tf.exp(v) * tf.sum(v)
        return tf.reshape(v, (-1, 1)) * tf.cos(tf.reshape(v, (1, -1)))

    expected = finite_jacobian(lambda a: fun(tf.asarray(a)), x)
    for transform in (tf.jacfwd, tf.jacrev):
        got = np.asarray(transform(fun)(x))
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_hessian_matches_the_hand_hessian_and_is_forward_over_reverse():
    x = RNG.standard_normal(3)
    s = lambda v: tf.sum(tf.sin(v) ** 3) + tf.sum(v) ** 2  # noqa: E731
    hand = np.diag(6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3) + 2
    np.testing.assert_allclose(tf.hessian(s)(x), hand, rtol=1e-10)
    np.testing.assert_allclose(tf.jacrev(tf.jacrev(s))(x), hand, rtol=1e-10)
    np.testing.assert_allclose(tf.jacfwd(tf.jacfwd(s))(x), hand, rtol=1e-10)


def test_argnums_pytrees_and_has_aux_as_jax():
    a, b = RNG.standard_normal(3), RNG.standard_normal(3)

    def fun(p: Any, q: Any) -> Any:
        return {"prod": p["x"] * q, "sum": tf.sum(p["x"])}, "aux"

    for transform in (tf.jacfwd, tf.jacrev):
        jac, aux = transform(fun, argnums=(0, 1), has_aux=True)({"x": a}, b)
        assert aux == "aux"
        np.testing.assert_allclose(jac["prod"][0]["x"], np.diag(b))
        np.testing.assert_allclose(jac["prod"][1], np.diag(a))
        np.testing.assert_allclose(jac["sum"][0]["x"], np.ones(3))
        np.testing.assert_allclose(jac["sum"][1], np.zeros(3))
    hess, aux = tf.hessian(lambda v: (tf.sum(v**3), {"n": 1}), has_aux=True)(a)
    assert aux == {"n": 1}
    np.testing.assert_allclose(hess, np.diag(6 * a), rtol=1e-12)


def test_complex_conventions():
    z = np.array([1 + 2j, 0.5 - 1j])

    def holomorphic(v: Any) -> Any:
        return v * v * (2 + 1j)

    derivative = np.diag(2 * z * (2 + 1j))
    np.testing.assert_allclose(tf.jacfwd(holomorphic)(z), derivative, rtol=1e-12)
    np.testing.assert_allclose(tf.jacrev(holomorphic)(z), derivative, rtol=1e-12)
    # A real function of complex inputs: jacrev gives tf.grad (PyTorch's convention: 2z).
    norm = lambda v: tf.sum(tf.abs(v) ** 2)  # noqa: E731
    np.testing.assert_allclose(tf.jacrev(norm)(z), 2 * z, rtol=1e-12)
    np.testing.assert_allclose(tf.jacrev(norm)(z), tf.grad(norm)(z), rtol=1e-12)
    # Real input, complex output: forward mode gives the full derivative ...
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(
        tf.jacfwd(lambda v: tf.exp(1j * v))(x), np.diag(1j * np.exp(1j * x)), rtol=1e-12
    )
    # ... reverse mode would lose its imaginary part, so it refuses (as JAX does).
    with pytest.raises(tf.DTypeError, match=r"jacrev.*use jacfwd"):
        tf.jacrev(lambda v: tf.exp(1j * v))(x)


def test_jacobians_compose_with_other_transforms():
    xs = RNG.standard_normal((5, 3))
    batched = tf.vmap(tf.jacrev(layer))(xs)
    np.testing.assert_allclose(batched, [layer_jacobian(v) for v in xs], rtol=1e-12)
    jitted = tf.jit(tf.jacfwd(layer))(xs[0])
    np.testing.assert_allclose(jitted, layer_jacobian(xs[0]), rtol=1e-12)
    # d/dx of sum(J(x)) against finite differences (a transform over a Jacobian).
    g = tf.grad(lambda v: tf.sum(tf.jacrev(layer)(v)))(xs[0])
    fd = finite_jacobian(lambda v: np.sum(layer_jacobian(v)), xs[0])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_bad_arguments_raise():
    with pytest.raises(tf.DTypeError, match=r"jacfwd.*int64 argument"):
        tf.jacfwd(lambda v: v * 2)(np.arange(3))
    with pytest.raises(tf.ParameterError, match=r"jacrev.*argnums 2 out of range"):
        tf.jacrev(layer, argnums=2)(np.ones(3))
    with pytest.raises(tf.ArgumentTypeError, match=r"hessian.*callable"):
        tf.hessian(3)
    with pytest.raises(tf.ArgumentTypeError, match=r"jacfwd.*pair"):
        tf.jacfwd(layer, has_aux=True)(np.ones(3))


def test_per_example_jacobians_and_hessians_and_the_jacobian_of_a_batched_function():
    xs = RNG.standard_normal((5, 3))
    np.testing.assert_allclose(
        tf.vmap(tf.jacfwd(layer))(xs), [layer_jacobian(v) for v in xs], rtol=1e-12
    )

    def cubes(v: Any) -> Any:
        return tf.sum(tf.sin(v) ** 3)

    def hand_hessian(v: np.ndarray) -> np.ndarray:
        return np.diag(6 * np.sin(v) * np.cos(v) ** 2 - 3 * np.sin(v) ** 3)

    np.testing.assert_allclose(
        tf.vmap(tf.hessian(cubes))(xs), [hand_hessian(v) for v in xs], rtol=1e-10
    )
    full = np.asarray(tf.jacrev(tf.vmap(layer))(xs))  # (5, 4, 5, 3): block diagonal
    for k in range(5):
        for m in range(5):
            expected = layer_jacobian(xs[k]) if k == m else np.zeros((4, 3))
            np.testing.assert_allclose(full[k, :, m, :], expected, rtol=1e-12, atol=0)
    _, jvp_fn = tf.linearize(layer, xs[0])
    np.testing.assert_allclose(tf.vmap(jvp_fn)(np.eye(3)), layer_jacobian(xs[0]).T, rtol=1e-12)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian"])
@pytest.mark.parametrize("has_aux", [False, True])
def test_keyword_arguments_pass_through_undifferentiated(transform: str, has_aux: bool) -> None:
    """As JAX's: keywords reach the function at every call; only ``argnums`` are
    differentiated."""
    x = np.array([0.3, -0.7, 1.1])

    def f(v: Any, *, power: int, scale: float) -> Any:
        value = scale * tf.sum(v**power)
        return (value, {"scale": scale}) if has_aux else value

    jac = getattr(tf, transform)(f, has_aux=has_aux)
    for power, scale in [(2, 1.5), (3, -0.5)]:
        result = jac(x, power=power, scale=scale)
        got, aux = result if has_aux else (result, None)
        if transform == "hessian":
            expected = np.diag(scale * power * (power - 1) * x ** (power - 2))
        else:
            expected = scale * power * x ** (power - 1)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        if has_aux:
            assert aux == {"scale": scale}
