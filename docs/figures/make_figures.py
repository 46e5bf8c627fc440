"""Draw the figures of docs/tensor-networks.md (``make figures``; needs matplotlib, the
``docs`` dependency group). Writes into this folder:

* ``energy-error.png``: relative energy error of the variational MPS vs L-BFGS iteration;
* ``sweep-spectra.png``: singular-value spectra of the compression sweep, the rtol
  threshold and the ranks chosen;
* ``iterative-solvers.png``: the transverse magnetisation and susceptibility of Ising
  chains from first and second derivatives of the ground energy through Lanczos, and the
  peak memory of a fixed point's gradient against its iteration count, implicit and
  unrolled;
* ``traced-program.dot`` and ``traced-program.png``: a traced program (the MPS norm and
  its gradient) as Graphviz source, and a drawing of it made with matplotlib (render
  the .dot with Graphviz instead: ``dot -Tsvg traced-program.dot -o traced-program.svg``).
"""

# ruff: noqa: B023 (closures run within the loop iteration that defines them)

from __future__ import annotations

import re
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import scipy.optimize

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mps  # noqa: E402

import tenferro as tf  # noqa: E402

LENGTH, CHI = 12, 8


def energy_error() -> None:
    exact = mps.exact_ground_energy(LENGTH)
    shapes = mps.core_shapes(LENGTH, CHI)
    mpo = mps.ising_mpo(LENGTH)
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=90)
    for kind, dtype in (("real", np.float64), ("complex", np.complex128)):
        complex_ = kind == "complex"
        value_and_grad = tf.value_and_grad(mps.energy_of_vector(shapes, mpo, complex_))
        history: list[float] = []

        def objective(x: Any) -> tuple[float, Any]:
            value, gradient = value_and_grad(x)
            history.append(float(value))
            return float(value), np.asarray(gradient)

        scipy.optimize.minimize(
            objective,
            mps.pack(mps.product_state_mps(LENGTH, CHI, dtype=dtype)),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 600, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-10},
        )
        errors = (np.array(history) - exact) / abs(exact)
        ax.semilogy(np.minimum.accumulate(errors), label=f"{kind} MPS, chi={CHI}")
    ax.axhline(1e-5, color="grey", linestyle="--", linewidth=1, label="1e-5 (the demo's bar)")
    ax.set_xlabel("energy evaluations (L-BFGS-B)")
    ax.set_ylabel("(E - E_exact) / |E_exact|")
    ax.set_title(f"Critical Ising chain, L={LENGTH}: MPS energy vs exact diagonalisation")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(HERE / "energy-error.png")
    plt.close(fig)


def sweep_spectra() -> None:
    rtol = 1e-2
    cores = [tf.asarray(c) for c in mps.random_mps(LENGTH, 32, seed=2)]
    _, spectra = mps.compress(cores, 0.0)  # keep everything: the full spectra
    _, kept = mps.compress(cores, rtol)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    colors = plt.get_cmap("viridis")(np.linspace(0, 1, len(spectra)))
    for bond, (s, color) in enumerate(zip(spectra, colors, strict=True)):
        values = np.asarray(s) / np.asarray(s)[0]
        left.semilogy(
            np.arange(1, values.size + 1), values, ".-", color=color, label=f"bond {bond + 1}"
        )
    left.axhline(rtol, color="red", linestyle="--", linewidth=1, label=f"rtol = {rtol:g}")
    left.set_xlabel("index k")
    left.set_ylabel("s_k / s_1")
    left.set_title("Schmidt spectra of a random MPS, chi=32")
    left.legend(fontsize=6, ncol=2)
    bonds = np.arange(1, len(spectra) + 1)
    right.bar(
        bonds - 0.2, [np.asarray(s).size for s in spectra], width=0.4, label="bond dimension in"
    )
    right.bar(bonds + 0.2, [np.asarray(s).size for s in kept], width=0.4, label="rank kept")
    right.set_xlabel("bond")
    right.set_ylabel("dimension")
    right.set_title("Ranks chosen by truncated_svd(rtol)")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "sweep-spectra.png")
    plt.close(fig)


def _chain_hamiltonian(length: int) -> Any:
    """``g -> (psi -> H(g) psi)`` for the Ising chain, matrix-free on the state tensor."""
    no_field, unit_field = mps.ising_mpo(length, field=0.0), mps.ising_mpo(length, field=1.0)
    letters = "abcdefghijklmnop"[:length]

    def hamiltonian(g: Any) -> Any:
        pairs = zip(no_field, unit_field, strict=True)
        mpo = [tf.asarray(w0) + g * tf.asarray(w1 - w0) for w0, w1 in pairs]

        def apply(psi: Any) -> Any:
            x = tf.reshape(psi, (1, *psi.shape))
            for i, w in enumerate(mpo):
                out = letters[:i] + "Z" + letters[i + 1 :]
                x = tf.einsum(f"wvZ{letters[i]},w{letters}->v{out}", w, x)
            return tf.reshape(x, psi.shape)

        return apply

    return hamiltonian


