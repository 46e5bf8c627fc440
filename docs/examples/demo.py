"""tenferro in one page (``make demo``): traced AD, then eager AD, each checked.

1. Traced AD. ``f(x) = sum(tanh(W x)^2)``: its gradient and a Hessian-vector product
   from JAX-style transforms, both checked against finite differences; then the
   printed linear graph (JVP) and transposed graph (VJP) of a small function.
2. Eager AD. A loop whose slice length is decided from the data at run time (like a
   truncated SVD's rank), with one step checkpointed; ``backward()`` fills ``.grad``
   and is checked against finite differences of the same loop written in numpy.

Every derivative is checked; the report ends with timings. Runs on numpy alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tenferro as tf

RNG = np.random.default_rng(7)
REPORT: list[tuple[str, float, float]] = []


def check(label: str, ours: Any, reference: Any, tolerance: float) -> None:
    """Record the largest difference between our derivative and the reference."""
    error = float(np.max(np.abs(np.asarray(ours) - np.asarray(reference))))
    REPORT.append((label, error, tolerance))
    if not error <= tolerance:
        raise SystemExit(f"demo: {label} differs by {error:.2e} (tolerance {tolerance:g})")


def central_difference(f: Callable[[np.ndarray[Any, Any]], float], x: Any, v: Any) -> float:
    h = 1e-6
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def timed(run: Callable[[], Any], repeat: int = 20) -> float:
    run()
    start = time.perf_counter()
    for _ in range(repeat):
        run()
    return (time.perf_counter() - start) / repeat


# ---------------------------------------------------------------------- 1. traced AD


def traced_ad() -> dict[str, float]:
    n = 32
    w = tf.asarray(RNG.standard_normal((n, n)) / np.sqrt(n))
    x, v = RNG.standard_normal(n), RNG.standard_normal(n)

    def f(x: Any) -> Any:
        return tf.sum(tf.tanh(w @ x) ** 2)

    def f_numpy(x: np.ndarray[Any, Any]) -> float:
        return float(np.sum(np.tanh(np.asarray(w) @ x) ** 2))

    grad_f = tf.grad(f)  # traced and compiled on the first call, cached after
    gradient = np.asarray(grad_f(x))
    check(
        "traced grad . v vs finite differences",
        gradient @ v,
        central_difference(f_numpy, x, v),
        1e-7,
    )
    hvp = np.asarray(tf.hvp(f, (x,), (v,)))

    def grad_along(y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.asarray(grad_f(y))

    h = 1e-6
    check(
        "traced HVP vs finite differences of grad",
        hvp,
        (grad_along(x + h * v) - grad_along(x - h * v)) / (2 * h),
        1e-6,
    )

    t = tf.traced(np.array([0.5, 1.0]), name="t")
    s = tf.sum(tf.sin(t) * t)
    print("s = sum(sin(t) * t), its linear graph (JVP along a tangent):")
    print(_indent(tf.format_graph(s.jvp(t, tf.asarray([1.0, 0.0])))))
    print("and its transposed graph (the gradient):")
    print(_indent(tf.format_graph(s.grad(t))))
    return {
        "traced grad, n=32 (cached program)": timed(lambda: grad_f(x)),
        "traced HVP, n=32 (cached program)": timed(lambda: tf.hvp(f, (x,), (v,))),
    }


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# ---------------------------------------------------------------------- 2. eager AD


def step(a: Any, v: Any) -> Any:
    return tf.tanh(a @ v)


def kept(values: np.ndarray[Any, Any], energy: float = 0.9) -> int:
    """The shortest prefix holding ``energy`` of the squared norm (a rank-like choice)."""
    cumulative = np.cumsum(np.abs(values) ** 2)
    return int(np.searchsorted(cumulative, energy * cumulative[-1]) + 1)


LENGTHS: list[int] = []


def truncated_iteration(a: Any, v: Any, steps: int = 4) -> Any:
    """Iterate ``v <- tanh(a v)``, each time keeping only the prefix of ``v`` (and block of
    ``a``) that holds 90% of its weight: the length is read from the data, as a truncated
    SVD's rank is. The second step runs checkpointed (recomputed in backward)."""
    for index in range(steps):
        v = tf.checkpoint(step)(a, v) if index == 1 else step(a, v)
        keep = kept(np.asarray(v))
        LENGTHS.append(keep)
        v, a = v[:keep], a[:keep, :keep]
    return tf.sum(v * v)


def truncated_iteration_numpy(a: np.ndarray[Any, Any], v: np.ndarray[Any, Any]) -> float:
    for _ in range(4):
        v = np.tanh(a @ v)
        keep = kept(v)
        v, a = v[:keep], a[:keep, :keep]
    return float(np.sum(v * v))


def eager_ad() -> dict[str, float]:
    n = 8
    rng = np.random.default_rng(4)
    a0 = rng.standard_normal((n, n)) * 0.1 + np.diag(np.linspace(1.3, 0.3, n))
    v0 = np.linspace(1.0, 0.5, n)
    a = tf.EagerTensor(a0, requires_grad=True)
    v = tf.EagerTensor(v0, requires_grad=True)
    LENGTHS.clear()
    loss = truncated_iteration(a, v)
    print(f"\neager loop: slice lengths chosen from the data: {LENGTHS}; loss = {float(loss):.6f}")
    loss.backward()
    direction_a, direction_v = RNG.standard_normal((n, n)), RNG.standard_normal(n)
    ours = float(np.sum(np.asarray(a.grad) * direction_a) + np.asarray(v.grad) @ direction_v)
    reference = central_difference(
        lambda t: truncated_iteration_numpy(a0 + t * direction_a, v0 + t * direction_v),
        0.0,
        1.0,
    )
    check("eager backward (data-dependent slices, checkpoint) vs FD", ours, reference, 1e-6)
    tape = tf.Tape()
    hv = np.asarray(tape.hvp(lambda x: truncated_iteration(tf.asarray(a0), x), [v0], [direction_v]))
    print(
        f"  |grad a| = {np.linalg.norm(np.asarray(a.grad)):.4f}, |H v| = {np.linalg.norm(hv):.4f}"
    )

    def grad_v(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        t = tf.Tape()
        leaf = t.track(x)
        return np.asarray(t.grad(truncated_iteration(tf.asarray(a0), leaf), leaf))

    h = 1e-6
    check(
        "eager HVP (forward over reverse) vs FD of grad",
        hv,
        (grad_v(v0 + h * direction_v) - grad_v(v0 - h * direction_v)) / (2 * h),
        1e-5,
    )

    def eager_step() -> None:
        x = tf.EagerTensor(v0, requires_grad=True)
        truncated_iteration(tf.asarray(a0), x).backward()

    return {"eager forward + backward of the loop": timed(eager_step)}


def main() -> None:
    print("tenferro on numpy: traced and eager AD, every derivative checked\n")
    timings = traced_ad()
    timings.update(eager_ad())
    print("\nchecks (largest difference against the reference):")
    for label, error, tolerance in REPORT:
        print(f"  ok  {label:<58} {error:.1e}  (tolerance {tolerance:g})")
    print("\ntimings (mean of 20 calls after a warm-up call):")
    for label, seconds in timings.items():
        print(f"  {label:<58} {seconds * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
