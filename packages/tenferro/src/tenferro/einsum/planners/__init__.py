"""Einsum contraction planning: which pairs to contract, in which order.

Every planner takes a :class:`~tenferro.einsum.planners.network.Network` and returns an
SSA path (pairs of value ids; operands are ``0..n-1``, each result takes the next id).
:func:`plan` resolves an ``optimize=`` argument: ``"auto"``, ``"greedy"``,
``"optimal"``, ``"dp"``, ``False`` (left to right), a shrinking-list pair path, a nested
tuple tree, or an opt_einsum-style ``PathOptimizer`` object.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tenferro.einsum.planners.auto import auto
from tenferro.einsum.planners.dp import dynamic_programming
from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import (
    Network,
    Pair,
    linear_to_ssa,
    path_cost,
    ssa_to_linear,
    tree_to_ssa,
)
from tenferro.einsum.planners.optimal import optimal

__all__ = [
    "Network",
    "Pair",
    "auto",
    "dynamic_programming",
    "greedy",
    "optimal",
    "path_cost",
    "plan",
    "ssa_to_linear",
]

NAMED = ("auto", "greedy", "optimal", "dp")


def plan(
    network: Network,
    optimize: Any,
    memory_limit: int | None,
    fail: Callable[[str], Exception],
) -> list[Pair]:
    """The SSA path for ``optimize`` (see the module docstring); ``fail(message)`` builds
    the error for an ``optimize`` that does not fit the operands."""
    count = len(network.inputs)
    if count == 1:
        return []
    if memory_limit is not None:  # the output itself is not an intermediate
        memory_limit = max(memory_limit, network.size(network.output))
    if optimize is True or optimize == "auto":
        path = auto(network, memory_limit=memory_limit)
    elif optimize is False or optimize is None:
        path = [(0, 1)] + [(count + s - 1, s + 1) for s in range(1, count - 1)]
    elif optimize == "greedy":
        path = greedy(network, memory_limit=memory_limit)
    elif optimize == "optimal":
        bound = _bound(network, memory_limit)
        path = optimal(network, memory_limit=memory_limit, bound=bound) if count <= 12 else None
        path = path or greedy(network, memory_limit=memory_limit)
    elif optimize == "dp":
        bound = _bound(network, memory_limit)
        path = dynamic_programming(network, bound=bound, memory_limit=memory_limit)
        path = path or greedy(network, memory_limit=memory_limit)
    elif isinstance(optimize, str):
        raise fail(f"unknown optimize {optimize!r} (expected one of {', '.join(NAMED)})")
    elif isinstance(optimize, (list, tuple)):
        path = _explicit(optimize, count, fail)
    elif callable(optimize):
        linear = optimize(
            [set(t) for t in network.inputs], set(network.output), dict(network.sizes), memory_limit
        )
        path = _linear(list(linear), count, fail, "the optimizer's path")
    else:
        raise fail(f"invalid optimize {optimize!r}")
    if path is None:
        raise fail(f"no contraction path keeps intermediates within memory_limit={memory_limit}")
    return path


def _bound(network: Network, memory_limit: int | None) -> float:
    start = greedy(network, memory_limit=memory_limit)
    return math.inf if start is None else path_cost(network, start)[0]


def _explicit(
    optimize: list[Any] | tuple[Any, ...], count: int, fail: Callable[[str], Exception]
) -> list[Pair]:
    steps = list(optimize)
    if steps and steps[0] == "einsum_path":
        steps = steps[1:]
    if isinstance(optimize, tuple):
        leaves = _leaves(optimize)
        if leaves is not None and sorted(leaves) == list(range(count)):
            return tree_to_ssa(optimize, count)
    return _linear(steps, count, fail, "path")


def _leaves(tree: Any) -> list[int] | None:
    """The integer leaves of a nested tuple, or ``None`` if it is not one."""
    leaves: list[int] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple) and len(node) >= 1:
            stack.extend(node)
        elif isinstance(node, int) and not isinstance(node, bool):
            leaves.append(node)
        else:
            return None
    return leaves


def _linear(
    steps: list[Any], count: int, fail: Callable[[str], Exception], what: str
) -> list[Pair]:
    remaining = count
    clean: list[tuple[int, ...]] = []
    for number, step in enumerate(steps):
        if not isinstance(step, (list, tuple)) or not step:
            raise fail(f"{what} step {number} {step!r} is not a tuple of operand positions")
        positions = tuple(step)
        if any(isinstance(p, bool) or not isinstance(p, int) for p in positions):
            raise fail(f"{what} step {number} {step!r} is not a tuple of operand positions")
        if any(not 0 <= p < remaining for p in positions) or len(set(positions)) != len(positions):
            raise fail(f"{what} step {number} {step!r} does not fit the {remaining} operands left")
        clean.append(positions)
        remaining -= len(positions) - 1
    if remaining != 1:
        raise fail(f"{what} {steps!r} leaves {remaining} operands uncontracted")
    return linear_to_ssa(clean, count)
