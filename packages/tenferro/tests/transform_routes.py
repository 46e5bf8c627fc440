"""A function by every route tenferro offers, against independent references.

* One real scalar loss per function, its gradient and Hessian-vector product by every
  route (traced transforms, jit, vmap, the eager tape with create_graph), and central
  finite differences as the reference, in tenferro's complex convention
  (``grad = dL/dRe + i dL/dIm``, PyTorch's): :func:`check_every_derivative_route`.
* A function under ``vmap``, ``jit(vmap)`` and ``vmap(jit)`` along either end of a batch
  against numpy example by example: :func:`check_per_example`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tenferro as tf

Function = Callable[..., Any]


def values(x: Any) -> Any:
    """numpy values of a tensor of any kind (or of a tuple of them)."""
    if isinstance(x, (tuple, list)):
        return [values(v) for v in x]
    return np.asarray(x.eval() if isinstance(x, tf.TracedTensor) else x)


def loss_of(f: Function, weights: Any) -> Function:
    """``x ↦ Σ Re(conj(w)·f(x))``, a real scalar (``weights`` one array per output)."""
    ws = weights if isinstance(weights, list) else [weights]

    def loss(x: Any) -> Any:
        out = f(x)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        total: Any = None
        for o, w in zip(outs, ws, strict=True):
            term = tf.sum(tf.real(tf.multiply(np.conj(w), o)))
            total = term if total is None else total + term
        return total

    return loss


def weights_for(f: Function, x: np.ndarray[Any, Any], rng: np.random.Generator) -> list[Any]:
    """Random weights shaped like each output of ``f(x)`` (complex for complex ones)."""
    out = f(tf.Tensor(x))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    ws = []
    for o in outs:
        v = values(o)
        w = rng.standard_normal(v.shape)
        if v.dtype.kind == "c":
            w = w + 1j * rng.standard_normal(v.shape)
        ws.append(w)
    return ws


def numpy_loss(f: Function, weights: list[Any]) -> Callable[[np.ndarray[Any, Any]], float]:
    """The same loss evaluated on concrete tensors, as a float (for finite differences)."""
    loss = loss_of(f, weights)
    return lambda x: float(values(loss(tf.Tensor(x))))


def fd_gradient(
    f: Callable[[np.ndarray[Any, Any]], float], x: np.ndarray[Any, Any], eps: float = 1e-6
) -> np.ndarray[Any, Any]:
    """Central differences of a real scalar ``f`` in every real coordinate of ``x``,
    packed as ``dRe + i dIm`` for a complex ``x``."""
    x = np.array(x)
    g = np.zeros(x.shape, x.dtype)
    flat, out = x.reshape(-1), g.reshape(-1)
    directions = (1.0, 1j) if x.dtype.kind == "c" else (1.0,)
    for i in range(flat.size):
        for d in directions:
            plus, minus = flat.copy(), flat.copy()
            plus[i] += eps * d
            minus[i] -= eps * d
            slope = (f(plus.reshape(x.shape)) - f(minus.reshape(x.shape))) / (2 * eps)
            out[i] += slope * d
    return g


def fd_hvp(
    gradient: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]],
    x: np.ndarray[Any, Any],
    v: np.ndarray[Any, Any],
    eps: float = 1e-5,
) -> np.ndarray[Any, Any]:
    """The derivative of ``gradient`` along ``v`` by central differences."""
    return (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)


def gradients_in_every_mode(f: Function, x: np.ndarray[Any, Any], w: list[Any]) -> dict[str, Any]:
    """The gradient of ``loss_of(f, w)`` at ``x`` by every route tenferro offers."""
    loss = loss_of(f, w)
    out: dict[str, Any] = {}
    out["grad"] = values(tf.grad(loss)(x))
    out["jit(grad)"] = values(tf.jit(tf.grad(loss))(x))
    out["value_and_grad"] = values(tf.value_and_grad(loss)(x)[1])
    _, pullback = tf.vjp(loss, x)
    out["vjp"] = values(pullback(np.ones((), np.float64))[0])
    leaf = tf.EagerTensor(x, requires_grad=True)
    loss(leaf).backward()
    out["tape.backward"] = values(leaf.grad)
    leaf = tf.EagerTensor(x, requires_grad=True)
    out["tape.grad"] = values(leaf.tape.grad(loss(leaf), leaf))
    traced = tf.traced(x)
    out["traced.grad"] = values(loss(traced).grad(traced))
    batch = np.stack([x, x])
    out["vmap(grad)[1]"] = values(tf.vmap(tf.grad(loss))(batch))[1]
    return out


def hvps_in_every_mode(
    f: Function, x: np.ndarray[Any, Any], w: list[Any], v: np.ndarray[Any, Any]
) -> dict[str, Any]:
    """The Hessian-vector product of ``loss_of(f, w)`` at ``x`` along ``v`` by every
    route: ``tf.hvp`` (also under jit), ``tape.hvp``, ``jvp`` of ``grad``, and for real
    ``x`` (symmetric Hessian) the gradient of ``<v, grad>`` by the eager tape with
    ``create_graph`` and by ``grad`` of ``grad`` (reverse over reverse)."""
    loss = loss_of(f, w)
    out: dict[str, Any] = {}
    out["hvp"] = values(tf.hvp(loss, (x,), (v,)))
    out["jit(hvp)"] = values(tf.jit(lambda a, b: tf.hvp(loss, (a,), (b,)))(x, v))
    out["tape.hvp"] = values(tf.Tape().hvp(loss, (x,), (v,)))
    out["jvp(grad)"] = values(tf.jvp(tf.grad(loss), (x,), (v,))[1])
    if x.dtype.kind == "f":
        # Re<v, g(x)> has gradient H v for a real symmetric Hessian
        leaf = tf.EagerTensor(x, requires_grad=True)
        (g,) = leaf.tape.grad(loss(leaf), [leaf], create_graph=True)
        inner = tf.sum(tf.multiply(v, g))
        # a loss linear in x has a constant gradient: None (as torch.autograd.grad)
        second = leaf.tape.grad(inner, leaf, allow_unused=True)
        out["create_graph"] = np.zeros_like(x) if second is None else values(second)
        out["grad(vdot(grad))"] = values(
            tf.grad(lambda a: tf.sum(tf.multiply(v, tf.grad(loss)(a))))(x)
        )
    return out


def assert_close(got: Any, want: Any, rtol: float, atol: float, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def _unit(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator) -> Any:
    """Entries in (-0.8, 0.8) (and imaginary parts too for a complex ``dtype``)."""
    drawn = rng.uniform(-0.8, 0.8, shape)
    if np.dtype(dtype).kind == "c":
        drawn = drawn + 1j * rng.uniform(-0.8, 0.8, shape)
    return drawn.astype(dtype)


def check_every_derivative_route(
    name: str, function: Function, shape: tuple[int, ...], dtype: Any
) -> None:
    """The gradient of a weighted real loss of ``function`` by every route equals central
    differences (and has the input's dtype); its Hessian-vector product by every route
    equals central differences of the gradient."""
    rng = np.random.default_rng(sum(map(ord, name)))
    x = _unit(shape, dtype, rng)
    w = weights_for(function, x, rng)
    expected = fd_gradient(numpy_loss(function, w), x)
    for route, got in gradients_in_every_mode(function, x, w).items():
        assert got.dtype == x.dtype, (route, got.dtype)
        assert_close(got, expected, 1e-6, 1e-7, f"{name} gradient by {route}")
    v = _unit(shape, dtype, rng)
    loss = loss_of(function, w)
    expected = fd_hvp(lambda a: values(tf.grad(loss)(a)), x, v)
    for route, got in hvps_in_every_mode(function, x, w, v).items():
        assert_close(got, expected, 1e-5, 1e-6, f"{name} Hessian-vector product by {route}")


BATCHED_MODES = ["vmap", "jit(vmap)", "vmap(jit)"]


def per_example_cases(names: list[str]) -> st.SearchStrategy[tuple[str, Any, str, bool]]:
    """``(name, dtype, mode, last)`` for :func:`check_per_example`: one of ``names``,
    float64 or complex128, one of :data:`BATCHED_MODES`, the batch axis last or first."""
    return st.tuples(
        st.sampled_from(names),
        st.sampled_from([np.float64, np.complex128]),
        st.sampled_from(BATCHED_MODES),
        st.booleans(),
    )


def check_per_example(
    name: str,
    function: Function,
    reference: Callable[[Any], Any],
    shape: tuple[int, ...],
    dtype: Any,
    mode: str,
    last: bool,
) -> None:
    """``function`` mapped by ``mode`` over a batch of 4 (along the first axis, or the
    last when ``last``) equals numpy's ``reference`` example by example: values and
    dtypes of every output."""
    batch = _unit((4, *shape), dtype, np.random.default_rng(3))
    axis = -1 if last and shape else 0
    argument = np.moveaxis(batch, 0, axis)
    mapped = {
        "vmap": lambda: tf.vmap(function, in_axes=axis),
        "jit(vmap)": lambda: tf.jit(tf.vmap(function, in_axes=axis)),
        "vmap(jit)": lambda: tf.vmap(tf.jit(function), in_axes=axis),
    }[mode]()
    got = mapped(argument)
    expected = [reference(b) for b in batch]
    outs = list(got) if isinstance(got, (tuple, list)) else [got]
    if isinstance(expected[0], (tuple, list)):
        wants = [np.stack([e[i] for e in expected]) for i in range(len(outs))]
    else:
        wants = [np.stack(expected)]
    assert len(outs) == len(wants)
    for out, want in zip(outs, wants, strict=True):
        value = values(out)
        assert value.dtype == want.dtype
        assert_close(value, want, 1e-12, 1e-12, f"{name} under {mode}")
