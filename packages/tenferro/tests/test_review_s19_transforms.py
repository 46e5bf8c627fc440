"""Review campaign (session 19): transforms composed, on einsum and linalg functions.

grad of vmap, vmap of grad, jacfwd/jacrev/hessian, jit (with static arguments),
custom_jvp/custom_vjp, checkpoint inside grad and inside the eager tape, hvp,
linearize, and the tape's create_graph, against finite differences (the only
oracle: no peer library in CI). Gradients follow the conjugate convention (design
§3.2): for a real loss of complex ``z``, ``∂L/∂Re z + i ∂L/∂Im z`` (torch's; JAX's
conjugate), which is what the finite differences below assemble.

Failures found by the campaign are pinned as strict xfails (bugs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tidu import ADRuleError

N = 3
RNG = np.random.default_rng(11)
A = RNG.standard_normal((N, N))
B = RNG.standard_normal((N, N))
C = RNG.standard_normal(N) + 1j * RNG.standard_normal(N)
EYE = np.eye(N)


def _h(x: Any) -> Any:
    """The Hermitian part's double ``x + x^H`` (on any tensor kind)."""
    return x + tf.conj(tf.transpose(x))


LOSSES: dict[str, Callable[[Any], Any]] = {
    "einsum chain": lambda x: tf.sum(tf.abs(tf.tanh(tf.einsum("ij,jk,k->i", x, A, C.real))) ** 2),
    "svdvals": lambda x: tf.sum(tf.linalg.svdvals(x + 2 * A) * np.arange(1.0, N + 1)),
    "solve": lambda x: tf.sum(tf.abs(tf.linalg.solve(x + 3 * N * EYE, C)) ** 2),
    "slogdet": lambda x: tf.linalg.slogdet(x + 3 * N * EYE)[1],
    "eigvalsh": lambda x: tf.sum(tf.linalg.eigvalsh(_h(x) + 0.5 * np.diag([1.0, 2.0, 3.0])) ** 3),
    "qr positive": lambda x: tf.sum(tf.abs(tf.linalg.qr(x + 2 * A, gauge="positive").R) ** 2 * B),
    "cholesky": lambda x: tf.sum(
        tf.abs(tf.linalg.cholesky(x @ tf.conj(tf.transpose(x)) + N * EYE)) * B
    ),
    "inv einsum": lambda x: tf.sum(
        tf.real(tf.einsum("ij,jk->ik", tf.linalg.inv(x + 3 * N * EYE), x) * B)
    ),
}


def _point(dt: Any, seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, N)) * 0.5
    if np.dtype(dt).kind == "c":
        x = x + 0.5j * rng.standard_normal((N, N))
    return np.asarray(x, dtype=dt)


def _value(f: Callable[[Any], Any], x: np.ndarray[Any, Any]) -> float:
    return float(np.asarray(f(tf.asarray(x))))


def _fd_grad(f: Callable[[Any], Any], x: np.ndarray[Any, Any], h: float = 1e-6) -> Any:
    """∂f/∂Re x + i ∂f/∂Im x by central differences."""
    g = np.zeros(x.shape, dtype=x.dtype)
    units = (1.0, 1j) if x.dtype.kind == "c" else (1.0,)
    for index in np.ndindex(x.shape):
        for unit in units:
            e = np.zeros(x.shape, dtype=x.dtype)
            e[index] = unit * h
            g[index] += unit * (_value(f, x + e) - _value(f, x - e)) / (2 * h)
    return g


