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
from bench_common import QUICK, Report, have, header, median, timings  # noqa: E402

import tenferro as tf  # noqa: E402
from tenferro.einsum.parse import parse  # noqa: E402
from tenferro.einsum.planners import Network, auto, auto_hq, path_cost  # noqa: E402
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


BEST_KNOWN = Path(__file__).with_name("einsum_best_known.json")
"""The best known path of each instance (see ``einsum_best_known.py``), recounted here."""


def best_known(instance: dict[str, Any], network: Network) -> tuple[float, float, str]:
    """``(log10 flops, log2 largest intermediate, source)`` of the best known path: the
    stored one (its cost recounted) or the shipped one, whichever is cheaper."""
    shipped_flops, shipped_size, _ = path_cost(
        network, linear_to_ssa(shipped(instance), len(network.inputs))
    )
    best = (math.log10(max(shipped_flops, 1)), math.log2(max(shipped_size, 1)), "shipped")
    if BEST_KNOWN.exists():
        entry = json.loads(BEST_KNOWN.read_text()).get(instance["name"])
        if entry is not None:
            path = [tuple(s) for s in entry["path"]]
            flops, size, _ = path_cost(network, linear_to_ssa(path, len(network.inputs)))
            if math.log10(max(flops, 1)) < best[0]:
                best = (math.log10(max(flops, 1)), math.log2(max(size, 1)), entry["source"])
    return best


def _log10(flops: float) -> float:
    return math.log10(max(float(flops), 1.0))


def bench_w5_plans(report: Report) -> list[tuple[dict[str, Any], list[tuple[int, ...]], int]]:
    """Plans of every instance, in opt_einsum's count: the best known path, the shipped
    one, opt_einsum's greedy, ours (``auto``, ``auto-hq``; cold planning times) and
    cotengra's hyper-optimizer given about as long as ``auto-hq`` (when installed)."""
    oe = None
    if have("opt_einsum"):
        import opt_einsum as oe
    seeds = 1 if QUICK else 2
    planned = []
    for instance in instances():
        subscripts = instance["format_string"]
        shapes = [tuple(s) for s in instance["shapes"]]
        network = network_of(instance)
        count = len(shapes)
        known, known_size, source = best_known(instance, network)
        row: dict[str, Any] = {"workload": "W5 plan", "instance": instance["name"], "n": count}
        row["best_known"] = known
        row["best_known_log2_size"] = known_size
        row["shipped"] = _log10(cost_of(network, shipped(instance)))
        if oe is not None:
            greedy_path, _ = oe.contract_path(subscripts, *shapes, shapes=True, optimize="greedy")
            row["oe_greedy"] = _log10(cost_of(network, [tuple(s) for s in greedy_path]))
        else:
            row["greedy"] = _log10(
                tf.einsum_path(subscripts, *shapes, shapes=True, optimize="greedy")[1].opt_cost
            )
        tf.clear_caches()
        start = time.perf_counter()
        path, info = tf.einsum_path(subscripts, *shapes, shapes=True)
        row["auto_s"] = time.perf_counter() - start
        row["auto"] = _log10(info.opt_cost)
        row["auto_log2_size"] = math.log2(max(info.largest_intermediate, 1))
        hq_costs, hq_times = [], []
        for seed in range(seeds):
            tf.clear_caches()
            start = time.perf_counter()
            if count > 3:
                ssa = auto_hq(network, seed=seed)
                hq_times.append(time.perf_counter() - start)
                hq_costs.append(_log10(path_cost(network, ssa)[0]))
            else:
                _, hq = tf.einsum_path(subscripts, *shapes, shapes=True, optimize="auto-hq")
                hq_times.append(time.perf_counter() - start)
                hq_costs.append(_log10(hq.opt_cost))
        row["auto_hq"] = max(hq_costs)  # the worse of the seeds
        row["auto_hq_best"] = min(hq_costs)
        row["auto_hq_s"] = max(hq_times)
        row["hq_minus_best_known"] = max(hq_costs) - known
        if count > 3 and have("cotengra"):
            row["cotengra"] = _cotengra(network, 2.0 if QUICK else max(hq_times))
        row["best_known_source"] = source
        report.add(**row)
        planned.append((instance, path, info.opt_cost))
    return planned


