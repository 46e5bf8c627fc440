"""Einsum contraction planning: which terms to contract, in which order.

Every planner takes a :class:`~tenferro.einsum.planners.network.Network` and returns an
SSA path (steps of value ids; operands are ``0..n-1``, each step's result takes the
next id). :func:`plan` resolves an ``optimize=`` argument as ``opt_einsum`` does:

* ``"auto"`` (also ``True`` and ``None``) and ``"auto-hq"``: ours (:mod:`.auto`);
* opt_einsum's names, each mapped to our port of its planner: ``"greedy"`` (and its
  aliases ``"eager"``, ``"opportunistic"``), ``"optimal"``, ``"branch-all"``,
  ``"branch-2"``, ``"branch-1"``, ``"dp"`` / ``"dynamic-programming"``,
  ``"random-greedy"``, ``"random-greedy-128"`` and ``"random-greedy-N"``;
* ``"anneal"``: greedy refined by tree annealing alone (:mod:`.refine`);
* ``False``: one step over every operand;
* an explicit path (opt_einsum's shrinking list, numpy's ``["einsum_path", ...]``), a
  nested tuple tree of operand positions, or an opt_einsum-style ``PathOptimizer``
  (any callable ``(inputs, output, size_dict, memory_limit) -> path``).

More names can be registered (:func:`.registry.register`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from tenferro.einsum.planners.auto import auto, auto_hq, budget_seconds
from tenferro.einsum.planners.branch import branch_bound
from tenferro.einsum.planners.dp import DPTimeoutError, dynamic_programming
from tenferro.einsum.planners.greedy import greedy
from tenferro.einsum.planners.network import (
    Network,
    Pair,
    Step,
    linear_to_ssa,
    path_cost,
    ssa_to_linear,
    tree_to_ssa,
)
from tenferro.einsum.planners.optimal import OPERAND_LIMIT, OptimalTimeoutError, optimal
from tenferro.einsum.planners.random_greedy import random_greedy
from tenferro.einsum.planners.refine import refine
from tenferro.einsum.planners.registry import (
    PlanningError,
    PlanningWarning,
    lookup,
    names,
    register,
    register_family,
)

__all__ = [
    "Network",
    "Pair",
    "PlanningError",
    "PlanningWarning",
    "Step",
    "auto",
    "auto_hq",
    "dynamic_programming",
    "greedy",
    "optimal",
    "path_cost",
    "plan",
    "register",
    "ssa_to_linear",
]

EXACT_SECONDS = 10.0
"""The most time ``optimal``, ``dp`` and ``branch-*`` take in all. Each searches for
:data:`SEARCH_SHARE` of it; one that has not finished by then says so and returns
``auto-hq``'s path found in the time left."""
SEARCH_SHARE = 0.7
_FALLBACK_FLOOR = 0.05


def _search_seconds() -> float:
    return SEARCH_SHARE * EXACT_SECONDS


def plan(
    network: Network,
    optimize: Any,
    memory_limit: int | None,
    fail: Callable[[str], Exception],
) -> list[Step]:
    """The SSA path for ``optimize`` (see the module docstring); ``fail(message)`` builds
    the error for an ``optimize`` that does not fit the operands."""
    count = len(network.inputs)
    if optimize is False:
        return [tuple(range(count))]
    if isinstance(optimize, (list, tuple)):
        return _explicit(optimize, count, fail)
    if optimize is True or optimize is None:
        optimize = "auto"
    if isinstance(optimize, str):
        planner = lookup(optimize)
        if planner is None:
            raise fail(
                f"unknown optimize {optimize!r} (expected one of {', '.join(names())}, "
                "a path, or a path optimizer)"
            )
        if count <= 2:  # one path (opt_einsum asks no planner either)
            return [tuple(range(count))]
        return list(planner(network, memory_limit))
    if not callable(optimize):
        raise fail(f"invalid optimize {optimize!r}")
    if count <= 2:
        return [tuple(range(count))]
    if callable(optimize):
        try:
            linear = optimize(
                [set(t) for t in network.inputs],
                set(network.output),
                dict(network.sizes),
                memory_limit,
            )
        except TypeError as error:
            raise fail(f"the path optimizer {optimize!r} failed: {error}") from None
        return _linear(list(linear), count, fail, "the optimizer's path")
    raise fail(f"invalid optimize {optimize!r}")


