"""PyTorch and JAX as extra oracles (each test skips when its peer is not installed).

* primal values of the StableHLO-style primitives against ``jax.lax``;
* complex gradients equal PyTorch's and are the complex conjugate of JAX's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax

RNG = np.random.default_rng(11)


def _jax() -> Any:
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    jax.config.update("jax_enable_x64", True)
    return jax


def _array(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray[Any, Any]:
    data = RNG.standard_normal(shape)
    if dtype.startswith("complex"):
        data = data + 1j * RNG.standard_normal(shape)
    return data.astype(dtype)


def test_primitive_values_match_jax_lax():
    jax = _jax()
    jl = jax.lax
    a, b = _array((3, 4, 2)), _array((2, 4, 5))
    x = _array((5, 4))
    cases = [
        (
            lambda p, q: lax.dot_general(p, q, (1, 2), (1, 0)),
            lambda p, q: jl.dot_general(p, q, (((1, 2), (1, 0)), ((), ()))),
            (a, b),
        ),
        (
            lambda p, q: lax.dot_general(p, q, (1,), (1,), (2,), (0,)),
            lambda p, q: jl.dot_general(p, q, (((1,), (1,)), ((2,), (0,)))),
            (a, b),
        ),
        (
            lambda p: lax.broadcast_in_dim(p, (2, 5, 3, 4), (1, 3)),
            lambda p: jl.broadcast_in_dim(p, (2, 5, 3, 4), (1, 3)),
            (x,),
        ),
        (
            lambda p: lax.pad(p, (1, -2), (-1, 3), (2, 0)),
            lambda p: jl.pad(p, 0.0, [(1, -1, 2), (-2, 3, 0)]),
            (x,),
        ),
        (
            lambda p: lax.slice(p, (1, 0), (5, 4), (2, 3)),
            lambda p: jl.slice(p, (1, 0), (5, 4), (2, 3)),
            (x,),
        ),
        (lambda p: lax.rev(p, (0,)), lambda p: jl.rev(p, (0,)), (x,)),
        (lambda p: lax.transpose(p, (1, 0)), lambda p: jl.transpose(p, (1, 0)), (x,)),
        (lambda p: lax.reduce_max(p, (1,)), lambda p: jl.reduce_max(p, (1,)), (x,)),
        (lambda p: lax.reduce_prod(p, (0,)), lambda p: jl.reduce_prod(p, (0,)), (x,)),
        (lambda p: lax.rem(p, p * 0 + 0.7), lambda p: jl.rem(p, p * 0 + 0.7), (x,)),
        (
            lambda p: lax.clamp(-0.5, p, 0.5),
            lambda p: jl.clamp(-0.5, p, 0.5),
            (x,),
        ),
    ]
    for ours, theirs, args in cases:
        expected = np.asarray(theirs(*args))
        actual = np.asarray(ours(*[tf.asarray(v) for v in args]))
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def test_gather_scatter_and_dynamic_slices_match_jax_lax():
    jax = _jax()
    jl = jax.lax
    operand = _array((5, 6, 3))
    indices = np.array([[[0, 1], [4, 3]], [[2, 2], [1, 5]]], dtype=np.int64)
    numbers = {
        "offset_dims": (2,),
        "collapsed_slice_dims": (0, 1),
        "start_index_map": (0, 1),
        "index_vector_dim": 2,
        "slice_sizes": (1, 1, 3),
    }
    ours = lax.gather(tf.asarray(operand), tf.asarray(indices), **numbers)
    dimension_numbers = jl.GatherDimensionNumbers(
        offset_dims=(2,), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)
    )
    theirs = jl.gather(operand, indices, dimension_numbers, (1, 1, 3))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))

    updates = _array((2, 2, 3))
    ours = lax.scatter_add(
        tf.asarray(operand),
        tf.asarray(indices),
        tf.asarray(updates),
        update_window_dims=(2,),
        inserted_window_dims=(0, 1),
        scatter_dims_to_operand_dims=(0, 1),
        index_vector_dim=2,
    )
    scatter_numbers = jl.ScatterDimensionNumbers(
        update_window_dims=(2,), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1)
    )
    theirs = jl.scatter_add(operand, indices, updates, scatter_numbers)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))

    # In bounds, and clamped at the high end. (Negative starts differ on purpose: jax.lax
    # counts them from the end, StableHLO and tenferro clamp them to 0.)
    for starts in ([1, 2, 0], [4, 5, 2], [0, 9, 7]):
        ours = lax.dynamic_slice(tf.asarray(operand), tf.asarray(np.array(starts)), (2, 3, 2))
        theirs = jl.dynamic_slice(operand, starts, (2, 3, 2))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
        update = _array((2, 3, 2))
        ours = lax.dynamic_update_slice(
            tf.asarray(operand), tf.asarray(update), tf.asarray(np.array(starts))
        )
        theirs = jl.dynamic_update_slice(operand, update, starts)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))


COMPLEX_LOSSES = {
    "abs2": (lambda z: tf.sum(tf.abs(z) ** 2), lambda m, z: m.sum(m.abs(z) ** 2)),
    "real_exp": (lambda z: tf.sum(tf.real(tf.exp(z))), lambda m, z: m.sum(m.real(m.exp(z)))),
    "mixed": (
        lambda z: tf.sum(tf.real(tf.sin(z) * tf.conj(z)) + tf.imag(z**3)),
        lambda m, z: m.sum(m.real(m.sin(z) * m.conj(z)) + m.imag(z**3)),
    ),
    "log_abs": (lambda z: tf.sum(tf.log(tf.abs(z))), lambda m, z: m.sum(m.log(m.abs(z)))),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_LOSSES))
def test_complex_gradients_equal_pytorchs(name):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    ours_fn, theirs_fn = COMPLEX_LOSSES[name]
    z = _array((4,), "complex128")
    ours = np.asarray(tf.grad(ours_fn)(z))
    t = torch.tensor(z, requires_grad=True)
    theirs_fn(torch, t).backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(COMPLEX_LOSSES))
def test_complex_gradients_are_the_conjugate_of_jaxs(name):
    jax = _jax()
    ours_fn, theirs_fn = COMPLEX_LOSSES[name]
    z = _array((4,), "complex128")
    ours = np.asarray(tf.grad(ours_fn)(z))
    theirs = np.asarray(jax.grad(lambda v: theirs_fn(jax.numpy, v))(z))
    np.testing.assert_allclose(ours, np.conj(theirs), rtol=1e-12, atol=1e-12)


def test_complex_vjp_and_hvp_against_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    z = _array((3,), "complex128")
    c = _array((3,), "complex128")
    _, pullback = tf.vjp(lambda v: tf.exp(v) * v, z)
    t = torch.tensor(z, requires_grad=True)
    (torch.exp(t) * t).backward(torch.tensor(c))
    np.testing.assert_allclose(np.asarray(pullback(c)[0]), t.grad.numpy(), rtol=1e-12)

    v = _array((3,), "complex128")

    def loss(m: Any, x: Any) -> Any:
        return m.sum(m.real(m.exp(x) * m.conj(x)))

    ours = np.asarray(tf.hvp(lambda x: loss(tf, x), (z,), (v,)))
    theirs = torch.autograd.functional.hvp(
        lambda x: loss(torch, x), torch.tensor(z), torch.tensor(v)
    )[1]
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10, atol=1e-10)
