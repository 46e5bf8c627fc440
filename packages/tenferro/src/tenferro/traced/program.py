"""Evaluating traced values: one compiled program per structure, cached.

``evaluate`` looks a program up by the *structure* of the outputs' computation
(:mod:`tenferro.traced.structure`: leaves with data, placeholders, checkpoints
and aliases replaced by numbered slots), so the cache holds no user data and
the same computation over new data reuses its program. On a miss it
materialises the computation from the structural view (substituting alias
inputs by the values they stand for), compiles it and prepares how each input
is bound: slots from the data of the leaves they stand for or from the caller's
bindings (placeholders), function arguments by position.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from computegraph import (
    BoundedCache,
    CompiledProgram,
    Input,
    ValueKey,
    compile,
    gc_paused,
    materialize_merge,
    structural_view,
)
from tenferro.concrete import Tensor
from tenferro.core.keys import (
    AliasKey,
    ArgKey,
    CheckpointKey,
    LeafKey,
    PlaceholderKey,
    SlotAliasKey,
    SlotCheckpointKey,
    SlotKey,
)
from tenferro.errors import AllocationError, BindingError, one_warning_per_call
from tenferro.meta import Meta
from tenferro.traced.structure import structure
from tenferro.traced.tensor import provide

__all__ = [
    "ALIASES",
    "SUBSTITUTIONS",
    "TracedProgram",
    "evaluate",
    "format_graph",
    "graph_to_dot",
    "liveness_peak",
    "programs",
]


class _Substitutions:
    """For ``materialize_merge``: an alias input stands for its origin's value."""

    def get(self, key: Hashable, default: ValueKey | None = None) -> ValueKey | None:
        kind = type(key)
        return key.origin if kind is AliasKey or kind is SlotAliasKey else default  # type: ignore[attr-defined]


_CARRIERS = (AliasKey, CheckpointKey, SlotAliasKey, SlotCheckpointKey)


class _Aliases:
    """For ``tidu.linearize``: aliases and checkpoints carry their origin's tangent."""

    def get(self, key: Hashable, default: ValueKey | None = None) -> ValueKey | None:
        if isinstance(key, _CARRIERS):
            origin: ValueKey = key.origin
            return origin
        return default


SUBSTITUTIONS = _Substitutions()
ALIASES = _Aliases()

# A binding source: ("data", array) | ("arg", position) | ("slot", index) | ("placeholder", key).
_Source = tuple[str, Any]


class TracedProgram:
    """A compiled computation of some traced outputs, with its input binding plan."""

    __slots__ = ("program", "sources", "takes_arguments")

    def __init__(self, outputs: tuple[ValueKey, ...]) -> None:
        with gc_paused():
            materialized = materialize_merge(structural_view(), outputs, substitute=SUBSTITUTIONS)
            with np.errstate(all="ignore"):
                self.program: CompiledProgram = compile(materialized, fold_constants=True)
            self.sources: tuple[_Source, ...] = tuple(
                _source(key) for key in self.program.input_keys
            )
        self.takes_arguments = any(kind == "arg" for kind, _ in self.sources)

    def run(
        self,
        args: Sequence[Any] = (),
        slots: Sequence[Any] = (),
        bindings: Mapping[Any, Any] | None = None,
    ) -> list[Any]:
        """Run on the function arguments ``args`` and, per slot of the structure the
        program was compiled from, the input it stands for (``Structure.slots``)."""
        inputs = []
        for kind, what in self.sources:
            if kind == "arg":
                inputs.append(args[what])
            elif kind == "slot":
                name = slots[what]
                inputs.append(_bound(name, bindings) if type(name) is PlaceholderKey else name.data)
            elif kind == "data":
                inputs.append(what)
            else:
                inputs.append(_bound(what, bindings))
        with np.errstate(all="ignore"), one_warning_per_call():
            return self.program.eval(inputs)


def _source(key: ValueKey) -> _Source:
    if type(key) is not Input:
        raise BindingError("evaluate", f"cannot bind the derived value {key!r}")
    name = key.key
    kind = type(name)
    if kind is SlotKey or kind is SlotCheckpointKey:
        return ("slot", name.index)  # type: ignore[attr-defined]
    if kind is LeafKey or kind is CheckpointKey:
        return ("data", name.data)  # type: ignore[attr-defined]
    if kind is ArgKey:
        return ("arg", name.position)  # type: ignore[attr-defined]
    if kind is PlaceholderKey:
        return ("placeholder", name)
    raise BindingError(
        "evaluate",
        f"the input {name!r} is not a tenferro value (tangent and seed inputs are bound by the "
        f"transforms that make them)",
        "bind",
    )


def _bound(key: PlaceholderKey, bindings: Mapping[Any, Any] | None) -> Any:
    value = _lookup(key, bindings)
    array = np.asarray(getattr(value, "_value", value))
    meta: Meta = key.meta
    if array.dtype != meta.dtype:
        raise BindingError(
            "evaluate",
            f"placeholder {key!r} bound to a {array.dtype} value; expected {meta.dtype}",
            "bind",
        )
    if array.shape != meta.shape:
        raise BindingError(
            "evaluate",
            f"placeholder {key!r} bound to a value of shape {array.shape}; expected {meta.shape}",
            "bind",
        )
    return array


