"""``PathInfo``: what :func:`tenferro.einsum_path` reports about a plan (opt_einsum's
``PathInfo`` fields, costs counted as opt_einsum counts them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tenferro.einsum.parse import Equation
from tenferro.einsum.planners.network import Network, Pair, pair_flops, ssa_to_linear

__all__ = ["PathInfo", "describe"]


@dataclass(frozen=True)
class Step:
    """One pairwise contraction: operand positions (shrinking list), its equation, kind,
    flops, and the remaining terms after it."""

    positions: Pair
    equation: str
    kind: str
    flops: int
    scaling: int
    remaining: tuple[str, ...]


@dataclass(frozen=True)
class PathInfo:
    """The plan of an einsum: ``path`` (opt_einsum's pair list), ``steps``, ``opt_cost``
    (flops of the path), ``naive_cost`` (one multi-operand loop nest), ``speedup``,
    ``largest_intermediate`` (elements), ``scale_list`` and ``size_list``."""

    equation: str
    path: list[Pair]
    steps: tuple[Step, ...]
    naive_cost: int
    opt_cost: int
    largest_intermediate: int
    size_dict: dict[str, int]

    @property
    def speedup(self) -> float:
        return self.naive_cost / max(self.opt_cost, 1)

    @property
    def scale_list(self) -> list[int]:
        return [s.scaling for s in self.steps]

    @property
    def size_list(self) -> list[int]:
        return [math.prod(self.size_dict[c] for c in s.equation.split("->")[1]) for s in self.steps]

    @property
    def naive_scaling(self) -> int:
        return len(self.size_dict)

    def __str__(self) -> str:
        header = [
            f"  Complete contraction:  {self.equation}",
            f"         Naive scaling:  {self.naive_scaling}",
            f"     Optimized scaling:  {max(self.scale_list, default=0)}",
            f"      Naive FLOP count:  {self.naive_cost:.3e}",
            f"  Optimized FLOP count:  {self.opt_cost:.3e}",
            f"   Theoretical speedup:  {self.speedup:.3e}",
            f"  Largest intermediate:  {self.largest_intermediate:.3e} elements",
        ]
        rule = "-" * 80
        table = [
            rule,
            f"{'step':>4}  {'pair':>9}  {'scaling':>7}  {'kind':<9}  {'flops':>9}  "
            f"{'current':<20}  remaining",
            rule,
        ]
        for number, step in enumerate(self.steps):
            remaining = ",".join(step.remaining)
            if len(remaining) > 30:
                remaining = remaining[:27] + "..."
            table.append(
                f"{number:>4}  {step.positions!s:>9}  {step.scaling:>7}  {step.kind:<9}  "
                f"{step.flops:>9.2e}  {step.equation:<20}  {remaining}"
            )
        return "\n".join(header + table)


def _kind(left: frozenset[str], right: frozenset[str], kept: frozenset[str]) -> str:
    shared = left & right
    if not shared:
        return "outer"
    if left == right and shared <= kept:
        return "hadamard"
    if shared <= kept:
        return "batched"
    return "dot"


def describe(equation: Equation, network: Network, ssa: Sequence[Pair]) -> PathInfo:
    """The :class:`PathInfo` of contracting ``equation`` along ``ssa``."""
    count = len(network.inputs)
    linear = ssa_to_linear(ssa, count)
    terms: list[str] = ["".join(dict.fromkeys(t)) for t in equation.inputs]
    sets: list[frozenset[str]] = list(network.inputs)
    current_terms = list(terms)
    counts: dict[str, int] = {}
    for term in sets:
        for index in term:
            counts[index] = counts.get(index, 0) + 1
    output = network.output
    steps: list[Step] = []
    total, largest = 0, 0
    for (a, b), positions in zip(ssa, linear, strict=True):
        left, right = sets[a], sets[b]
        for index in left | right:
            counts[index] -= (index in left) + (index in right)
        kept = frozenset(i for i in left | right if i in output or counts[i] > 0)
        for index in kept:
            counts[index] += 1
        appearance = [c for c in equation.output + terms[a] + terms[b] if c in kept]
        order = "".join(dict.fromkeys(appearance))
        flops = pair_flops(network, left, right, kept)
        total += flops
        largest = max(largest, network.size(kept))
        sets.append(kept)
        terms.append(order)
        for position in sorted(positions, reverse=True):
            del current_terms[position]
        current_terms.append(order)
        steps.append(
            Step(
                positions,
                f"{terms[a]},{terms[b]}->{order}",
                _kind(left, right, kept),
                flops,
                len(left | right),
                tuple(current_terms),
            )
        )
    everything = frozenset().union(*network.inputs) if network.inputs else frozenset()
    inner = sum(len(t) for t in network.inputs) > len(everything)
    naive = network.size(everything) * (max(1, count - 1) + (1 if inner else 0))
    return PathInfo(
        equation.subscripts,
        linear,
        tuple(steps),
        naive,
        total,
        largest,
        dict(network.sizes),
    )
