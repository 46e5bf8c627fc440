"""Function transforms (JAX signatures) and the TracedTensor AD API: results, pytrees,
composition to any order, caching by shapes and dtypes.

Compositions on einsum and linalg functions (grad of vmap, vmap of grad, jacfwd/jacrev/
hessian, jit with static arguments, checkpoint inside grad and inside the eager tape,
hvp, linearize, the tape's create_graph) are checked against central differences in
the conjugate convention: for a real loss of complex ``z``, ``dL/dRe z + i dL/dIm z``
(PyTorch's; JAX's is its conjugate)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from transform_routes import fd_gradient

import tenferro as tf


def close(actual: Any, expected: Any, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def f(x: Any, y: Any) -> Any:
    return tf.sum(tf.sin(x) * y**2)


X = np.array([0.3, -1.2, 2.0])
Y = np.array([1.5, 0.5, -0.7])


# ---------------------------------------------------------------------- grad family


def test_grad_argnums_and_value_and_grad():
    close(tf.grad(f)(X, Y), np.cos(X) * Y**2)
    close(tf.grad(f, argnums=1)(X, Y), 2 * np.sin(X) * Y)
    gx, gy = tf.grad(f, argnums=(0, 1))(X, Y)
    close(gx, np.cos(X) * Y**2)
    close(gy, 2 * np.sin(X) * Y)
    (gy_only,) = tf.grad(f, argnums=(-1,))(X, Y)
    close(gy_only, gy)
    value, g = tf.value_and_grad(f)(X, Y)
    close(value, np.sum(np.sin(X) * Y**2))
    close(g, gx)
    assert isinstance(value, tf.Tensor)
    assert isinstance(g, tf.Tensor)


def test_has_aux():
    def with_aux(x: Any) -> Any:
        return tf.sum(x * x), {"mean": tf.mean(x)}

    g, aux = tf.grad(with_aux, has_aux=True)(X)
    close(g, 2 * X)
    close(aux["mean"], X.mean())
    (value, aux), g = tf.value_and_grad(with_aux, has_aux=True)(X)
    close(value, np.sum(X * X))
    out, pullback, aux = tf.vjp(lambda x: (x * 3, x[0]), X, has_aux=True)
    close(out, 3 * X)
    close(aux, X[0])
    close(pullback(np.ones(3))[0], [3, 3, 3])


def test_arguments_may_be_scalars_tensors_and_arrays():
    close(tf.grad(lambda x: x**3)(2.0), 12.0)
    close(tf.grad(lambda x: x**3)(tf.asarray(2.0)), 12.0)
    close(tf.grad(lambda x: tf.sum(x**3))(np.array([1.0, 2.0])), [3.0, 12.0])
    # lists are pytrees (as in JAX): one gradient per element
    close(tf.grad(lambda xs: xs[0] * xs[1])([3.0, 2.0]), [2.0, 3.0])
    assert np.asarray(tf.grad(lambda x: x * x)(np.float32(2.0))).dtype == np.float32


def test_pytree_arguments_and_outputs():
    params = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": [np.array([0.5, -0.5])]}

    def loss(p: Any, x: Any) -> Any:
        return tf.sum(tf.tanh(p["w"] @ x + p["b"][0]) ** 2)

    x = np.array([0.1, -0.2])
    g = tf.grad(loss)(params, x)
    assert set(g) == {"w", "b"}
    assert isinstance(g["b"], list)
    eps = 1e-6
    bumped = {"w": params["w"].copy(), "b": [params["b"][0].copy()]}
    bumped["w"][1, 0] += eps
    fd = (float(loss(bumped, x)) - float(loss(params, x))) / eps
    close(g["w"][1, 0], fd, tol=1e-5)
    out, tangent = tf.jvp(lambda p: {"y": p["w"] @ x}, (params,), (params,))
    close(out["y"], params["w"] @ x)
    close(tangent["y"], params["w"] @ x)  # linear in p


# ---------------------------------------------------------------------- jvp, vjp, linearize, hvp


def test_jvp_vjp_linearize_agree():
    dx, dy = np.array([1.0, 0.0, -1.0]), np.array([0.5, 0.5, 0.5])
    out, tangent = tf.jvp(f, (X, Y), (dx, dy))
    close(out, f(X, Y))
    expected = np.sum(np.cos(X) * dx * Y**2 + np.sin(X) * 2 * Y * dy)
    close(tangent, expected)
    out2, jvp_fn = tf.linearize(f, X, Y)
    close(out2, out)
    close(jvp_fn(dx, dy), expected)
    close(jvp_fn(2 * dx, 2 * dy), 2 * expected)
    _, pullback = tf.vjp(f, X, Y)
    gx, gy = pullback(np.array(1.0))
    close(np.dot(gx, dx) + np.dot(gy, dy), expected)


def test_hvp_matches_the_dense_hessian():
    def g(x: Any) -> Any:
        return tf.sum(tf.exp(x[:-1] * x[1:])) + tf.sum(x**4)

    x = np.array([0.2, -0.4, 0.9])
    n = len(x)
    hessian = np.zeros((n, n))
    for i in range(n):
        hessian[:, i] = np.asarray(tf.hvp(g, (x,), (np.eye(n)[i],)))
    close(hessian, hessian.T)
    eps = 1e-5
    for i in range(n):
        e = np.eye(n)[i] * eps
        column = (np.asarray(tf.grad(g)(x + e)) - np.asarray(tf.grad(g)(x - e))) / (2 * eps)
        close(hessian[:, i], column, tol=1e-6)


def test_any_order():
    derivatives = [tf.sin]
    for _ in range(4):
        derivatives.append(tf.grad(derivatives[-1]))
    x = 0.7
    expected = [np.sin(x), np.cos(x), -np.sin(x), -np.cos(x), np.sin(x)]
    for derivative, value in zip(derivatives, expected, strict=True):
        close(derivative(x), value)
    third = tf.jvp(tf.grad(tf.grad(tf.sin)), (x,), (1.0,))[1]
    close(third, -np.cos(x))


def test_composition_with_jit_and_vjp():
    g = tf.jit(tf.grad(f))
    close(g(X, Y), np.cos(X) * Y**2)
    h = tf.grad(tf.jit(f))
    close(h(X, Y), np.cos(X) * Y**2)

    def through_vjp(x: Any) -> Any:
        _, pullback = tf.vjp(lambda v: tf.sin(v) * v, x)
        return tf.sum(pullback(tf.ones_like(x))[0] ** 2)

    # d/dx sum((cos x * x + sin x)^2)
    inner = np.cos(X) * X + np.sin(X)
    close(tf.grad(through_vjp)(X), 2 * inner * (2 * np.cos(X) - X * np.sin(X)))


def test_complex_transforms():
    z = np.array([1.0 + 1.0j, 0.5 - 2.0j])
    close(tf.grad(lambda z: tf.sum(tf.abs(z) ** 2))(z), 2 * z)
    _, tangent = tf.jvp(tf.exp, (z,), (np.ones(2, complex),))
    close(tangent, np.exp(z))
    w = np.array([2.0 - 1.0j, 1.0j])
    hv = tf.hvp(lambda z: tf.sum(tf.real(tf.conj(z) * z * z * tf.conj(z))), (z,), (w,))
    # L = sum |z|^4 as a function of (Re, Im): H w = 8 Re(conj(z) w) z + 4 |z|^2 w
    close(hv, 8 * np.real(np.conj(z) * w) * z + 4 * np.abs(z) ** 2 * w)


# ---------------------------------------------------------------------- caching


def test_derivative_programs_are_cached_by_structure():
    from tenferro.transforms import plans

    cache = plans._GRAD_PROGRAMS
    traces = []

    def counted(x: Any) -> Any:
        traces.append(x.shape)
        return tf.sum(x * x)

    g = tf.grad(counted)
    tf.clear_caches()
    misses = cache.stats().misses
    for _ in range(3):
        close(g(X), 2 * X)
    assert len(traces) == 3  # traced at every call: it reads its inputs at call time
    assert cache.stats().misses == misses + 1  # derived and compiled once
    g(np.ones(4))
    g(np.ones(3, np.float32))
    assert cache.stats().misses == misses + 3
    close(g(X * 2), 4 * X)  # new data, same structure: no new program
    close(tf.grad(lambda x: tf.sum(x * x))(X), 2 * X)  # another function, same structure
    assert cache.stats().misses == misses + 3
    tf.clear_caches()
    assert len(cache) == 0
    g(X)
    assert len(cache) == 1


def test_jit_cache_is_bounded_and_inspectable():
    compiled = tf.jit(lambda x: x + 1)
    for n in range(3):
        compiled(np.ones(n + 1))
    assert len(compiled.cache) == 3
    assert compiled.cache.maxsize >= 3
    stats = compiled.cache.stats()
    assert stats.misses == 3
    compiled(np.ones(1))
    assert compiled.cache.stats().hits == stats.hits + 1


def test_closed_over_data_is_captured_at_trace_time():
    weights = tf.asarray([1.0, 2.0, 3.0])
    g = tf.jit(lambda x: tf.sum(weights * x))
    close(g(np.ones(3)), 6.0)
    close(g(np.full(3, 2.0)), 12.0)


# ---------------------------------------------------------------------- TracedTensor API


def test_placeholders_and_leaves():
    p = tf.placeholder((3,), tf.float64, name="p")
    q = tf.traced(Y, name="q")
    y = tf.sum(tf.sin(p) * q**2)
    close(y.eval({p: X}), f(X, Y))
    close(y.eval({"p": 2 * X}), f(2 * X, Y))
    close(y.grad(p).eval({p: X}), np.cos(X) * Y**2)
    gp, gq = y.grad([p, q])
    a, b = tf.evaluate([gp, gq], {p: X})
    close(a, np.cos(X) * Y**2)
    close(b, 2 * np.sin(X) * Y)
    close(y.jvp(q, tf.asarray(np.ones(3))).eval({p: X}), np.sum(np.sin(X) * 2 * Y))
    close(y.vjp(q, tf.asarray(2.0)).eval({p: X}), 4 * np.sin(X) * Y)
    assert p.is_leaf()
    assert not y.is_leaf()


def test_traced_values_compose_with_concrete_ones():
    t = tf.traced(X)
    mixed = t * tf.asarray(Y) + np.ones(3) + 1
    assert isinstance(mixed, tf.TracedTensor)
    close(mixed.eval(), X * Y + 2)
    with pytest.raises(TypeError, match="truth value"):
        bool(t > 0)


def test_allow_unused_and_integer_outputs():
    x = tf.traced(X)
    unrelated = tf.traced(Y)
    assert (x * 2).vjp(unrelated, tf.asarray(np.ones(3)), allow_unused=True) is None
    counted = tf.sum((x > 0).astype(tf.float64))
    assert (
        counted.grad(x, allow_unused=True) is None
    )  # comparisons and casts to float carry no tangent
    close(tf.grad(lambda v: tf.sum((v > 0).astype(tf.float64)))(X), np.zeros(3))


def test_checkpoint_keeps_forward_values_and_derivatives():
    x = tf.traced(X)
    y = tf.exp(x).checkpoint()
    z = tf.sum(y * y)
    close(z.eval(), np.sum(np.exp(2 * X)))
    close(z.grad(x).eval(), 2 * np.exp(2 * X))
    w = tf.sum(tf.sin(y))
    close(w.grad(x).eval(), np.cos(np.exp(X)) * np.exp(X))


def test_caches_are_not_shared_with_wrapped_functions():
    """A wrapper made with functools.wraps copies attributes; caches must not follow."""
    import functools

    def loss(a: Any, b: Any) -> Any:
        return tf.sum(a * b)

    x, y = np.ones(3), np.full(3, 2.0)
    close(tf.jvp(loss, (x, y), (x, y))[1], 12.0)
    gx, gy = tf.hvp(loss, (x, y), (x, y))  # jvp of grad(loss), a wraps() of loss
    close(gx, [2, 2, 2])
    close(gy, [1, 1, 1])

    @functools.wraps(loss)
    def doubled(a: Any, b: Any) -> Any:
        return 2 * loss(a, b)

    close(tf.jvp(doubled, (x, y), (x, y))[1], 24.0)
    close(tf.grad(doubled)(x, y), 2 * y)


# ---------------------------------------------------------------------- compositions on linalg


N = 3
COMPOSITION_RNG = np.random.default_rng(11)
A = COMPOSITION_RNG.standard_normal((N, N))
B = COMPOSITION_RNG.standard_normal((N, N))
C = COMPOSITION_RNG.standard_normal(N) + 1j * COMPOSITION_RNG.standard_normal(N)
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
    expected = fd_gradient(lambda a: _value(f, a), x)
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
    expected = fd_gradient(lambda a: _value(lambda y: h(y, 3, "power"), a), x)
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
