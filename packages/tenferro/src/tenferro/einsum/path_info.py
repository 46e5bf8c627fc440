"""``PathInfo``: what :func:`tenferro.einsum_path` reports about a plan -- opt_einsum's
``PathInfo``, field for field and in its printed form, plus how the contraction is
sliced when a memory limit asks for it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from tenferro.einsum.parse import Equation
from tenferro.einsum.planners.network import Network, Step, binarize, ssa_to_linear, step_flops
from tenferro.einsum.planners.slicing import sliced_costs

__all__ = ["PathInfo", "describe"]

Contraction = tuple[tuple[int, ...], frozenset[str], str, "tuple[str, ...] | None", "str | bool"]
"""One step as opt_einsum lists it: positions (descending), labels summed, its einsum,
the terms remaining after it (``None`` past 20 terms), the BLAS kind it suits."""


@dataclass(frozen=True, eq=False)
class PathInfo:
    """The plan of an einsum (opt_einsum's ``PathInfo``).

    ``path`` (opt_einsum's shrinking-list form), ``contraction_list`` (one tuple per
    step: positions, labels summed, its einsum, the terms remaining, its BLAS kind),
    ``input_subscripts``, ``output_subscript``, ``eq``, ``indices``, ``shapes``,
    ``size_dict``, ``opt_cost`` (the path's flops, counted as opt_einsum counts them),
    ``naive_cost`` (one loop nest over every label), ``speedup``, ``scale_list`` and
    ``size_list`` (per step: labels involved, result size), ``largest_intermediate``
    (elements). With a memory limit the contraction may be *sliced*: ``sliced`` names
    the labels fixed per slice, ``slices`` their number, ``sliced_cost`` the flops of
    all slices and ``sliced_largest_intermediate`` the largest intermediate of one.
    """

    contraction_list: list[Contraction]
    input_subscripts: str
    output_subscript: str
    indices: frozenset[str]
    path: list[Step]
    scale_list: list[int]
    naive_cost: int
    opt_cost: int
    size_list: list[int]
    size_dict: dict[str, int]
    sliced: tuple[str, ...] = ()
    sliced_cost: int = 0
    sliced_largest_intermediate: int = 0
    _network: Network | None = field(default=None, repr=False)

    @property
    def speedup(self) -> float:
        return self.naive_cost / max(self.opt_cost, 1)

    @property
    def largest_intermediate(self) -> int:
        return max(self.size_list, default=1)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [tuple(self.size_dict[k] for k in ks) for ks in self.input_subscripts.split(",")]

    @property
    def eq(self) -> str:
        return f"{self.input_subscripts}->{self.output_subscript}"

    @property
    def slices(self) -> int:
        return math.prod(self.size_dict[label] for label in self.sliced)

    def __repr__(self) -> str:
        lines = [
            f"  Complete contraction:  {self.eq}\n",
            f"         Naive scaling:  {len(self.indices)}\n",
            f"     Optimized scaling:  {max(self.scale_list, default=0)}\n",
            f"      Naive FLOP count:  {_sci(self.naive_cost)}\n",
            f"  Optimized FLOP count:  {_sci(self.opt_cost)}\n",
            f"   Theoretical speedup:  {_sci(self.naive_cost / max(self.opt_cost, 1))}\n",
            f"  Largest intermediate:  {_sci(self.largest_intermediate)} elements\n",
        ]
        if self.sliced:
            lines.append(
                f"                Sliced:  {','.join(self.sliced)} ({self.slices} slices, "
                f"{_sci(self.sliced_cost)} flops, largest intermediate "
                f"{_sci(self.sliced_largest_intermediate)} elements)\n"
            )
        lines += [
            "-" * 80 + "\n",
            "{:>6} {:>11} {:>22} {:>37}\n".format("scaling", "BLAS", "current", "remaining"),
            "-" * 80,
        ]
        for number, (_, _, einsum_str, remaining, blas) in enumerate(self.contraction_list):
            if remaining is not None:
                remaining_str = ",".join(remaining) + "->" + self.output_subscript
            else:
                remaining_str = "..."
            width = max(0, 56 - max(22, len(einsum_str)))
            lines.append(
                "\n{:>4} {:>14} {:>22}    {:>{}}".format(
                    self.scale_list[number], blas, einsum_str, remaining_str, width
                )
            )
        return "".join(lines)

    __str__ = __repr__


def _sci(value: float) -> str:
    """``value`` as opt_einsum prints its ``Decimal`` costs (``{:.3e}``)."""
    return f"{Decimal(value):.3e}"


def describe(
    equation: Equation,
    network: Network,
    ssa: Sequence[Sequence[int]],
    sliced: tuple[str, ...] = (),
    operand_shapes: Sequence[Sequence[int]] | None = None,
) -> PathInfo:
    """The :class:`PathInfo` of contracting ``equation`` along ``ssa`` (as
    ``opt_einsum.contract_path`` reports it for that path; ``operand_shapes``, whose
    extents of 1 may broadcast, decide where BLAS applies)."""
    count = len(network.inputs)
    linear = ssa_to_linear(ssa, count)
    input_list = list(equation.inputs)
    if operand_shapes is None:
        operand_shapes = [[network.sizes[c] for c in t] for t in input_list]
    shapes = [tuple(int(n) for n in shape) for shape in operand_shapes]
    sets: list[frozenset[str]] = list(network.inputs)
    output = network.output
    contractions: list[Contraction] = []
    scale_list: list[int] = []
    size_list: list[int] = []
    costs: list[int] = []
    for number, positions in enumerate(linear):
        chosen = sorted(positions, reverse=True)
        involved = frozenset().union(*(sets[p] for p in chosen))
        others = [s for k, s in enumerate(sets) if k not in chosen]
        kept = involved & output.union(*others) if others else involved & output
        removed = involved - kept
        costs.append(step_flops(network, involved, kept, len(chosen)))
        scale_list.append(len(involved))
        size_list.append(network.size(kept))
        terms = [input_list.pop(p) for p in chosen]
        term_shapes = [shapes.pop(p) for p in chosen]
        blas = _can_blas(terms, "".join(kept), removed, term_shapes)
        if number == len(linear) - 1:
            result = equation.output
        else:
            joined = "".join(terms)
            result = "".join(sorted(kept, key=joined.find))
        input_list.append(result)
        shapes.append(_result_shape(terms, term_shapes, result))
        sets = [*others, kept]
        remaining = tuple(input_list) if len(input_list) <= 20 else None
        contractions.append(
            (tuple(chosen), removed, ",".join(terms) + "->" + result, remaining, blas)
        )
    indices = frozenset().union(*network.inputs) if network.inputs else frozenset()
    inner = sum(len(t) for t in network.inputs) - len(indices) > 0
    naive = network.size(indices) * (max(1, count - 1) + (1 if inner else 0))
    sliced_cost, sliced_largest = 0, 0
    if sliced:
        pairs = binarize(ssa, count)
        sliced_cost, sliced_largest = sliced_costs(network, pairs, frozenset(sliced))
    return PathInfo(
        contractions,
        ",".join(equation.inputs),
        equation.output,
        indices,
        linear,
        scale_list,
        naive,
        sum(costs),
        size_list,
        dict(network.sizes),
        sliced,
        sliced_cost,
        sliced_largest,
        network,
    )


def _result_shape(terms: list[str], shapes: list[tuple[int, ...]], result: str) -> tuple[int, ...]:
    """Each result label's largest extent among the terms (opt_einsum's
    ``find_output_shape``: extents of 1 broadcast)."""
    return tuple(
        max(shape[term.find(c)] for term, shape in zip(terms, shapes, strict=True) if c in term)
        for c in result
    )


def _can_blas(
    inputs: list[str], result: str, removed: frozenset[str], shapes: list[tuple[int, ...]]
) -> str | bool:
    """The BLAS kind opt_einsum reports for a step (its ``blas.can_blas``)."""
    if len(inputs) != 2:
        return False
    left, right = inputs
    for c in set(left + right):
        nl, nr = left.count(c), right.count(c)
        if nl > 1 or nr > 1 or nl + nr > 2:
            return False
        if nl + nr - 1 == int(c in result):
            return False
    for c in removed:
        if shapes[0][left.find(c)] != shapes[1][right.find(c)]:
            return False
    if not removed:
        return "OUTER/EINSUM"
    sets = [set(left), set(right)]
    keep_left, keep_right = sets[0] - removed, sets[1] - removed
    rs = len(removed)
    if left == right:
        return "DOT"
    if sets[0] == sets[1]:
        return "DOT/EINSUM"
    if (
        left[-rs:] == right[:rs]
        or left[:rs] == right[-rs:]
        or left[-rs:] == right[-rs:]
        or left[:rs] == right[:rs]
    ):
        return "GEMM"
    if not keep_left or not keep_right:
        return "GEMV/EINSUM"
    return "TDOT"
