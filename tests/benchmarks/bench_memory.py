"""Memory and first-call scaling: peaks against the liveness minimum, checkpointing,
and first calls of long programs (design.md §5, issue 12).

Peaks are measured with ``tracemalloc`` (numpy reports its array buffers to it), in
units of one array of the chain (1e5 float64 = 0.8 MB), above what existed before the
measured call. The *liveness minimum* is the peak of the compiled ``tf.grad`` program
of the same function if every value is freed right after its last use: outputs of an
instruction are allocated while its operands are alive, then its dead values go.
Targets: eager backward and traced evaluation within 1.2x of it; checkpointing at least
halves a long chain's peak in both modes. HIPS autograd (numpy arrays, so tracemalloc
sees them) is measured beside when installed; PyTorch's allocator is invisible to
tracemalloc and is not compared.

Each ``*_rows`` function returns report rows (dicts); ``python bench_memory.py`` prints
and saves them. First-call figures are seconds of wall time on a shared machine: read
their ratios (time per op as the program grows), not their absolute values.
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np
from bench_common import Report, header

import tenferro as tf
from tenferro.traced.program import liveness_peak

N = 100_000
SEGMENTS = 12
UNIT = 8 * N  # bytes of one chain array


def _segment(m: Any, v: Any) -> Any:
    for _ in range(10):
        v = m.sin(v) * 1.01
    return v


def _chain(m: Any, run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """240 primitive ops (12 segments of 10 sin and 10 mul) on 1e5 elements, then a sum."""

    def f(x: Any) -> Any:
        for _ in range(SEGMENTS):
            x = run(x)
        return m.sum(x)

    return f


def peak_arrays(run: Callable[[], Any]) -> float:
    """Peak traced allocation of ``run()`` above its start, in chain arrays."""
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return (peak - base) / UNIT


def liveness_minimum(program: Any) -> float:
    """The liveness minimum of a compiled program (``traced.program.liveness_peak``),
    in chain arrays."""
    return liveness_peak(program) / UNIT


def _branches(x: Any) -> Any:
    """A branching function: values used by several later operations."""
    a = tf.sin(x) * tf.cos(x)
    b = tf.exp(x * 0.1) * x
    c = tf.tanh(a + b)
    return tf.sum(c * a - b**2) + tf.mean(tf.log1p(x * x))


MLP_BATCH, MLP_WIDTH = 1000, 100  # hidden activations of 1e5 elements


def _mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any, w3: Any) -> Any:
    """A small MLP loss of its weights: two tanh layers, the second with a skip
    connection (the first layer's activations are used twice), a linear read-out."""
    h1 = tf.tanh(x @ w1 + b1)
    h2 = tf.tanh(h1 @ w2 + b2) + h1
    return tf.mean((h2 @ w3 - 1.0) ** 2)


def _mlp_args() -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    width = MLP_WIDTH
    return (
        rng.standard_normal((MLP_BATCH, width)),
        rng.standard_normal((width, width)) / np.sqrt(width),
        np.zeros(width),
        rng.standard_normal((width, width)) / np.sqrt(width),
        np.zeros(width),
        rng.standard_normal((width, 10)) / np.sqrt(width),
    )


def _liveness_row(
    name: str, f: Callable[..., Any], args: tuple[Any, ...], argnums: tuple[int, ...]
) -> list[dict[str, Any]]:
    """The liveness minimum of ``tf.grad(f, argnums)``'s program, and the traced and
    eager (forward + backward) peaks against it."""
    gradient = tf.jit(tf.grad(f, argnums=argnums))
    gradient(*args)
    (plan,) = list(gradient.cache._entries.values())  # type: ignore[attr-defined]
    minimum = liveness_minimum(plan.program.program)
    traced = peak_arrays(lambda: gradient(*args))

    def eager() -> Any:
        tape = tf.Tape()
        operands = [
            tape.track(a) if i in argnums else tf.EagerTensor(a) for i, a in enumerate(args)
        ]
        return tape.grad(f(*operands), [operands[i] for i in argnums])

    eager_peak = peak_arrays(eager)
    return [
        {"workload": f"M1 {name}: liveness minimum (tf.grad program)", "peak_arrays": minimum},
        {
            "workload": f"M1 {name}: traced tf.jit(tf.grad) eval",
            "peak_arrays": traced,
            "ratio_to_minimum": traced / minimum,
        },
        {
            "workload": f"M1 {name}: eager forward + backward",
            "peak_arrays": eager_peak,
            "ratio_to_minimum": eager_peak / minimum,
        },
    ]


def liveness_rows() -> list[dict[str, Any]]:
    """Eager backward and traced evaluation peaks against the liveness minimum: a
    240-op chain, a branching function, a small MLP (eager backward frees each node's
    saved values once it has used them, so branching graphs stay near the minimum)."""
    x0 = np.linspace(0.0, 1.0, N)
    plain = _chain(tf, lambda v: _segment(tf, v))
    rows = [
        *_liveness_row("chain", plain, (x0,), (0,)),
        *_liveness_row("branching", _branches, (x0,), (0,)),
        *_liveness_row("MLP", _mlp, _mlp_args(), (1, 2, 3, 4, 5)),
    ]
    if importlib.util.find_spec("autograd") is not None:
        import autograd
        import autograd.numpy as anp

        minimum = rows[0]["peak_arrays"]
        peer = autograd.grad(_chain(anp, lambda v: _segment(anp, v)))
        peak = peak_arrays(lambda: peer(x0))
        rows.append(
            {
                "workload": "M1 chain: autograd grad",
                "peak_arrays": peak,
                "ratio_to_minimum": peak / minimum,
            }
        )
    return rows


def checkpoint_rows() -> list[dict[str, Any]]:
    """Peak of a 240-op chain with and without ``tf.checkpoint`` per 20-op segment."""
    x0 = np.linspace(0.0, 1.0, N)
    plain = _chain(tf, lambda v: _segment(tf, v))
    checkpointed = _chain(tf, tf.checkpoint(lambda v: _segment(tf, v)))
    rows = []
    for mode in ("traced", "eager"):
        peaks = []
        for f in (plain, checkpointed):
            if mode == "traced":
                gradient = tf.jit(tf.grad(f))
                gradient(x0)
                peaks.append(peak_arrays(lambda g=gradient: g(x0)))  # type: ignore[misc]
            else:

                def run(f: Any = f) -> Any:
                    x = tf.EagerTensor(x0, requires_grad=True)
                    f(x).backward()
                    return x.grad

                peaks.append(peak_arrays(run))
        rows.append(
            {
                "workload": f"M2 checkpoint, {mode} grad",
                "plain_peak_arrays": peaks[0],
                "checkpoint_peak_arrays": peaks[1],
                "ratio_plain_over_checkpoint": peaks[0] / peaks[1],
            }
        )
    return rows


def _op_chain(n: int) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        for k in range(n // 3):
            x = tf.sin(x)
            x = x * 0.99
            x = x + 0.01 * k
        return tf.sum(x)

    return f


def first_call_rows(sizes: tuple[int, ...] = (3000, 10000, 30000)) -> list[dict[str, Any]]:
    """First call (trace, derive, compile, run) and second call (generated code) of
    ``tf.jit(tf.grad(f))`` for chains of growing length: microseconds per op should stay
    flat (linear cost), the number of cyclic collections small, and the steady state
    per op the same beyond 20,000 instructions (generated code is split in segments)."""
    x = np.ones(4)
    rows = []
    for n in sizes:
        tf.clear_caches()
        gradient = tf.jit(tf.grad(_op_chain(n)))
        collections = []

        def count(phase: str, info: dict[str, Any], seen: list[int] = collections) -> None:
            if phase == "start":
                seen.append(info["generation"])

        gc.collect()
        gc.callbacks.append(count)
        try:
            start = time.perf_counter()
            gradient(x)
            first = time.perf_counter() - start
            start = time.perf_counter()
            gradient(x)
            second = time.perf_counter() - start
        finally:
            gc.callbacks.remove(count)
        steady = []
        for _ in range(3):
            start = time.perf_counter()
            gradient(x)
            steady.append(time.perf_counter() - start)
        rows.append(
            {
                "workload": "M3 first call tf.jit(tf.grad(chain))",
                "ops": n,
                "first_call_s": first,
                "first_us_per_op": first / n * 1e6,
                "codegen_call_s": second,
                "codegen_us_per_op": second / n * 1e6,
                "gc_collections": len(collections),
                "steady_us_per_op": sorted(steady)[1] / n * 1e6,
            }
        )
    return rows


if __name__ == "__main__":
    header("memory: liveness minimum, checkpointing; first-call scaling")
    report = Report("memory")
    for row in [*liveness_rows(), *checkpoint_rows(), *first_call_rows()]:
        report.add(**row)
    print(f"   saved {report.save()}")
