"""Tensor-network workloads against every peer, and the two curves of the report.

* W1 with every peer: the MPS-norm gradient (L=32) of ``bench_einsum`` against PyTorch
  eager, JAX un-jitted, JAX jitted (steady state and the first call of a genuinely new
  function) and HIPS autograd, interleaved round by round.
* W4 with every peer: the truncated-SVD sweep of ``bench_linalg`` (eager tape) against
  PyTorch, JAX (un-jitted and jitted) and HIPS autograd.
* W7 vs chi: the gradient of the Ising energy Re<psi|H|psi>/<psi|psi> of
  ``tenferro.models.mps`` (L=12, MPO bond 3) for growing chi, ours (``tf.value_and_grad``
  and the eager tape) against the same contraction in each peer.
* Per-op overhead vs tensor size: one tracked elementwise multiply, forward and backward,
  from 1 to 2^18 elements, where Python overhead stops mattering.

Peers run only when installed, single-threaded, inputs built outside the timed region.
Figures are medians; ``x_over_y`` is x's time divided by y's. Reports, never asserts.
"""

# ruff: noqa: B023 (closures run within the loop iteration that defines them)

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from bench_common import QUICK, Report, have, header, median, timings  # noqa: E402
from bench_einsum import mps as random_cores  # noqa: E402
from bench_einsum import mps_norm, mps_norm_pairs, torch_tensordot  # noqa: E402
from bench_linalg import CHI_OUT, sweep  # noqa: E402
from bench_linalg import mps as sweep_cores  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.models import mps as mps_module  # noqa: E402  (shared with the demo)


def peers() -> dict[str, Any]:
    """The installed peers, configured for one thread and float64."""
    found: dict[str, Any] = {}
    if have("torch"):
        import torch

        torch.set_num_threads(1)
        found["torch"] = torch
    if have("jax"):
        import jax

        jax.config.update("jax_enable_x64", True)
        found["jax"] = jax
    if have("autograd"):
        import autograd

        found["autograd"] = autograd
    return found


