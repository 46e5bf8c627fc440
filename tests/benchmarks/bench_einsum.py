"""Einsum benchmarks (W5, W1): plan quality and planning time on every shipped instance,
cached contraction against ``opt_einsum.contract_expression``, small-size overhead
against ``torch.einsum`` and the MPS-norm gradient (W1). Peers run only when installed;
peers and tenferro run interleaved, round by round, and ratios are medians.
Benchmarks report, never assert."""

# ruff: noqa: B023 (closures run within the loop iteration that defines them)

from __future__ import annotations

import ast
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one thread each (a shared machine oversubscribes)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import Report, header, median, timings  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.einsum.parse import parse  # noqa: E402
from tenferro.einsum.planners import Network, path_cost  # noqa: E402
from tenferro.einsum.planners.network import linear_to_ssa  # noqa: E402

ROOT = Path(__file__).resolve()
FOLDER = next(
    (
        p / "shared" / "bench-instances"
        for p in ROOT.parents
        if (p / "shared" / "bench-instances").is_dir()
    ),
    Path("/work/shared/bench-instances"),
)


def have(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def instances() -> list[dict[str, Any]]:
    found = []
    for path in sorted(FOLDER.glob("*.json")):
        content = json.loads(path.read_text())
        if "format_string" in content:
            found.append(content)
    return found


def shipped(instance: dict[str, Any]) -> list[tuple[int, ...]]:
    entry = instance["paths"]["opt_flops"]
    if isinstance(entry, str):
        entry = ast.literal_eval(entry)
    return [tuple(s) for s in entry["path"]]


def network_of(instance: dict[str, Any]) -> Network:
    eq = parse(instance["format_string"], instance["shapes"])
    return Network(tuple(frozenset(t) for t in eq.inputs), frozenset(eq.output), eq.sizes)


def cost_of(network: Network, linear: list[tuple[int, ...]]) -> int:
    return path_cost(network, linear_to_ssa(linear, len(network.inputs)))[0]


def bench_w5_plans(report: Report) -> list[tuple[dict[str, Any], list[tuple[int, int]], int]]:
    """Path cost (opt_einsum's count) of our auto plan vs opt_einsum greedy vs shipped."""
    oe = None
    if have("opt_einsum"):
        import opt_einsum as oe
    planned = []
    for instance in instances():
        shapes = [tuple(s) for s in instance["shapes"]]
        network = network_of(instance)
        tf.clear_caches()
        start = time.perf_counter()
        path, info = tf.einsum_path(instance["format_string"], *shapes, shapes=True)
        seconds = time.perf_counter() - start
        row: dict[str, Any] = {
            "workload": "W5 plan cost",
            "instance": instance["name"],
            "n": len(shapes),
            "ours_log10": math.log10(max(info.opt_cost, 1)),
        }
        shipped_cost = cost_of(network, shipped(instance))
        if oe is not None:
            greedy_path, _ = oe.contract_path(
                instance["format_string"], *shapes, shapes=True, optimize="greedy"
            )
            greedy_cost = cost_of(network, [tuple(s) for s in greedy_path])
            row["oe_greedy_log10"] = math.log10(max(greedy_cost, 1))
            row["oe_counts_our_path_equal"] = (
                int(
                    oe.contract_path(
                        instance["format_string"], *shapes, shapes=True, optimize=path
                    )[1].opt_cost
                )
                == info.opt_cost
            )
        row["shipped_log10"] = math.log10(max(shipped_cost, 1))
        row["ours_minus_shipped"] = row["ours_log10"] - row["shipped_log10"]
        row["plan_seconds_cold"] = seconds
        report.add(**row)
        planned.append((instance, path, info.opt_cost))
    return planned


def bench_w5_cached(report: Report, planned: list[Any], rounds: int = 5) -> None:
    """A cached contraction (plan and program reused) vs opt_einsum.contract_expression
    on numpy with the same path."""
    if not have("opt_einsum"):
        report.add(workload="W5 cached vs opt_einsum", skipped="opt_einsum not installed")
        return
    import opt_einsum as oe

    for instance, path, cost in planned:
        if cost > 3e8:
            continue
        shapes = [tuple(s) for s in instance["shapes"]]
        rng = np.random.default_rng(0)
        xs = [1.0 + 0.1 * rng.standard_normal(s) for s in shapes]
        tensors = [tf.asarray(x) for x in xs]
        expression = oe.contract_expression(instance["format_string"], *shapes, optimize=path)

        def ours() -> Any:
            return tf.einsum(instance["format_string"], *tensors)

        def ours_numpy_inputs() -> Any:  # what users pass: numpy arrays, converted per call
            return tf.einsum(instance["format_string"], *xs)

        def theirs() -> Any:
            return expression(*xs)

        np.testing.assert_allclose(np.asarray(ours()), theirs(), rtol=1e-8)
        np.testing.assert_allclose(np.asarray(ours_numpy_inputs()), theirs(), rtol=1e-8)
        repeat = 3 if cost > 3e8 else 7
        mine, arrays, peer = [], [], []
        for _ in range(rounds):
            mine.append(median(timings(ours, repeat)))
            arrays.append(median(timings(ours_numpy_inputs, repeat)))
            peer.append(median(timings(theirs, repeat)))
        ratios = sorted(a / b for a, b in zip(mine, peer, strict=True))
        array_ratios = sorted(a / b for a, b in zip(arrays, peer, strict=True))
        report.add(
            workload="W5 cached contraction",
            instance=instance["name"],
            ms=median(mine) * 1e3,
            numpy_inputs_ms=median(arrays) * 1e3,
            opt_einsum_ms=median(peer) * 1e3,
            ratio=median(ratios),
            ratio_range=f"{ratios[0]:.2f}..{ratios[-1]:.2f}",
            ratio_numpy_inputs=median(array_ratios),
        )


def bench_small(report: Report, rounds: int = 7) -> None:
    """``ij,jk->ik`` on 2x2 and 8x8, eager with a tape (forward + backward), vs torch."""
    torch = None
    if have("torch"):
        import torch

        torch.set_num_threads(1)
    for n in (2, 8):
        a, b = np.random.default_rng(0).standard_normal((2, n, n))

        def ours_forward() -> Any:
            return tf.einsum("ij,jk->ik", tf.EagerTensor(a, requires_grad=True), b)

        def ours() -> Any:
            x = tf.EagerTensor(a, requires_grad=True)
            tf.sum(tf.einsum("ij,jk->ik", x, b)).backward()
            return x.grad

        peers: dict[str, Callable[[], Any]] = {}
        if torch is not None:
            tb = torch.tensor(b)

            def torch_forward() -> Any:
                return torch.einsum("ij,jk->ik", torch.tensor(a, requires_grad=True), tb)

            def torch_both() -> Any:
                x = torch.tensor(a, requires_grad=True)
                torch.einsum("ij,jk->ik", x, tb).sum().backward()
                return x.grad

            peers = {"forward": torch_forward, "forward+backward": torch_both}
        for label, run in (("forward", ours_forward), ("forward+backward", ours)):
            mine, peer = [], []
            for _ in range(rounds):
                mine.append(median(timings(run, 200)))
                if label in peers:
                    peer.append(median(timings(peers[label], 200)))
            row: dict[str, Any] = {
                "workload": f"small einsum eager {label}",
                "n": n,
                "us": median(mine) * 1e6,
            }
            if peer:
                ratios = sorted(x / y for x, y in zip(mine, peer, strict=True))
                row["torch_us"] = median(peer) * 1e6
                row["ratio_vs_torch"] = median(ratios)
            report.add(**row)


def mps(length: int, chi: int, dtype: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    tensors = []
    for site in range(length):
        left = 1 if site == 0 else chi
        right = 1 if site == length - 1 else chi
        shape = (left, 2, right)
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        tensors.append((x / math.sqrt(2 * chi)).astype(dtype))
    return tensors


def mps_norm(m: Any, conj: Callable[[Any], Any], real: Callable[[Any], Any], *ts: Any) -> Any:
    env = m.einsum("asb,asc->bc", ts[0], conj(ts[0]))
    for t in ts[1:]:
        env = m.einsum("bc,bsd,cse->de", env, t, conj(t))
    return real(m.sum(env))


def mps_norm_pairs(
    tensordot: Callable[..., Any],
    conj: Callable[[Any], Any],
    real: Callable[[Any], Any],
    total: Callable[[Any], Any],
    *ts: Any,
) -> Any:
    """``mps_norm`` as ``tensordot`` pairs: a peer's fastest form of the same network
    (``torch.einsum`` runs each 3-operand step 2.5-3x slower than its two products)."""
    env = tensordot(ts[0], conj(ts[0]), ([0, 1], [0, 1]))  # (b, c)
    for t in ts[1:]:
        half = tensordot(env, t, ([0], [0]))  # (c, s, d)
        env = tensordot(half, conj(t), ([0, 1], [0, 1]))  # (d, e)
    return real(total(env))


def torch_tensordot(torch: Any) -> Callable[..., Any]:
    return lambda a, b, axes: torch.tensordot(a, b, dims=axes)


def bench_w1(report: Report, length: int = 32, rounds: int = 5) -> None:
    """W1: gradient of an MPS norm, eager (tape) and traced (tf.grad), vs torch eager."""
    torch = None
    if have("torch"):
        import torch

        torch.set_num_threads(1)
    for dtype in (np.float64, np.complex128):
        for chi in (4, 16, 64):
            ts = mps(length, chi, dtype)
            argnums = tuple(range(length))

            def ours_eager() -> Any:
                tape = tf.Tape()
                leaves = [tape.track(t) for t in ts]
                return tape.grad(mps_norm(tf, tf.conj, tf.real, *leaves), leaves)

            traced_grad = tf.grad(lambda *xs: mps_norm(tf, tf.conj, tf.real, *xs), argnums=argnums)

            def ours_traced() -> Any:
                return traced_grad(*ts)

            peer_run = pairs_run = None
            if torch is not None:

                def peer_run() -> Any:
                    leaves = [torch.tensor(t, requires_grad=True) for t in ts]
                    mps_norm(torch, torch.conj, torch.real, *leaves).backward()
                    return [x.grad for x in leaves]

                def pairs_run() -> Any:  # torch's fastest form: tensordot pairs
                    leaves = [torch.tensor(t, requires_grad=True) for t in ts]
                    dot = torch_tensordot(torch)
                    mps_norm_pairs(dot, torch.conj, torch.real, torch.sum, *leaves).backward()
                    return [x.grad for x in leaves]

                expected = peer_run()
                np.testing.assert_allclose(
                    np.asarray(ours_eager()[3]), expected[3].numpy(), rtol=1e-8, atol=1e-12
                )
                np.testing.assert_allclose(
                    pairs_run()[3].numpy(), expected[3].numpy(), rtol=1e-8, atol=1e-12
                )
            ours_traced()  # compile once
            eager, traced, peer, pairs = [], [], [], []
            repeat = 3 if chi == 64 else 7
            for _ in range(rounds):
                eager.append(median(timings(ours_eager, repeat)))
                traced.append(median(timings(ours_traced, repeat)))
                if peer_run is not None and pairs_run is not None:
                    peer.append(median(timings(peer_run, repeat)))
                    pairs.append(median(timings(pairs_run, repeat)))
            row: dict[str, Any] = {
                "workload": "W1 MPS norm grad",
                "dtype": np.dtype(dtype).name,
                "chi": chi,
                "eager_ms": median(eager) * 1e3,
                "traced_ms": median(traced) * 1e3,
            }
            if peer:
                best = [min(a, b) for a, b in zip(peer, pairs, strict=True)]
                row["torch_einsum_ms"] = median(peer) * 1e3
                row["torch_tensordot_ms"] = median(pairs) * 1e3
                row["eager_over_torch_einsum"] = median(
                    sorted(a / b for a, b in zip(eager, peer, strict=True))
                )
                row["traced_over_torch_einsum"] = median(
                    sorted(a / b for a, b in zip(traced, peer, strict=True))
                )
                row["eager_over_torch_best"] = median(
                    sorted(a / b for a, b in zip(eager, best, strict=True))
                )
                row["traced_over_torch_best"] = median(
                    sorted(a / b for a, b in zip(traced, best, strict=True))
                )
            report.add(**row)


def mps_energy(
    m: Any, conj: Callable[[Any], Any], real: Callable[[Any], Any], z: Any, *ts: Any
) -> Any:
    """Re<psi|H|psi> / <psi|psi> for H = sum_i Z_i, by transfer environments."""
    norm_env = m.einsum("asb,asc->bc", ts[0], conj(ts[0]))
    energy_env = m.einsum("asb,st,atc->bc", ts[0], z, conj(ts[0]))
    for t in ts[1:]:
        energy_env = m.einsum("bc,bsd,cse->de", energy_env, t, conj(t)) + m.einsum(
            "bc,bsd,st,cte->de", norm_env, t, z, conj(t)
        )
        norm_env = m.einsum("bc,bsd,cse->de", norm_env, t, conj(t))
    return real(m.sum(energy_env)) / real(m.sum(norm_env))


def mps_energy_pairs(
    tensordot: Callable[..., Any],
    conj: Callable[[Any], Any],
    real: Callable[[Any], Any],
    total: Callable[[Any], Any],
    z: Any,
    *ts: Any,
) -> Any:
    """``mps_energy`` as ``tensordot`` pairs (a peer's fastest form of the network)."""

    def step(env: Any, t: Any) -> Any:  # "bc,bsd,cse->de"
        return tensordot(tensordot(env, t, ([0], [0])), conj(t), ([0, 1], [0, 1]))

    norm_env = tensordot(ts[0], conj(ts[0]), ([0, 1], [0, 1]))
    energy_env = tensordot(tensordot(ts[0], z, ([1], [0])), conj(ts[0]), ([0, 2], [0, 1]))
    for t in ts[1:]:
        with_z = tensordot(tensordot(norm_env, t, ([0], [0])), z, ([1], [0]))  # (c, d, t)
        energy_env = step(energy_env, t) + tensordot(with_z, conj(t), ([0, 2], [0, 1]))
        norm_env = step(norm_env, t)
    return real(total(energy_env)) / real(total(norm_env))


def bench_w7(report: Report, length: int = 12, chi: int = 8, rounds: int = 5) -> None:
    """W7: gradient of a complex MPS energy; values and gradients compared with torch's
    (tenferro's complex convention is PyTorch's)."""
    ts = mps(length, chi, np.complex128, seed=3)
    z = np.diag([1.0, -1.0]).astype(np.complex128)
    argnums = tuple(range(length))
    value_and_grad = tf.value_and_grad(
        lambda *xs: mps_energy(tf, tf.conj, tf.real, z, *xs), argnums=argnums
    )

    def ours() -> Any:
        return value_and_grad(*ts)

    value, grads = ours()
    row: dict[str, Any] = {"workload": "W7 complex MPS energy grad", "L": length, "chi": chi}
    if have("torch"):
        import torch

        def theirs() -> Any:
            leaves = [torch.tensor(t, requires_grad=True) for t in ts]
            energy = mps_energy(torch, torch.conj, torch.real, torch.tensor(z), *leaves)
            energy.backward()
            return energy, [x.grad for x in leaves]

        def theirs_pairs() -> Any:  # torch's fastest form: tensordot pairs
            leaves = [torch.tensor(t, requires_grad=True) for t in ts]
            dot = torch_tensordot(torch)
            energy = mps_energy_pairs(
                dot, torch.conj, torch.real, torch.sum, torch.tensor(z), *leaves
            )
            energy.backward()
            return energy, [x.grad for x in leaves]

        energy, torch_grads = theirs()
        pair_energy, pair_grads = theirs_pairs()
        row["value_minus_torch"] = abs(float(np.asarray(value)) - float(energy.detach()))
        row["max_grad_minus_torch"] = max(
            float(np.max(np.abs(np.asarray(g) - t.numpy())))
            for g, t in zip(grads, torch_grads, strict=True)
        )
        assert abs(float(pair_energy.detach()) - float(energy.detach())) < 1e-10
        row["max_grad_minus_torch_tensordot"] = max(
            float(np.max(np.abs(np.asarray(g) - t.numpy())))
            for g, t in zip(grads, pair_grads, strict=True)
        )
        mine, peer, pairs = [], [], []
        for _ in range(rounds):
            mine.append(median(timings(ours, 5)))
            peer.append(median(timings(theirs, 5)))
            pairs.append(median(timings(theirs_pairs, 5)))
        best = [min(a, b) for a, b in zip(peer, pairs, strict=True)]
        row["traced_ms"] = median(mine) * 1e3
        row["torch_einsum_ms"] = median(peer) * 1e3
        row["torch_tensordot_ms"] = median(pairs) * 1e3
        row["ratio_vs_torch_einsum"] = median(
            sorted(a / b for a, b in zip(mine, peer, strict=True))
        )
        row["ratio_vs_torch_best"] = median(sorted(a / b for a, b in zip(mine, best, strict=True)))
    else:
        row["traced_ms"] = median(timings(ours, 5)) * 1e3
    report.add(**row)


if __name__ == "__main__":
    header("einsum W5: plan cost (log10 flops, opt_einsum's count) and cold planning time")
    report = Report("einsum")
    planned = bench_w5_plans(report)
    header("einsum W5: cached contraction vs opt_einsum.contract_expression (same path)")
    bench_w5_cached(report, planned)
    header("einsum: small-size eager overhead vs torch.einsum")
    bench_small(report)
    header("einsum W1: MPS norm gradient, L=32")
    bench_w1(report)
    header("einsum W7: complex MPS energy gradient, values vs torch")
    bench_w7(report)
    print(f"   saved {report.save()}")
