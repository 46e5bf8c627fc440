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
from review_s21_support import (
    fd_gradient,
    gradients_in_every_mode,
    loss_of,
    numpy_loss,
    values,
)

import tenferro as tf

_CUTS = {
    "arcsin": [(1.5, 0.0), (1.5, -0.0), (-2.0, 0.0), (-2.0, -0.0)],
    "arccos": [(1.5, 0.0), (1.5, -0.0), (-2.0, 0.0), (-2.0, -0.0)],
    "arctanh": [(1.5, 0.0), (1.5, -0.0), (-2.0, 0.0), (-2.0, -0.0)],
    "arccosh": [(0.5, 0.0), (0.5, -0.0), (-2.0, 0.0), (-2.0, -0.0)],
    "arcsinh": [(0.0, 2.0), (-0.0, 2.0), (0.0, -1.5), (-0.0, -1.5)],
    "arctan": [(0.0, 2.0), (-0.0, 2.0), (0.0, -1.5), (-0.0, -1.5)],
}


@pytest.mark.parametrize("name", sorted(_CUTS))
def test_inverse_function_derivative_on_the_cut_is_the_side_numpy_takes(name: str) -> None:
    f, reference = getattr(tf, name), getattr(np, name)
    z = np.array([complex(re, im) for re, im in _CUTS[name]] + [complex(0.3, 0.2)])
    slope = np.asarray(tf.jvp(f, (z,), (np.ones_like(z),))[1])
    h = 1e-6
    for point, got in zip(z, slope, strict=True):
        re, im = point.real, point.imag
        if im == 0:  # a cut along the real axis: step into the half-plane of the zero's sign
            sign = -1.0 if np.signbit(im) else 1.0
            steps = [complex(re, im + sign * k * h) for k in (1, 2)]
        else:  # along the imaginary axis
            sign = -1.0 if np.signbit(re) else 1.0
            steps = [complex(re + sign * k * h, im) for k in (1, 2)]
        f0, f1, f2 = reference(point), reference(steps[0]), reference(steps[1])
        one_sided = (-3 * f0 + 4 * f1 - f2) / (2 * (steps[0] - point))
        assert np.isclose(got, one_sided, rtol=1e-6), (name, point, got, one_sided)
    gradient = np.asarray(tf.grad(lambda v: tf.sum(tf.real(f(v))))(z))
    np.testing.assert_allclose(gradient, np.conj(slope), rtol=1e-14)
    single = np.asarray(tf.jvp(f, (z.astype(np.complex64),), (np.ones(z.shape, np.complex64),))[1])
    np.testing.assert_allclose(single, slope, rtol=1e-4)


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
        want = (want + np.conj(np.swapaxes(want, -1, -2))) / 2  # differentiated as Hermitian
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


_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "atan2": np.arctan2,
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("scalar_first", [False, True])
def test_lax_rank0_operand_values_and_gradients(name: str, scalar_first: bool) -> None:
    rng = np.random.default_rng(0)
    array = rng.uniform(0.5, 2.0, (2, 3)) if name == "pow" else rng.standard_normal((2, 3))
    scalar = np.float64(0.7)
    args = (scalar, array) if scalar_first else (array, scalar)
    op, reference = getattr(tf.lax, name), _BINARY[name]
    np.testing.assert_allclose(values(op(*args)), reference(*args), rtol=1e-14)
    weights = rng.standard_normal((2, 3))

    def loss(a: Any, b: Any) -> Any:
        return tf.sum(op(a, b) * weights)

    for argnum in (0, 1):

        def of_one(v: Any, argnum: int = argnum) -> float:
            both = list(args)
            both[argnum] = v
            return float(np.sum(reference(*both) * weights))

        want = fd_gradient(of_one, np.asarray(args[argnum], np.float64))
        leaf = tf.EagerTensor(args[argnum], requires_grad=True)
        both: list[Any] = list(args)
        both[argnum] = leaf
        loss(*both).backward()
        for mode, got in (
            ("grad", tf.grad(loss, argnums=argnum)(*args)),
            ("jit(grad)", tf.jit(tf.grad(loss, argnums=argnum))(*args)),
            ("tape", leaf.grad),
        ):
            np.testing.assert_allclose(values(got), want, rtol=1e-6, atol=1e-8, err_msg=mode)
    # a batched rank-0 operand beside an unbatched array, and the reverse
    batch = np.array([0.5, 0.9, 1.3])
    mapped = tf.vmap(lambda s: op(s, array) if scalar_first else op(array, s))(batch)
    expected = np.stack(
        [reference(s, array) if scalar_first else reference(array, s) for s in batch]
    )
    np.testing.assert_allclose(values(mapped), expected, rtol=1e-14)


