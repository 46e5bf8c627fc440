"""Recording eager invocations onto a tape of :class:`Trace` nodes.

A frontend executes an operation immediately, then calls
:meth:`Recorder.record_graph` with the recorded graph, one :class:`EagerInput` per
graph input (the user-visible eager key under which cotangents accumulate, the
producer's trace, whether gradients flow, and the concrete data), and the values
to keep for the backward pass. It gets back one :class:`EagerOutput` per output:
a fresh eager key and the shared trace node (``None`` when no input requires grad).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from computegraph import Input, ValueKey
from tidu.eager.recorded import RecordedGraph
from tidu.errors import TransformError

__all__ = [
    "RELEASED",
    "CountingKeySource",
    "EagerInput",
    "EagerKey",
    "EagerOutput",
    "KeySource",
    "Recorder",
    "Trace",
    "next_trace_serial",
]


@runtime_checkable
class KeySource(Protocol):
    """Hands out input keys, never the same one twice."""

    def fresh_input_key(self) -> Hashable: ...


class EagerKey(int):
    """An eager value's name, from :class:`CountingKeySource`.

    An ``int`` subclass: cheap, and never equal as an input key to a plain int (input
    keys compare by type and value).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"e{int(self)}"


class CountingKeySource:
    """Yields ``EagerKey(0)``, ``EagerKey(1)``, ... (thread-safe)."""

    __slots__ = ("_counter",)

    def __init__(self, start: int = 0) -> None:
        self._counter = itertools.count(start)

    def fresh_input_key(self) -> EagerKey:
        return EagerKey(next(self._counter))


@dataclass(slots=True)
class EagerInput:
    """One input of a recorded invocation.

    * ``key``: the user-visible eager key; cotangents accumulate under it, and it must
      be the producer's :attr:`EagerOutput.key` for gradients to reach the producer;
    * ``trace``: the producer's trace node, ``None`` for a leaf;
    * ``requires_grad``: whether cotangents flow into this value;
    * ``data``: the concrete primal value, saved for the backward pass.
    """

    key: ValueKey
    trace: Trace | None
    requires_grad: bool
    data: Any


@dataclass(slots=True)
class EagerOutput:
    """One output of a recorded invocation: its fresh eager key and the shared trace node."""

    key: ValueKey
    trace: Trace | None
    requires_grad: bool
    output_slot: int


_TRACE_SERIALS = itertools.count()
next_trace_serial = _TRACE_SERIALS.__next__
"""The next creation serial of a :class:`Trace`. A runtime may build a node without
calling ``__init__`` (``object.__new__`` and every slot assigned, to spare a Python frame
per recorded operation); it then numbers the node with this."""


RELEASED: dict[ValueKey, Any] = {}
"""What a node's ``saved_data`` becomes once a backward pass that does not retain the
graph has used it (compared by identity, never filled): see :meth:`Trace.release`."""


