"""det is a polynomial: its derivatives of every order exist everywhere, singular
matrices included (through the adjugate), in every transform."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf


def _matrix(n: int, rank: int, seed: int, complex_: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)

    def unitary() -> np.ndarray:
        z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
        return np.linalg.qr(z)[0]

    levels = rng.uniform(0.5, 2.0, n)
    levels[rank:] = 0.0
    return (unitary() * levels) @ np.conj(unitary().T)


def _taylor(a: np.ndarray, e: np.ndarray, order: int) -> complex:
    """``d^k/dt^k det(a + t e)`` at 0, exactly: ``k!`` times the Taylor coefficient of
    the polynomial (degree n), from its values at more roots of unity than its degree
    and the order."""
    count = max(a.shape[-1], order) + 1
    points = np.exp(2j * np.pi * np.arange(count) / count)
    values = np.array([np.linalg.det(a + t * e) for t in points])
    coefficient = np.mean(values * points ** (-order))
    return complex(coefficient * math.factorial(order))


@fuzz_settings(25)
@given(
    n=st.integers(2, 5),
    deficiency=st.integers(0, 3),
    complex_=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_det_derivatives_of_every_order_at_singular_matrices(
    n: int, deficiency: int, complex_: bool, seed: int
) -> None:
    """The gradient, the HVP (forward over reverse), the Hessian and a third derivative
    of det at matrices of rank n, n-1, ..., against the polynomial's exact coefficients."""
    rank = max(n - deficiency, 0)
    a = _matrix(n, rank, seed, complex_)
    e = _matrix(n, n, seed + 1, complex_)
    real = not complex_

    def f(x):  # a real scalar: Re det
        return tf.real(tf.linalg.det(x))

    first = np.asarray(tf.grad(f)(a))
    np.testing.assert_allclose(
        np.real(np.sum(np.conj(first) * e)), _taylor(a, e, 1).real, atol=1e-10
    )
    second = np.asarray(tf.hvp(f, (a,), (e,)))
    np.testing.assert_allclose(
        np.real(np.sum(np.conj(second) * e)), _taylor(a, e, 2).real, atol=1e-9
    )
    if real:
        hessian = np.asarray(tf.hessian(f)(a))
        np.testing.assert_allclose(
            np.einsum("ij,ijkl,kl->", e, hessian, e), _taylor(a, e, 2).real, atol=1e-9
        )
    _, third = tf.jvp(lambda x: tf.hvp(f, (x,), (e,)), (a,), (e,))
    np.testing.assert_allclose(
        np.real(np.sum(np.conj(np.asarray(third)) * e)), _taylor(a, e, 3).real, atol=1e-7
    )


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_det_second_derivatives_at_singular_matrices_on_the_tape(rank: int) -> None:
    """The eager tape agrees (create_graph through backward)."""
    a = _matrix(3, rank, 7)
    e = _matrix(3, 3, 8)
    tape = tf.Tape()
    leaf = tape.track(a)
    g = tape.grad(tf.linalg.det(leaf), leaf, create_graph=True)
    second = np.asarray(tape.grad(tf.sum(g * e), leaf))
    np.testing.assert_allclose(np.sum(second * e), _taylor(a, e, 2).real, atol=1e-10)
    np.testing.assert_allclose(second, np.asarray(tf.hvp(tf.linalg.det, (a,), (e,))), atol=1e-12)
