"""Derivatives of ``linalg.solve``, which keeps its LU factors for them.

Gradients in A only, B only and both (the factored path, the batched path beyond
``lapack.LOOP_LIMIT`` without factors, empty matrices), real and complex, vector and
matrix right-hand sides, broadcast batch axes, mixed dtypes; on the tape, under tf.grad,
jit, checkpoint, vmap, hvp, jacfwd/jacrev, against central finite differences and the
closed forms ``gB = A^-H gX``, ``gA = -gB X^H`` (the conjugate convention). The
tolerances would fail a zero or a conjugated derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf

RNG = np.random.default_rng(20)


def _values(shape: tuple[int, ...], complex_: bool) -> np.ndarray[Any, Any]:
    x = RNG.standard_normal(shape)
    return x + 1j * RNG.standard_normal(shape) if complex_ else x


def _matrix(shape: tuple[int, ...], complex_: bool) -> np.ndarray[Any, Any]:
    return _values(shape, complex_) + 3 * np.eye(shape[-1])


def _value(f: Callable[..., Any], args: list[Any]) -> float:
    return float(np.asarray(f(*[tf.asarray(a) for a in args])))


def _check_directional(
    f: Callable[..., Any], args: list[Any], i: int, g: Any, what: str, h: float = 1e-6
) -> None:
    """Re<g, d> equals the central difference of ``f`` along random directions ``d`` of
    argument ``i`` (a zero, conjugated or transposed gradient fails it)."""
    x = args[i]
    for _ in range(2):
        d = _values(x.shape, x.dtype.kind == "c")
        plus, minus = list(args), list(args)
        plus[i], minus[i] = x + h * d, x - h * d
        slope = (_value(f, plus) - _value(f, minus)) / (2 * h)
        paired = float(np.real(np.vdot(np.asarray(g), d)))
        assert abs(paired - slope) <= 1e-6 * max(1.0, abs(slope)), (what, paired, slope)


def _close(got: Any, expected: Any, tol: float = 1e-6, what: str = "") -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, err_msg=what)


def _adjoint(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.conj(np.swapaxes(x, -1, -2))


SHAPES = [
    ((3, 3), (3,)),
    ((3, 3), (3, 2)),
    ((2, 3, 3), (2, 3, 2)),
    ((2, 3, 3), (3, 2)),
    ((3, 3), (2, 3, 2)),
    ((2, 1, 3, 3), (4, 3, 1)),
    ((2, 3, 3), (3,)),
]


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES, ids=str)
def test_solve_gradients_in_a_b_and_both_match_finite_differences(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], complex_: bool
) -> None:
    a, b = _matrix(a_shape, complex_), _values(b_shape, complex_)
    x_shape = np.linalg.solve(a, b).shape
    w = _values(x_shape, complex_)

    def f(a: Any, b: Any) -> Any:
        return tf.sum(tf.real(tf.linalg.solve(a, b) * w))

    ga, gb = tf.grad(f, argnums=(0, 1))(a, b)
    _check_directional(f, [a, b], 0, ga, "grad A")
    _check_directional(f, [a, b], 1, gb, "grad B")
    _close(tf.grad(f, argnums=0)(a, b), ga, 1e-12, "grad in A alone")
    _close(tf.grad(f, argnums=1)(a, b), gb, 1e-12, "grad in B alone")
    _close(tf.jit(tf.grad(f, argnums=(0, 1)))(a, b)[0], ga, 1e-12, "jit")
    _close(tf.grad(tf.checkpoint(f), argnums=(0, 1))(a, b)[1], gb, 1e-12, "checkpoint")
    tape = tf.Tape()
    ta, tb = tape.track(a), tape.track(b)
    tga, tgb = tape.grad(f(ta, tb), [ta, tb])
    _close(tga, ga, 1e-12, "tape A")
    _close(tgb, gb, 1e-12, "tape B")
    tape = tf.Tape()
    ta = tape.track(a)
    _close(tape.grad(f(ta, tf.asarray(b)), ta), ga, 1e-12, "tape A alone")
    tape = tf.Tape()
    tb = tape.track(b)
    _close(tape.grad(f(tf.asarray(a), tb), tb), gb, 1e-12, "tape B alone")


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_solve_second_order_matches_differences_of_gradients(complex_: bool) -> None:
    a, b = _matrix((2, 3, 3), complex_), _values((2, 3, 2), complex_)
    w = _values((2, 3, 2), complex_)
    va, vb = _values(a.shape, complex_), _values(b.shape, complex_)

    def f(a: Any, b: Any) -> Any:
        return tf.sum(tf.abs(tf.linalg.solve(a, b) * w) ** 2)

    grad = tf.grad(f, argnums=(0, 1))
    h = 1e-6
    plus, minus = grad(a + h * va, b + h * vb), grad(a - h * va, b - h * vb)
    expected = [(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(plus, minus, strict=True)]
    got = tf.hvp(f, (a, b), (va, vb))
    _close(got[0], expected[0], 1e-5, "hvp A")
    _close(got[1], expected[1], 1e-5, "hvp B")
    tape_hvp = tf.Tape().hvp(f, [a, b], [va, vb])
    _close(tape_hvp[0], got[0], 1e-9, "tape hvp A")
    _close(tape_hvp[1], got[1], 1e-9, "tape hvp B")
    # reverse over reverse on the tape (create_graph)
    tape = tf.Tape()
    ta, tb = tape.track(a), tape.track(b)
    ga, gb = tape.grad(f(ta, tb), [ta, tb], create_graph=True)
    inner = tf.sum(tf.real(ga * np.conj(va))) + tf.sum(tf.real(gb * np.conj(vb)))
    second = tape.grad(inner, [ta, tb])
    _close(second[0], got[0], 1e-9, "create_graph A")
    _close(second[1], got[1], 1e-9, "create_graph B")


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_solve_under_vmap_matches_per_example_gradients(complex_: bool) -> None:
    a, b = _matrix((2, 3, 3), complex_), _values((2, 3, 2), complex_)
    w = _values((3, 2), complex_)

    def f(a: Any, b: Any) -> Any:
        return tf.sum(tf.real(tf.linalg.solve(a, b) * w))

    def closed_form(a: Any, b: Any) -> tuple[Any, Any]:
        gb = np.linalg.solve(_adjoint(a), np.broadcast_to(np.conj(w), b.shape))
        return -gb @ _adjoint(np.linalg.solve(a, b)), gb

    per_a, per_b = closed_form(a, b)
    _check_directional(f, [a[0], b[0]], 0, per_a[0], "closed form A")
    _check_directional(f, [a[1], b[1]], 1, per_b[1], "closed form B")
    _close(tf.vmap(tf.grad(f, argnums=0))(a, b), per_a, what="vmap grad A")
    _close(tf.vmap(tf.grad(f, argnums=(0, 1)))(a, b)[1], per_b, what="vmap grad B")
    _close(
        tf.vmap(tf.grad(f, argnums=1), in_axes=(None, 0))(a[0], b),
        closed_form(np.stack([a[0], a[0]]), b)[1],
        what="vmap, A shared",
    )
    _close(
        tf.grad(lambda a, b: tf.sum(tf.vmap(f)(a, b)), argnums=0)(a, b),
        per_a,
        what="grad of vmap",
    )


def test_solve_jacobians_match_the_closed_form() -> None:
    a, b = _matrix((3, 3), False), _values((3, 2), False)
    x = np.linalg.solve(a, b)
    inv = np.linalg.inv(a)
    # dX = A^-1 (dB - dA X):  J_A[i, j, k, l] = -inv[i, k] x[l, j];  J_B = inv[i, k] δ[j, l]
    jac_a = -np.einsum("ik,lj->ijkl", inv, x)
    jac_b = np.einsum("ik,jl->ijkl", inv, np.eye(2))
    for jac in (tf.jacfwd, tf.jacrev):
        _close(jac(tf.linalg.solve, argnums=0)(a, b), jac_a, 1e-10, f"{jac.__name__} A")
        _close(jac(tf.linalg.solve, argnums=1)(a, b), jac_b, 1e-10, f"{jac.__name__} B")
    c, d = _matrix((3, 3), True), _values((3, 2), True)
    _close(
        tf.jacfwd(tf.linalg.solve, argnums=0)(c, d),
        tf.jacrev(tf.linalg.solve, argnums=0)(c, d),
        1e-10,
        "complex jacfwd vs jacrev",
    )


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_solve_beyond_the_factored_batch_limit_has_the_closed_form_gradient(
    complex_: bool,
) -> None:
    """More than ``lapack.LOOP_LIMIT`` matrices take numpy's batched solver (no saved
    factors): gradients still follow gB = A^-H conj(w), gA = -gB X^H."""
    a, b = _matrix((70, 2, 2), complex_), _values((70, 2, 1), complex_)
    w = _values((70, 2, 1), complex_)

    def f(a: Any, b: Any) -> Any:
        return tf.sum(tf.real(tf.linalg.solve(a, b) * w))

    x = np.linalg.solve(a, b)
    gb = np.linalg.solve(_adjoint(a), np.conj(w))
    ga = -gb @ _adjoint(x)
    got = tf.grad(f, argnums=(0, 1))(a, b)
    _close(got[0], ga, 1e-10, "grad A")
    _close(got[1], gb, 1e-10, "grad B")
    tape = tf.Tape()
    ta = tape.track(a)
    _close(tape.grad(f(ta, b), ta), ga, 1e-10, "tape A alone")
    va = _values(a.shape, complex_)
    h = 1e-6
    g = tf.grad(lambda t: f(t, b))
    expected = (np.asarray(g(a + h * va)) - np.asarray(g(a - h * va))) / (2 * h)
    _close(tf.hvp(lambda t: f(t, b), (a,), (va,)), expected, 1e-5, "hvp")


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype"),
    [
        (np.float64, np.complex128),
        (np.complex128, np.float64),
        (np.float32, np.float64),
        (np.int64, np.float64),
        (np.float64, np.int32),
    ],
    ids=str,
)
def test_solve_mixed_dtypes_promote_and_gradients_keep_each_argument_dtype(
    a_dtype: Any, b_dtype: Any
) -> None:
    a = (np.array([[4, 1, 0], [1, 3, 1], [0, 2, 5]]) + _values((3, 3), False) * 0.1).astype(a_dtype)
    if a.dtype.kind == "c":
        a = a + 0.2j * _values((3, 3), False)
    b = _values((3, 2), np.dtype(b_dtype).kind == "c").astype(b_dtype)
    out = np.asarray(tf.linalg.solve(a, b))
    expected = np.linalg.solve(a, b)
    assert out.dtype == expected.dtype
    _close(out, expected, 1e-5)
    for i, arg in enumerate((a, b)):
        if arg.dtype.kind not in "fc":
            continue

        def f(a: Any, b: Any) -> Any:
            return tf.sum(tf.abs(tf.linalg.solve(a, b)) ** 2)

        g = np.asarray(tf.grad(f, argnums=i)(a, b))
        assert g.dtype == arg.dtype
        if arg.dtype in (np.float64, np.complex128) and a.dtype != np.float32:
            _check_directional(f, [a, b], i, g, f"grad {i}")


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((0, 0), (0, 2)), ((3, 3), (3, 0)), ((2, 0, 0), (2, 0, 1)), ((0, 3, 3), (0, 3, 2))],
    ids=str,
)
def test_solve_of_empty_operands_differentiates_to_empty_gradients(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    a = _values(a_shape, True) + (3 * np.eye(a_shape[-1]) if a_shape[-1] else 0)
    b = _values(b_shape, True)

    def f(a: Any, b: Any) -> Any:
        return tf.sum(tf.abs(tf.linalg.solve(a, b)) ** 2)

    assert np.asarray(tf.linalg.solve(a, b)).shape == np.linalg.solve(a, b).shape
    ga, gb = tf.grad(f, argnums=(0, 1))(a, b)
    assert np.asarray(ga).shape == a_shape
    assert not np.asarray(ga).any()
    assert np.asarray(gb).shape == b_shape
    tape = tf.Tape()
    ta = tape.track(a)
    g = tape.grad(f(ta, b), ta, create_graph=True)
    second = tape.grad(tf.sum(tf.abs(g) ** 2), ta, allow_unused=True)
    assert second is None or np.asarray(second).shape == a_shape
