"""tf.linalg solvers: W6 grid for QR and solve, and per-call overhead at small n.

* ``grad Σ Q + Σ R`` (reduced QR of a square matrix) and ``grad Σ solve(A, B)``
  (B with 4 columns) for n in {4, 64, 256, 512}, through ``tf.grad`` (traced, compiled
  once, steady state) and the eager tape;
* per-call overhead at n <= 8: the same gradients at n = 4 and 8 (LAPACK time is
  negligible there).

PyTorch runs side by side when installed (single-threaded, inputs built outside the
timed region). Runs interleave call by call in rounds; figures are medians of the rounds' best
calls and ratios medians of the per-round ratios, torch / tenferro (above 1: tenferro is
faster). Targets (issue 11): <= 1.1x torch at n >= 256, <= 1.0x torch per-call
overhead at n <= 8. Benchmarks report, never assert.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_common import Report, header, median  # noqa: E402
from bench_tenferro import _interleaved  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro import linalg  # noqa: E402

SIZES = (4, 8, 64, 256, 512)


def _repeat(n: int) -> int:
    return 200 if n <= 8 else 50 if n <= 64 else 10 if n <= 256 else 5


def _inputs(n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, 4))
    return a, b


def qr_loss(a: Any) -> Any:
    q, r = linalg.qr(a)
    return tf.sum(q) + tf.sum(r)


def solve_loss(a: Any, b: Any) -> Any:
    return tf.sum(linalg.solve(a, b))


def _eager(loss: Callable[..., Any], *arrays: Any) -> Callable[[], Any]:
    def step() -> Any:
        leaves = [tf.EagerTensor(x, requires_grad=True) for x in arrays]
        loss(*leaves).backward()
        return leaves[0].grad

    return step


def _torch(kind: str, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> Callable[[], Any]:
    import torch

    torch.set_num_threads(1)
    ta, tb = torch.tensor(a), torch.tensor(b)

    def step() -> Any:
        x = ta.clone().requires_grad_(True)
        if kind == "qr":
            q, r = torch.linalg.qr(x)
            (q.sum() + r.sum()).backward()
        else:
            y = tb.clone().requires_grad_(True)
            torch.linalg.solve(x, y).sum().backward()
        return x.grad

    return step


def bench(report: Report, rounds: int = 5) -> None:
    have_torch = importlib.util.find_spec("torch") is not None
    for n in SIZES:
        a, b = _inputs(n)
        repeat = _repeat(n)
        cases = {
            "qr": (tf.grad(qr_loss), (a,), _eager(qr_loss, a)),
            "solve": (tf.grad(solve_loss), (a, b), _eager(solve_loss, a, b)),
        }
        for kind, (grad, args, eager) in cases.items():
            grad(*args)  # compile once
            eager()
            runs: dict[str, Callable[[], Any]] = {
                "grad": lambda grad=grad, args=args: grad(*args),
                "eager": eager,
            }
            if have_torch:
                runs["torch"] = _torch(kind, a, b)
                runs["torch"]()
            # Interleaved call by call in rounds (load drift hits every run alike).
            got = _interleaved(runs, rounds, max(1, repeat // rounds))
            traced, taped = median(got["grad"]), median(got["eager"])
            row: dict[str, Any] = {
                "workload": f"W6 grad {'sum Q + sum R' if kind == 'qr' else 'sum solve'}",
                "n": n,
                "tf_grad_us": traced * 1e6,
                "tf_eager_us": taped * 1e6,
            }
            if have_torch:
                row["same_gradient"] = bool(  # the same maths (QR: same LAPACK gauge)
                    np.allclose(
                        runs["torch"]().numpy(), np.asarray(grad(*args)), rtol=1e-6, atol=1e-8
                    )
                )
                ratios_grad = [t / x for t, x in zip(got["torch"], got["grad"], strict=True)]
                ratios_eager = [t / x for t, x in zip(got["torch"], got["eager"], strict=True)]
                row["torch_us"] = median(got["torch"]) * 1e6
                row["ratio_torch_over_tf_grad"] = median(ratios_grad)
                row["ratio_torch_over_tf_eager"] = median(ratios_eager)
            report.add(**row)


if __name__ == "__main__":
    header("tf.linalg solvers (W6: QR and solve gradients; small-n overhead)")
    report = Report("linalg_solvers")
    bench(report)
    print(f"   saved {report.save()}")