def bench_dp(report: Report, at_least: int = 20) -> None:
    """``optimize="dp"`` (ours: at most 10 s in all, falling back to ``auto-hq``'s path
    with a warning) against opt_einsum's ``dp`` (unbounded: stopped here after
    ``cap`` seconds) on the instances of ``at_least`` operands; their cost (log10
    flops) and cold planning time."""
    import signal
    import warnings

    oe = None
    if have("opt_einsum") and hasattr(signal, "SIGALRM"):
        import opt_einsum as oe
    cap = 5 if QUICK else 30

    class _StoppedError(Exception):
        pass

    def stop(*_: Any) -> None:
        raise _StoppedError

    for instance in instances():
        subscripts = instance["format_string"]
        shapes = [tuple(s) for s in instance["shapes"]]
        if len(shapes) < at_least:
            continue
        row: dict[str, Any] = {"workload": "W5 dp", "instance": instance["name"], "n": len(shapes)}
        tf.clear_caches()
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize="dp")
        row["dp_s"] = time.perf_counter() - start
        row["dp"] = _log10(info.opt_cost)
        row["dp_fell_back"] = bool(said)
        if oe is not None:
            previous = signal.signal(signal.SIGALRM, stop)
            signal.alarm(cap)
            start = time.perf_counter()
            try:
                _, theirs = oe.contract_path(subscripts, *shapes, shapes=True, optimize="dp")
                row["oe_dp_s"] = time.perf_counter() - start
                row["oe_dp"] = _log10(float(theirs.opt_cost))
            except _StoppedError:
                row["oe_dp_s"] = f"> {cap}"
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)
        report.add(**row)


