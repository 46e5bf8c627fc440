"""Truncation written once, eager vs traced vs torch: W4 (the truncated-SVD sweep of
``bench_linalg``, grad of the kept singular values) and a split-and-contract step (the
TRG free energy of ``renormalisation_workload``: two truncated SVDs per step, reshapes,
a four-tensor contraction, repeated; its derivative in the temperature).

The same tenferro function runs on the eager tape and traced (``tf.jit(tf.grad(f))``,
where the truncation rank is a data-dependent extent); torch slices its SVD to the rank
read from the values (its eager equivalent). Interleaved rounds, medians, ratios; one
thread each. Reports, never asserts (the target: traced no slower than eager).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "packages" / "tenferro" / "tests"))

import numpy as np  # noqa: E402
import renormalisation_workload as workload  # noqa: E402  (the workload the tests check)
from bench_common import QUICK, Report, have, header, median  # noqa: E402
from bench_linalg import CHI_OUT, sweep  # noqa: E402
from bench_linalg import mps as sweep_cores  # noqa: E402
from bench_tn import interleaved, ratio  # noqa: E402

import tenferro as tf  # noqa: E402


def _row(report: Report, name: str, runs: dict[str, Callable[[], Any]], **extra: Any) -> None:
    for run in runs.values():
        run()  # warm: traces and caches, outside the timed region
    samples = interleaved(runs, rounds=3 if QUICK else 7, repeat=5 if QUICK else 10)
    row: dict[str, Any] = {"workload": name, **extra}
    for key in runs:
        row[f"{key.replace(' ', '_')}_ms"] = median(samples[key]) * 1e3
    row["traced_over_eager"] = ratio(samples, "tf traced", "tf eager")
    if "torch" in runs:
        row["eager_over_torch"] = ratio(samples, "tf eager", "torch")
        row["traced_over_torch"] = ratio(samples, "tf traced", "torch")
    report.add(**row)


# ---------------------------------------------------------------------- W4


def bench_w4(report: Report) -> None:
    cores = sweep_cores(np.random.default_rng(0))
    wrt = tuple(range(len(cores) - 1))  # the last core never reaches the loss

    def loss(*cs: Any) -> Any:
        return sweep(tf, lambda a: tf.linalg.truncated_svd(a, max_rank=CHI_OUT), list(cs))

    def eager() -> Any:
        leaves = [tf.EagerTensor(c, requires_grad=True) for c in cores]
        loss(*leaves).backward()
        return [t.grad for t in leaves]

    traced_grad = tf.jit(tf.grad(loss, argnums=wrt))
    runs: dict[str, Callable[[], Any]] = {
        "tf eager": eager,
        "tf traced": lambda: traced_grad(*cores),
    }
    if have("torch"):
        import torch

        torch.set_num_threads(1)

        def torch_svd(a: Any) -> Any:
            u, s, vh = torch.linalg.svd(a, full_matrices=False)
            return u[:, :CHI_OUT], s[:CHI_OUT], vh[:CHI_OUT]

        def theirs() -> Any:
            leaves = [torch.tensor(c, requires_grad=True) for c in cores]
            sweep(torch, torch_svd, leaves).backward()
            return [t.grad for t in leaves]

        runs["torch"] = theirs
    _row(report, "W4 truncated-SVD sweep grad: eager vs traced", runs)


# ---------------------------------------------------------------------- split and contract


def _torch_free_energy(torch: Any, beta: Any, chi: int, steps: int) -> Any:
    """``renormalisation_workload.free_energy`` in torch (the rank read from the values,
    as its eager code must; the padding to ``chi`` as ours)."""

    def split(m: Any) -> tuple[Any, Any]:
        u, s, vh = torch.linalg.svd(m, full_matrices=False)
        kept = int(min(chi, int((s > 1e-12 * s[0]).sum())))
        root = torch.sqrt(s[:kept])
        return u[:, :kept] * root, root[:, None] * vh[:kept]

    c, s = torch.sqrt(torch.cosh(beta)), torch.sqrt(torch.sinh(beta))
    w = torch.stack([torch.stack([c, s]), torch.stack([c, -s])])
    t = torch.einsum("su,sl,sd,sr->uldr", w, w, w, w)
    norm0 = torch.sqrt(torch.sum(t * t))
    t, log_z, sites = t / norm0, torch.log(norm0), 1.0
    for _ in range(steps):
        sites *= 2.0
        d = t.shape[0]
        a, b = split(t.reshape(d * d, d * d))
        c_, e = split(t.permute(1, 2, 3, 0).reshape(d * d, d * d))
        s1, s3 = a.reshape(d, d, -1), b.reshape(-1, d, d)
        s2, s4 = c_.reshape(d, d, -1), e.reshape(-1, d, d)
        new = torch.einsum("iwx,xyj,yzk,lzw->ijkl", s3, s2, s1, s4)
        norm = torch.sqrt(torch.sum(new * new))
        new = new / norm
        pad = [(0, chi - n) for n in new.shape][::-1]
        t = torch.nn.functional.pad(new, [p for pair in pad for p in pair])
        log_z = log_z + torch.log(norm) / sites
    trace = torch.einsum("ijij->", t)
    return -(log_z + torch.log(torch.abs(trace)) / sites) / beta


def bench_split_and_contract(report: Report, chi: int = 6, steps: int = 3) -> None:
    beta = 0.4

    def f(b: Any) -> Any:
        return workload.free_energy(b, chi=chi, steps=steps)

    def eager() -> Any:
        leaf = tf.EagerTensor(np.float64(beta), requires_grad=True)
        f(leaf).backward()
        return leaf.grad

    traced_grad = tf.jit(tf.grad(f))
    runs: dict[str, Callable[[], Any]] = {
        "tf eager": eager,
        "tf traced": lambda: traced_grad(np.float64(beta)),
    }
    if have("torch"):
        import torch

        def theirs() -> Any:
            leaf = torch.tensor(beta, dtype=torch.float64, requires_grad=True)
            _torch_free_energy(torch, leaf, chi, steps).backward()
            return leaf.grad

        runs["torch"] = theirs
        ours = float(np.asarray(traced_grad(np.float64(beta))))
        print(f"  split-and-contract gradient: tenferro {ours:.12g}, torch {float(theirs()):.12g}")
    _row(report, "Split-and-contract (TRG step) grad: eager vs traced", runs, chi=chi, steps=steps)


if __name__ == "__main__":
    header("truncation written once: eager vs traced vs torch (W4, a split-and-contract step)")
    report = Report("truncation")
    bench_w4(report)
    bench_split_and_contract(report)
    report.save()