def _close(got: Any, expected: Any, tol: float = 1e-6, what: str = "") -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, what
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("dt", [np.float64, np.complex128])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_first_order_compositions_match_finite_differences(name: str, dt: Any) -> None:
    f = LOSSES[name]
    x = _point(dt, 1)
    expected = _fd_grad(f, x)
    _close(tf.grad(f)(x), expected, 1e-5, f"grad {name}")
    exact = np.asarray(tf.grad(f)(x))
    _close(tf.jit(tf.grad(f))(x), exact, 1e-10, "jit(grad)")
    _close(tf.grad(tf.checkpoint(f))(x), exact, 1e-10, "grad(checkpoint)")
    value, g = tf.value_and_grad(f)(x)
    _close(value, _value(f, x), 1e-12, "value")
    _close(g, exact, 1e-10, "value_and_grad")
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(f(t), t), exact, 1e-10, "tape")
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(tf.checkpoint(f)(t), t), exact, 1e-10, "tape checkpoint")
    batch = np.stack([x, _point(dt, 2), _point(dt, 3)])
    per_example = np.stack([np.asarray(tf.grad(f)(e)) for e in batch])
    _close(tf.vmap(tf.grad(f))(batch), per_example, 1e-10, "vmap(grad)")
    _close(tf.grad(lambda y: tf.sum(tf.vmap(f)(y)))(batch), per_example, 1e-10, "grad(vmap)")
    _close(tf.jacrev(f)(x), exact, 1e-10, "jacrev of a real scalar: tf.grad's rows")


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_second_order_compositions_match_finite_differences(name: str) -> None:
    f = LOSSES[name]
    x, v = _point(np.float64, 1), _point(np.float64, 4)
    h = 1e-5
    grad = tf.grad(f)
    expected = (np.asarray(grad(x + h * v)) - np.asarray(grad(x - h * v))) / (2 * h)
    hvp = np.asarray(tf.hvp(f, (x,), (v,)))
    _close(hvp, expected, 1e-5, f"hvp {name}")
    _close(tf.Tape().hvp(f, [x], [v]), hvp, 1e-9, "tape.hvp")
    _close(tf.hvp(tf.checkpoint(f), (x,), (v,)), hvp, 1e-9, "hvp(checkpoint)")
    _close(tf.linearize(grad, x)[1](v), hvp, 1e-9, "linearize(grad)")
    _close(tf.grad(lambda y: tf.sum(grad(y) * v))(x), hvp, 1e-9, "grad(<grad, v>)")
    tape = tf.Tape()
    t = tape.track(x)
    g = tape.grad(f(t), t, create_graph=True)
    _close(tape.grad(tf.sum(g * v), t), hvp, 1e-9, "tape create_graph")
    hessian = np.asarray(tf.hessian(f)(x))
    _close(hessian.reshape(N * N, N * N) @ v.reshape(-1), hvp.reshape(-1), 1e-9, "hessian")
    _close(hessian, hessian.transpose(2, 3, 0, 1), 1e-8, "hessian symmetry")
    _close(tf.jacrev(grad)(x), hessian, 1e-9, "jacrev(grad)")
    _close(tf.jacfwd(grad)(x), hessian, 1e-9, "jacfwd(grad)")
    directions = np.stack([v, 2 * v, x])
    expected_rows = np.stack([np.asarray(tf.hvp(f, (x,), (d,))) for d in directions])
    _close(tf.vmap(lambda d: tf.hvp(f, (x,), (d,)))(directions), expected_rows, 1e-9, "vmap(hvp)")


def test_jit_static_arguments_select_programs_and_compose_with_grad_and_vmap() -> None:
    def h(x: Any, n: int, mode: str) -> Any:
        if mode == "power":
            return tf.sum(tf.linalg.matrix_power(x, n))
        return tf.sum(tf.einsum("ij,jk->ik", x, x)) * n

    compiled = tf.jit(h, static_argnums=(1, 2))
    x = _point(np.float64, 5)
    for n in (1, 2, 3, 2):
        assert float(np.asarray(compiled(x, n, "power"))) == pytest.approx(
            np.sum(np.linalg.matrix_power(x, n)), rel=1e-12
        )
        assert float(np.asarray(compiled(x, n, "einsum"))) == pytest.approx(
            np.sum(x @ x) * n, rel=1e-12
        )
    expected = _fd_grad(lambda y: h(y, 3, "power"), x)
    _close(tf.grad(lambda y: compiled(y, 3, "power"))(x), expected, 1e-5)
    # grad makes its positional arguments tensors (documented): Python values go by keyword
    fast_grad = tf.jit(tf.grad(h), static_argnames=("n", "mode"))
    _close(fast_grad(x, n=3, mode="power"), expected, 1e-5)
    batch = np.stack([x, 2 * x])
    _close(
        tf.vmap(lambda y: compiled(y, 2, "power"))(batch),
        [np.sum(np.linalg.matrix_power(y, 2)) for y in batch],
        1e-12,
    )


@tf.custom_jvp
def _scaled_sin(x: Any) -> Any:
    return tf.sin(x) * 2.0


@_scaled_sin.defjvp
def _scaled_sin_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return _scaled_sin(x), 2.0 * tf.cos(x) * t


@tf.custom_vjp
def _apply(x: Any, y: Any) -> Any:
    return tf.einsum("ij,j->i", x, y)


def _apply_fwd(x: Any, y: Any) -> Any:
    return _apply(x, y), (x, y)


def _apply_bwd(residuals: Any, ct: Any) -> Any:
    x, y = residuals
    return tf.einsum("i,j->ij", ct, tf.conj(y)), tf.einsum("ij,i->j", tf.conj(x), ct)


_apply.defvjp(_apply_fwd, _apply_bwd)


def test_custom_jvp_composes_with_every_transform() -> None:
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    loss = lambda y: tf.sum(_scaled_sin(y))  # noqa: E731
    grad, hvp = 2 * np.cos(x), -2 * np.sin(x) * v
    _close(tf.grad(loss)(x), grad, 1e-12)
    _close(tf.jit(tf.grad(loss))(x), grad, 1e-12)
    _close(tf.vmap(tf.grad(loss))(np.stack([x, 2 * x])), [grad, 2 * np.cos(2 * x)], 1e-12)
    _close(tf.hvp(loss, (x,), (v,)), hvp, 1e-12)
    _close(tf.hessian(loss)(x), np.diag(-2 * np.sin(x)), 1e-12)
    _close(tf.jacrev(_scaled_sin)(x), np.diag(grad), 1e-12)
    _close(tf.jacfwd(_scaled_sin)(x), np.diag(grad), 1e-12)
    _close(tf.grad(lambda y: tf.sum(tf.checkpoint(_scaled_sin)(y)))(x), grad, 1e-12)
    _close(tf.hvp(lambda y: tf.sum(tf.checkpoint(_scaled_sin)(y)), (x,), (v,)), hvp, 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(tf.sum(tf.checkpoint(_scaled_sin)(t)), t), grad, 1e-12)
    _close(tf.Tape().hvp(loss, [x], [v]), hvp, 1e-12)


