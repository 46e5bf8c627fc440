"""Checks of the transforms' arguments (callables, ``has_aux`` pairs, argument
sequences) and the aux outputs of ``has_aux`` functions."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from tenferro.core.flags import check_flag
from tenferro.core.pytree import flatten, unflatten
from tenferro.errors import (
    ArgumentTypeError,
    DTypeError,
)
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import _Args


def _callable(fun: Any, op: str) -> None:
    if not callable(fun):
        raise ArgumentTypeError(op, f"expected a callable function, got {fun!r}")


def _check_has_aux(has_aux: Any, op: str) -> None:
    check_flag(op, "has_aux", has_aux)


def _aux_pair(result: Any, op: str) -> tuple[Any, Any]:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        shown = (
            f"a {len(result)}-element {type(result).__name__}"
            if isinstance(result, (tuple, list))
            else type(result).__name__
        )
        raise ArgumentTypeError(
            op, f"with has_aux=True the function must return a pair (output, aux), got {shown}"
        )
    return result[0], result[1]


class _Aux:
    """The aux output of a ``has_aux`` function. Its traced leaves (values the function
    computed) are outputs of the transform's program; every other leaf (strings, ints,
    ``None``, values computed without the arguments) is returned as it is, and is no
    part of any cache key."""

    __slots__ = ("leaves", "positions", "treedef")

    def __init__(self, aux: Any) -> None:
        self.leaves, self.treedef = flatten(aux)
        self.positions = tuple(
            [i for i, leaf in enumerate(self.leaves) if isinstance(leaf, TracedTensor)]
        )

    @property
    def traced(self) -> list[TracedTensor]:
        return [self.leaves[i] for i in self.positions]

    @property
    def key(self) -> Hashable:
        """The structure part of a cache key (never the non-tensor values)."""
        return (self.treedef, self.positions)

    def rebuild(self, values: Sequence[Any]) -> Any:
        """The aux tree with its traced leaves replaced by ``values``."""
        merged = list(self.leaves)
        for position, value in zip(self.positions, values, strict=True):
            merged[position] = value
        return unflatten(self.treedef, merged)


def _bound(fun: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    """``fun`` with keyword arguments bound (passed through, never differentiated, as
    ``jax.grad`` does; arrays among them are read at call time like any capture)."""
    return functools.partial(fun, **kwargs) if kwargs else fun


def _pass_through(
    fun: Callable[..., Any], args: tuple[Any, ...], positions: tuple[int, ...], op: str
) -> tuple[Callable[..., Any], tuple[Any, ...], tuple[int, ...]]:
    """Non-differentiated positional arguments that are not tensors (a mode string, a
    callable, any object) bound into ``fun`` and passed through as keywords are, as
    ``jax.grad`` passes them; the remaining arguments and their new ``positions``."""
    fixed: dict[int, Any] = {}
    for index, value in enumerate(args):
        try:
            _Args((value,))
        except DTypeError:
            if index in positions:
                raise ArgumentTypeError(
                    op,
                    f"cannot differentiate with respect to positional argument {index}, "
                    f"{_short(value)}: only tensors, arrays and numbers (or pytrees of "
                    f"them) are differentiable",
                ) from None
            fixed[index] = value
    kept = [i for i in range(len(args)) if i not in fixed]
    count = len(args)

    def bound(*dynamic: Any) -> Any:
        full = [None] * count
        for i, value in zip(kept, dynamic, strict=True):
            full[i] = value
        for i, value in fixed.items():
            full[i] = value
        return fun(*full)

    return bound, tuple(args[i] for i in kept), tuple(kept.index(p) for p in positions)


def _short(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) <= 40 else text[:37] + '...'})"


def _sequence(values: Any, op: str, what: str) -> tuple[Any, ...]:
    if not isinstance(values, (tuple, list)):
        raise ArgumentTypeError(
            op,
            f"{what} must be a tuple or list (one entry per argument), got {type(values).__name__}",
        )
    return tuple(values)