def cotengra_path(network: Network, seconds: float) -> list[tuple[int, ...]]:
    """cotengra's hyper-optimizer (greedy trials, each annealed and reconfigured) for
    ``seconds``: its best path, in opt_einsum's form."""
    import warnings

    import cotengra as ctg

    optimizer = ctg.HyperOptimizer(
        methods=["greedy"],
        max_time=seconds,
        max_repeats=10**6,
        parallel=False,
        progbar=False,
        simulated_annealing_opts={},
        reconf_opts={},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = optimizer.search(
            [tuple(sorted(t)) for t in network.inputs],
            tuple(sorted(network.output)),
            dict(network.sizes),
        )
    return [tuple(step) for step in tree.get_path()]


def _cotengra(network: Network, seconds: float) -> float:
    return _log10(cost_of(network, cotengra_path(network, seconds)))


def bench_w5_cached(report: Report, planned: list[Any], rounds: int = 5) -> None:
    """A cached contraction (plan and program reused) vs opt_einsum.contract_expression,
    both on the same numpy operands, with the same path."""
    if not have("opt_einsum"):
        report.add(workload="W5 cached vs opt_einsum", skipped="opt_einsum not installed")
        return
    import opt_einsum as oe

    for instance, path, cost in planned:
        if cost > 3e8:
            continue
        shapes = [tuple(s) for s in instance["shapes"]]
        rng = np.random.default_rng(0)
        xs = finite_operands(instance["format_string"], shapes, rng, 0.1)
        expression = oe.contract_expression(instance["format_string"], *shapes, optimize=path)

        def ours() -> Any:  # on the same numpy operands (read without a copy)
            return tf.einsum(instance["format_string"], *xs)

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


def finite_operands(
    subscripts: str, shapes: list[tuple[int, ...]], rng: Any, noise: float
) -> list[np.ndarray]:
    """Operands near 1 (``1 + noise * N(0, 1)``), each divided by the square root of the
    extents it sums over, so that every summed label contributes about 1 and the
    contraction of hundreds of operands neither overflows nor underflows (inf or
    denormal arithmetic would time something else)."""
    inputs, _, output = subscripts.partition("->")
    terms = inputs.split(",")
    xs = []
    for term, shape in zip(terms, shapes, strict=True):
        summed = math.prod(n for c, n in zip(term, shape, strict=True) if c not in output)
        xs.append((1.0 + noise * rng.standard_normal(shape)) / math.sqrt(summed))
    return xs


def bench_numpy_operands(report: Report, rounds: int = 7) -> None:
    """Operations on numpy operands (no copy of data the result does not alias): a cached
    200-operand MPS inner product on numpy arrays against the same on ``tf.Tensor``s and
    ``opt_einsum.contract_expression`` (same path), and ``tf.grad`` / ``tf.jit`` of the
    100-matrix chain on numpy arguments against the same on ``tf.Tensor``s."""
    named = {i["name"]: i for i in instances()}
    for name, transform in (
        ("str_mps_varying_inner_product_200", None),
        ("str_matrix_chain_multiplication_100", "grad"),
        ("str_matrix_chain_multiplication_100", "jit"),
    ):
        instance = named.get(name)
        if instance is None:
            continue
        fmt = instance["format_string"]
        shapes = [tuple(s) for s in instance["shapes"]]
        rng = np.random.default_rng(0)
        if transform is None:
            xs = finite_operands(fmt, shapes, rng, 0.01)
        else:  # a chain of products stays finite when each factor is scaled by its size
            xs = [rng.standard_normal(s) / math.sqrt(s[0]) for s in shapes]
        tensors = [tf.asarray(x) for x in xs]
        path = [list(step) for step in tf.einsum_path(fmt, *xs)[0]]
        peers: dict[str, Callable[[], Any]] = {}
        if transform is None:
            peers["numpy operands"] = lambda: tf.einsum(fmt, *xs)
            peers["tf.Tensor operands"] = lambda: tf.einsum(fmt, *tensors)
            if have("opt_einsum"):
                import opt_einsum as oe

                expression = oe.contract_expression(fmt, *shapes, optimize=path)
                peers["opt_einsum"] = lambda: expression(*xs)
        else:

            def loss(*ms: Any) -> Any:
                return tf.sum(tf.einsum(fmt, *ms))

            run = (
                tf.grad(loss, argnums=tuple(range(len(xs))))
                if transform == "grad"
                else tf.jit(loss)
            )
            peers["numpy operands"] = lambda: run(*xs)
            peers["tf.Tensor operands"] = lambda: run(*tensors)
        for f in peers.values():
            f()
        samples: dict[str, list[float]] = {k: [] for k in peers}
        for _ in range(rounds):
            for key, f in peers.items():
                samples[key].append(median(timings(f, 5)))
        base = samples["numpy operands"]
        row: dict[str, Any] = {
            "workload": "numpy operands" + (f" tf.{transform}" if transform else " einsum"),
            "instance": name,
            "ms": median(base) * 1e3,
        }
        for key in peers:
            if key == "numpy operands":
                continue
            ratios = sorted(a / b for a, b in zip(base, samples[key], strict=True))
            row[f"vs {key}"] = median(ratios)
            row[f"{key} ms"] = median(samples[key]) * 1e3
        report.add(**row)


def bench_plan_reuse(report: Report, sites: int = 16) -> None:
    """Planning an MPS overlap (one einsum over both states) during a sweep whose bond
    dimension changes: the first bond dimension plans cold, a new one starts from the
    paths of the others (a warm polish), a repeated one is a cached plan."""
    bra = [(f"a{k}", f"s{k}", f"a{k + 1}") for k in range(sites)]
    ket = [(f"b{k}", f"s{k}", f"b{k + 1}") for k in range(sites)]
    labels = sorted({c for term in bra + ket for c in term})
    letter = {c: chr(0x3B1 + k) for k, c in enumerate(labels)}
    terms = ["".join(letter[c] for c in t) for t in bra + ket]
    subscripts = ",".join(terms) + "->"
    tf.clear_caches()
    for chi in (16, 24, 32, 24, 48, 16):
        shapes = []
        for _ in range(2):
            for k in range(sites):
                shapes.append((1 if k == 0 else chi, 2, 1 if k == sites - 1 else chi))
        start = time.perf_counter()
        _, info = tf.einsum_path(subscripts, *shapes, shapes=True)
        seconds = time.perf_counter() - start
        network = Network(
            tuple(frozenset(t) for t in terms),
            frozenset(),
            {
                c: n
                for t, shape in zip(terms, shapes, strict=True)
                for c, n in zip(t, shape, strict=True)
            },
        )
        start = time.perf_counter()
        cold = path_cost(network, auto(network))[0]  # the same plan without known paths
        report.add(
            workload="W5 plan reuse (MPS overlap sweep)",
            operands=len(shapes),
            chi=chi,
            plan_ms=seconds * 1e3,
            log10_flops=_log10(info.opt_cost),
            cold_plan_ms=(time.perf_counter() - start) * 1e3,
            cold_log10_flops=_log10(cold),
        )


def bench_sliced(report: Report, side: int = 4, bond: int = 6) -> None:
    """A closed ``side x side`` grid network whose best path's largest intermediate is
    over a memory limit: contracted unsliced and with ``memory_limit`` (sliced), value,
    time and peak memory (tracemalloc) of each; its gradient too."""
    import tracemalloc

    letters = iter(chr(0x100 + k) for k in range(10 * side * side))
    right = [[next(letters) for _ in range(side)] for _ in range(side)]
    down = [[next(letters) for _ in range(side)] for _ in range(side)]
    terms = []
    for i in range(side):
        for j in range(side):
            terms.append(
                right[i][j] + right[i][(j - 1) % side] + down[i][j] + down[(i - 1) % side][j]
            )
    subscripts = ",".join(terms) + "->"
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((bond,) * 4) / bond for _ in terms]
    _, free = tf.einsum_path(subscripts, *[x.shape for x in xs], shapes=True)
    limit = max(free.largest_intermediate // 8, 1)
    _, info = tf.einsum_path(subscripts, *[x.shape for x in xs], shapes=True, memory_limit=limit)

    def measured(memory_limit: Any) -> tuple[float, float, float]:
        tf.einsum(subscripts, *xs, memory_limit=memory_limit)  # plan and lower first
        tracemalloc.start()
        start = time.perf_counter()
        value = float(np.asarray(tf.einsum(subscripts, *xs, memory_limit=memory_limit)))
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return value, seconds, peak / 8  # float64 elements

    value_free, seconds_free, peak_free = measured(None)
    value_sliced, seconds_sliced, peak_sliced = measured(limit)
    report.add(
        workload="W5 sliced contraction",
        network=f"{side}x{side} periodic grid, bond {bond}",
        memory_limit=limit,
        largest_unsliced=free.largest_intermediate,
        sliced=",".join(info.sliced) or "-",
        slices=info.slices,
        sliced_largest=info.sliced_largest_intermediate,
        peak_elements_unsliced=peak_free,
        peak_elements_sliced=peak_sliced,
        seconds_unsliced=seconds_free,
        seconds_sliced=seconds_sliced,
        flops_ratio=info.sliced_cost / max(info.opt_cost, 1),
        relative_difference=abs(value_sliced - value_free) / max(abs(value_free), 1e-300),
    )
    grad = tf.grad(lambda *a: tf.einsum(subscripts, *a, memory_limit=limit), argnums=0)
    tracemalloc.start()
    start = time.perf_counter()
    grad(*xs)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    report.add(
        workload="W5 sliced contraction gradient",
        memory_limit=limit,
        peak_elements=peak / 8,
        seconds=seconds,
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
    header("einsum W5: optimize='dp' vs opt_einsum's dp (cost, cold planning time)")
    bench_dp(report)
    header("einsum W5: planning during a bond-dimension sweep (plan reuse)")
    bench_plan_reuse(report)
    header("einsum W5: a sliced contraction under a memory limit (peak memory)")
    bench_sliced(report)
    header("einsum W5: cached contraction vs opt_einsum.contract_expression (same path)")
    bench_w5_cached(report, planned)
    header("einsum: numpy operands (no copies) vs tf.Tensor operands and opt_einsum")
    bench_numpy_operands(report)
    header("einsum: small-size eager overhead vs torch.einsum")
    bench_small(report)
    header("einsum W1: MPS norm gradient, L=32")
    bench_w1(report)
    header("einsum W7: complex MPS energy gradient, values vs torch")
    bench_w7(report)
    print(f"   saved {report.save()}")
