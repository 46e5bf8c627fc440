"""Iterative solvers: implicit against unrolled differentiation of the same solver, and
against JAX's implicit differentiation (``lax.custom_root``; ``custom_linear_solve``
inside ``jax.scipy.sparse.linalg.cg``).

* fixed point ``x = t tanh(x) + c`` (n = 10^4): the gradient of ``sum(x*)`` with respect
  to ``t`` and ``c`` by ``tf.fixed_point`` (implicit: one GMRES solve with the map's
  JVP/VJP) and by the same iteration unrolled -- run exactly as many times -- on the
  eager tape and through ``tf.grad``; ``tf.custom_root`` and JAX's ``lax.custom_root``
  (a ``while_loop`` iteration, under ``jax.jit``, steady state) with the same exact
  tangent solve ``y / g(1)`` (the map is elementwise): JAX's GMRES and BiCGSTAB cannot
  be transposed inside ``custom_root`` (``NotImplementedError`` in jax 0.10), so the
  like-for-like comparison is with the diagonal solve;
* conjugate gradients on a matrix-free 1-D Laplacian plus a shift (n = 10^3): the
  gradient with respect to the shift and the right-hand side, implicit ``tf.linalg.cg``
  against the CG recurrence unrolled for the same iterations; JAX's
  ``jax.scipy.sparse.linalg.cg`` under ``jax.jit``;
* Lanczos: the gradient of a ground energy (``eigsh``, implicit: Hellmann-Feynman)
  against differentiating a fixed number of unrolled Lanczos steps plus ``eigh`` of the
  tridiagonal matrix (no peer has a differentiable ``eigsh``).

Times are medians of rounds interleaving the runs call by call; ``peak_kib`` is the
``tracemalloc`` peak of one gradient (after a warm-up call that compiles and caches
programs; it sees numpy's allocations, not XLA's, so JAX has no memory column).
Benchmarks report, never assert.
"""

# ruff: noqa: B023 (closures run within the loop iteration that defines them)

from __future__ import annotations

import importlib.util
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_common import QUICK, Report, header, median  # noqa: E402
from bench_tenferro import _interleaved  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.solvers import krylov  # noqa: E402

HAVE_JAX = importlib.util.find_spec("jax") is not None


def peak_kib(run: Callable[[], Any]) -> float:
    run()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 1024
    finally:
        tracemalloc.stop()


def _ratio(got: dict[str, list[float]], mine: str, other: str) -> float:
    """The median of the per-round ratios of two runs' times."""
    return median([a / b for a, b in zip(got[mine], got[other], strict=True)])


