"""Composite tape nodes: several primitives recorded as one node of the eager tape.

``tf.composite(f)(*args)`` runs ``f`` eagerly without recording its operations one
by one. Instead it captures their structure into one graph (the concrete sequence of
primitives ``f`` executed, so data-dependent choices inside ``f`` are fixed by this
run) and records that graph as a single tape node. The node's derivative is the
graph's, linearised and transposed once per structure (a later call that executes the
same primitives on the same metas reuses it), so backward walks one node instead of
many. What the node saves is its *save policy*:

* ``save="needed"``: the values the derivative reads (inputs, outputs and the
  intermediates the rules need); backward recomputes nothing;
* ``save="inputs"``: only the inputs and outputs; the intermediates of ``f`` are
  freed as soon as ``f`` no longer needs them and backward replays the graph from the
  saved inputs to get them back (tidu's replay of unsaved values). This is
  checkpointing: :func:`checkpoint` is ``composite(f, save="inputs")``.

A composite inside a composite belongs to the enclosing one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np

from computegraph import GraphBuilder, Local, LocalValueId, ValueKey
from tenferro.concrete import Tensor
from tenferro.core.kinds import asarray
from tenferro.core.pytree import flatten, unflatten
from tenferro.eager.mode import capture_state, close_capture, is_grad_enabled, open_capture
from tenferro.eager.tensor import _UNTRACKED, EagerTensor
from tenferro.errors import TenferroError
from tidu import ADRuleError
from tidu.eager import EagerInput, RecordedGraph

__all__ = ["Capture", "SavePolicy", "composite"]

P = ParamSpec("P")
R = TypeVar("R")

SavePolicy = Literal["needed", "inputs"]


class _Captured:
    """The ``trace`` of a tensor computed inside a capture: its local id in the capture."""

    __slots__ = ("capture", "local")

    def __init__(self, capture: Capture, local: LocalValueId) -> None:
        self.capture = capture
        self.local = local


class Capture:
    """Collects the primitives applied while a composite function runs (and, when the
    save policy keeps them, the values they computed)."""

    def __init__(self, keep_values: bool) -> None:
        self.builder = GraphBuilder()
        self.inputs: list[EagerTensor] = []
        self.input_locals: dict[int, LocalValueId] = {}
        self.tape: Any = None
        self.values: dict[LocalValueId, Any] | None = {} if keep_values else None

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
        if self.values is not None:
            self.values.update(zip(ids, values, strict=True))
        make = EagerTensor._make
        return tuple(
            make(value, meta, None, _Captured(self, local), None)
            for value, meta, local in zip(values, op.outputs, ids, strict=True)
        )


def active_capture() -> Capture | None:
    """The capture of the composite function running in this thread, if any."""
    return getattr(capture_state, "capture", None)


def composite(f: Callable[P, R], *, save: SavePolicy = "needed") -> Callable[P, R]:
    """``f`` recorded as one node of the eager tape (see the module documentation).

    ``f`` takes and returns tensors (or tuples/lists/dicts of them). Only the returned
    tensors carry gradients out of the node. ``save`` is the save policy: ``"needed"``
    (keep what the derivative reads) or ``"inputs"`` (keep inputs, recompute in
    backward).
    """
    if save not in ("needed", "inputs"):
        raise TenferroError("composite", f"save must be 'needed' or 'inputs', got {save!r}")
    if not callable(f):
        raise TenferroError("composite", f"needs a callable, got {f!r}")

    @functools.wraps(f)
    def node(*args: Any, **kwargs: Any) -> Any:
        if active_capture() is not None or not is_grad_enabled():
            return f(*args, **kwargs)  # nested composites belong to the enclosing one
        capture = Capture(keep_values=save == "needed")
        open_capture(capture)
        try:
            result = f(*args, **kwargs)
        finally:
            close_capture()
        return _record(capture, result)

    return node


def _record(capture: Capture, result: Any) -> Any:
    leaves, treedef = flatten(result)
    if not capture.inputs and not any(isinstance(leaf, EagerTensor) for leaf in leaves):
        return result  # no eager tensor flowed through (traced or concrete values): as is
    tensors = []
    for leaf in leaves:
        tensor = (
            asarray(leaf) if isinstance(leaf, (Tensor, np.ndarray, int, float, complex)) else None
        )
        if not isinstance(tensor, EagerTensor):
            raise TenferroError("composite", f"a composite must return tensors, got {leaf!r}")
        tensors.append(tensor)
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
    if capture.values is not None:
        retained.update(_needed_intermediates(tape, capture, graph, recorded))
    outputs = tape._recorder.record_graph(recorded, inputs, values, retained)
    make = EagerTensor._make
    tracked = [
        make(t._value, t.meta, out.key, out.trace, tape)
        for t, out in zip(tensors, outputs, strict=True)
    ]
    return unflatten(treedef, tracked)


def _needed_intermediates(
    tape: Any, capture: Capture, graph: Any, recorded: RecordedGraph
) -> dict[ValueKey, Any]:
    """The intermediate values the node's derivative reads (all of them when a rule is
    missing: the error belongs to the backward pass)."""
    assert capture.values is not None
    active = tuple(i for i, o in enumerate(capture.inputs) if o.tape is not None)
    slots = tuple(range(len(recorded.output_keys)))
    try:
        needed: Any = tape._derivatives.derivative(recorded, slots, None, active).needed
    except ADRuleError:
        needed = None
    kept: dict[ValueKey, Any] = {}
    for local, value in capture.values.items():
        key = graph.key_of(local)
        if needed is None or key in needed:
            kept[key] = value
    return kept