class Trace:
    """An opaque tape node: one recorded invocation, shared by all its outputs."""

    __slots__ = (
        "__weakref__",
        "active",
        "edges",
        "instance",
        "output_keys",
        "recorded",
        "saved_data",
        "serial",
    )

    def __init__(
        self,
        recorded: RecordedGraph,
        output_keys: tuple[ValueKey, ...],
        saved_data: dict[ValueKey, Any],
        edges: tuple[Any, ...],
        active: tuple[int, ...] | None = None,
        instance: Any = None,
    ) -> None:
        self.recorded = recorded
        self.output_keys = output_keys
        self.saved_data = saved_data
        self.edges = edges
        """Flat: producer node (or None), eager key, requires_grad, for each graph input in
        turn (one tuple per node keeps the tape light for the cyclic collector)."""
        self.active = (
            tuple(i for i in range(len(edges) // 3) if edges[3 * i + 2])
            if active is None
            else active
        )
        """The positions of the inputs that require grad (reverse mode differentiates
        with respect to those only)."""
        self.serial = next(_TRACE_SERIALS)
        """Creation order: a producer's serial is smaller than its consumers'."""
        self.instance = instance
        """The frontend's token for what this node ran when ``recorded`` stands for
        several operations (``RESPECIALIZABLE``), else ``None``; the passes hand it to
        the executor among the node's values (under ``NODE_INSTANCE``). Kept on release:
        it is structure, not a saved value."""

    @property
    def input_edges(self) -> list[tuple[Trace | None, ValueKey, bool]]:
        """Per graph input: (producer node or None, eager key, requires_grad)."""
        edges = self.edges
        return [(edges[i], edges[i + 1], edges[i + 2]) for i in range(0, len(edges), 3)]

    def saved_values(self) -> Mapping[ValueKey, Any]:
        """The primal values kept for the backward pass, by graph value key (read-only;
        empty once released)."""
        return MappingProxyType(self.saved_data)

    def release(self) -> None:
        """Drop the saved values (a backward pass that does not retain the graph calls
        this once it has used them). A node that saved nothing stays usable; a later
        pass that needs a released node's values raises
        :class:`~tidu.ReleasedGraphError`."""
        if self.saved_data:
            self.saved_data = RELEASED

    @property
    def released(self) -> bool:
        """Whether :meth:`release` dropped values this node had saved."""
        return self.saved_data is RELEASED

    def __repr__(self) -> str:
        return f"<Trace of {self.recorded!r} -> {list(self.output_keys)!r}>"


class Recorder:
    """Records eager invocations; draws eager keys from its :class:`KeySource`."""

    __slots__ = ("_key_source",)

    def __init__(self, key_source: KeySource | None = None) -> None:
        self._key_source: KeySource = CountingKeySource() if key_source is None else key_source

    @property
    def key_source(self) -> KeySource:
        """The key source (mutable: it hands out the next keys)."""
        return self._key_source

    def fresh_input_keys(self, count: int) -> list[Hashable]:
        """``count`` fresh keys, in order (e.g. for the inputs of a graph to record)."""
        fresh = self._key_source.fresh_input_key
        return [fresh() for _ in range(count)]

    def record_graph(
        self,
        graph: RecordedGraph,
        inputs: Sequence[EagerInput],
        outputs: Sequence[Any],
        retained_values: Mapping[ValueKey, Any] | None = None,
    ) -> list[EagerOutput]:
        """Record one invocation; return one :class:`EagerOutput` per output.

        ``outputs`` (the concrete results) are only counted. The node saves each
        input's data under its graph input key (unless it is ``None``: a frontend that
        knows the derivative does not read it), then ``retained_values`` on top (those
        win on a clash): typically the outputs, which many derivatives reuse. Values
        the derivative needs but that are not saved are recomputed by the executor
        in backward. Fresh output keys are drawn even when nothing requires grad.
        """
        if len(inputs) != len(graph.input_keys):
            raise TransformError(
                f"record_graph: {len(inputs)} input(s) for a recorded graph with "
                f"{len(graph.input_keys)}"
            )
        if len(outputs) != len(graph.output_keys):
            raise TransformError(
                f"record_graph: {len(outputs)} output value(s) for a recorded graph with "
                f"{len(graph.output_keys)} output(s)"
            )
        fresh = self._key_source.fresh_input_key
        keys = tuple([Input(fresh()) for _ in outputs])
        for i in inputs:
            if i.requires_grad:
                break
        else:
            return [EagerOutput(key, None, False, slot) for slot, key in enumerate(keys)]
        saved = {
            key: i.data
            for key, i in zip(graph.input_value_keys, inputs, strict=True)
            if i.data is not None
        }
        if retained_values:
            saved.update(retained_values)
        edges: list[Any] = []
        active: list[int] = []
        for position, i in enumerate(inputs):
            edges += (i.trace, i.key, i.requires_grad)
            if i.requires_grad:
                active.append(position)
        node = Trace(graph, keys, saved, tuple(edges), tuple(active))
        return [EagerOutput(key, node, True, slot) for slot, key in enumerate(keys)]