def test_custom_vjp_composes_with_reverse_transforms() -> None:
    x, y, w = A, C.real, np.array([1.0, -2.0, 0.5])
    loss = lambda m, u: tf.sum(_apply(m, u) * w)  # noqa: E731
    _close(tf.grad(loss)(x, y), np.outer(w, y), 1e-12)
    _close(tf.grad(loss, argnums=1)(x, y), x.T @ w, 1e-12)
    _close(tf.jit(tf.grad(loss))(x, y), np.outer(w, y), 1e-12)
    batch = np.stack([x, B])
    _close(tf.vmap(tf.grad(loss), in_axes=(0, None))(batch, y), [np.outer(w, y)] * 2, 1e-12)
    _close(tf.jacrev(_apply, argnums=1)(x, y), x, 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(loss(t, y), t), np.outer(w, y), 1e-12)
    tape = tf.Tape()
    t = tape.track(x)
    _close(tape.grad(tf.sum(tf.checkpoint(_apply)(t, y) * w), t), np.outer(w, y), 1e-12)
    with pytest.raises(ADRuleError, match="custom_vjp"):
        tf.jvp(lambda m: _apply(m, y), (x,), (x,))  # no forward mode, as in JAX
    z, zy = x + 1j * B, C
    expected = tf.grad(lambda m: tf.sum(tf.abs(tf.einsum("ij,j->i", m, zy)) ** 2))(z)
    _close(tf.grad(lambda m: tf.sum(tf.abs(_apply(m, zy)) ** 2))(z), expected, 1e-12)


# ---------------------------------------------------------------------- bugs found


@pytest.mark.parametrize("how", ["grad", "hvp"])
def test_checkpoint_of_matrix_exp_differentiates(how: str) -> None:
    x = np.array([[0.1, 0.2], [0.3, -0.4]])

    def f(y: Any) -> Any:
        return tf.sum(tf.linalg.matrix_exp(y))

    if how == "grad":
        _close(tf.grad(tf.checkpoint(f))(x), tf.grad(f)(x), 1e-12)
    else:
        _close(tf.hvp(tf.checkpoint(f), (x,), (x,)), tf.hvp(f, (x,), (x,)), 1e-12)


def test_checkpoint_of_a_custom_vjp_function_under_grad() -> None:
    w = np.array([1.0, -2.0, 0.5])
    got = tf.grad(lambda m: tf.sum(tf.checkpoint(_apply)(m, C.real) * w))(A)
    _close(got, np.outer(w, C.real), 1e-12)


_CHECKPOINTED = {
    "det": lambda y: tf.linalg.det(y),
    "slogdet": lambda y: tf.linalg.slogdet(y)[1],
    "inv": lambda y: tf.sum(tf.linalg.inv(y)),
    "solve": lambda y: tf.sum(tf.linalg.solve(y, tf.sin(y))),
    "matrix_exp": lambda y: tf.sum(tf.linalg.matrix_exp(y)),
    "matrix_power": lambda y: tf.sum(tf.linalg.matrix_power(y, 3)),
    "svdvals": lambda y: tf.sum(tf.linalg.svdvals(y)),
    "eigvalsh": lambda y: tf.sum(tf.linalg.eigvalsh(y + tf.swapaxes(y, -1, -2))),
    "qr": lambda y: tf.sum(tf.linalg.qr(y).R),
    "cholesky": lambda y: tf.sum(tf.linalg.cholesky(y @ tf.swapaxes(y, -1, -2))),
    "pinv": lambda y: tf.sum(tf.linalg.pinv(y)),
    "lu_solve": lambda y: tf.sum(tf.linalg.lu_solve(tf.linalg.lu_factor(y), tf.cos(y))),
    "norm": lambda y: tf.linalg.norm(y, "nuc"),
}


@pytest.mark.parametrize("name", sorted(_CHECKPOINTED))
def test_checkpointed_linalg_differentiates_as_plain(name: str) -> None:
    """A JVP rule of a family linear in one operand reads, when only that operand is
    active, nothing computed from it: a checkpointed segment's JVP, transposed,
    recomputes without it (tf.grad and tf.hvp of tf.checkpoint(f) equal those of f)."""
    f = _CHECKPOINTED[name]
    a = np.eye(3) * 2 + 0.1 * np.arange(9.0).reshape(3, 3)
    expected = np.asarray(tf.grad(f)(a))
    np.testing.assert_allclose(np.asarray(tf.grad(tf.checkpoint(f))(a)), expected, rtol=1e-10)
    v = np.cos(np.arange(9.0)).reshape(3, 3)
    np.testing.assert_allclose(
        np.asarray(tf.hvp(tf.checkpoint(f), (a,), (v,))),
        np.asarray(tf.hvp(f, (a,), (v,))),
        rtol=1e-9,
        atol=1e-12,
    )
