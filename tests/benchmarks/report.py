"""Render the benchmark results (``bench-results/*.json``) as ``docs/benchmarks.md`` with
plots in ``docs/figures/``.

Rows plug in by their ``workload`` field: a row whose workload starts with a registered
section id (``"W3 ..."``) lands in that section, any other row in "Other measurements";
within a section, consecutive rows with the same columns form one table. Plots are a
registry too (:data:`PLOTS`): each draws from the rows of one workload. matplotlib is
optional; without it the report says so and has no plots.
"""

from __future__ import annotations

import datetime
import json
import math
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench-results"
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"

# id -> (title, what it measures); design.md §5.
SECTIONS: dict[str, tuple[str, str]] = {
    "W1": (
        "W1 - gradient of an MPS norm",
        "L=32, chi in {4, 16, 64}, d=2, float64 and complex128.",
    ),
    "W2": ("W2 - Hessian-vector product", "HVP of sum(tanh(W x)^2), n=256."),
    "W3": (
        "W3 - a 1000-op chain of tiny ops",
        "Forward and backward of 1000 elementwise ops on 4 elements: per-op overhead.",
    ),
    "W4": (
        "W4 - truncated-SVD sweep",
        "L=12, chi 32 -> 8, gradient of the kept singular values (eager).",
    ),
    "W5": (
        "W5 - einsum instances",
        "Plan cost against opt_einsum greedy and the shipped paths; cached contraction "
        "against `opt_einsum.contract_expression` on numpy with the same path.",
    ),
    "W6": (
        "W6 - linear-algebra AD grid",
        "Gradients through svdvals, eigvalsh, QR and solve for n up to 512, random and "
        "degenerate inputs (torch's NaN recorded).",
    ),
    "W7": (
        "W7 - complex AD: Re<psi|H|psi>/<psi|psi>",
        "Complex MPS energy gradients; values and gradients compared with torch's (equal) "
        "and JAX's (conjugate).",
    ),
    "W8": (
        "W8 - compile cache",
        "First call (trace + compile + run) of a genuinely new function, cache hits, "
        "a changed shape.",
    ),
    "overhead": (
        "Per-op overhead vs tensor size",
        "Gradient of sum(x * x) on the eager tape for growing x: where Python overhead "
        "stops mattering.",
    ),
    "small": ("Small einsum overhead", "`ij,jk->ik` at 2x2 and 8x8 on the eager tape."),
    "solvers": (
        "Iterative solvers: implicit against unrolled derivatives",
        "Gradients through `tf.fixed_point`, `tf.custom_root`, `tf.linalg.cg` and "
        "`tf.linalg.eigsh` (implicit: one more solve at the solution) against the same "
        "iterations unrolled on the eager tape and through `tf.grad`, and against JAX's "
        "`lax.custom_root` / `custom_linear_solve` (`jax.scipy.sparse.linalg.cg`) under "
        "`jax.jit`. `*_peak_kib`: the `tracemalloc` peak of one eager gradient (numpy's "
        "allocations; XLA's are invisible to it). `bench_solvers.py` describes each row.",
    ),
    "computegraph": (
        "computegraph",
        "Building, resolving, materializing, compiling and evaluating large graphs.",
    ),
    "tidu": ("tidu", "Linearize and transpose on the tidu test primitives."),
}
OTHER = ("Other measurements", "Rows of workloads without a registered section.")


def section_of(row: dict[str, Any]) -> str:
    workload = str(row.get("workload", row.get("report", "")))
    for key in SECTIONS:
        if workload == key or workload.startswith((key + " ", key + ":")):
            return key
    return "other"


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.2e}"
        return f"{value:.3g}"
    return str(value)


