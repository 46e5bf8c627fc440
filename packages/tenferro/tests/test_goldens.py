"""Golden numbers from the reference's test catalogue (spec §3.3, §5.1, §5.5, §6.4, §11).

The reference stores matrices column-major; :func:`colmajor` converts them to the
row-major arrays tenferro uses, so every number below is the reference's own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro import lax


def colmajor(data: list[float], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    return np.array(data, dtype=float).reshape(shape, order="F")


def close(actual: Any, expected: Any, tol: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def fd_grad(f: Any, x: np.ndarray[Any, Any], h: float = 1e-6) -> np.ndarray[Any, Any]:
    """Central finite-difference gradient of a real scalar function of a real array."""
    g = np.zeros_like(x, dtype=float)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x, dtype=float)
        step[index] = h
        g[index] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return g


# ---------------------------------------------------------------------- §5.1 complex


def test_complex_gradients_follow_the_conjugate_convention():
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    close(tf.grad(lambda z: tf.sum(tf.real(z * tf.conj(z))))(z), 2 * z)
    close(tf.grad(lambda z: tf.sum(tf.real(tf.exp(z))))(z), np.conj(np.exp(z)))
    c = np.array([0.7 - 1.1j, 2.0 + 0.5j])
    _, pullback = tf.vjp(tf.exp, z)
    close(pullback(c)[0], c * np.conj(np.exp(z)))


def test_real_input_through_complex_intermediate_gets_the_real_part():
    x = np.array([0.3, -1.2])
    # f(x) = Re(exp(i x)) = cos x, so the gradient is -sin x.
    gradient = tf.grad(lambda x: tf.sum(tf.real(tf.exp(x * 1j))))(x)
    assert np.asarray(gradient).dtype == np.float64
    close(gradient, -np.sin(x))


# ---------------------------------------------------------------------- §3.3 per-op tests


def test_sub_transpose():
    x, y = np.array([1.0, 2.0]), np.array([0.5, -4.0])
    _, pullback = tf.vjp(tf.subtract, x, y)
    dx, dy = pullback(np.array([3.0, -5.0]))
    close(dx, [3, -5])
    close(dy, [-3, 5])


def test_abs_gradient():
    close(tf.grad(lambda x: tf.sum(tf.abs(x)))(np.array([-1.7, 0.8, 2.3])), [-1, 1, 1])


def test_pow_derivatives_are_finite_at_zero_base():
    x, y = np.array([0.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0])
    close(tf.grad(lambda x: tf.sum(x**y))(x), [0, 12, 108])
    x, y = np.array([1.2, 1.8, 2.5]), np.array([0.5, 1.5, 2.0])
    close(tf.grad(lambda y: tf.sum(x**y))(y), np.log(x) * x**y)


def test_reduce_prod_is_zero_safe():
    def jvp(x: np.ndarray[Any, Any]) -> Any:
        return tf.jvp(tf.prod, (x,), (np.array([7.0, 11.0, 13.0]),))[1]

    close(jvp(np.array([0.0, 2.0, 3.0])), 42)
    close(jvp(np.array([0.0, 2.0, 0.0])), 0)
    x = colmajor([0, 2, 3, 4, 0, 0], (2, 3))
    _, pullback = tf.vjp(lambda x: tf.prod(x, axis=0), x)
    (gradient,) = pullback(np.array([0.5, -1.0, 2.0]))
    close(gradient, colmajor([1.0, 0.0, -4.0, -3.0, 0.0, 0.0], (2, 3)))


def test_broadcast_in_dim_transpose_sums():
    def f(x: Any) -> Any:
        return tf.sum(lax.broadcast_in_dim(x, (3, 3), (0,)))

    close(tf.grad(f)(np.array([1.0, 2.0, 3.0])), [3, 3, 3])


def test_gather_gradient_counts_repeated_indices():
    indices = np.array([2, 4, 0, 2, 2]).reshape(5, 1)

    def f(x: Any) -> Any:
        gathered = lax.gather(
            x,
            tf.asarray(indices),
            offset_dims=(),
            collapsed_slice_dims=(0,),
            start_index_map=(0,),
            index_vector_dim=1,
            slice_sizes=(1,),
        )
        return tf.sum(gathered)

    operand = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    close(tf.grad(f)(operand), [1, 0, 3, 0, 1])


def test_scatter_gradient_with_respect_to_updates_is_ones():
    indices = tf.asarray(np.array([[0], [2], [0]]))

    def f(updates: Any) -> Any:
        out = lax.scatter_add(
            tf.zeros((4,)),
            indices,
            updates,
            update_window_dims=(),
            inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,),
            index_vector_dim=1,
        )
        return tf.sum(out * out)  # non-trivial: d/du_k = 2 * out[idx_k]

    updates = np.array([1.0, 2.0, 3.0])
    close(tf.grad(f)(updates), [8, 4, 8])  # out = [4, 0, 2, 0]
    close(
        tf.grad(
            lambda u: tf.sum(
                lax.scatter_add(
                    tf.zeros((4,)),
                    indices,
                    u,
                    update_window_dims=(),
                    inserted_window_dims=(0,),
                    scatter_dims_to_operand_dims=(0,),
                    index_vector_dim=1,
                )
            )
        )(updates),
        [1, 1, 1],
    )


def test_dynamic_slice_clamps_its_start():
    x = tf.asarray(np.arange(5.0))
    close(lax.dynamic_slice(x, tf.asarray(np.array([4])), (3,)), [2, 3, 4])
    close(lax.dynamic_slice(x, tf.asarray(np.array([-2])), (3,)), [0, 1, 2])  # StableHLO


def test_maximum_and_clamp_ties():
    x = np.array([1.0, 2.0])
    gx, gy = tf.grad(lambda a, b: tf.sum(tf.maximum(a, b)), argnums=(0, 1))(x, x)
    close(gx, [0.5, 0.5])
    close(gy, [0.5, 0.5])
    values = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    close(tf.grad(lambda v: tf.sum(tf.clip(v, 0.0, 1.0)))(values), [0, 0, 1, 0, 0])
    lower, upper = np.full(5, 0.0), np.full(5, 1.0)
    g_lower, g_upper = tf.grad(lambda lo, hi: tf.sum(tf.clip(values, lo, hi)), argnums=(0, 1))(
        lower, upper
    )
    close(g_lower, [1, 0, 0, 0, 0])
    close(g_upper, [0, 0, 0, 0, 1])


def test_sign_has_zero_derivative_for_complex_inputs_too():
    z = np.array([1.0 + 1.0j, -2.0 + 0.5j])
    _, tangent = tf.jvp(tf.sign, (z,), (np.array([1.0 + 0j, 0.3j]),))
    close(tangent, [0, 0])


# ---------------------------------------------------------------------- §5.5 checkpoint


def test_checkpoint_gradient_flows_to_the_original_input():
    x = tf.traced(2.0)
    y = (x * x).checkpoint()
    z = y * y
    close(z.eval(), 16)
    close(z.grad(x).eval(), 32)
    close(fd_grad(lambda v: v**4, np.array(2.0)), 32, tol=1e-6)


def test_checkpoint_in_a_loop():
    def loop(a: Any, checkpoints: bool) -> Any:
        x = tf.traced(0.3) if checkpoints else 0.3
        for _ in range(3):
            x = a * tf.cos(x)
            if checkpoints:
                x = x.checkpoint()
        return x

    a = tf.traced(1.7)
    gradient = loop(a, True).grad(a).eval()
    expected = fd_grad(lambda v: np.asarray(loop(tf.Tensor(v), False)), np.array(1.7))
    close(gradient, expected, tol=1e-6)


def test_hvp_through_a_checkpoint():
    x = tf.traced(1.5)
    y = (x * x * x).checkpoint()
    z = y * x  # x^4
    gradient = z.grad(x)
    second = gradient.jvp(x, tf.asarray(1.0))
    close(second.eval(), 12 * 1.5**2, tol=1e-5)


# ---------------------------------------------------------------------- §6.4 traced AD

A = colmajor([1, 2, 3, 4, 5, 6], (2, 3))
B = colmajor([0.5, -1, 2, 1.5, -0.25, 3], (3, 2))


def test_matmul_vjp_and_jvp():
    a, b = tf.traced(A), tf.traced(B)
    y = a @ b
    ct = colmajor([1, -0.5, 0.25, 2], (2, 2))
    close(y.vjp(a, ct).eval(), colmajor([0.875, 2.75, -1.0625, 0.0, 2.75, 5.0], (2, 3)))
    da = colmajor([1, -0.5, 0.25, 0, 2, -1], (2, 3))
    close(y.jvp(a, da).eval(), colmajor([4.25, -2.25, 7.4375, -3.75], (2, 2)))


def test_matmul_forward():
    close(tf.asarray(A) @ tf.asarray(B), A @ B)
    close(
        tf.matmul(np.array([[1.0, 2, 3], [4, 5, 6]]), np.array([[1.0, 2], [3, 4], [5, 6]])),
        [[22, 28], [49, 64]],
    )


def test_scalar_square():
    x = tf.traced(3.0)
    loss = x * x
    close(loss.grad(x).eval(), 6)
    close(loss.jvp(x, tf.asarray(2.0)).eval(), 12)
    close(loss.vjp(x, tf.asarray(0.5)).eval(), 3)


@pytest.mark.parametrize("mode", ["forward_over_reverse", "reverse_over_reverse"])
def test_hvp_goldens(mode: str):
    def hvp(f: Any, x: Any, v: Any) -> Any:
        if mode == "forward_over_reverse":
            return tf.hvp(f, (x,), (v,))
        return tf.grad(lambda y: tf.vdot(tf.asarray(v), tf.grad(f)(y)))(x)

    close(hvp(lambda x: x**3, np.array(2.5), np.array(1.0)), 15, tol=1e-5)
    s = 1.3
    close(
        hvp(lambda x: tf.exp(tf.sin(x)), np.array(s), np.array(1.0)),
        (math.cos(s) ** 2 - math.sin(s)) * math.exp(math.sin(s)),
        tol=1e-5,
    )
    x, v = np.array([0.2, -0.7, 1.1]), np.array([1.0, 0.5, -2.0])
    close(hvp(lambda x: tf.sum(tf.exp(x)), x, v), np.exp(x) * v, tol=1e-5)
    quadratic = colmajor([2, 0.5, 1.5, 3], (2, 2))
    close(
        hvp(lambda x: x @ quadratic @ x, np.array([1.0, -1.0]), np.array([0.5, 2.0])),
        [6, 13],
        tol=1e-5,
    )


# ---------------------------------------------------------------------- §11 catalogue


def test_structural_goldens():
    m = tf.asarray(colmajor([1, 2, 3, 4, 5, 6], (2, 3)))
    close(tf.sum(m, axis=1), [9, 12])
    close(tf.sum(m), 21)
    close(np.asarray(tf.transpose(m)).ravel(order="F"), [1, 3, 5, 2, 4, 6])
    broadcast = lax.broadcast_in_dim(tf.asarray([1.0, 2.0, 3.0]), (3, 2), (0,))
    close(np.asarray(broadcast).ravel(order="F"), [1, 2, 3, 1, 2, 3])
    assert tf.dynamic_truncate(tf.asarray([1.0, 2, 3, 4]), 2.0, 0).shape == (2,)
    assert tf.pad_to_match(tf.asarray([1.0, 2]), tf.zeros((4,)), 0).shape == (4,)


def test_typed_elementwise_goldens():
    x, y = tf.asarray([1.0, 2.0, 3.0]), tf.asarray([4.0, 5.0, 6.0])
    total, product = x + y, x * y
    close(total, [5, 7, 9])
    close(product, [4, 10, 18])
    close(tf.sum(product), 32)
    mask = total < product
    assert np.asarray(mask).tolist() == [False, True, True]
    close(tf.where(mask, total, product), [4, 7, 9])


def test_index_select_goldens():
    weights = np.array([10.0, 20.0, 30.0])

    def weighted(x: Any) -> Any:
        return tf.sum(tf.take(x, [1, 1, 2]) * weights)

    close(tf.grad(weighted)(np.array([1.0, 2.0, 3.0])), [0, 30, 30])
    _, tangent = tf.jvp(
        lambda x: tf.take(x, [3, 1, 3]),
        (np.array([1.0, 2, 3, 4]),),
        (np.array([0.5, 1.5, 2.5, 3.5]),),
    )
    close(tangent, [3.5, 1.5, 3.5])

    def squares(x: Any) -> Any:
        return tf.sum(weights * tf.take(x, [1, 1, 2]) ** 2)

    close(
        tf.hvp(squares, (np.array([1.0, 2.0, 3.0]),), (np.array([0.5, -1.0, 2.0]),)), [0, -60, 120]
    )


def test_reduce_max_ties_share_the_cotangent():
    _, pullback = tf.vjp(tf.max, np.array([1.0, 3.0, 3.0, -2.0]))
    close(pullback(np.array(2.5))[0], [0, 1.25, 1.25, 0])
