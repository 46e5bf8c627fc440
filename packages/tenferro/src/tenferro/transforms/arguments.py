"""A transform's call arguments: flattened, lifted to tensors, and the traced leaves
standing for them while the function is traced."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from computegraph import Input
from tenferro.concrete import borrowed_roots, released
from tenferro.core.keys import AliasKey, ArgKey
from tenferro.core.kinds import asarray, owned
from tenferro.core.pytree import TreeDef, count_leaves, flatten, unflatten
from tenferro.errors import (
    TenferroError,
)
from tenferro.meta import Meta
from tenferro.traced.tensor import TracedTensor
from tenferro.traced.tracing import TRACE_DEPTH, call_traced

_DEPTH = TRACE_DEPTH  # the transforms' names for the trace depth and the traced call
_call = call_traced


class _Args:
    """Flattened call arguments: concrete values (arrays) or traced tensors.

    A caller's numpy array is consumed without a copy (a borrowed operand): results
    pass through :meth:`release`, which copies any that would be a view of one. With
    ``keep`` (the arguments outlive the call: a ``vjp`` or ``linearize`` closure runs
    later) borrowed arrays are copied at once instead."""

    __slots__ = ("metas", "roots", "traced", "treedef", "values")

    def __init__(
        self, args: tuple[Any, ...], keep: bool = False, convert: Callable[[Any], Any] = asarray
    ) -> None:
        leaves, self.treedef = flatten(args)
        tensors = [convert(leaf) for leaf in leaves]
        if keep:
            tensors = [owned(t) for t in tensors]
        self.roots = borrowed_roots(tensors)
        for tensor in tensors:
            if getattr(tensor, "tape", None) is not None:
                raise TenferroError(
                    "transform",
                    "a tracked EagerTensor was passed to a traced transform, which would "
                    "drop its tape gradient; detach() it, or differentiate with the tape",
                )
        self.traced = _DEPTH.get() > 0 or any(isinstance(t, TracedTensor) for t in tensors)
        self.metas = tuple(t.meta for t in tensors)
        self.values = tensors

    def signature(self) -> Hashable:
        return (self.treedef, self.metas)

    def arrays(self) -> list[Any]:
        return [t._value for t in self.values]

    def release(self, result: Any) -> Any:
        """``result`` (a pytree of results of this call) with every concrete tensor that
        is a view of a borrowed argument replaced by a copy."""
        return released(result, self.roots)


def _arg_leaves(metas: Sequence[Meta], offset: int = 0) -> list[TracedTensor]:
    """Traced function arguments (structural: the same for every trace)."""
    return [TracedTensor(Input(ArgKey(offset + i, m)), m) for i, m in enumerate(metas)]


def _alias_leaves(values: Sequence[Any]) -> list[TracedTensor]:
    """Fresh leaves standing for the given (traced or concrete) values."""
    leaves = []
    for value in values:
        traced = value if isinstance(value, TracedTensor) else TracedTensor._lift(value)
        leaves.append(TracedTensor(Input(AliasKey(traced.meta, traced.key)), traced.meta))
    return leaves


def _as_traced(value: Any) -> TracedTensor:
    tensor = asarray(value)
    return tensor if isinstance(tensor, TracedTensor) else TracedTensor._lift(tensor)


def _split(treedef: TreeDef, leaves: list[Any]) -> list[Any]:
    """Top-level positional arguments of the flattened ``args`` tuple."""
    return list(unflatten(treedef, leaves))


def _leaf_ranges(treedef: TreeDef, count: int) -> list[range]:
    """For each top-level argument, the range of its leaves in the flat list."""
    ranges, start = [], 0
    for child in treedef[1]:  # type: ignore[index]
        size = count_leaves(child)
        ranges.append(range(start, start + size))
        start += size
    return ranges