def _measured(
    runs: dict[str, Callable[[], Any]], rounds: int, repeat: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Every run compiled, then timed interleaved; the row's columns: median times,
    unrolled over implicit (eager), and the peak memory of each eager gradient."""
    for run in runs.values():
        run()
    got = _interleaved(runs, rounds, repeat)
    fields: dict[str, Any] = {f"{name}_ms": median(samples) * 1e3 for name, samples in got.items()}
    fields["unrolled_over_implicit_eager"] = _ratio(got, "unrolled_eager", "implicit_eager")
    fields["implicit_peak_kib"] = peak_kib(runs["implicit_eager"])
    fields["unrolled_peak_kib"] = peak_kib(runs["unrolled_eager"])
    return got, fields


# ---------------------------------------------------------------------- fixed points

N_FIXED = 10_000
TOL = 1e-10


def _fixed_inputs(rate: float) -> tuple[Any, Any]:
    return np.asarray(rate), np.linspace(-1.0, 1.0, N_FIXED)


def _iterations(rate: float) -> int:
    """How many steps tf.fixed_point runs at this rate (the unrolled runs as many)."""
    t, c = _fixed_inputs(rate)
    _, count = krylov.fixed_point_iteration(
        "bench", lambda x: t * np.tanh(x) + c, np.zeros(N_FIXED), TOL, 0.0, 100_000
    )
    return count


def implicit_fixed_loss(t: Any, c: Any) -> Any:
    return tf.sum(tf.fixed_point(lambda x: t * tf.tanh(x) + c, tf.zeros_like(c), tol=TOL))


def unrolled_fixed_loss(steps: int) -> Callable[[Any, Any], Any]:
    def loss(t: Any, c: Any) -> Any:
        x = tf.zeros_like(c)
        for _ in range(steps):
            x = t * tf.tanh(x) + c
        return tf.sum(x)

    return loss


def _iterate(f: Any, x: Any) -> Any:
    """The forward iteration of the ``custom_root`` rows (on concrete tensors)."""
    while True:
        fx = f(x) + x
        if float(tf.linalg.norm(fx - x)) <= TOL * float(tf.linalg.norm(fx)):
            return fx
        x = fx


def custom_root_loss(t: Any, c: Any) -> Any:
    root = tf.custom_root(
        lambda x: t * tf.tanh(x) + c - x,
        tf.zeros_like(c),
        _iterate,
        lambda g, y: y / g(tf.ones_like(y)),
    )
    return tf.sum(root)


def _eager(loss: Callable[..., Any], *arrays: Any) -> Callable[[], Any]:
    def step() -> Any:
        leaves = [tf.EagerTensor(a, requires_grad=True) for a in arrays]
        loss(*leaves).backward()
        return leaves[0].grad

    return step


def _jax_fixed(rate: float) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    t0, c0 = (jnp.asarray(v) for v in _fixed_inputs(rate))

    def loss(t: Any, c: Any) -> Any:
        def residual(x: Any) -> Any:
            return t * jnp.tanh(x) + c - x

        def solve(f: Any, x0: Any) -> Any:
            def step(state: Any) -> Any:
                x, _ = state
                fx = f(x) + x
                return fx, jnp.linalg.norm(fx - x) > TOL * jnp.linalg.norm(fx)

            return jax.lax.while_loop(lambda s: s[1], step, (x0, True))[0]

        def tangent_solve(g: Any, y: Any) -> Any:
            return y / g(jnp.ones_like(y))  # the map is elementwise: its Jacobian is diagonal

        return jnp.sum(jax.lax.custom_root(residual, jnp.zeros_like(c), solve, tangent_solve))

    gradient = jax.jit(jax.grad(loss, argnums=(0, 1)))
    jax.block_until_ready(gradient(t0, c0))
    return lambda: jax.block_until_ready(gradient(t0, c0))


def bench_fixed_points(report: Report, rounds: int) -> None:
    for rate in (0.5, 0.9, 0.99):
        steps = _iterations(rate)
        t, c = _fixed_inputs(rate)
        implicit, unrolled = tf.grad(implicit_fixed_loss, (0, 1)), unrolled_fixed_loss(steps)
        traced_unrolled = tf.grad(unrolled, (0, 1))
        root = tf.grad(custom_root_loss, (0, 1))
        runs: dict[str, Callable[[], Any]] = {
            "implicit_grad": lambda: implicit(t, c),
            "implicit_eager": _eager(implicit_fixed_loss, t, c),
            "unrolled_grad": lambda: traced_unrolled(t, c),
            "unrolled_eager": _eager(unrolled, t, c),
            "custom_root_grad": lambda: root(t, c),
        }
        if HAVE_JAX:
            runs["jax_custom_root"] = _jax_fixed(rate)
        got, fields = _measured(runs, rounds, 1 if steps > 300 else 3)
        same = np.allclose(
            np.asarray(implicit(t, c)[0]), np.asarray(traced_unrolled(t, c)[0]), rtol=1e-6
        )
        row = {"workload": "solvers: fixed point, grad", "n": N_FIXED, "iterations": steps}
        row.update(same_gradient=bool(same), **fields)
        if HAVE_JAX:
            row["custom_root_over_jax"] = _ratio(got, "custom_root_grad", "jax_custom_root")
        report.add(**row)


# ---------------------------------------------------------------------- linear solves

N_CG = 1000


def laplacian(shift: Any) -> Callable[[Any], Any]:
    def apply(v: Any) -> Any:
        return (2.0 + shift) * v - tf.roll(v, 1) - tf.roll(v, -1)

    return apply


def implicit_cg_loss(shift: Any, b: Any) -> Any:
    return tf.sum(tf.linalg.cg(laplacian(shift), b, rtol=1e-10)[0] ** 2)


def unrolled_cg_loss(steps: int) -> Callable[[Any, Any], Any]:
    def loss(shift: Any, b: Any) -> Any:
        operator = laplacian(shift)
        x = tf.zeros_like(b)
        r = b
        p = r
        rho = tf.sum(r * r)
        for _ in range(steps):
            q = operator(p)
            alpha = rho / tf.sum(p * q)
            x = x + alpha * p
            r = r - alpha * q
            rho_next = tf.sum(r * r)
            p = r + (rho_next / rho) * p
            rho = rho_next
        return tf.sum(x**2)

    return loss


def _cg_iterations(shift: float, b: Any) -> int:
    def matvec(v: Any) -> Any:
        return (2.0 + shift) * v - np.roll(v, 1) - np.roll(v, -1)

    count = 0

    def counted(v: Any) -> Any:
        nonlocal count
        count += 1
        return matvec(v)

    krylov.cg("bench", counted, b, np.zeros_like(b), 1e-10, 0.0, 100_000)
    return count


def _jax_cg(shift: float, b: Any) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    def loss(s: Any, b: Any) -> Any:
        def apply(v: Any) -> Any:
            return (2.0 + s) * v - jnp.roll(v, 1) - jnp.roll(v, -1)

        return jnp.sum(jax.scipy.sparse.linalg.cg(apply, b, tol=1e-10)[0] ** 2)

    gradient = jax.jit(jax.grad(loss, argnums=(0, 1)))
    args = (jnp.asarray(shift), jnp.asarray(b))
    jax.block_until_ready(gradient(*args))
    return lambda: jax.block_until_ready(gradient(*args))


def bench_cg(report: Report, rounds: int) -> None:
    b = np.sin(np.linspace(0.0, 20.0, N_CG))
    for shift in (0.1, 0.01):
        steps = _cg_iterations(shift, b) - 1  # the initial residual costs no matvec here
        s = np.asarray(shift)
        implicit = tf.grad(implicit_cg_loss, (0, 1))
        unrolled = unrolled_cg_loss(steps)
        traced_unrolled = tf.grad(unrolled, (0, 1))
        runs: dict[str, Callable[[], Any]] = {
            "implicit_grad": lambda: implicit(s, b),
            "implicit_eager": _eager(implicit_cg_loss, s, b),
            "unrolled_grad": lambda: traced_unrolled(s, b),
            "unrolled_eager": _eager(unrolled, s, b),
        }
        if HAVE_JAX:
            runs["jax_cg"] = _jax_cg(shift, b)
        got, fields = _measured(runs, rounds, 1 if steps > 300 else 3)
        same = np.allclose(
            np.asarray(implicit(s, b)[0]), np.asarray(traced_unrolled(s, b)[0]), rtol=1e-5
        )
        row = {"workload": "solvers: cg, grad", "n": N_CG, "iterations": steps}
        row.update(same_gradient=bool(same), **fields)
        if HAVE_JAX:
            row["implicit_grad_over_jax"] = _ratio(got, "implicit_grad", "jax_cg")
        report.add(**row)


# ---------------------------------------------------------------------- Lanczos

N_LANCZOS = 400


def chain(coupling: Any) -> Callable[[Any], Any]:
    """A tight-binding chain in a harmonic trap of coupling-dependent depth."""
    potential = 20 * np.linspace(-1.0, 1.0, N_LANCZOS) ** 2

    def apply(v: Any) -> Any:
        return coupling * tf.asarray(potential) * v - tf.roll(v, 1) - tf.roll(v, -1)

    return apply


START = 1.0 + 0.1 * np.linspace(-1.0, 1.0, N_LANCZOS)  # both parities


def implicit_ground(coupling: Any) -> Any:
    return tf.linalg.eigsh(chain(coupling), k=1, v0=START)[0][0]


def unrolled_ground(steps: int) -> Callable[[Any], Any]:
    """``steps`` Lanczos steps (full reorthogonalisation) written with tenferro
    operations, then ``eigh`` of the projected matrix: differentiated through all."""

    def ground(coupling: Any) -> Any:
        operator = chain(coupling)
        v = tf.asarray(START / np.linalg.norm(START))
        basis = [v]
        for _ in range(steps - 1):
            w = operator(basis[-1])
            for u in basis:
                w = w - tf.sum(u * w) * u
            basis.append(w / tf.sqrt(tf.sum(w * w)))
        q = tf.stack(basis, axis=1)
        images = tf.stack([operator(u) for u in basis], axis=1)
        projected = tf.transpose(q) @ images
        return tf.linalg.eigvalsh((projected + tf.transpose(projected)) * 0.5)[0]

    return ground


def bench_lanczos(report: Report, rounds: int) -> None:
    c = np.asarray(1.5)
    exact = float(np.asarray(tf.grad(implicit_ground)(c)))
    for steps in (20, 40, 80):
        implicit = tf.grad(implicit_ground)
        unrolled = unrolled_ground(steps)
        traced_unrolled = tf.grad(unrolled)
        runs: dict[str, Callable[[], Any]] = {
            "implicit_grad": lambda: implicit(c),
            "implicit_eager": _eager(implicit_ground, c),
            "unrolled_grad": lambda: traced_unrolled(c),
            "unrolled_eager": _eager(unrolled, c),
        }
        _, fields = _measured(runs, rounds, 2)
        report.add(
            workload="solvers: Lanczos ground energy, grad",
            n=N_LANCZOS,
            unrolled_steps=steps,
            unrolled_gradient_error=abs(float(np.asarray(traced_unrolled(c))) - exact),
            **fields,
        )


if __name__ == "__main__":
    header("iterative solvers: implicit vs unrolled derivatives, and JAX's")
    report = Report("solvers")
    rounds = 3 if QUICK else 5
    bench_fixed_points(report, rounds)
    bench_cg(report, rounds)
    bench_lanczos(report, rounds)
    print(f"   saved {report.save()}")