# ---------------------------------------------------------------- the named planners


def _greedy(network: Network, memory_limit: int | None) -> list[Step]:
    if memory_limit is not None:  # opt_einsum: greedy under a limit is branch-1
        return _branch(1)(network, memory_limit)
    path = greedy(network)
    assert path is not None
    return list(path)


def _optimal(network: Network, memory_limit: int | None) -> list[Step]:
    count = len(network.inputs)
    start = time.perf_counter()
    if count > OPERAND_LIMIT:
        return _fallback(
            network,
            memory_limit,
            f"optimize='optimal' searches every path and takes at most {OPERAND_LIMIT} "
            f"operands, got {count}",
            start,
        )
    try:
        found = optimal(network, memory_limit=memory_limit, deadline=start + _search_seconds())
    except OptimalTimeoutError:
        return _fallback(
            network,
            memory_limit,
            f"optimize='optimal' did not finish in {_search_seconds():g} s",
            start,
        )
    assert found is not None  # without a bound some path is found
    return found


def _dp(network: Network, memory_limit: int | None) -> list[Step]:
    start = time.perf_counter()
    try:
        return dynamic_programming(
            network, memory_limit=memory_limit, deadline=start + _search_seconds()
        )
    except DPTimeoutError:
        return _fallback(
            network, memory_limit, f"optimize='dp' did not finish in {_search_seconds():g} s", start
        )


def _branch(nbranch: int | None) -> Callable[[Network, int | None], list[Step]]:
    def planner(network: Network, memory_limit: int | None) -> list[Step]:
        start = time.perf_counter()
        found = branch_bound(
            network,
            nbranch=nbranch,
            memory_limit=memory_limit,
            deadline=start + _search_seconds(),
        )
        if found is None:
            return _fallback(
                network,
                memory_limit,
                f"branch and bound found no path in {_search_seconds():g} s",
                start,
            )
        return found

    return planner


def _random_greedy(repeats: int) -> Callable[[Network, int | None], list[Step]]:
    def planner(network: Network, memory_limit: int | None) -> list[Step]:
        found = random_greedy(network, repeats=repeats, memory_limit=memory_limit)
        if found is None:
            return _branch(1)(network, memory_limit)
        return list(found)

    return planner


def _anneal(network: Network, memory_limit: int | None) -> list[Step]:
    if memory_limit is not None:
        return auto(network, memory_limit)
    first = greedy(network)
    assert first is not None
    deadline = time.perf_counter() + budget_seconds(path_cost(network, first)[0])
    return list(refine(network, deadline))


def _fallback(network: Network, memory_limit: int | None, why: str, start: float) -> list[Step]:
    """``auto-hq``'s path in what is left of :data:`EXACT_SECONDS` since ``start``, with a
    :class:`PlanningWarning` saying why."""
    warnings.warn(
        f"einsum: {why}; using optimize='auto-hq''s path instead (not proven optimal)",
        PlanningWarning,
        stacklevel=4,
    )
    left = start + EXACT_SECONDS - time.perf_counter()
    return auto_hq(network, memory_limit, budget=max(left, _FALLBACK_FLOOR))


register("auto", auto)
register("auto-hq", auto_hq)
for _name in ("greedy", "eager", "opportunistic"):
    register(_name, _greedy)
register("optimal", _optimal)
register("dp", _dp)
register("dynamic-programming", _dp)
register("branch-all", _branch(None))
register("branch-2", _branch(2))
register("branch-1", _branch(1))
register("random-greedy", _random_greedy(32))
register("random-greedy-128", _random_greedy(128))
register_family("random-greedy", _random_greedy)
register("anneal", _anneal)


# ---------------------------------------------------------------- explicit paths


def _explicit(
    optimize: list[Any] | tuple[Any, ...], count: int, fail: Callable[[str], Exception]
) -> list[Step]:
    steps = list(optimize)
    if steps and steps[0] == "einsum_path":
        steps = steps[1:]
    if isinstance(optimize, tuple):
        leaves = _leaves(optimize)
        if leaves is not None and sorted(leaves) == list(range(count)):
            return list(tree_to_ssa(optimize, count))
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
    steps: Sequence[Any], count: int, fail: Callable[[str], Exception], what: str
) -> list[Step]:
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
        raise fail(f"{what} {list(steps)!r} leaves {remaining} operands uncontracted")
    return linear_to_ssa(clean, count)
