"""Shared helpers for the benchmarks: timing with medians, machine description, reports.

Benchmarks are programs, not tests: they print figures and write them as JSON under
``bench-results/``; they assert nothing about speed.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[2] / "bench-results"
PEERS = ("torch", "jax", "autograd", "numpy", "scipy", "opt_einsum")
# BENCH_QUICK=1: every timing loop runs a fifth of its repeats (a few minutes in all).
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS")


def have(name: str) -> bool:
    """Whether ``name`` is importable (peers are optional)."""
    return importlib.util.find_spec(name) is not None


def machine() -> dict[str, Any]:
    """A description of the machine and of which peers are installed."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    peers = {}
    for name in PEERS:
        if importlib.util.find_spec(name) is not None:
            module = __import__(name)
            peers[name] = getattr(module, "__version__", "installed")
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "peers": peers,
        "threads": {name: os.environ.get(name, "unset") for name in THREAD_VARIABLES},
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "quick": QUICK,
    }


def timings(
    run: Callable[[], Any], repeat: int, setup: Callable[[], Any] | None = None
) -> list[float]:
    """Wall-clock seconds of ``repeat`` calls of ``run`` (``setup`` runs untimed before each)."""
    samples = []
    if QUICK:
        repeat = max(1, repeat // 5)
    for _ in range(repeat):
        if setup is not None:
            setup()
        if repeat <= 20:
            gc.collect()
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return samples


def median(samples: list[float]) -> float:
    return statistics.median(samples)


class Report:
    """Collects rows, prints them as a table and saves them as JSON."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[dict[str, Any]] = []

    def add(self, **row: Any) -> None:
        self.rows.append(row)
        print("  " + "  ".join(f"{k}={_fmt(v)}" for k, v in row.items()), flush=True)

    def save(self) -> Path:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{self.name}.json"
        path.write_text(json.dumps({"machine": machine(), "rows": self.rows}, indent=2))
        return path


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def header(title: str) -> None:
    info = machine()
    print(f"\n== {title}")
    print(
        f"   python {info['python']} on {info['cpu']} ({info['cores']} cores); "
        f"peers: {info['peers'] or 'none'}"
    )
