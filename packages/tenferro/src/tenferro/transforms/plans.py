"""Compiled plans of the function transforms: a traced computation compiled once per
structure, and the bounded caches that hold them (structure only, never user data)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from computegraph import BoundedCache
from tenferro.concrete import Tensor
from tenferro.core.pytree import TreeDef, flatten, unflatten
from tenferro.traced.program import TracedProgram, _array
from tenferro.traced.structure import Structure, structure
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import _arg_leaves, _Args, _as_traced, _call, _split

_caches: weakref.WeakSet[BoundedCache[Any, Any]] = weakref.WeakSet()


def _cache(name: str, maxsize: int = 128) -> BoundedCache[Any, Any]:
    cache: BoundedCache[Any, Any] = BoundedCache(maxsize, name)
    _caches.add(cache)
    return cache


_GRAD_PROGRAMS = _cache("value_and_grad programs", 256)
_JVP_PROGRAMS: BoundedCache[Any, _Plan] = _cache("jvp programs", 256)
_VJP_PROGRAMS: BoundedCache[Any, _Plan] = _cache("vjp programs", 256)
_FORWARD_PROGRAMS: BoundedCache[Any, _Plan] = _cache("forward programs", 256)
_LINEARIZE_PROGRAMS = _cache("linearize programs", 256)
"""Derivative (and forward) programs by traced structure, shared by every function."""


def clear_caches() -> None:
    """Drop every program cached by the function transforms."""
    for cache in _caches:
        cache.clear()


class _Plan:
    """A compiled program and how to rebuild the result structure."""

    __slots__ = ("metas", "out_treedef", "program")

    def __init__(self, outputs: list[TracedTensor], out_treedef: TreeDef) -> None:
        self.program = TracedProgram(tuple(o.key for o in outputs))
        self.metas = [o.meta for o in outputs]
        self.out_treedef = out_treedef

    def __call__(self, arrays: Sequence[Any], slots: Sequence[Any] = ()) -> Any:
        values = self.program.run(arrays, slots)
        tensors = [Tensor._wrap(_array(v), m.weak) for v, m in zip(values, self.metas, strict=True)]
        return unflatten(self.out_treedef, tensors)


def _traced_outputs(result: Any) -> tuple[list[TracedTensor], TreeDef]:
    leaves, treedef = flatten(result)
    return [_as_traced(leaf) for leaf in leaves], treedef


class _Trace:
    """One call-time trace of a function: its outputs rewritten over slots (``outputs``,
    of tree structure ``treedef``), the structure (``shape``: its ``slots`` are this
    call's captured inputs) and the cache key part it gives (``key``: structure only)."""

    __slots__ = ("key", "outputs", "shape", "treedef")

    def __init__(self, outputs: list[TracedTensor], treedef: TreeDef) -> None:
        self.shape: Structure = structure([o.key for o in outputs])
        self.outputs = [
            TracedTensor(k, o.meta) for k, o in zip(self.shape.keys, outputs, strict=True)
        ]
        self.treedef = treedef
        self.key: Hashable = (treedef, self.shape.keys, tuple([o.meta for o in outputs]))


def _trace_call(fun: Callable[..., Any], call: _Args) -> _Trace:
    outputs, treedef = _traced_outputs(_call(fun, _split(call.treedef, _arg_leaves(call.metas))))
    return _Trace(outputs, treedef)


def _forward_plan(call: _Args, trace: _Trace) -> _Plan:
    return _FORWARD_PROGRAMS.get_or_create(
        (call.signature(), trace.key), lambda: _Plan(trace.outputs, trace.treedef)
    )