def tables(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown tables; consecutive rows with the same columns share one."""
    out: list[str] = []
    group: list[dict[str, Any]] = []

    def flush() -> None:
        if not group:
            return
        columns = list(group[0])
        out.append("| " + " | ".join(columns) + " |")
        out.append("|" + "---|" * len(columns))
        for row in group:
            out.append("| " + " | ".join(fmt(row[c]) for c in columns) + " |")
        out.append("")
        group.clear()

    for row in rows:
        if group and list(row) != list(group[0]):
            flush()
        group.append(row)
    flush()
    return out


# ---------------------------------------------------------------------- headline ratios


def _column(name: str, invert: bool = False) -> Callable[[dict[str, Any]], float | None]:
    def value(row: dict[str, Any]) -> float | None:
        x = row.get(name)
        if not isinstance(x, (int, float)) or isinstance(x, bool) or x == 0:
            return None
        return 1.0 / x if invert else float(x)

    return value


def _min_n(n: int) -> Callable[[dict[str, Any]], bool]:
    return lambda row: int(row.get("n", 0)) >= n


# (label, workload prefix, row filter, tenferro time / peer time of a row). A new
# benchmark adds a line here to appear in the headline table.
HEADLINES: list[
    tuple[
        str, str, Callable[[dict[str, Any]], bool] | None, Callable[[dict[str, Any]], float | None]
    ]
] = [
    (
        "W1 MPS norm grad: tf.grad / torch eager",
        "W1 MPS norm grad, every peer",
        None,
        _column("tf.grad_over_torch"),
    ),
    (
        "W1 MPS norm grad: tf eager tape / torch eager",
        "W1 MPS norm grad, every peer",
        None,
        _column("tf_eager_over_torch"),
    ),
    (
        "W1 MPS norm grad: tf.grad / jax.jit steady state",
        "W1 MPS norm grad, every peer",
        None,
        _column("tf.grad_over_jax.jit"),
    ),
    (
        "W1 MPS norm grad: tf.grad / jax un-jitted",
        "W1 MPS norm grad, every peer",
        None,
        _column("tf.grad_over_jax"),
    ),
    (
        "W1 MPS norm grad: tf.grad / HIPS autograd",
        "W1 MPS norm grad, every peer",
        None,
        _column("tf.grad_over_autograd"),
    ),
    (
        "W1 first call: tf.grad / jax.jit(grad) (new function)",
        "W1 MPS norm grad, every peer",
        None,
        lambda r: (
            r["tf.grad_first_call_ms"] / r["jax.jit_first_call_ms"]
            if "jax.jit_first_call_ms" in r
            else None
        ),
    ),
    (
        "W2 HVP: tf.hvp / torch double backward",
        "W2 torch double backward",
        None,
        _column("ratio_torch_over_tenferro", invert=True),
    ),
    (
        "W2 HVP: tf.hvp / jax.jit(jvp(grad))",
        "W2 jax jit(jvp(grad))",
        None,
        _column("ratio_jax_over_tenferro", invert=True),
    ),
    (
        "W3 1000-op chain: eager tape / torch (per op)",
        "W3 eager vs torch",
        None,
        _column("ratio_tenferro_over_peer"),
    ),
    (
        "W3 1000-op chain: eager tape / autograd (per op)",
        "W3 eager vs autograd",
        None,
        _column("ratio_tenferro_over_peer"),
    ),
    (
        "W3 1000-op chain: tf.grad steady / torch eager",
        "W3 torch eager fwd+bwd",
        None,
        _column("ratio_torch_over_tenferro_steady", invert=True),
    ),
    (
        "W3 first call: tf.grad / jax.jit(grad)",
        "W3 jax jit(grad)",
        None,
        _column("first_call_ratio_jax_over_tenferro", invert=True),
    ),
    (
        "W4 truncated-SVD sweep grad: eager / torch",
        "W4 torch eager",
        None,
        _column("ratio_torch_over_tenferro", invert=True),
    ),
    (
        "W4 truncated-SVD sweep grad: eager / jax.jit",
        "W4 truncated-SVD sweep grad, every peer",
        None,
        _column("tf_eager_over_jax.jit"),
    ),
    (
        "W4 truncated-SVD sweep grad: eager / HIPS autograd",
        "W4 truncated-SVD sweep grad, every peer",
        None,
        _column("tf_eager_over_autograd"),
    ),
    (
        "W5 cached contraction / opt_einsum.contract_expression",
        "W5 cached contraction",
        None,
        _column("ratio"),
    ),
    (
        "W6 linalg grads, n >= 256: tf.grad / torch",
        "W6 grad",
        _min_n(256),
        lambda r: (
            _column("ratio_torch_over_traced", True)(r)
            or _column("ratio_torch_over_tf_grad", True)(r)
        ),
    ),
    (
        "W6 linalg grads, n <= 8: tf.grad / torch",
        "W6 grad",
        lambda r: int(r.get("n", 99)) <= 8,
        lambda r: (
            _column("ratio_torch_over_traced", True)(r)
            or _column("ratio_torch_over_tf_grad", True)(r)
        ),
    ),
    (
        "W7 complex MPS energy grad: tf.value_and_grad / torch",
        "W7",
        None,
        lambda r: _column("tf.value_and_grad_over_torch")(r) or _column("ratio_vs_torch")(r),
    ),
    (
        "W7 complex MPS energy grad: tf.value_and_grad / jax.jit",
        "W7 Ising MPO energy grad vs chi",
        None,
        _column("tf.value_and_grad_over_jax.jit"),
    ),
    (
        "W8 first call: tf.jit / jax.jit (new function)",
        "W8 jax.jit",
        None,
        _column("first_ratio_jax_over_tenferro", invert=True),
    ),
]


def headline(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| comparison | tenferro time / peer time: median (min .. max) over rows | rows |",
        "|---|---|---|",
    ]
    for label, prefix, keep, value in HEADLINES:
        values = []
        for row in rows:
            if not str(row.get("workload", "")).startswith(prefix):
                continue
            if keep is not None and not keep(row):
                continue
            x = value(row)
            if x is not None and math.isfinite(x):
                values.append(x)
        if values:
            values.sort()
            middle = values[len(values) // 2]
            spread = f"({fmt(values[0])} .. {fmt(values[-1])})"
            out.append(f"| {label} | {fmt(middle)} {spread} | {len(values)} |")
    out.append("")
    return out


# ---------------------------------------------------------------------- plots


def _series(
    rows: list[dict[str, Any]], x: str, suffix: str
) -> dict[str, tuple[list[float], list[float]]]:
    series: dict[str, tuple[list[float], list[float]]] = {}
    for row in rows:
        for key, value in row.items():
            if key.endswith(suffix) and isinstance(value, (int, float)):
                xs, ys = series.setdefault(key[: -len(suffix)], ([], []))
                xs.append(float(row[x]))
                ys.append(float(value))
    return series


def _plot(
    path: Path,
    rows: list[dict[str, Any]],
    x: str,
    suffix: str,
    xlabel: str,
    ylabel: str,
    title: str,
) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = _series(rows, x, suffix)
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(6, 4), dpi=80)
    for name, (xs, ys) in series.items():
        ax.loglog(xs, ys, marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def plot_overhead(rows: list[dict[str, Any]], path: Path) -> bool:
    return _plot(
        path,
        rows,
        "n",
        "_us",
        "elements of x",
        "microseconds per grad of sum(x*x)",
        "Per-op overhead vs size",
    )


def plot_mps_chi(rows: list[dict[str, Any]], path: Path) -> bool:
    return _plot(
        path,
        rows,
        "chi",
        "_ms",
        "bond dimension chi",
        "milliseconds per gradient",
        "Ising MPO energy gradient, L=12, complex",
    )


# (file name, workload prefix, drawing function, caption)
PLOTS: list[tuple[str, str, Callable[[list[dict[str, Any]], Path], bool], str]] = [
    (
        "bench-overhead.png",
        "overhead: grad of sum(x*x) vs size",
        plot_overhead,
        "Per-op overhead vs tensor size",
    ),
    (
        "bench-mps-chi.png",
        "W7 Ising MPO energy grad vs chi",
        plot_mps_chi,
        "MPS-gradient time vs chi",
    ),
]


# ---------------------------------------------------------------------- the page


def load(names: list[str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    machine: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for path in sorted(RESULTS.glob("*.json")):
        if names is not None and path.stem not in names:
            continue
        content = json.loads(path.read_text())
        machine = machine or content["machine"]
        for row in content["rows"]:
            rows.append({"report": path.stem, **row})
    return machine, rows


def render(
    machine: dict[str, Any],
    rows: list[dict[str, Any]],
    loads: list[Any],
    seconds: float,
    note: str = "",
) -> str:
    import tenferro

    peers = machine.get("peers", {})
    wanted = ("torch", "jax", "autograd", "opt_einsum")
    present = [p for p in wanted if p in peers]
    absent = [p for p in wanted if p not in peers]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`tests/benchmarks/run_all.py`, which runs every "
        "`tests/benchmarks/bench_*.py` and renders this page with `tests/benchmarks/report.py`). "
        "Benchmarks report; they never assert. Figures are medians of wall-clock times; a "
        "column `a_over_b` is a's time divided by b's (below 1: a is faster), measured side by "
        "side in the same run (interleaved round by round where the row says so). Re-run it: "
        "`make bench` (peers: see below); `BENCH_QUICK=1 make bench` runs a fifth of the "
        "repeats.",
        "",
        "## This run",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"duration {seconds / 60:.1f} min; quick mode: {'yes' if machine.get('quick') else 'no'}",
        f"- machine: {machine.get('cpu')} ({machine.get('cores')} cores), "
        f"{platform.system()} {platform.release()}; Python {machine.get('python')}",
        f"- load average (1, 5, 15 min) at start {fmt_load(loads[0])}, "
        f"at end {fmt_load(loads[-1])}",
        f"- threads: {', '.join(f'{k}={v}' for k, v in machine.get('threads', {}).items())}; "
        "torch.set_num_threads(1)",
        f"- versions: tenferro {tenferro.__version__}, "
        + ", ".join(f"{k} {v}" for k, v in peers.items()),
        f"- peers present: {', '.join(present) or 'none'}; absent: {', '.join(absent) or 'none'}",
        *([f"- {note}"] if note else []),
        "",
    ]
    if loads[0] and loads[0][0] > (machine.get("cores") or 1):
        lines += [
            "> **The machine was loaded** by other processes during this run (load average "
            "above the core count): absolute times are inflated and noisy. Ratios measured "
            "side by side in one process are the figures to read; regenerate on an idle "
            "machine for absolute numbers.",
            "",
        ]
    lines += [
        "Peers are optional and never locked: install them next to the workspace with "
        "`uv pip install --python .venv/bin/python torch jax autograd opt_einsum` "
        "(`make bench` keeps them: its sync is `--inexact`), or use any environment that has "
        "them: `PYTHONPATH=packages/computegraph/src:packages/tidu/src:packages/tenferro/src "
        "python tests/benchmarks/run_all.py`. Absent peers' columns are simply missing.",
        "",
    ]
    lines += [
        "## Headline",
        "",
        "Each figure is tenferro's time divided by the peer's, measured side by side in this "
        "run: below 1, tenferro is faster; above 1, it is behind.",
        "",
        *headline(rows),
    ]
    plotted = _plots(rows)
    by_section: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_section.setdefault(section_of(row), []).append(row)
    for key in [*SECTIONS, "other"]:
        if key not in by_section:
            continue
        title, what = SECTIONS.get(key, OTHER)
        lines += [f"## {title}", "", what, ""]
        for name, caption in plotted.get(key, []):
            lines += [f"![{caption}](figures/{name})", ""]
        lines += tables([{k: v for k, v in r.items() if k != "report"} for r in by_section[key]])
    missing = [k for k in SECTIONS if k.startswith("W") and k not in by_section]
    if missing:
        lines += ["## Not measured in this run", "", ", ".join(missing), ""]
    return "\n".join(lines)


def fmt_load(load: Any) -> str:
    return "unknown" if not load else ", ".join(f"{x:.1f}" for x in load)


def _plots(rows: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("   matplotlib is not installed: no plots")
        return {}
    FIGURES.mkdir(exist_ok=True)
    done: dict[str, list[tuple[str, str]]] = {}
    for name, workload, draw, caption in PLOTS:
        selected = [r for r in rows if r.get("workload") == workload]
        if selected and draw(selected, FIGURES / name):
            done.setdefault(section_of(selected[0]), []).append((name, caption))
    return done


def write(names: list[str] | None, loads: list[Any], seconds: float, note: str = "") -> Path:
    """Render the saved rows of ``names`` (every saved report when None) into the page;
    ``note`` adds a line to the description of the run."""
    machine, rows = load(names)
    page = DOCS / "benchmarks.md"
    page.write_text(render(machine, rows, loads, seconds, note))
    return page