def _gradient_peak(run: Any) -> float:
    run()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def iterative_solvers() -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=90)
    fields = np.linspace(0.2, 2.0, 19)
    for length, style in ((8, "--"), (12, "-")):
        hamiltonian = _chain_hamiltonian(length)
        start = np.ones((2,) * length)

        def energy(g: Any) -> Any:
            return tf.linalg.eigsh(hamiltonian(g), k=1, v0=start)[0][0]

        slope = tf.grad(energy)
        curvature = tf.grad(tf.grad(energy))
        magnetisation = [-float(slope(g)) / length for g in fields]
        susceptibility = [-float(curvature(g)) / length for g in fields]
        left.plot(fields, magnetisation, style, color="C0", label=f"<X> = -dE/dg / L, L={length}")
        left.plot(fields, susceptibility, style, color="C3", label=f"-d2E/dg2 / L, L={length}")
    left.axvline(1.0, color="#999999", lw=0.8)
    left.set_xlabel("transverse field g")
    left.set_title("Ising chain: derivatives of the ground energy through Lanczos", fontsize=9)
    left.legend(fontsize=7)

    n = 8000
    c = np.linspace(0.0, 1.0, n)
    counts, implicit, unrolled = [], [], []
    for rate in (0.02, 0.3, 0.7, 0.9, 0.97, 0.99):
        steps = 0

        def count(x: Any, rate: float = rate) -> Any:
            nonlocal steps
            steps += 1
            return rate * x + c

        x = np.zeros(n)
        while True:
            fx = count(x)
            if np.linalg.norm(fx - x) <= 1e-10 * np.linalg.norm(fx):
                break
            x = fx
        counts.append(steps)

        def implicit_run(rate: float = rate) -> None:
            a, b = (
                tf.EagerTensor(np.asarray(rate), requires_grad=True),
                tf.EagerTensor(c, requires_grad=True),
            )
            tf.sum(tf.fixed_point(lambda x: a * x + b, tf.zeros_like(b), maxiter=10**4)).backward()

        def unrolled_run(rate: float = rate, steps: int = steps) -> None:
            a, b = (
                tf.EagerTensor(np.asarray(rate), requires_grad=True),
                tf.EagerTensor(c, requires_grad=True),
            )
            x = tf.zeros_like(b)
            for _ in range(steps):
                x = a * x + b
            tf.sum(x).backward()

        implicit.append(_gradient_peak(implicit_run))
        unrolled.append(_gradient_peak(unrolled_run))
    right.loglog(counts, unrolled, "o-", color="C1", label="unrolled on the tape")
    right.loglog(counts, implicit, "s-", color="C0", label="tf.fixed_point (implicit)")
    right.set_xlabel("iterations to converge (x <- a x + c, n = 8000, tol 1e-10)")
    right.set_ylabel("peak memory of the gradient (MiB)")
    right.set_title("Gradient memory vs iterations (tracemalloc)", fontsize=9)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(HERE / "iterative-solvers.png")
    plt.close(fig)


def traced_program() -> str:
    """The norm of a 2-site MPS and its gradient with respect to the first core."""
    rng = np.random.default_rng(0)
    a = tf.traced(rng.standard_normal((1, 2, 2)), name="A")
    b = tf.traced(rng.standard_normal((2, 2, 1)), name="B")
    norm = mps.overlap([a, b])
    dot = tf.graph_to_dot(norm, norm.grad(a))
    (HERE / "traced-program.dot").write_text(dot + "\n")
    draw_dot(dot, HERE / "traced-program.png")
    return dot


def draw_dot(dot: str, path: Path) -> None:
    """A layered drawing of the DOT source that ``tf.graph_to_dot`` writes (no Graphviz
    needed): one row per depth from the inputs."""
    labels: dict[str, str] = {}
    linear: set[str] = set()
    for node, attributes in re.findall(r"^\s*(\w+) \[(.*)\];$", dot, re.MULTILINE):
        if node == "node":  # the default attributes, not a node
            continue
        label = re.search(r'label="((?:[^"\\]|\\.)*)"', attributes)
        labels[node] = (label.group(1) if label else node).replace("\\n", "\n").replace('\\"', '"')
        if "filled" in attributes:
            linear.add(node)
    edges = re.findall(r"^\s*(\w+) -> (\w+)", dot, re.MULTILINE)
    depth = dict.fromkeys(labels, 0)
    for _ in labels:  # longest path from a source (the graph is small and acyclic)
        for source, target in edges:
            depth[target] = max(depth[target], depth[source] + 1)
    rows: dict[int, list[str]] = {}
    for node in labels:
        rows.setdefault(depth[node], []).append(node)
    width = max(len(r) for r in rows.values())
    position = {}
    for level, nodes in rows.items():
        for index, node in enumerate(nodes):
            position[node] = ((index + 0.5) * width / len(nodes), -level)
    fig, ax = plt.subplots(figsize=(3.3 * width, 0.85 * len(rows) + 0.5), dpi=80)
    for source, target in edges:
        (x0, y0), (x1, y1) = position[source], position[target]
        ax.annotate(
            "",
            xy=(x1, y1 + 0.22),
            xytext=(x0, y0 - 0.22),
            arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.8},
        )
    for node, (x, y) in position.items():
        text = labels[node]
        text = re.sub(r"\((?:float|complex)\d+\[[^)]*\)", "", text)  # operand types: long
        text = text.replace(", lhs_batch=(), rhs_batch=()", "").replace("_contracting", "")
        style = "round" if node.startswith(("in", "out")) else "square"
        color = "#eef3ff" if node in linear else "#fff7e6" if node.startswith("in") else "white"
        ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=7,
            family="monospace",
            bbox={"boxstyle": f"{style},pad=0.3", "facecolor": color, "edgecolor": "#333333"},
        )
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-len(rows) + 0.5, 0.5)
    ax.axis("off")
    ax.set_title(
        "A traced program: <psi|psi> of a 2-site MPS and its gradient (blue: linear)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    traced_program()
    sweep_spectra()
    energy_error()
    iterative_solvers()
    names = ("energy-error.png", "sweep-spectra.png", "traced-program.png", "iterative-solvers.png")
    for name in names:
        print(f"wrote {HERE / name} ({(HERE / name).stat().st_size / 1e3:.0f} kB)")
