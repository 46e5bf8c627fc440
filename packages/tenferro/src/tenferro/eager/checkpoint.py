"""Checkpointing on the eager tape: store a segment's inputs, recompute the rest.

``tf.checkpoint(f)(*args)`` runs ``f`` eagerly without recording its operations
one by one. Instead it captures their structure into one graph (the concrete
sequence of primitives ``f`` executed, so data-dependent choices inside ``f`` are
fixed by this run) and records that graph as a single tape node that saves only
the segment's inputs and outputs. The intermediates of ``f`` are freed as soon as
``f`` no longer needs them; the backward pass replays the graph from the saved
inputs to get them back (tidu's replay of unsaved values), then applies the
segment's derivative, linearised once per structure like any other node.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from computegraph import GraphBuilder, Local, LocalValueId
from tenferro.core.pytree import flatten, unflatten
from tenferro.eager.mode import capture_state, close_capture, is_grad_enabled, open_capture
from tenferro.eager.tape import _UNTRACKED
from tenferro.eager.tensor import EagerTensor
from tenferro.errors import TenferroError
from tenferro.surface.convert import asarray
from tidu.eager import EagerInput, RecordedGraph

__all__ = ["checkpoint"]


class _Captured:
    """The ``trace`` of a tensor computed inside a capture: its local id in the capture."""

    __slots__ = ("capture", "local")

    def __init__(self, capture: Capture, local: LocalValueId) -> None:
        self.capture = capture
        self.local = local


class Capture:
    """Collects the primitives applied while a checkpointed function runs."""

    def __init__(self) -> None:
        self.builder = GraphBuilder()
        self.inputs: list[EagerTensor] = []
        self.input_locals: dict[int, LocalValueId] = {}
        self.tape: Any = None

    def local_of(self, operand: EagerTensor) -> LocalValueId:
        trace = operand.node
        if type(trace) is _Captured and trace.capture is self:
            return trace.local
        found = self.input_locals.get(id(operand))
        if found is None:
            if operand.tape is not None:
                if self.tape is None:
                    self.tape = operand.tape
                elif operand.tape is not self.tape:
                    raise TenferroError(
                        "checkpoint", "the segment's inputs belong to different tapes"
                    )
            found = self.builder.add_input(("checkpoint", len(self.inputs)))
            self.inputs.append(operand)
            self.input_locals[id(operand)] = found
        return found

    def apply(self, op: Any, operands: list[EagerTensor], values: Any) -> tuple[EagerTensor, ...]:
        locals_ = [Local(self.local_of(o)) for o in operands]
        ids = self.builder.add_operation(op, locals_)
        make = EagerTensor._make
        return tuple(
            make(value, meta, None, _Captured(self, local), None)
            for value, meta, local in zip(values, op.outputs, ids, strict=True)
        )


def active_capture() -> Capture | None:
    """The capture of the checkpointed function running in this thread, if any."""
    return getattr(capture_state, "capture", None)


def checkpoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` as one checkpointed segment of the eager tape (see the module documentation).

    ``f`` takes and returns tensors (or tuples/lists/dicts of them). Only the returned
    tensors carry gradients out of the segment.
    """

    @functools.wraps(f)
    def segment(*args: Any) -> Any:
        if active_capture() is not None or not is_grad_enabled():
            return f(*args)  # nested segments belong to the enclosing one
        capture = Capture()
        open_capture(capture)
        try:
            result = f(*args)
        finally:
            close_capture()
        return _record(capture, result)

    return segment


def _record(capture: Capture, result: Any) -> Any:
    leaves, treedef = flatten(result)
    tensors = [asarray(leaf) for leaf in leaves]
    for tensor in tensors:
        if not isinstance(tensor, EagerTensor):
            raise TenferroError("checkpoint", f"a segment must return tensors, got {tensor!r}")
    locals_ = [capture.local_of(t) for t in tensors]
    tape = capture.tape
    if tape is None:  # nothing tracked flowed in: plain detached values
        return unflatten(treedef, [t.detach() for t in tensors])
    capture.builder.set_outputs(locals_)
    graph = capture.builder.build()
    input_keys = [("checkpoint", position) for position in range(len(capture.inputs))]
    recorded = RecordedGraph(graph, input_keys, graph.output_keys())
    inputs = [
        EagerInput(_UNTRACKED if o.tape is None else o.key, o.node, o.tape is not None, o._value)
        for o in capture.inputs
    ]
    values = [t._value for t in tensors]
    retained = dict(zip(recorded.output_keys, values, strict=True))
    outputs = tape._recorder.record_graph(recorded, inputs, values, retained)
    make = EagerTensor._make
    tracked = [
        make(t._value, t.meta, out.key, out.trace, tape)
        for t, out in zip(tensors, outputs, strict=True)
    ]
    return unflatten(treedef, tracked)
