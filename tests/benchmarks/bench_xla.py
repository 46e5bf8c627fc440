"""The XLA backend (``tf.jit(..., backend="xla")``) against a hand-written
``jax.jit(jax.grad(...))`` of the same algorithm, tenferro's numpy backend and PyTorch
eager, side by side in one process, interleaved round by round:

* W1: the gradient of an MPS norm (``bench_einsum.mps_norm``), L = 32, chi in
  {16, 64, 256}, float64 and complex128;
* W7: the value and gradient of the energy Re<psi|H|psi>/<psi|psi> of a complex MPS
  with an MPO (``tenferro.models.mps``'s Ising chain), L = 12, chi in {16, 64}.

Steady state: medians of per-round medians over 11 rounds (5 at chi = 256); device
arrays in, so neither JAX path copies inputs; every call waits for its result. First
call: a freshly made function after ``tf.clear_caches()`` and ``jax.clear_caches()``
(so neither side reuses a compiled executable), trace + compile + run. Ratios are ours
over the hand-written ``jax.jit``. Reports, never asserts. ``xla_gpu_rows.py`` beside
this file prints the GPU rows.
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
from bench_common import QUICK, Report, have, header, median  # noqa: E402
from bench_einsum import mps as random_cores  # noqa: E402
from bench_einsum import mps_norm  # noqa: E402
from bench_tn import interleaved, ratio  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.models import mps as mps_module  # noqa: E402


def first_call_ms(make: Callable[[], Callable[[], Any]], jax: Any, count: int = 2) -> float:
    """Median milliseconds of the first call of freshly made functions, every cache
    emptied first."""
    values = []
    for _ in range(count):
        tf.clear_caches()
        jax.clear_caches()
        fresh = make()
        start = time.perf_counter()
        fresh()
        values.append(time.perf_counter() - start)
    return median(values) * 1e3


# ---------------------------------------------------------------------- the workloads


def w1_functions(jax: Any, length: int) -> dict[str, Callable[[], Any]]:
    """Makers of W1's gradient: ours on XLA, ours on numpy, hand-written JAX."""
    jnp = jax.numpy
    argnums = tuple(range(length))
    return {
        "tf xla": lambda: tf.jit(
            tf.grad(lambda *xs: mps_norm(tf, tf.conj, tf.real, *xs), argnums=argnums),
            backend="xla",
        ),
        "tf.grad": lambda: tf.grad(
            lambda *xs: mps_norm(tf, tf.conj, tf.real, *xs), argnums=argnums
        ),
        "jax.jit": lambda: jax.jit(
            jax.grad(lambda *xs: mps_norm(jnp, jnp.conj, jnp.real, *xs), argnums=argnums)
        ),
    }


def w7_functions(jax: Any, mpo: list[Any], length: int) -> dict[str, Callable[[], Any]]:
    """Makers of W7's value and gradient: ours on XLA, ours on numpy, hand-written JAX."""
    jnp = jax.numpy
    argnums = tuple(range(length))
    cmpo = [np.asarray(w, np.complex128) for w in mpo]

    def jax_energy(*cores: Any) -> Any:
        env = jnp.ones((1, 1, 1))
        for core, w in zip(cores, cmpo, strict=True):
            env = jnp.einsum("awc,atb,wvst,csd->bvd", env, core, w, jnp.conj(core))
        norm = jnp.einsum("asb,asd->bd", cores[0], jnp.conj(cores[0]))
        for core in cores[1:]:
            norm = jnp.einsum("ac,asb,csd->bd", norm, core, jnp.conj(core))
        return jnp.real(jnp.sum(env)) / jnp.real(jnp.sum(norm))

    return {
        "tf xla": lambda: tf.jit(
            tf.value_and_grad(lambda *cs: mps_module.energy(cs, mpo), argnums=argnums),
            backend="xla",
        ),
        "tf.value_and_grad": lambda: tf.value_and_grad(
            lambda *cs: mps_module.energy(cs, mpo), argnums=argnums
        ),
        "jax.jit": lambda: jax.jit(jax.value_and_grad(jax_energy, argnums=argnums)),
    }


def torch_w1(torch: Any, ts: list[Any]) -> Callable[[], Any]:
    def run() -> Any:
        leaves = [torch.tensor(t, requires_grad=True) for t in ts]
        mps_norm(torch, torch.conj, torch.real, *leaves).backward()
        return [x.grad for x in leaves]

    return run


# ---------------------------------------------------------------------- the rows

JITS = ("tf xla", "jax.jit")

ROUNDS = 11
"""Rounds of the rows of milliseconds (the largest extent, of seconds, takes 5): on a shared 2-core
machine a burst of other work slows whole rounds of one peer, so a median over 3 rounds
swings by 2-3x either way at these sizes, and 11 keep the ratio within a few percent."""


def fresh(maker: Callable[[], Any], inputs: list[Any]) -> Callable[[], Callable[[], Any]]:
    """A maker of a new function calling a freshly made ``maker()`` on ``inputs``."""
    import jax

    def make() -> Callable[[], Any]:
        function = maker()
        return lambda: jax.block_until_ready(function(*inputs))

    return make


