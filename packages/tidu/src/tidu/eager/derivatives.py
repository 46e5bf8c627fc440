"""A bounded cache of node derivatives, keyed by recorded structure and seeded slots.

Eager backward never re-linearises and re-transposes a structure it has seen: the
linear graph of a recorded graph for a set of seeded output slots is computed
once and reused by every node with that structure.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

from computegraph import BoundedCache, Input, ValueKey
from tidu.eager.recorded import EAGER_PASS, RecordedGraph
from tidu.errors import PassReuseError
from tidu.linearize import linearize
from tidu.linearized import LinearizedGraph, external_keys

__all__ = [
    "NODE_INSTANCE",
    "RESPECIALIZABLE",
    "RESPECIALIZE",
    "DerivativeCache",
    "NodeDerivative",
    "default_derivative_cache",
]


class _Respecializable:
    __slots__ = ()

    def __repr__(self) -> str:
        return "RESPECIALIZABLE"

    def __reduce__(self) -> str:
        return "RESPECIALIZABLE"


RESPECIALIZABLE = _Respecializable()
"""The ``derivative_signature`` of a recorded graph that stands for its operation at
every extent (a frontend records nodes of other extents with it): the linear maps
derived from it are marked (``linear.memo[RESPECIALIZE]``), so an executor with a
``specialize`` hook runs each program re-instantiated at the actual operands."""

RESPECIALIZE = "tidu.eager.respecialize"
"""The ``memo`` entry marking a linear map derived from a ``RESPECIALIZABLE`` graph."""


class _NodeInstance:
    __slots__ = ()

    def __repr__(self) -> str:
        return "node instance"


NODE_INSTANCE = Input(_NodeInstance())
"""The key under which backward and forward passes hand an executor a node's
``instance`` (see :class:`~tidu.eager.Trace`), among its values, when it has one."""


class NodeDerivative(NamedTuple):
    """The linear map of a recorded graph for some seeded outputs, and the primal
    values (by key) its transpose may read."""

    linear: LinearizedGraph
    needed: frozenset[ValueKey]


class DerivativeCache(BoundedCache[tuple[RecordedGraph, Hashable], NodeDerivative]):
    """Node derivatives by ``(recorded graph, seeded slots)``: bounded, clearable, thread-safe.

    The context passed on a miss is the one the rules see; rules whose result depends
    on it must put the facts they read into the recorded graph's
    ``derivative_signature``.
    """

    def __init__(self, maxsize: int = 4096) -> None:
        super().__init__(maxsize, "derivatives")

    def derivative(
        self,
        recorded: RecordedGraph,
        slots: tuple[int, ...],
        ctx: Any,
        active: tuple[int, ...] | None = None,
    ) -> NodeDerivative:
        """The derivative of ``recorded`` for seeded output ``slots`` with respect to the
        inputs at positions ``active`` (default: all), computed on a miss."""
        key = (recorded, slots if active is None else (slots, active))
        found = self.get(key)
        if found is None:
            found = derive(recorded, slots, ctx, active)
            self.put(key, found)
        return found

    def forward_derivative(
        self,
        recorded: RecordedGraph,
        active: tuple[int, ...],
        ctx: Any,
        slot: int | None = None,
    ) -> NodeDerivative:
        """The JVP of all outputs of ``recorded`` (of output ``slot`` only, when given)
        with respect to the inputs at the positions in ``active`` (forward mode),
        computed on a miss."""
        key = (recorded, ("forward", active, slot))
        found = self.get(key)
        if found is None:
            found = derive_forward(recorded, active, ctx, slot)
            self.put(key, found)
        return found


def derive_forward(
    recorded: RecordedGraph, active: tuple[int, ...], ctx: Any, slot: int | None = None
) -> NodeDerivative:
    """Linearise every output of ``recorded`` (output ``slot`` only, when given) with
    respect to the inputs in ``active``."""
    count = len(recorded.input_keys)
    for position in active:
        if not 0 <= position < count:
            raise IndexError(f"input position {position} out of range for {recorded!r}")
    wrt = [recorded.input_keys[position] for position in active]
    outputs = recorded.output_keys if slot is None else [recorded.output_keys[slot]]
    try:
        linear = linearize(recorded.view(), outputs, wrt, EAGER_PASS, ctx)
    except PassReuseError:
        linear = linearize(recorded.view(), outputs, wrt, None, ctx)
    return _marked(recorded, NodeDerivative(linear, external_keys(linear.graph)))


def _marked(recorded: RecordedGraph, derivative: NodeDerivative) -> NodeDerivative:
    if recorded.derivative_signature is RESPECIALIZABLE:
        derivative.linear.memo[RESPECIALIZE] = True
    return derivative


def derive(
    recorded: RecordedGraph,
    slots: tuple[int, ...],
    ctx: Any,
    active: tuple[int, ...] | None = None,
) -> NodeDerivative:
    """Linearise ``recorded`` for the outputs in ``slots`` with respect to the inputs at
    positions ``active`` (default: all its inputs)."""
    count = len(recorded.output_keys)
    for slot in slots:
        if not 0 <= slot < count:
            raise IndexError(f"output slot {slot} out of range for {recorded!r}")
    outputs = [recorded.output_keys[slot] for slot in slots]
    wrt = (
        recorded.input_keys
        if active is None
        else tuple(recorded.input_keys[position] for position in active)
    )
    try:
        linear = linearize(recorded.view(), outputs, wrt, EAGER_PASS, ctx)
    except PassReuseError:  # the recorded graph is itself an eager linear graph
        linear = linearize(recorded.view(), outputs, wrt, None, ctx)
    return _marked(recorded, NodeDerivative(linear, external_keys(linear.graph)))


default_derivative_cache = DerivativeCache()
"""The cache eager backward uses unless given another."""
