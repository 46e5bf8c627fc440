"""Spectral derivatives at tied and rank-deficient spectra on the XLA backend: the tie
cut, the cluster blocks, the spectral block, the inverse cut at zero and the adjugate
(det's derivatives of every order) lower to JAX operations (no host callback in the
program), give the numpy backend's values and warn where it warns.

The tie table (``spectral_ties``) runs on the XLA backend: each exact entry equals the
extended-precision finite difference, each warning entry warns, and every derivative
equals the numpy backend's to 1e-12 of its scale in double precision (1e-5 in single)
wherever the tie is exact or split by rounding (a gap of 1e-10, the ``near``
configuration, amplifies the two LAPACK paths' rounding by 1e10: there both are
checked against the reference instead).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("mpmath")
import spectral_ties
from sampling import sample_product
from xla_support import assert_same

import tenferro as tf

DOUBLE = ("float64", "complex128")
SINGLE = ("float32", "complex64")


def _table_cases(dtypes: tuple[str, ...]) -> list[Any]:
    cases = [
        pytest.param(name, config, order, dt, id=f"{name}-{config}-{order}-{dt}")
        for (name, config), outcomes in spectral_ties.TABLE.items()
        for order in (1, 2)
        for dt in dtypes
        if outcomes[order - 1] is not None
    ]
    return sample_product(cases, lambda case: case.values[0])  # one group per quantity


@pytest.mark.parametrize(("name", "config", "order", "dt"), _table_cases(DOUBLE))
def test_the_tie_table_on_xla(name: str, config: str, order: int, dt: str) -> None:
    expected = spectral_ties.TABLE[(name, config)][order - 1]
    got, warned = spectral_ties.derivative(name, config, order, np.dtype(dt), "xla")
    reference, warned_reference = spectral_ties.derivative(
        name, config, order, np.dtype(dt), "numpy"
    )
    assert warned == warned_reference
    if config != "near":
        assert_same(got, reference, what=f"{name} at {config}, order {order}")
    if expected == spectral_ties.WARNS:
        assert warned
        return
    assert not warned
    if expected == spectral_ties.EXACT:
        e = spectral_ties.direction(spectral_ties.QUANTITIES[name].kind, np.dtype(dt))
        ad = float(np.real(np.sum(np.conj(got) * e)))
        exact = spectral_ties.reference(name, config, order, np.dtype(dt))
        assert abs(ad - exact) < 1e-5 * max(abs(exact), 1e-300), (ad, exact)


@pytest.mark.parametrize(("name", "config", "order", "dt"), _table_cases(SINGLE))
def test_tied_spectra_in_single_precision_on_xla(
    name: str, config: str, order: int, dt: str
) -> None:
    got, warned = spectral_ties.derivative(name, config, order, np.dtype(dt), "xla")
    reference, warned_reference = spectral_ties.derivative(
        name, config, order, np.dtype(dt), "numpy"
    )
    assert warned == warned_reference
    assert_same(got, reference, what=f"{name} at {config}, order {order}")


def _singular(n: int, rank: int, dt: str, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    complex_ = np.dtype(dt).kind == "c"

    def unitary() -> np.ndarray[Any, Any]:
        z = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if complex_ else 0)
        return np.linalg.qr(z)[0]

    levels = rng.uniform(0.5, 2.0, n)
    levels[rank:] = 0.0
    return ((unitary() * levels) @ np.conj(unitary().T)).astype(dt)


def _det_cases() -> list[Any]:
    cases = [
        pytest.param(n, rank, dt, id=f"n{n}-rank{rank}-{dt}")
        for dt in (*DOUBLE, *SINGLE)
        for n in (1, 3, 4)
        for rank in sorted({n, n - 1, max(n - 2, 0), 0})
    ]
    return sample_product(cases, lambda case: case.values[2])  # one group per dtype


def _taylor(a: np.ndarray[Any, Any], e: np.ndarray[Any, Any], order: int) -> float:
    """``d^k/dt^k Re det(a + t e)`` at 0 from the polynomial's values on a circle."""
    count = max(a.shape[-1], order) + 1
    points = np.exp(2j * np.pi * np.arange(count) / count)
    values = np.array([np.linalg.det(a.astype(complex) + t * e) for t in points])
    return float(np.real(np.mean(values * points ** (-order))) * math.factorial(order))


