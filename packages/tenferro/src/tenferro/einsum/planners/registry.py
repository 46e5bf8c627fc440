"""The registry of named planners (opt_einsum's ``register_path_fn``, for our networks).

A planner is a function ``(network, memory_limit) -> SSA path``: it returns the steps
(tuples of value ids, see :mod:`.network`) that contract the network, keeping every
intermediate within ``memory_limit`` elements when one is given (opt_einsum's
planners then end a path with one step over every remaining term when nothing fits),
or raises :class:`PlanningError`. ``optimize=`` strings are looked up here,
case-insensitively; ``random-greedy-N`` for any count ``N`` names the randomised
greedy planner with ``N`` trials.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tenferro.einsum.planners.network import Network, Step, linear_to_ssa
from tenferro.errors import TenferroError

__all__ = [
    "Planner",
    "PlanningError",
    "PlanningWarning",
    "lookup",
    "names",
    "register",
    "register_path_fn",
]

Planner = Callable[[Network, "int | None"], Sequence[Step]]


class PlanningError(TenferroError, RuntimeError):
    """No contraction path satisfies the request (a memory limit nothing fits, a planner
    that cannot answer for these operands)."""

    def __init__(self, op: str, message: str) -> None:
        self.detail = message
        super().__init__(op, message)


class PlanningWarning(UserWarning):
    """A planner could not give what was asked (an exact path within its limits) and
    says which path it returned instead."""


_PLANNERS: dict[str, Planner] = {}
_FAMILIES: dict[str, Callable[[int], Planner]] = {}
_COUNTED = re.compile(r"(.+)-(\d+)")


def register(name: str, planner: Planner, *, replace: bool = False) -> None:
    """Make ``planner`` the meaning of ``optimize=name`` (case-insensitive)."""
    key = name.lower()
    if key in _PLANNERS and not replace:
        raise PlanningError("einsum", f"a planner named {name!r} is already registered")
    _PLANNERS[key] = planner


def register_path_fn(name: str, fn: Callable[..., Sequence[Sequence[int]]]) -> None:
    """Make ``optimize=name`` call ``fn(inputs, output, size_dict, memory_limit)`` with
    opt_einsum's arguments (a list of label sets, the output's set, each label's extent,
    the limit or ``None``), expecting opt_einsum's shrinking-list path, as opt_einsum's
    ``paths.register_path_fn`` does."""

    def planner(network: Network, memory_limit: int | None) -> Sequence[Step]:
        inputs = [set(term) for term in network.inputs]
        linear = fn(inputs, set(network.output), dict(network.sizes), memory_limit)
        return linear_to_ssa([tuple(step) for step in linear], len(inputs))

    register(name, planner)


def register_family(name: str, make: Callable[[int], Planner]) -> None:
    """Make ``optimize=f"{name}-{N}"`` mean ``make(N)`` for every count ``N >= 1``."""
    _FAMILIES[name.lower()] = make


def lookup(name: str) -> Planner | None:
    """The planner registered as ``name``, or ``None``."""
    key = name.lower()
    found = _PLANNERS.get(key)
    if found is not None:
        return found
    match = _COUNTED.fullmatch(key)
    if match is not None and match.group(1) in _FAMILIES and int(match.group(2)) >= 1:
        return _FAMILIES[match.group(1)](int(match.group(2)))
    return None


def names() -> list[str]:
    """Every registered name (families as ``name-N``)."""
    return sorted(_PLANNERS) + [f"{family}-N" for family in sorted(_FAMILIES)]