@pytest.mark.parametrize("ranks", [(0, 2, 0), (2, 2, 0), (0, 2, 2)])
def test_lax_clamp_rank0_bounds_and_their_gradients(ranks: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    weights = rng.standard_normal((2, 3))
    args = [
        np.float64(-0.3) if ranks[0] == 0 else np.full_like(x, -0.3),
        x,
        np.float64(0.4) if ranks[2] == 0 else np.full_like(x, 0.4),
    ]
    np.testing.assert_array_equal(values(tf.lax.clamp(*args)), np.clip(x, -0.3, 0.4))
    for argnum in range(3):

        def of_one(v: Any, argnum: int = argnum) -> float:
            both = list(args)
            both[argnum] = v
            return float(np.sum(np.clip(both[1], both[0], both[2]) * weights))

        want = fd_gradient(of_one, np.asarray(args[argnum], np.float64))
        got = tf.grad(lambda a, b, c: tf.sum(tf.lax.clamp(a, b, c) * weights), argnums=argnum)(
            *args
        )
        np.testing.assert_allclose(values(got), want, atol=1e-8)
    lower = np.array([-0.5, 0.0])
    mapped = tf.vmap(lambda low: tf.lax.clamp(low, x, 0.4))(lower)
    np.testing.assert_array_equal(values(mapped), np.stack([np.clip(x, v, 0.4) for v in lower]))


def test_lax_select_rank0_predicate() -> None:
    rng = np.random.default_rng(2)
    x, y, w = (rng.standard_normal((2, 3)) for _ in range(3))
    for pred in (True, False, np.bool_(True)):
        np.testing.assert_array_equal(values(tf.lax.select(pred, x, y)), x if pred else y)
        g = tf.grad(lambda a, b, p=pred: tf.sum(tf.lax.select(p, a, b) * w), argnums=1)(x, y)
        np.testing.assert_array_equal(values(g), np.zeros_like(w) if pred else w)
    mapped = tf.vmap(lambda p: tf.lax.select(p, x, y))(np.array([True, False]))
    np.testing.assert_array_equal(values(mapped), np.stack([x, y]))


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacrev", "jacfwd"])
def test_argnums_negative_and_repeated_read_alike(transform: str) -> None:
    a, b, c = np.array([1.0, 2.0]), np.array([3.0, -1.0]), 0.5

    def f(x: Any, y: Any, z: Any) -> Any:
        return tf.sum(x * x * y) + z * tf.sum(y)

    each = {0: 2 * a * b, 1: a * a + c, 2: np.sum(b)}

    def run(argnums: Any) -> Any:
        out = getattr(tf, transform)(f, argnums=argnums)(a, b, c)
        return out[1] if transform == "value_and_grad" else out

    for argnums, want in (
        (-1, each[2]),
        (-3, each[0]),
        ((2, 0), (each[2], each[0])),
        ((-1, 0), (each[2], each[0])),
        ((0, 0), (each[0], each[0])),
        ((np.int64(1), -2), (each[1], each[1])),
        ([0, 1], (each[0], each[1])),
    ):
        got = run(argnums)
        if isinstance(want, tuple):
            assert isinstance(got, tuple), argnums
            assert len(got) == len(want), argnums
            for g, v in zip(got, want, strict=True):
                np.testing.assert_allclose(values(g), v, rtol=1e-14)
        else:
            np.testing.assert_allclose(values(got), want, rtol=1e-14)
