"""tenferro on a tensor-network workflow (``make demo``), every derivative checked.

1. Variational ground state. An open-boundary MPS (L = 12, chi = 8, d = 2) for the
   transverse-field Ising chain at its critical field. The energy Re<psi|H|psi>/<psi|psi>
   is contracted from an MPO with ``tf.einsum``; ``scipy.optimize.minimize`` (L-BFGS-B)
   is driven by ``tf.value_and_grad``, first with real cores, then with complex ones;
   the result is compared with exact diagonalisation of the 4096-dimensional Hamiltonian.
2. Compression with data-dependent ranks. A random MPS (chi = 32) is brought to
   canonical form and swept right to left with ``tf.linalg.truncated_svd(rtol=...)`` on
   the eager tape: the ranks are read from the spectra. The gradient of the kept
   singular values is checked against finite differences, then the sweep runs under
   ``tf.checkpoint`` and the memory it saves is measured (tracemalloc).
3. A degenerate spectrum. The gradient of a gauge-invariant loss through ``eigh`` of a
   Hamiltonian with a degenerate level: finite and equal to finite differences; PyTorch's
   gradient is shown beside it when PyTorch is installed.

Every check prints its error and tolerance; the demo exits non-zero if one fails.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.optimize

import tenferro as tf
from tenferro.models import mps

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)
REPORT: list[tuple[str, float, float]] = []
FAILED: list[str] = []

LENGTH, CHI, FIELD = 12, 8, 1.0
MAX_ITERATIONS = 350


def check(label: str, error: float, tolerance: float) -> None:
    """Record a check; a failure is reported at the end and makes the exit status 1."""
    REPORT.append((label, error, tolerance))
    if not error <= tolerance:  # NaN fails too
        FAILED.append(label)
    mark = "ok " if error <= tolerance else "FAIL"
    print(f"  {mark} {label:<62} {error:.1e}  (tolerance {tolerance:g})")


def relative(ours: Any, reference: Any) -> float:
    ours, reference = np.asarray(ours), np.asarray(reference)
    return float(np.max(np.abs(ours - reference)) / max(np.max(np.abs(reference)), 1e-300))


def central_difference(f: Callable[[Any], float], x: Array, v: Array, h: float = 1e-6) -> float:
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


# ---------------------------------------------------------------------- 1. ground state


def dense_state(cores: Sequence[Array]) -> Array:
    psi = np.asarray(cores[0])
    for core in cores[1:]:
        psi = np.tensordot(psi, np.asarray(core), axes=(psi.ndim - 1, 0))
    return psi.reshape(-1)


def ground_state(exact: float, complex_: bool) -> dict[str, Any]:
    kind = "complex" if complex_ else "real"
    dtype = np.complex128 if complex_ else np.float64
    shapes = mps.core_shapes(LENGTH, CHI)
    mpo = mps.ising_mpo(LENGTH, FIELD)

    if complex_:
        # Differentiate with respect to the complex cores themselves: the gradient is
        # dE/dRe + i dE/dIm (PyTorch's convention), so packing it as (Re, Im) gives
        # the gradient with respect to scipy's real parameter vector.
        grad_cores = tf.value_and_grad(
            lambda *cs: mps.energy(cs, mpo), argnums=tuple(range(LENGTH))
        )

        def value_and_gradient(x: Array) -> tuple[Any, Array]:
            value, grads = grad_cores(*mps.unpack(x, shapes, complex_=True))
            return value, mps.pack([np.asarray(g) for g in grads])
    else:
        grad_vector = tf.value_and_grad(mps.energy_of_vector(shapes, mpo))

        def value_and_gradient(x: Array) -> tuple[Any, Array]:
            value, grad = grad_vector(x)
            return value, np.asarray(grad)

    def energy_numpy(x: Array) -> float:
        cores = [np.asarray(c) for c in mps.unpack(x, shapes, complex_)]
        psi = dense_state(cores)
        hamiltonian = mps.ising_sparse(LENGTH, FIELD)
        return float(np.real(np.vdot(psi, hamiltonian @ psi)) / np.real(np.vdot(psi, psi)))

    # The MPO contraction and its gradient at a random point, against the dense state.
    x = mps.pack(mps.random_mps(LENGTH, CHI, dtype=dtype, seed=3))
    value, gradient = value_and_gradient(x)
    check(
        f"{kind}: MPO energy vs dense <psi|H|psi>/<psi|psi>",
        relative(value, energy_numpy(x)),
        1e-12,
    )
    v = RNG.standard_normal(x.shape)
    check(
        f"{kind}: grad . v vs finite differences (relative)",
        relative(gradient @ v, central_difference(energy_numpy, x, v)),
        1e-6,
    )

    history: list[float] = []

    def objective(x: Array) -> tuple[float, Array]:
        value, gradient = value_and_gradient(x)
        history.append(float(value))
        return float(value), gradient

    start = time.perf_counter()
    result = scipy.optimize.minimize(
        objective,
        mps.pack(mps.product_state_mps(LENGTH, CHI, dtype=dtype)),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": MAX_ITERATIONS, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-10},
    )
    seconds = time.perf_counter() - start
    error = (result.fun - exact) / abs(exact)
    print(
        f"  {kind} MPS: E = {result.fun:.10f} after {result.nit} iterations "
        f"({len(history)} gradients, {seconds:.1f} s, {seconds / len(history) * 1e3:.1f} ms each)"
    )
    check(f"{kind}: relative energy error vs exact diagonalisation", error, 1e-5)
    check(f"{kind}: variational bound E >= E_exact (relative slack)", max(0.0, -error), 1e-12)
    return {
        "history": history,
        "ms_per_gradient": seconds / len(history) * 1e3,
        "parameters": x.size,
    }


# ---------------------------------------------------------------------- 2. compression

COMPRESS_CHI, RTOL = 32, 1e-2


def compression() -> dict[str, Any]:
    cores = mps.random_mps(LENGTH, COMPRESS_CHI, seed=2)

    def kept_weight_of(*leaves: Any) -> Any:
        return mps.kept_weight(mps.compress(list(leaves), RTOL)[1])

    def sweep(loss_of: Callable[..., Any]) -> tuple[list[Any], Any, dict[str, int]]:
        """Forward and backward on the eager tape, measuring what Python allocates
        (tracemalloc sees numpy's buffers): the memory the tape holds between forward
        and backward, and the peak of the whole step."""
        leaves = [tf.EagerTensor(c, requires_grad=True) for c in cores]
        tracemalloc.start()
        loss = loss_of(*leaves)
        held, _ = tracemalloc.get_traced_memory()
        loss.backward()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return leaves, loss, {"held after forward": held, "peak": peak}

    for _ in range(2):  # warm the derivative-program caches before measuring
        sweep(kept_weight_of)
    leaves, loss, plain = sweep(kept_weight_of)
    _, spectra = mps.compress([tf.asarray(c) for c in cores], RTOL)
    ranks = [int(s.shape[0]) for s in spectra]
    print(f"  bond dimensions in: {mps.bond_dimensions(LENGTH, COMPRESS_CHI)[1:-1]}")
    print(f"  ranks kept (rtol={RTOL:g}):  {ranks}")

    def ranks_and_loss(x: list[Array]) -> tuple[list[int], float]:
        _, s = mps.compress([tf.asarray(c) for c in x], RTOL)
        return [int(t.shape[0]) for t in s], float(mps.kept_weight(s))

    directions = [RNG.standard_normal(c.shape) for c in cores]
    h = 1e-6
    up_ranks, up = ranks_and_loss([c + h * d for c, d in zip(cores, directions, strict=True)])
    down_ranks, down = ranks_and_loss([c - h * d for c, d in zip(cores, directions, strict=True)])
    check(
        "perturbed inputs keep the same ranks (locally constant)",
        float(up_ranks != ranks or down_ranks != ranks),
        0.0,
    )
    ours = sum(
        float(np.sum(np.asarray(t.grad) * d)) for t, d in zip(leaves, directions, strict=True)
    )
    check(
        "d(sum of kept singular values) vs finite differences (relative)",
        relative(ours, (up - down) / (2 * h)),
        1e-6,
    )

    _, discarded = mps.compress([tf.asarray(c) for c in cores], 0.0)
    full = mps.overlap([tf.asarray(c) for c in cores])
    compressed, _ = mps.compress([tf.asarray(c) for c in cores], RTOL)
    fidelity = float(mps.inner(compressed, [tf.asarray(c) for c in cores])) ** 2 / (
        float(mps.overlap(compressed)) * float(full)
    )
    print(f"  fidelity |<compressed|original>|^2 / norms = {fidelity:.8f}")
    check(
        "canonical form: every bond's sum of s^2 equals <psi|psi>",
        relative(
            [float(np.sum(np.asarray(s) ** 2)) for s in discarded], [float(full)] * len(discarded)
        ),
        1e-10,
    )

    checkpointed = tf.checkpoint(kept_weight_of)  # the whole sweep: recomputed in backward
    for _ in range(2):
        sweep(checkpointed)
    checkpointed_leaves, checkpointed_loss, saved = sweep(checkpointed)
    check("tf.checkpoint: same loss", relative(float(checkpointed_loss), float(loss)), 1e-14)
    check(
        "tf.checkpoint: same gradients",
        max(
            relative(a.grad, b.grad)
            for a, b in zip(checkpointed_leaves, leaves, strict=True)
            if b.grad is not None
        ),
        1e-12,
    )
    for name in ("held after forward", "peak"):
        print(
            f"  memory {name:<19} {plain[name] / 1e6:6.2f} MB plain, "
            f"{saved[name] / 1e6:6.2f} MB checkpointed (ratio {plain[name] / saved[name]:.1f})"
        )
    print("  (the peak includes the recomputation in backward and the tape's Python objects)")
    return {"ranks": ranks, "spectra": [np.asarray(s) for s in discarded], "memory": (plain, saved)}


# ---------------------------------------------------------------------- 3. degeneracy

RING = 4


def ring_terms() -> tuple[Array, Array]:
    """The periodic Ising ring's terms (one coupling per bond, one field per site) and an
    observable; at uniform couplings translation symmetry makes levels degenerate."""

    def site(op: Array, i: int) -> Array:
        out = np.eye(1)
        for k in range(RING):
            out = np.kron(out, op if k == i else np.eye(2))
        return out

    z, x = mps.PAULI_Z, mps.PAULI_X
    bonds = [-site(z, i) @ site(z, (i + 1) % RING) for i in range(RING)]
    fields = [-site(x, i) for i in range(RING)]
    observable = site(z, 0) @ site(z, 2) + site(x, 1)
    return np.stack(bonds + fields), observable


def projector_loss(h: Any, kept: int, observable: Array, eps: float) -> Any:
    """Tr(P O), P the projector on the ``kept`` lowest levels of ``h``: invariant under any
    rotation among degenerate eigenvectors (a gauge-invariant loss) as long as the level
    ``kept`` does not tie with ``kept + 1``."""
    _, v = tf.linalg.eigh(h, eps=eps)
    low = v[:, :kept]
    return tf.einsum("ik,ij,jk->", low, observable, low)


def projector_loss_numpy(h: Array, kept: int, observable: Array) -> float:
    _, v = np.linalg.eigh(h)
    return float(np.einsum("ik,ij,jk->", v[:, :kept], observable, v[:, :kept]))


def degenerate() -> None:
    terms, observable = ring_terms()
    theta = np.array([1.0] * RING + [0.7] * RING)  # couplings, fields
    levels = np.linalg.eigvalsh(np.einsum("k,kij->ij", theta, terms))
    kept = 5  # the lowest five levels: the fourth and fifth are degenerate
    print(f"  lowest levels: {np.round(levels[:6], 6)}")
    print(
        f"  (levels 4 and 5 tie up to {levels[4] - levels[3]:.0e}; "
        f"gap above level {kept}: {levels[kept] - levels[kept - 1]:.3f})"
    )

    def hamiltonian(t: Any) -> Any:
        return tf.einsum("k,kij->ij", t, terms)

    def loss(t: Any) -> Any:
        # eps broadens the gaps as g / (g^2 + eps^2): far below every true gap, far above
        # the 1e-16 by which LAPACK splits a degenerate level.
        return projector_loss(hamiltonian(t), kept, observable, eps=1e-6)

    def loss_numpy(t: Array) -> float:
        return projector_loss_numpy(np.einsum("k,kij->ij", t, terms), kept, observable)

    reference = np.array([central_difference(loss_numpy, theta, e, 1e-5) for e in np.eye(8)])
    ours = np.asarray(tf.grad(loss)(theta))
    print(f"  d loss / d(couplings, fields): {np.round(ours, 6)}")
    check("eigh, degenerate level: gradient finite", float(not np.all(np.isfinite(ours))), 0.0)
    check("eigh, degenerate level: gradient vs finite differences", relative(ours, reference), 1e-8)
    away = theta + 0.05 * RNG.standard_normal(theta.size)
    check("check_grads(order=2, fwd+rev) of the loss off the tie", _check_grads(loss, away), 0.0)

    exact = np.diag([0.0, 0.0, 1.0, 2.0])  # a tie that is exact in floating point
    probe = np.zeros((4, 4))
    probe[0, 2] = probe[2, 0] = 1.0
    direction = RNG.standard_normal((4, 4))
    direction = direction + direction.T

    def exact_loss(h: Any) -> Any:
        return projector_loss(h, 2, probe, eps=1e-12)

    exact_grad = np.asarray(tf.grad(exact_loss)(exact))
    exact_fd = central_difference(lambda h: projector_loss_numpy(h, 2, probe), exact, direction)
    check(
        "eigh, exact tie diag(0,0,1,2): grad . v vs finite differences",
        relative(np.sum(exact_grad * direction), exact_fd),
        1e-8,
    )
    if importlib.util.find_spec("torch") is None:
        print("  PyTorch is not installed: its gradient is not shown (pip install torch)")
        return
    import torch

    def torch_grad(h: Array, kept: int, observable: Array) -> Array:
        a = torch.tensor(h, requires_grad=True)
        _, v = torch.linalg.eigh(a)
        low = v[:, :kept]
        torch.einsum("ik,ij,jk->", low, torch.tensor(observable), low).backward()
        assert a.grad is not None
        return np.asarray(a.grad.numpy())

    h0 = np.einsum("k,kij->ij", theta, terms)
    theirs = np.einsum("kij,ij->k", terms, torch_grad(h0, kept, observable))
    print(
        f"  torch.linalg.eigh, same loss:  {np.round(theirs, 6)}\n"
        f"    its error vs finite differences: {relative(theirs, reference):.1e}"
    )
    torch_exact = torch_grad(exact, 2, probe)
    print(
        f"  torch at the exact tie: {int(np.isnan(torch_exact).sum())} of {torch_exact.size} "
        f"gradient entries are NaN (ours: {int(np.isnan(exact_grad).sum())})"
    )


def _check_grads(loss: Callable[[Any], Any], theta: Array) -> float:
    """0 when tf.testing.check_grads passes (finite differences, adjoint identity,
    second order in both modes), 1 when it raises."""
    try:
        tf.testing.check_grads(loss, (theta,), order=2, modes=("fwd", "rev"))
    except AssertionError as error:
        print(f"  check_grads: {error}")
        return 1.0
    return 0.0


# ---------------------------------------------------------------------- main


def main() -> int:
    start = time.perf_counter()
    print(f"1. Ground state of the critical Ising chain, L={LENGTH}, open MPS chi={CHI}")
    exact = mps.exact_ground_energy(LENGTH, FIELD)
    print(f"  exact diagonalisation (eigsh, dimension {2**LENGTH}): E0 = {exact:.10f}")
    real = ground_state(exact, complex_=False)
    ground_state(exact, complex_=True)
    ms, size = real["ms_per_gradient"], real["parameters"]
    print(f"  time per gradient (real, {size} parameters): {ms:.1f} ms")
    print(f"\n2. Compression: random MPS, chi={COMPRESS_CHI}, truncated SVD sweep right to left")
    compression()
    print(f"\n3. Degenerate spectrum: Ising ring of {RING} sites, gradient through eigh")
    degenerate()
    seconds = time.perf_counter() - start
    print(f"\n{len(REPORT) - len(FAILED)} of {len(REPORT)} checks passed in {seconds:.1f} s")
    if FAILED:
        print("failed: " + "; ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