def _lookup(key: PlaceholderKey, bindings: Mapping[Any, Any] | None) -> Any:
    if bindings:
        for candidate, value in bindings.items():
            if isinstance(candidate, str):
                if candidate == key.name:
                    return value
            elif candidate is key or getattr(getattr(candidate, "key", None), "key", None) is key:
                return value
    raise BindingError(
        "evaluate",
        f"no binding for placeholder {key!r}; pass {{placeholder: value}} to eval",
        "bind",
    )


programs: BoundedCache[tuple[ValueKey, ...], TracedProgram] = BoundedCache(512, "traced programs")
"""Compiled traced programs by computation structure (bounded, clearable, no user data)."""


def evaluate(tensors: Sequence[Any], bindings: Mapping[Any, Any] | None = None) -> list[Any]:
    """Evaluate traced tensors together (one program); return concrete ``Tensor``s."""
    shape = structure([t.key for t in tensors])
    keys = shape.keys
    program = programs.get_or_create(keys, lambda: TracedProgram(keys))
    if program.takes_arguments:
        raise BindingError(
            "evaluate",
            "the value depends on the arguments of a function being traced by a transform; "
            "it has no value until the transformed function is called",
            "bind",
        )
    _check_placeholder_names(shape.slots)
    try:
        values = program.run((), shape.slots, bindings)
    except MemoryError as error:
        raise AllocationError("evaluate", str(error)) from None
    return [Tensor._wrap(_array(v), t.meta.weak) for v, t in zip(values, tensors, strict=True)]


def _check_placeholder_names(slots: Sequence[Any]) -> None:
    named: dict[str, PlaceholderKey] = {}
    for name in slots:
        if type(name) is PlaceholderKey and name.name is not None:
            other = named.setdefault(name.name, name)
            if other is not name:
                raise BindingError(
                    "evaluate",
                    f"two different placeholders are named {name.name!r} in one computation "
                    f"({other!r} and {name!r}); give them distinct names",
                    "bind",
                )


def format_graph(*tensors: Any) -> str:
    """The computation of traced tensors as text, one operation per line (like a jaxpr).

    Operations emitted by derivative rules carry their role: ``linear(...)`` marks a
    use that is linear in the operands flagged ``active`` (the others are fixed
    primal values)."""
    for tensor in tensors:
        if not hasattr(tensor, "key"):
            raise TypeError(f"format_graph: expected TracedTensors, got {type(tensor).__name__}")
    keys = tuple(t.key for t in tensors)
    return str(materialize_merge(structural_view(), keys, substitute=SUBSTITUTIONS))


def graph_to_dot(*tensors: Any) -> str:
    """The computation of traced tensors as Graphviz DOT source (the listing of
    :func:`format_graph` as a drawing): render it with ``dot -Tsvg``."""
    for tensor in tensors:
        if not hasattr(tensor, "key"):
            raise TypeError(f"graph_to_dot: expected TracedTensors, got {type(tensor).__name__}")
    keys = tuple(t.key for t in tensors)
    return materialize_merge(structural_view(), keys, substitute=SUBSTITUTIONS).to_dot()


def liveness_peak(program: CompiledProgram) -> int:
    """The bytes ``program`` allocates at its peak when every value is freed right after
    its last use (its liveness minimum for its instruction order): each instruction's
    outputs are allocated while its operands are alive, then its dead values go.
    Inputs and folded constants exist before a run and are not counted; outputs that
    numpy makes as views (reshapes, transposes, broadcasts) are counted as allocations,
    so for programs with those it bounds the true minimum from above."""
    known: dict[int, int] = {}  # bytes of every value, inputs included
    for slot, key in zip(program.input_slots, program.input_keys, strict=True):
        meta = getattr(getattr(key, "key", None), "meta", None)
        known[slot] = _nbytes(meta) if meta is not None else 0
    alive: dict[int, int] = {}
    live = peak = 0
    for instruction, dead in zip(program.instructions, program.free_after, strict=True):
        metas = getattr(instruction.operation, "outputs", ())
        for position, slot in enumerate(instruction.outputs):
            # an accumulation (add_any) declares no metas: it has its operands' meta
            size = _nbytes(metas[position]) if metas else known.get(instruction.inputs[0], 0)
            alive[slot] = known[slot] = size
            live += size
        peak = max(peak, live)
        for slot in dead:
            live -= alive.pop(slot, 0)
    return peak


def _nbytes(meta: Meta) -> int:
    return int(np.prod(meta.shape, dtype=np.int64)) * meta.dtype.itemsize


def _array(value: Any) -> Any:
    return value if isinstance(value, np.ndarray) else np.asarray(value)


provide(evaluate=evaluate)  # TracedTensor.eval
