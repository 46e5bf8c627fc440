"""``tf.checkpoint`` of functions holding ``custom_vjp`` parts, under every reverse transform.

A traced checkpointed segment is differentiated by linearising its body and transposing
the result. The linearisation of a ``custom_vjp`` call is a linear operation (the
residuals and the argument tangents in) whose transpose is the user's ``bwd``; it is
linear in its tangents, so its own JVP there is itself, and a segment's JVP can be
linearised and transposed again: ``grad``/``vjp``/``jit``/``vmap`` of a checkpointed
segment equal those of the plain function, and the backward program still recomputes
instead of storing. Forward mode through a ``custom_vjp`` call has no rule and raises
``ADRuleError`` (as JAX's ``custom_vjp``), with or without checkpoint.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.traced.remat import Segment
from tidu import ADRuleError

RNG = np.random.default_rng(20)
W = RNG.standard_normal(4)
V = RNG.standard_normal(4)
T = RNG.standard_normal(4)
PARAMS = {"w": W, "b": np.float64(0.3)}
NO_FORWARD = r"custom_vjp\(.*\).*no forward-mode derivative"


def _rotate_plain(params: dict[str, Any], v: Any) -> dict[str, Any]:
    return {"y": params["w"] * tf.sin(v) + params["b"], "s": tf.sum(params["w"] * v)}


@tf.custom_vjp
def rotate(params: dict[str, Any], v: Any) -> dict[str, Any]:
    """Two arguments (a dict and a tensor), two outputs (a dict)."""
    return _rotate_plain(params, v)


def _rotate_fwd(params: dict[str, Any], v: Any) -> Any:
    return rotate(params, v), (params["w"], v, tf.cos(v), "static")


def _rotate_bwd(residuals: Any, g: dict[str, Any]) -> Any:
    w, v, cos_v, tag = residuals
    assert tag == "static"  # a non-tensor residual comes back as it is
    gy, gs = g["y"], g["s"]
    return {"w": gy * tf.sin(v) + gs * v, "b": tf.sum(gy)}, gy * w * cos_v + gs * w


rotate.defvjp(_rotate_fwd, _rotate_bwd)


def _loss(fn: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    def loss(params: dict[str, Any], v: Any) -> Any:
        out = fn(params, v)
        return tf.sum(out["y"] ** 2) + 3.0 * out["s"]

    return loss


PLAIN = _loss(_rotate_plain)
CUSTOM = _loss(rotate)
CHECKPOINTED = _loss(tf.checkpoint(rotate))


def _nested(params: dict[str, Any], v: Any) -> dict[str, Any]:
    """A checkpoint holding a checkpoint, each calling the custom function."""

    def inner(p: dict[str, Any], u: Any) -> Any:
        return tf.tanh(rotate(p, u)["y"])

    def outer(p: dict[str, Any], u: Any) -> Any:
        return rotate(p, tf.checkpoint(inner)(p, u) * 0.5)

    return tf.checkpoint(outer)(params, v)


def _nested_plain(params: dict[str, Any], v: Any) -> dict[str, Any]:
    return _rotate_plain(params, tf.tanh(_rotate_plain(params, v)["y"]) * 0.5)


def close(a: Any, b: Any, rtol: float = 1e-12) -> None:
    got, want = tf.tree_util.tree_leaves(a), tf.tree_util.tree_leaves(b)
    assert len(got) == len(want)
    for x, y in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-13)


# ---------------------------------------------------------------------- reverse transforms


@pytest.mark.parametrize("loss", [CUSTOM, CHECKPOINTED], ids=["custom", "checkpointed"])
def test_grad_and_value_and_grad_equal_the_plain_function(loss: Any) -> None:
    expected = tf.grad(PLAIN, argnums=(0, 1))(PARAMS, V)
    close(tf.grad(loss, argnums=(0, 1))(PARAMS, V), expected)
    close(tf.grad(loss, argnums=1)(PARAMS, V), expected[1])
    value, gradient = tf.value_and_grad(loss, argnums=(0, 1))(PARAMS, V)
    close(value, PLAIN(PARAMS, tf.asarray(V)))
    close(gradient, expected)


def test_vjp_with_a_pytree_cotangent_and_one_unused_output() -> None:
    cotangent = {"y": T, "s": np.float64(2.0)}
    out, pullback = tf.vjp(tf.checkpoint(rotate), PARAMS, V)
    out_plain, pullback_plain = tf.vjp(_rotate_plain, PARAMS, V)
    close(out, out_plain)
    close(pullback(cotangent), pullback_plain(cotangent))
    # only one output carries a cotangent: bwd receives zeros for the other
    only_s = lambda p, v: tf.checkpoint(rotate)(p, v)["s"] * 2.0  # noqa: E731
    close(
        tf.grad(only_s, argnums=(0, 1))(PARAMS, V),
        tf.grad(lambda p, v: _rotate_plain(p, v)["s"] * 2.0, argnums=(0, 1))(PARAMS, V),
    )


def test_jit_of_grad_and_vmap_of_grad() -> None:
    expected = tf.grad(PLAIN, argnums=1)(PARAMS, V)
    close(tf.jit(tf.grad(CHECKPOINTED, argnums=1))(PARAMS, V), expected)
    close(tf.jit(tf.grad(CHECKPOINTED, argnums=1))(PARAMS, V), expected)  # cached program
    batch = np.stack([V, 2 * V, -V])
    per_example = tf.vmap(tf.grad(CHECKPOINTED, argnums=1), in_axes=(None, 0))(PARAMS, batch)
    close(per_example, np.stack([tf.grad(PLAIN, argnums=1)(PARAMS, b) for b in batch]))


def test_nested_checkpoints_holding_custom_vjp_calls() -> None:
    nested, plain = _loss(_nested), _loss(_nested_plain)
    close(tf.grad(nested, argnums=(0, 1))(PARAMS, V), tf.grad(plain, argnums=(0, 1))(PARAMS, V))
    close(tf.jit(tf.grad(nested, argnums=1))(PARAMS, V), tf.grad(plain, argnums=1)(PARAMS, V))


def test_reverse_over_reverse_differentiates_fwd_and_bwd() -> None:
    def second(loss: Any) -> Any:
        return tf.grad(lambda v: tf.sum(tf.grad(loss, argnums=1)(PARAMS, v) * T))(V)

    close(second(CHECKPOINTED), second(PLAIN), 1e-10)
    close(second(_loss(_nested)), second(_loss(_nested_plain)), 1e-10)


def test_forward_over_reverse_where_the_gradient_reads_no_custom_output() -> None:
    """The gradient of ``sum(f(x))`` is ``bwd`` on residuals of ``fwd``: ordinary
    operations, which forward mode differentiates (checkpointed or not)."""
    plain = lambda v: tf.sum(tf.sin(v) * W)  # noqa: E731
    for f in (rotate, tf.checkpoint(rotate)):
        loss = lambda v, f=f: tf.sum(f(PARAMS, v)["y"])  # noqa: E731
        close(tf.hvp(loss, (V,), (T,)), tf.hvp(plain, (V,), (T,)), 1e-10)


def test_complex_arguments_in_the_conjugate_convention() -> None:
    @tf.custom_vjp
    def apply(m: Any, u: Any) -> Any:
        return tf.einsum("ij,j->i", m, u)

    def bwd(residuals: Any, ct: Any) -> Any:
        m, u = residuals
        return tf.einsum("i,j->ij", ct, tf.conj(u)), tf.einsum("ij,i->j", tf.conj(m), ct)

    apply.defvjp(lambda m, u: (apply(m, u), (m, u)), bwd)
    m = RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))
    u = V + 1j * T
    plain = lambda a, b: tf.sum(tf.abs(tf.einsum("ij,j->i", a, b)) ** 2)  # noqa: E731
    checkpointed = lambda a, b: tf.sum(tf.abs(tf.checkpoint(apply)(a, b)) ** 2)  # noqa: E731
    close(tf.grad(checkpointed, argnums=(0, 1))(m, u), tf.grad(plain, argnums=(0, 1))(m, u))


def test_the_eager_tape_checkpoint_agrees() -> None:
    tape = tf.Tape()
    v = tape.track(V)
    close(tape.grad(CHECKPOINTED(PARAMS, v), v), tf.grad(PLAIN, argnums=1)(PARAMS, V))


# ---------------------------------------------------------------------- no forward mode


def _y(v: Any) -> Any:
    return rotate(PARAMS, v)["y"]


def _checkpointed_y(v: Any) -> Any:
    return tf.checkpoint(rotate)(PARAMS, v)["y"]


FORWARD_MODE: dict[str, Callable[[], Any]] = {
    "jvp": lambda: tf.jvp(_y, (V,), (T,)),
    "jvp of checkpoint": lambda: tf.jvp(_checkpointed_y, (V,), (T,)),
    "jacfwd": lambda: tf.jacfwd(_y)(V),
    "jacfwd of checkpoint": lambda: tf.jacfwd(_checkpointed_y)(V),
    "linearize of checkpoint": lambda: tf.linearize(_checkpointed_y, V)[1](T),
    "tape jvp of checkpoint": lambda: tf.Tape().jvp(_checkpointed_y, (V,), (T,)),
    # the gradient of sum(y**2) reads y = f(v): its forward derivative needs f's JVP
    "hvp": lambda: tf.hvp(lambda v: CUSTOM(PARAMS, v), (V,), (T,)),
    "hvp of checkpoint": lambda: tf.hvp(lambda v: CHECKPOINTED(PARAMS, v), (V,), (T,)),
    "hessian of checkpoint": lambda: tf.hessian(lambda v: CHECKPOINTED(PARAMS, v))(V),
}


@pytest.mark.parametrize("name", sorted(FORWARD_MODE))
def test_forward_mode_through_a_custom_vjp_call_raises(name: str) -> None:
    with pytest.raises(ADRuleError, match=NO_FORWARD):
        FORWARD_MODE[name]()


# ---------------------------------------------------------------------- memory

N = 100_000
SEGMENTS = 12


@tf.custom_vjp
def _custom_sin(x: Any) -> Any:
    return tf.sin(x)


_custom_sin.defvjp(lambda x: (tf.sin(x), (tf.cos(x),)), lambda r, g: (r[0] * g,))


def _segment(v: Any) -> Any:
    for _ in range(10):
        v = _custom_sin(v) * 1.01
    return v


def _long_chain(run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        for _ in range(SEGMENTS):
            x = run(x)
        return tf.sum(x)

    return f


def _peak_arrays(run: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return (peak - base) / (8 * N), result


@pytest.mark.slow
def test_checkpointed_custom_vjp_chain_recomputes_instead_of_storing() -> None:
    x = np.linspace(0.0, 1.0, N)
    figures = {}
    for name, run in (("plain", _segment), ("checkpoint", tf.checkpoint(_segment))):
        gradient = tf.jit(tf.grad(_long_chain(run)))
        gradient(x)  # compiled outside the measurement
        figures[name] = _peak_arrays(lambda g=gradient: g(x))  # type: ignore[misc]
    (plain, expected), (checkpointed, got) = figures["plain"], figures["checkpoint"]
    close(got, expected)
    assert plain > 100  # every cos residual is stored by the plain program
    assert checkpointed < 0.5 * plain, (checkpointed, plain)
    # boundaries (12) plus one recomputed segment (10 cos residuals) and a cotangent:
    # measured 24.0 arrays (the plain program: 123)
    assert checkpointed < 27, checkpointed


@pytest.mark.slow
def test_custom_calls_in_a_program_free_their_arrays_at_once() -> None:
    """Evaluating a custom function leaves no reference cycle holding its arrays (the
    cyclic collector is paused during evaluation: the pytree walks were recursive
    closures, which kept every array they flattened alive, 2 per call)."""
    x = np.linspace(0.0, 1.0, N)
    tf.clear_caches()  # no cache grown by earlier tests resizes during the measurement
    forward = tf.jit(_long_chain(_segment))
    forward(x)
    # The least of three runs: a leak holds its arrays at every run, while an allocation
    # of the test process around one run (a pytest-xdist report sent meanwhile) does not.
    peak = min(_peak_arrays(lambda: forward(x))[0] for _ in range(3))
    assert peak < 5, peak  # the input, the running value and the next one


def test_backward_program_holds_custom_calls_only_inside_segments() -> None:
    gradient = tf.jit(tf.grad(_long_chain(tf.checkpoint(_segment))))
    gradient(np.ones(3))
    (plan,) = list(gradient.cache._entries.values())  # type: ignore[attr-defined]
    instructions = plan.program.program.instructions
    assert sum(isinstance(i.operation, Segment) for i in instructions) == 2 * SEGMENTS - 1
    assert {i.operation.name for i in instructions if not isinstance(i.operation, Segment)} <= {
        "convert",
        "broadcast_in_dim",
        "reduce_sum",
        "mul",
        "full",
    }, [str(i.operation) for i in instructions]