@pytest.mark.parametrize(("n", "rank", "dt"), _det_cases())
def test_det_derivatives_at_singular_matrices_on_xla(n: int, rank: int, dt: str) -> None:
    """Through the adjugate and its derivatives: det, its gradient, an HVP and a third
    derivative at matrices of every rank equal the numpy backend's (and, in double
    precision, the polynomial's exact Taylor coefficients)."""
    a = _singular(n, rank, dt, seed=10 * n + rank)
    e = _singular(n, n, dt, seed=99)

    def f(x: Any) -> Any:
        return tf.real(tf.linalg.det(x))

    def derivatives(x: Any, d: Any) -> Any:
        _, third = tf.jvp(lambda y: tf.hvp(f, (y,), (d,)), (x,), (d,))
        return f(x), tf.grad(f)(x), tf.hvp(f, (x,), (d,)), third

    expected = tf.jit(derivatives)(a, e)
    got = tf.jit(derivatives, backend="xla")(a, e)
    assert_same(got, expected, what=f"det derivatives, n={n}, rank={rank}")
    if dt in DOUBLE:
        for order, value in enumerate(got[1:], start=1):
            directional = float(np.real(np.sum(np.conj(np.asarray(value)) * e)))
            np.testing.assert_allclose(directional, _taylor(a, e, order), atol=1e-9 * 10**order)


def test_spectral_derivatives_lower_without_host_callbacks() -> None:
    """The tie cut, cluster blocks, spectral blocks, the inverse at zero and the adjugate
    are JAX operations in the program: its StableHLO calls nothing back on the host."""
    a = spectral_ties.matrix("rotated", "general", np.complex128)
    h = spectral_ties.matrix("rotated", "hermitian", np.complex128)
    e = spectral_ties.direction("general", np.complex128)

    def loss(x: Any, y: Any) -> Any:
        u, s, vh = tf.linalg.svd(x, full_matrices=False)
        _, v = tf.linalg.eigh(y)
        top = v[:, 2:]
        projector = top @ tf.conj(tf.swapaxes(top, 0, 1))
        return (
            tf.sum(tf.real(u @ vh))
            + tf.sum(tf.real(projector))
            + tf.real(tf.linalg.det(x))
            + tf.real(tf.linalg.pinv(x)[0, 0])
            + tf.sum(s)
        )

    def second(x: Any, y: Any, d: Any) -> Any:
        return tf.hvp(loss, (x, y), (d, d))

    jitted = tf.jit(second, backend="xla")
    text = jitted.lower(a, h, e).as_stablehlo()
    assert "callback" not in text
    for family in ("gap_scale", "cluster_blocks", "spectral_block", "tied_inverse"):
        assert family not in text  # lowered into JAX operations, not named calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tf.DegenerateDerivativeWarning)
        assert_same(jitted(a, h, e), tf.jit(second)(a, h, e), what="hvp")


def test_a_tie_warns_once_per_call_on_xla_and_a_resolved_spectrum_not_at_all() -> None:
    """The host checks run when the device flags a tie: a loss that weights a tied level
    unevenly warns on each call (once), the same program at a resolved spectrum never."""

    quantity = spectral_ties.QUANTITIES["eigh: projector onto one tied eigenvector"]
    w = spectral_ties.weights(np.float64)

    def uneven(x: Any) -> Any:  # the projector onto one vector of the level: undefined
        return quantity.tf_fn(x, w, "exact")

    step = tf.jit(tf.grad(uneven), backend="xla")
    tied = spectral_ties.matrix("exact", "hermitian", np.float64)
    resolved = np.diag([2.0, 1.5, 1.0, 0.5])
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            step(tied)
        found = [c for c in caught if issubclass(c.category, tf.DegenerateDerivativeWarning)]
        assert len(found) == 1, [str(c.message) for c in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = step(resolved)
    assert_same(got, tf.jit(tf.grad(uneven))(resolved), what="resolved")
