"""The XLA backend's GPU rows: run on a machine with an NVIDIA GPU and JAX's CUDA wheel
(``pip install 'jax[cuda12]'``; torch with CUDA for its column), from the repository root:

    PYTHONPATH=packages/computegraph/src:packages/tidu/src:packages/tenferro/src \\
        python tests/benchmarks/xla_gpu_rows.py

It prints, per row, the medians (ms, after warm-up, inputs already on the GPU) of
``tf.jit(..., backend="xla")``, the hand-written ``jax.jit`` of the same algorithm and
torch eager on the GPU, and the first calls (trace + compile + run) of both JIT paths:

* W1 (MPS-norm gradient, L = 32): chi 64 and 256 in float64, 256 and 1024 in complex128;
* W7 (complex MPS energy with the Ising MPO, value and gradient, L = 12): chi 256.

Targets on an H200 (the hand-written ``jax.jit`` figures): W1 chi 256 complex128 <= 2.5
ms, chi 1024 complex128 <= 57 ms; W7 chi 256 <= 11 ms. Reports, never asserts. Not part
of ``make bench`` (which runs on the CPU).
"""

# ruff: noqa: B023 (closures run within the loop iteration that defines them)

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from bench_einsum import mps as random_cores  # noqa: E402
from bench_einsum import mps_norm  # noqa: E402
from bench_xla import mps_module_energy_torch, w1_functions, w7_functions  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.models import mps as mps_module  # noqa: E402

ROUNDS, REPEAT = 5, 10


def timed(run: Any) -> float:
    samples = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(REPEAT):
            run()
        samples.append((time.perf_counter() - start) / REPEAT)
    return float(np.median(samples)) * 1e3


def first_ms(make: Any, inputs: list[Any]) -> float:
    tf.clear_caches()
    jax.clear_caches()
    start = time.perf_counter()
    jax.block_until_ready(make()(*inputs))
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    jax.config.update("jax_enable_x64", True)
    gpu = jax.devices("gpu")[0]
    print(f"device: {gpu.device_kind}; jax {jax.__version__}")
    torch = None
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        pass
    block = jax.block_until_ready
    print("workload, dtype, chi: tf xla | jax.jit | torch (ms); first calls tf xla | jax.jit")
    for dtype, chi in ((np.float64, 64), (np.float64, 256), (np.complex128, 256),
                       (np.complex128, 1024)):  # fmt: skip
        ts = random_cores(32, chi, dtype)
        on_gpu = [jax.device_put(t, gpu) for t in ts]
        makers = w1_functions(jax, 32)
        ours, theirs = makers["tf xla"](), makers["jax.jit"]()
        block(ours(*on_gpu))
        block(theirs(*on_gpu))
        row = [timed(lambda: block(ours(*on_gpu))), timed(lambda: block(theirs(*on_gpu)))]
        if torch is not None:
            leaves0 = [torch.tensor(t, device="cuda") for t in ts]

            def torch_run() -> None:
                leaves = [t.detach().requires_grad_() for t in leaves0]
                mps_norm(torch, torch.conj, torch.real, *leaves).backward()
                torch.cuda.synchronize()

            torch_run()
            row.append(timed(torch_run))
        firsts = [first_ms(makers[name], on_gpu) for name in ("tf xla", "jax.jit")]
        print(f"W1, {np.dtype(dtype).name}, {chi}: " + " | ".join(f"{v:.3g}" for v in row)
              + "; first " + " | ".join(f"{v:.4g}" for v in firsts))  # fmt: skip

    length, chi = 12, 256
    mpo = mps_module.ising_mpo(length)
    cores = mps_module.random_mps(length, chi, dtype=np.complex128, seed=chi)
    on_gpu = [jax.device_put(c, gpu) for c in cores]
    makers = w7_functions(jax, mpo, length)
    ours, theirs = makers["tf xla"](), makers["jax.jit"]()
    block(ours(*on_gpu))
    block(theirs(*on_gpu))
    row = [timed(lambda: block(ours(*on_gpu))), timed(lambda: block(theirs(*on_gpu)))]
    if torch is not None:
        tmpo = [torch.tensor(np.asarray(w, np.complex128), device="cuda") for w in mpo]
        leaves0 = [torch.tensor(c, device="cuda") for c in cores]

        def torch_w7() -> None:
            leaves = [t.detach().requires_grad_() for t in leaves0]
            mps_module_energy_torch(torch, tmpo, leaves).backward()
            torch.cuda.synchronize()

        torch_w7()
        row.append(timed(torch_w7))
    firsts = [first_ms(makers[name], on_gpu) for name in ("tf xla", "jax.jit")]
    print(f"W7, complex128, {chi}: " + " | ".join(f"{v:.3g}" for v in row)
          + "; first " + " | ".join(f"{v:.4g}" for v in firsts))  # fmt: skip


if __name__ == "__main__":
    main()
