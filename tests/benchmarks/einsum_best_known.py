"""The best known contraction path of every shipped einsum instance, kept in
``einsum_best_known.json`` beside this file (the W5 benchmark compares planners with it).

Run by hand, never by ``make bench``: for each instance it takes the cheapest of the
shipped path, the file's current entry, tenferro's ``auto-hq`` planner given
``--seconds`` per seed (``--seeds`` seeds) and, when cotengra is installed, its
hyper-optimizer (greedy trials with annealing and subtree reconfiguration) for the same
time. Costs are opt_einsum's count (``tenferro.einsum_path``'s ``opt_cost``), recounted
from each stored path; an entry records where its path came from.

    PYTHONPATH=packages/computegraph/src:packages/tidu/src:packages/tenferro/src \\
        python3 tests/benchmarks/einsum_best_known.py --seconds 120 --seeds 3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import have
from bench_einsum import cotengra_path, instances, network_of, shipped

from tenferro.einsum.planners import auto_hq, path_cost
from tenferro.einsum.planners.network import linear_to_ssa, ssa_to_linear

FILE = Path(__file__).with_name("einsum_best_known.json")


def load() -> dict[str, Any]:
    return json.loads(FILE.read_text()) if FILE.exists() else {}


def save(known: dict[str, Any]) -> None:
    """One instance per entry, each path on one line."""
    entries = []
    for name, entry in known.items():
        fields = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in entry.items()]
        entries.append(f"{json.dumps(name)}: {{\n" + ",\n".join(fields) + "\n}")
    FILE.write_text("{\n" + ",\n".join(entries) + "\n}\n")


def cost(instance: dict[str, Any], path: list[list[int]]) -> tuple[int, int]:
    network = network_of(instance)
    flops, largest, _ = path_cost(network, linear_to_ssa(path, len(network.inputs)))
    return flops, largest


def cotengra(instance: dict[str, Any], seconds: float) -> list[list[int]] | None:
    if not have("cotengra"):
        return None
    return [list(step) for step in cotengra_path(network_of(instance), seconds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--only", default="", help="instances whose name has this text")
    parser.add_argument("--no-cotengra", action="store_true")
    arguments = parser.parse_args()
    known = load()
    for instance in instances():
        name = instance["name"]
        network = network_of(instance)
        count = len(network.inputs)
        if arguments.only and arguments.only not in name:
            continue
        candidates: list[tuple[str, list[list[int]]]] = [
            ("shipped opt_flops path", [list(s) for s in shipped(instance)])
        ]
        if name in known:
            candidates.append((known[name]["source"], known[name]["path"]))
        if count > 3:
            for seed in range(arguments.seeds):
                ssa = auto_hq(network, budget=arguments.seconds, seed=seed)
                linear = [list(s) for s in ssa_to_linear(ssa, count)]
                candidates.append(
                    (f"tenferro auto-hq, {arguments.seconds:g} s, seed {seed}", linear)
                )
            if not arguments.no_cotengra:
                found = cotengra(instance, arguments.seconds)
                if found is not None:
                    candidates.append((f"cotengra HyperOptimizer, {arguments.seconds:g} s", found))
        scored = sorted((cost(instance, path), source, path) for source, path in candidates)
        (flops, largest), source, path = scored[0]
        known[name] = {
            "log10_flops": math.log10(max(flops, 1)),
            "log2_size": math.log2(max(largest, 1)),
            "source": source,
            "path": path,
        }
        print(f"{name:45s} {math.log10(max(flops, 1)):.4f}  {source}", flush=True)
        save(known)


if __name__ == "__main__":
    main()