def finish(
    report: Report,
    row: dict[str, Any],
    samples: dict[str, list[float]],
    makers: dict[str, Callable[[], Any]],
    inputs: list[Any],
    jax: Any,
) -> None:
    """Add the steady-state medians, the ratios of ours to each peer and both JIT
    paths' first calls to ``row``, and report it."""
    for name, values in samples.items():
        row[f"{name}_ms"] = median(values) * 1e3
    for peer in samples:
        if peer != "tf xla":
            row[f"xla_over_{peer}"] = ratio(samples, "tf xla", peer)
    first = {name: first_call_ms(fresh(makers[name], inputs), jax) for name in JITS}
    row["tf xla_first_call_ms"] = first["tf xla"]
    row["jax.jit_first_call_ms"] = first["jax.jit"]
    row["xla_first_over_jax.jit_first"] = first["tf xla"] / first["jax.jit"]
    report.add(**row)


def bench(report: Report) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)  # the hand-written peer's float64
    torch = None
    if have("torch"):
        import torch

        torch.set_num_threads(1)
    block = jax.block_until_ready
    length = 32
    for dtype in (np.float64, np.complex128):
        for chi in (16, 64) if QUICK else (16, 64, 256):
            ts = random_cores(length, chi, dtype)
            tj = [jax.device_put(t) for t in ts]
            makers = w1_functions(jax, length)
            made = {name: make() for name, make in makers.items()}
            runs: dict[str, Callable[[], Any]] = {
                "tf xla": lambda: block(made["tf xla"](*tj)),
                "jax.jit": lambda: block(made["jax.jit"](*tj)),
                "tf.grad": lambda: made["tf.grad"](*ts),
            }
            if torch is not None:
                runs["torch"] = torch_w1(torch, ts)
            for run in runs.values():
                run()  # compiled, warm
            big = chi >= 256
            samples = interleaved(
                runs, rounds=5 if big else ROUNDS, repeat=1 if big else (3 if chi == 64 else 7)
            )
            row: dict[str, Any] = {
                "workload": "W1 MPS norm grad, XLA backend",
                "dtype": np.dtype(dtype).name,
                "chi": chi,
            }
            finish(report, row, samples, makers, tj, jax)

    length = 12
    mpo = mps_module.ising_mpo(length)
    for chi in (16,) if QUICK else (16, 64):
        cores = mps_module.random_mps(length, chi, dtype=np.complex128, seed=chi)
        cj = [jax.device_put(c) for c in cores]
        makers = w7_functions(jax, mpo, length)
        made = {name: make() for name, make in makers.items()}
        runs = {
            "tf xla": lambda: block(made["tf xla"](*cj)),
            "jax.jit": lambda: block(made["jax.jit"](*cj)),
            "tf.value_and_grad": lambda: made["tf.value_and_grad"](*cores),
        }
        ours = made["tf xla"](*cj)
        theirs = made["jax.jit"](*cj)
        row = {"workload": "W7 Ising MPO energy grad, XLA backend", "L": length, "chi": chi}
        row["grad_difference_vs_conj_jax"] = max(
            float(np.max(np.abs(np.asarray(a) - np.conj(np.asarray(b)))))
            for a, b in zip(ours[1], theirs[1], strict=True)
        )
        if torch is not None:
            tmpo = [torch.tensor(np.asarray(w, np.complex128)) for w in mpo]

            def torch_run() -> Any:
                leaves = [torch.tensor(c, requires_grad=True) for c in cores]
                value = mps_module_energy_torch(torch, tmpo, leaves)
                value.backward()
                return value, [x.grad for x in leaves]

            runs["torch"] = torch_run
        for run in runs.values():
            run()
        samples = interleaved(runs, rounds=ROUNDS, repeat=3 if chi >= 64 else 7)
        finish(report, row, samples, makers, cj, jax)


def mps_module_energy_torch(torch: Any, mpo: list[Any], cores: list[Any]) -> Any:
    """W7's contraction with torch (the same einsums as the JAX peer)."""
    env = torch.ones((1, 1, 1), dtype=torch.complex128, device=cores[0].device)
    for core, w in zip(cores, mpo, strict=True):
        env = torch.einsum("awc,atb,wvst,csd->bvd", env, core, w, torch.conj(core))
    norm = torch.einsum("asb,asd->bd", cores[0], torch.conj(cores[0]))
    for core in cores[1:]:
        norm = torch.einsum("ac,asb,csd->bd", norm, core, torch.conj(core))
    return torch.real(torch.sum(env)) / torch.real(torch.sum(norm))


if __name__ == "__main__":
    header("the XLA backend against hand-written jax.jit, the numpy backend and torch")
    if not have("jax"):
        print("   jax is not installed: skipped (make bench installs tenferro[xla])")
    else:
        report = Report("xla")
        bench(report)
        print(f"   saved {report.save()}")
