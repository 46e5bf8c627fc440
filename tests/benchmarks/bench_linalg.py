"""tf.linalg spectral AD: W4 (truncated-SVD sweep over an MPS) and W6 (grad of
Σ svdvals and Σ eigvalsh, n in {4, 64, 256, 512}, random and exactly degenerate inputs).

PyTorch runs side by side when installed (single thread, inputs built outside the timed
region); the rows record where torch's gradient is NaN and ours is finite. Figures are
medians; ratios are torch / tenferro (above 1: tenferro is faster). Targets (design.md
§5): W4 <= 1.0x torch eager; W6 <= 1.1x torch at n >= 256. Reports, never asserts.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_common import Report, header, median, timings  # noqa: E402

import tenferro as tf  # noqa: E402

L, CHI_IN, CHI_OUT, D = 12, 32, 8, 2


def have(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


# ---------------------------------------------------------------------- W4


def mps(rng: np.random.Generator) -> list[np.ndarray[Any, Any]]:
    shapes = [(1 if i == 0 else CHI_IN, D, 1 if i == L - 1 else CHI_IN) for i in range(L)]
    return [rng.standard_normal(s) / np.sqrt(s[0] * s[1]) for s in shapes]


def sweep(m: Any, svd: Any, cores: list[Any]) -> Any:
    """Left-to-right sweep keeping at most CHI_OUT singular values per bond; returns the
    sum of the kept singular values (the loss whose gradient W4 times)."""
    total = None
    carry = cores[0]
    for core in cores[1:]:
        left, d, right = carry.shape
        _, s, vh = svd(m.reshape(carry, (left * d, right)))
        term = m.sum(s)
        total = term if total is None else total + term
        rest = m.matmul(s[:, None] * vh, m.reshape(core, (right, -1)))
        carry = m.reshape(rest, (s.shape[0], core.shape[1], core.shape[2]))
    return total


def bench_w4(report: Report, rounds: int = 7) -> None:
    """W4 eager vs torch eager, interleaved call by call in rounds (each round keeps each
    side's fastest of 10 calls; the ratio is the median of the rounds' ratios)."""
    from bench_tenferro import _interleaved, _ratio

    cores = mps(np.random.default_rng(0))

    def ours_svd(a: Any) -> Any:
        return tf.linalg.truncated_svd(a, max_rank=CHI_OUT)

    def ours() -> list[Any]:
        tracked = [tf.EagerTensor(c, requires_grad=True) for c in cores]
        sweep(tf, ours_svd, tracked).backward()
        return [t.grad for t in tracked]

    ours()
    if not have("torch"):
        t_ours = median(timings(ours, 30))
        report.add(
            workload="W4 eager truncated-SVD sweep grad",
            L=L,
            chi=f"{CHI_IN}->{CHI_OUT}",
            ms=t_ours * 1e3,
        )
        return
    import torch

    torch.set_num_threads(1)

    def torch_svd(a: Any) -> Any:
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        return u[:, :CHI_OUT], s[:CHI_OUT], vh[:CHI_OUT]

    def theirs() -> list[Any]:
        tracked = [torch.tensor(c, requires_grad=True) for c in cores]
        sweep(torch, torch_svd, tracked).backward()
        return [t.grad for t in tracked]

    # The last core does not reach the loss: both leave its gradient None.
    diff = max(
        float(np.max(np.abs(np.asarray(a) - b.numpy())))
        for a, b in zip(ours(), theirs(), strict=True)
        if a is not None and b is not None
    )
    got = _interleaved({"tf": ours, "torch": theirs}, rounds, 10)
    ratio, spread = _ratio(got["tf"], got["torch"])
    report.add(
        workload="W4 eager truncated-SVD sweep grad",
        L=L,
        chi=f"{CHI_IN}->{CHI_OUT}",
        ms=median(got["tf"]) * 1e3,
    )
    report.add(
        workload="W4 torch eager",
        ms=median(got["torch"]) * 1e3,
        ratio_torch_over_tenferro=1 / ratio,
        tenferro_over_torch_range=spread,
        max_grad_difference=diff,
    )


# ---------------------------------------------------------------------- W6


def inputs(n: int, degenerate: bool, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """A random matrix, or one with exactly repeated singular values (and eigenvalues of
    its symmetric part): half of the spectrum equal to 1."""
    a = rng.standard_normal((n, n))
    if not degenerate:
        return a
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    spectrum = np.concatenate([np.ones(n - n // 2), np.linspace(2, 3, n // 2)])
    return (q1 * spectrum) @ q1.T  # symmetric positive: singular values = eigenvalues


def bench_w6(report: Report) -> None:
    rng = np.random.default_rng(1)
    losses = {
        "sum svdvals": (lambda x: tf.sum(tf.linalg.svdvals(x)), "svdvals"),
        "sum eigvalsh": (lambda x: tf.sum(tf.linalg.eigvalsh(x)), "eigvalsh"),
    }
    for n in (4, 64, 256, 512):
        repeat = 200 if n <= 64 else 10 if n <= 256 else 5
        for degenerate in (False, True):
            a = inputs(n, degenerate, rng)
            for name, (loss, torch_name) in losses.items():
                grad = tf.grad(loss)
                g = np.asarray(grad(a))
                t_traced = median(timings(lambda g=grad, a=a: g(a), repeat))

                def eager(loss: Any = loss, a: Any = a) -> Any:
                    x = tf.EagerTensor(a, requires_grad=True)
                    loss(x).backward()
                    return x.grad

                t_eager = median(timings(eager, repeat))
                row: dict[str, Any] = {
                    "workload": f"W6 grad {name}",
                    "n": n,
                    "input": "degenerate" if degenerate else "random",
                    "traced_ms": t_traced * 1e3,
                    "eager_ms": t_eager * 1e3,
                    "finite": bool(np.all(np.isfinite(g))),
                }
                if have("torch"):
                    import torch

                    torch.set_num_threads(1)
                    fn = getattr(torch.linalg, torch_name)

                    def theirs(fn: Any = fn, a: Any = a) -> Any:
                        x = torch.tensor(a, requires_grad=True)
                        fn(x).sum().backward()
                        return x.grad

                    tg = theirs().numpy()
                    t = median(timings(theirs, repeat))
                    row.update(
                        torch_ms=t * 1e3,
                        ratio_torch_over_traced=t / t_traced,
                        ratio_torch_over_eager=t / t_eager,
                        torch_nan=bool(np.isnan(tg).any()),
                    )
                report.add(**row)


if __name__ == "__main__":
    header("tf.linalg spectral AD (W4, W6)")
    report = Report("linalg")
    bench_w4(report)
    bench_w6(report)
    print(f"   saved {report.save()}")