def interleaved(
    runs: dict[str, Callable[[], Any]], rounds: int, repeat: int
) -> dict[str, list[float]]:
    """Per-round medians of every run, the runs alternating within each round (this
    machine's speed drifts over seconds; ratios of the same round are comparable). The
    order rotates from round to round, so that no run always follows the same one (a
    run after one that sweeps large arrays starts with cold caches)."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for index in range(rounds):
        start = index % len(names)
        for name in names[start:] + names[:start]:
            samples[name].append(median(timings(runs[name], repeat)))
    return samples


def ratio(samples: dict[str, list[float]], a: str, b: str) -> float:
    return median([x / y for x, y in zip(samples[a], samples[b], strict=True)])


def first_call_ms(make: Callable[[], Callable[[], Any]], count: int = 3) -> float:
    """Median milliseconds of the first call of freshly made functions."""
    values = []
    for _ in range(count):
        fresh = make()
        start = time.perf_counter()
        fresh()
        values.append(time.perf_counter() - start)
    return median(values) * 1e3


# ---------------------------------------------------------------------- W1 with every peer


def peer_norm_grads(found: dict[str, Any], ts: list[Any]) -> dict[str, Callable[[], Any]]:
    runs: dict[str, Callable[[], Any]] = {}
    argnums = tuple(range(len(ts)))
    if "torch" in found:
        torch = found["torch"]

        def torch_run() -> Any:
            leaves = [torch.tensor(t, requires_grad=True) for t in ts]
            mps_norm(torch, torch.conj, torch.real, *leaves).backward()
            return [x.grad for x in leaves]

        def torch_pairs_run() -> Any:  # torch's fastest form of the network
            leaves = [torch.tensor(t, requires_grad=True) for t in ts]
            dot = torch_tensordot(torch)
            mps_norm_pairs(dot, torch.conj, torch.real, torch.sum, *leaves).backward()
            return [x.grad for x in leaves]

        runs["torch"] = torch_run
        runs["torch tensordot"] = torch_pairs_run
    if "jax" in found:
        jax = found["jax"]
        jnp = jax.numpy
        tj = [jnp.asarray(t) for t in ts]
        eager = jax.grad(lambda *xs: mps_norm(jnp, jnp.conj, jnp.real, *xs), argnums=argnums)
        jitted = jax.jit(eager)
        jax.block_until_ready(jitted(*tj))
        runs["jax"] = lambda: jax.block_until_ready(eager(*tj))
        runs["jax.jit"] = lambda: jax.block_until_ready(jitted(*tj))
    if "autograd" in found:
        import autograd.numpy as anp

        agrad = found["autograd"].grad(
            lambda *xs: mps_norm(anp, anp.conj, anp.real, *xs), argnum=argnums
        )
        runs["autograd"] = lambda: agrad(*ts)
    return runs


def bench_w1_peers(report: Report, length: int = 32) -> None:
    found = peers()
    chis = (4, 16) if QUICK else (4, 16, 64)
    for dtype in (np.float64, np.complex128):
        for chi in chis:
            ts = random_cores(length, chi, dtype)
            argnums = tuple(range(length))
            traced = tf.grad(lambda *xs: mps_norm(tf, tf.conj, tf.real, *xs), argnums=argnums)
            traced(*ts)

            def eager() -> Any:
                tape = tf.Tape()
                leaves = [tape.track(t) for t in ts]
                return tape.grad(mps_norm(tf, tf.conj, tf.real, *leaves), leaves)

            runs = {"tf.grad": lambda: traced(*ts), "tf eager": eager}
            runs.update(peer_norm_grads(found, ts))
            samples = interleaved(runs, rounds=3 if QUICK else 5, repeat=3 if chi == 64 else 7)
            row: dict[str, Any] = {
                "workload": "W1 MPS norm grad, every peer",
                "dtype": np.dtype(dtype).name,
                "chi": chi,
            }
            for name in runs:
                row[f"{name}_ms"] = median(samples[name]) * 1e3
            for peer in runs:
                if peer not in ("tf.grad", "tf eager"):
                    row[f"tf.grad_over_{peer}"] = ratio(samples, "tf.grad", peer)
                    row[f"tf_eager_over_{peer}"] = ratio(samples, "tf eager", peer)
            if "torch" in found:  # against torch's faster form, round by round
                best = best_of(samples, "torch", "torch tensordot")
                row["tf.grad_over_torch_best"] = ratio(samples | {"best": best}, "tf.grad", "best")
                row["tf_eager_over_torch_best"] = ratio(
                    samples | {"best": best}, "tf eager", "best"
                )
            if "jax" in found:
                jax, jnp = found["jax"], found["jax"].numpy
                tj = [jnp.asarray(t) for t in ts]

                def fresh_jax() -> Callable[[], Any]:
                    # A genuinely new function: jax.jit caches by function identity.
                    fn = jax.jit(
                        jax.grad(
                            lambda *xs: mps_norm(jnp, jnp.conj, jnp.real, *xs), argnums=argnums
                        )
                    )
                    return lambda: jax.block_until_ready(fn(*tj))

                def fresh_ours() -> Callable[[], Any]:
                    tf.clear_caches()
                    fn = tf.grad(lambda *xs: mps_norm(tf, tf.conj, tf.real, *xs), argnums=argnums)
                    return lambda: fn(*ts)

                row["jax.jit_first_call_ms"] = first_call_ms(fresh_jax, 2)
                row["tf.grad_first_call_ms"] = first_call_ms(fresh_ours, 2)
            report.add(**row)


# ---------------------------------------------------------------------- W4 with every peer


def bench_w4_peers(report: Report) -> None:
    """The truncated-SVD sweep of ``bench_linalg`` (chi 32 -> 8) against every peer."""
    found = peers()
    cores = sweep_cores(np.random.default_rng(0))

    def ours() -> Any:
        leaves = [tf.EagerTensor(c, requires_grad=True) for c in cores]
        sweep(tf, lambda a: tf.linalg.truncated_svd(a, max_rank=CHI_OUT), leaves).backward()
        return [t.grad for t in leaves]

    runs: dict[str, Callable[[], Any]] = {"tf eager": ours}
    if "torch" in found:
        torch = found["torch"]

        def torch_svd(a: Any) -> Any:
            u, s, vh = torch.linalg.svd(a, full_matrices=False)
            return u[:, :CHI_OUT], s[:CHI_OUT], vh[:CHI_OUT]

        def torch_run() -> Any:
            leaves = [torch.tensor(c, requires_grad=True) for c in cores]
            sweep(torch, torch_svd, leaves).backward()
            return [t.grad for t in leaves]

        runs["torch"] = torch_run
    if "jax" in found:
        jax, jnp = found["jax"], found["jax"].numpy

        def jax_svd(a: Any) -> Any:
            u, s, vh = jnp.linalg.svd(a, full_matrices=False)
            return u[:, :CHI_OUT], s[:CHI_OUT], vh[:CHI_OUT]

        argnums = tuple(range(len(cores) - 1))  # the last core never reaches the loss
        jcores = [jnp.asarray(c) for c in cores]
        jgrad = jax.grad(lambda *cs: sweep(jnp, jax_svd, list(cs)), argnums=argnums)
        jjit = jax.jit(jgrad)
        jax.block_until_ready(jjit(*jcores))
        runs["jax"] = lambda: jax.block_until_ready(jgrad(*jcores))
        runs["jax.jit"] = lambda: jax.block_until_ready(jjit(*jcores))
    if "autograd" in found:
        import autograd.numpy as anp

        def autograd_svd(a: Any) -> Any:
            u, s, vh = anp.linalg.svd(a, full_matrices=False)
            return u[:, :CHI_OUT], s[:CHI_OUT], vh[:CHI_OUT]

        argnums = tuple(range(len(cores) - 1))
        agrad = found["autograd"].grad(
            lambda *cs: sweep(anp, autograd_svd, list(cs)), argnum=argnums
        )
        try:
            agrad(*cores)
            runs["autograd"] = lambda: agrad(*cores)
        except Exception as error:  # an SVD gradient autograd lacks: say so in the row
            report.add(workload="W4 autograd", skipped=f"{type(error).__name__}: {error}"[:80])
    ours()
    samples = interleaved(runs, rounds=3 if QUICK else 5, repeat=10)
    row: dict[str, Any] = {"workload": "W4 truncated-SVD sweep grad, every peer"}
    for name in runs:
        row[f"{name}_ms"] = median(samples[name]) * 1e3
    for peer in runs:
        if peer != "tf eager":
            row[f"tf_eager_over_{peer}"] = ratio(samples, "tf eager", peer)
    report.add(**row)


# ---------------------------------------------------------------------- W7 vs chi


def energy_pairs(
    tensordot: Callable[..., Any],
    conj: Callable[[Any], Any],
    real: Callable[[Any], Any],
    total: Callable[[Any], Any],
    start: Any,
    mpo: list[Any],
    *cores: Any,
) -> Any:
    """``energy_generic`` as ``tensordot`` pairs (a peer's fastest form); ``start`` is the
    (1, 1, 1) left environment of ones."""
    env = start
    for core, w in zip(cores, mpo, strict=True):  # "awc,atb,wvst,csd->bvd"
        step = tensordot(env, core, ([0], [0]))  # (w, c, t, b)
        step = tensordot(step, w, ([0, 2], [0, 3]))  # (c, b, v, s)
        env = tensordot(step, conj(core), ([0, 3], [0, 1]))  # (b, v, d)
    norm = tensordot(cores[0], conj(cores[0]), ([0, 1], [0, 1]))
    for core in cores[1:]:
        norm = tensordot(tensordot(norm, core, ([0], [0])), conj(core), ([0, 1], [0, 1]))
    return real(total(env)) / real(total(norm))


def best_of(samples: dict[str, list[float]], a: str, b: str) -> list[float]:
    """Per round, the faster of two forms of one peer."""
    return [min(x, y) for x, y in zip(samples[a], samples[b], strict=True)]


def energy_generic(
    m: Any, conj: Callable[[Any], Any], real: Callable[[Any], Any], mpo: list[Any], *cores: Any
) -> Any:
    """The contraction of ``mps.energy`` for a numpy-like namespace ``m`` (peers)."""
    env = m.ones((1, 1, 1))
    for core, w in zip(cores, mpo, strict=True):
        env = m.einsum("awc,atb,wvst,csd->bvd", env, core, w, conj(core))
    norm = m.einsum("asb,asd->bd", cores[0], conj(cores[0]))
    for core in cores[1:]:
        norm = m.einsum("ac,asb,csd->bd", norm, core, conj(core))
    return real(m.sum(env)) / real(m.sum(norm))


def bench_w7_chi(report: Report, length: int = 12) -> None:
    found = peers()
    mpo = mps_module.ising_mpo(length)
    argnums = tuple(range(length))
    chis = (2, 4, 8, 16) if QUICK else (2, 4, 8, 16, 32, 64)
    for chi in chis:
        cores = mps_module.random_mps(length, chi, dtype=np.complex128, seed=chi)
        cmpo = [w.astype(np.complex128) for w in mpo]
        value_and_grad = tf.value_and_grad(lambda *cs: mps_module.energy(cs, mpo), argnums=argnums)
        _, ours_grads = value_and_grad(*cores)

        def eager() -> Any:
            tape = tf.Tape()
            leaves = [tape.track(c) for c in cores]
            return tape.grad(mps_module.energy(leaves, mpo), leaves)

        runs: dict[str, Callable[[], Any]] = {
            "tf.value_and_grad": lambda: value_and_grad(*cores),
            "tf eager": eager,
        }
        row: dict[str, Any] = {
            "workload": "W7 Ising MPO energy grad vs chi",
            "L": length,
            "chi": chi,
        }
        if "torch" in found:
            torch = found["torch"]
            tmpo = [torch.tensor(w) for w in cmpo]

            def torch_run() -> Any:
                leaves = [torch.tensor(c, requires_grad=True) for c in cores]
                e = energy_generic(torch, torch.conj, torch.real, tmpo, *leaves)
                e.backward()
                return e, [x.grad for x in leaves]

            def torch_pairs_run() -> Any:
                leaves = [torch.tensor(c, requires_grad=True) for c in cores]
                dot = torch_tensordot(torch)
                start = torch.ones((1, 1, 1), dtype=torch.complex128)
                e = energy_pairs(dot, torch.conj, torch.real, torch.sum, start, tmpo, *leaves)
                e.backward()
                return e, [x.grad for x in leaves]

            _, tg = torch_run()
            _, tp = torch_pairs_run()
            row["torch_grad_difference"] = max(
                float(np.max(np.abs(np.asarray(a) - b.numpy())))
                for a, b in zip(ours_grads, tg, strict=True)
            )
            row["torch_tensordot_grad_difference"] = max(
                float(np.max(np.abs(np.asarray(a) - b.numpy())))
                for a, b in zip(ours_grads, tp, strict=True)
            )
            runs["torch"] = torch_run
            runs["torch tensordot"] = torch_pairs_run
        if "jax" in found:
            jax, jnp = found["jax"], found["jax"].numpy
            jmpo = [jnp.asarray(w) for w in cmpo]
            cj = [jnp.asarray(c) for c in cores]
            jeager = jax.value_and_grad(
                lambda *cs: energy_generic(jnp, jnp.conj, jnp.real, jmpo, *cs), argnums=argnums
            )
            jjit = jax.jit(jeager)
            _, jg = jjit(*cj)
            # JAX's gradient of a real function of complex inputs is the conjugate of ours.
            row["jax_conj_grad_difference"] = max(
                float(np.max(np.abs(np.asarray(a) - np.conj(np.asarray(b)))))
                for a, b in zip(ours_grads, jg, strict=True)
            )
            if chi <= 16:
                runs["jax"] = lambda: jax.block_until_ready(jeager(*cj))
            runs["jax.jit"] = lambda: jax.block_until_ready(jjit(*cj))
        if "autograd" in found and chi <= 16:  # autograd's einsum takes seconds beyond
            import autograd.numpy as anp

            amo = [np.asarray(w) for w in cmpo]
            agrad = found["autograd"].value_and_grad(
                lambda *cs: energy_generic(anp, anp.conj, anp.real, amo, *cs), argnum=argnums
            )
            runs["autograd"] = lambda: agrad(*cores)
        repeat = 3 if chi >= 32 else 5
        samples = interleaved(runs, rounds=3 if QUICK else 5, repeat=repeat)
        for name in runs:
            row[f"{name}_ms"] = median(samples[name]) * 1e3
        for peer in runs:
            if not peer.startswith("tf"):
                row[f"tf.value_and_grad_over_{peer}"] = ratio(samples, "tf.value_and_grad", peer)
        if "torch" in runs:
            best = best_of(samples, "torch", "torch tensordot")
            row["tf.value_and_grad_over_torch_best"] = ratio(
                samples | {"best": best}, "tf.value_and_grad", "best"
            )
        report.add(**row)


# ---------------------------------------------------------------------- overhead vs size


def bench_overhead(report: Report) -> None:
    """One tracked elementwise multiply and its backward, x of n elements: the time per
    op falls to the arithmetic's as n grows; below that it is the framework's overhead."""
    found = peers()
    exponents = range(0, 19, 3) if QUICK else range(0, 19, 2)
    for exponent in exponents:
        n = 2**exponent
        x = np.linspace(0.1, 1.0, n)

        def ours() -> Any:
            tape = tf.Tape()
            v = tape.track(x)
            return tape.grad(tf.sum(v * v), v)

        def plain() -> Any:
            return x * x

        runs: dict[str, Callable[[], Any]] = {"tf eager": ours, "numpy forward only": plain}
        if "torch" in found:
            torch = found["torch"]

            def torch_run() -> Any:
                v = torch.tensor(x, requires_grad=True)
                (v * v).sum().backward()
                return v.grad

            runs["torch"] = torch_run
        if "jax" in found:
            jax, jnp = found["jax"], found["jax"].numpy
            xj = jnp.asarray(x)
            jgrad = jax.grad(lambda v: jnp.sum(v * v))
            runs["jax"] = lambda: jax.block_until_ready(jgrad(xj))
        if "autograd" in found:
            import autograd.numpy as anp

            agrad = found["autograd"].grad(lambda v: anp.sum(v * v))
            runs["autograd"] = lambda: agrad(x)
        repeat = 20 if n <= 4096 else 5
        samples = interleaved(runs, rounds=3, repeat=repeat)
        row: dict[str, Any] = {"workload": "overhead: grad of sum(x*x) vs size", "n": n}
        for name in runs:
            row[f"{name}_us"] = median(samples[name]) * 1e6
        for peer in runs:
            if peer not in ("tf eager", "numpy forward only"):
                row[f"tf_over_{peer}"] = ratio(samples, "tf eager", peer)
        report.add(**row)


if __name__ == "__main__":
    header("tensor networks against every peer (W1, W7 vs chi) and overhead vs size")
    report = Report("tn")
    bench_w1_peers(report)
    bench_w4_peers(report)
    bench_w7_chi(report)
    bench_overhead(report)
    print(f"   saved {report.save()}")
