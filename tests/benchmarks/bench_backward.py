"""Eager reverse pass against PyTorch (issue 12): W3 (n = 16) forward + backward, its
backward alone, and W2's eager HVP against torch double backward.

*Backward alone*: each call differentiates a freshly recorded W3 graph (built before the
timer starts), ``tape.grad(y, v)`` against ``y.backward()`` in torch. Every figure is a
median over rounds of per-round ratios, the frameworks interleaved call by call within
a round and each round keeping the fastest of its calls (the machine's speed drifts and
other processes load it). Run from the repository with the peers' interpreter::

    cd tests/benchmarks && PYTHONPATH=../../packages/computegraph/src:../../packages/tidu/src:\
../../packages/tenferro/src /work/peers-env/bin/python bench_backward.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
from bench_common import QUICK, Report, header, median
from bench_tenferro import chain, have, tanh_loss

import tenferro as tf


def _interleaved_with_setup(
    runs: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]], rounds: int, repeat: int
) -> dict[str, list[float]]:
    """Per-round fastest time of ``run(setup())`` for each named pair, the setups untimed
    and the runs interleaved call by call."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(repeat):
            for name, (setup, run) in runs.items():
                state = setup()
                start = time.perf_counter()
                run(state)
                best[name] = min(best[name], time.perf_counter() - start)
                del state
        for name, value in best.items():
            samples[name].append(value)
    return samples


def _add(report: Report, workload: str, got: dict[str, list[float]]) -> None:
    ratios = sorted(a / b for a, b in zip(got["tf"], got["torch"], strict=True))
    report.add(
        workload=workload,
        tenferro_ms=median(got["tf"]) * 1e3,
        torch_ms=median(got["torch"]) * 1e3,
        ratio_tenferro_over_torch=median(ratios),
        ratio_range=f"{ratios[0]:.2f}..{ratios[-1]:.2f}",
    )


def bench_backward(report: Report, rounds: int = 7) -> None:
    if not have("torch"):
        print("   (torch is not installed: these ratios need it)")
        return
    import torch

    torch.set_num_threads(1)
    v16 = np.linspace(0.1, 0.9, 16)

    def ours_graph() -> Any:
        tape = tf.Tape()
        v = tape.track(v16)
        return tape, v, chain(tf, v)

    def ours_backward(state: Any) -> Any:
        tape, v, y = state
        return tape.grad(y, v)

    def torch_graph() -> Any:
        v = torch.tensor(v16, requires_grad=True)
        return v, chain(torch, v)

    def torch_backward(state: Any) -> Any:
        v, y = state
        y.backward()
        return v.grad

    np.testing.assert_allclose(
        np.asarray(ours_backward(ours_graph())), torch_backward(torch_graph()).numpy(), rtol=1e-10
    )
    repeat = 2 if QUICK else 5
    full = _interleaved_with_setup(
        {
            "tf": (lambda: None, lambda _: ours_backward(ours_graph())),
            "torch": (lambda: None, lambda _: torch_backward(torch_graph())),
        },
        rounds,
        repeat,
    )
    _add(report, "W3 eager n=16 forward + backward", full)
    alone = _interleaved_with_setup(
        {"tf": (ours_graph, ours_backward), "torch": (torch_graph, torch_backward)},
        rounds,
        repeat,
    )
    _add(report, "W3 eager n=16 backward alone", alone)

    rng = np.random.default_rng(0)
    n = 256
    w = rng.standard_normal((n, n)) / np.sqrt(n)
    xv, vv = rng.standard_normal(n), rng.standard_normal(n)
    f_ours = tanh_loss(tf, tf.asarray(w))
    wt, xt, vt = (torch.tensor(c) for c in (w, xv, vv))
    f_torch = tanh_loss(torch, wt)

    def hvp_torch(_: Any) -> Any:
        xr = xt.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(f_torch(xr), xr, create_graph=True)
        (hv,) = torch.autograd.grad(g @ vt, xr)
        return hv

    hvp = _interleaved_with_setup(
        {
            "tf": (lambda: None, lambda _: tf.Tape().hvp(f_ours, [xv], [vv])),
            "torch": (lambda: None, hvp_torch),
        },
        rounds,
        4 * repeat,
    )
    _add(report, "W2 eager tape.hvp vs torch double backward", hvp)


if __name__ == "__main__":
    header("eager reverse pass vs torch (W3 backward alone, W2 eager HVP)")
    report = Report("backward")
    bench_backward(report)
    print(f"   saved {report.save()}")
