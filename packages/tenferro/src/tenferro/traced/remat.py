"""Checkpointing of traced values: a segment is one primitive that recomputes in backward.

``tf.checkpoint(f)`` applied to traced values traces ``f`` once into a *segment*: its
outputs as structural keys over numbered segment arguments (:class:`SegmentArgKey`).
Values ``f`` captures (constants with data, arguments of an enclosing transform) become
extra operands, so the segment's structure holds no user data. The segment is bound as
one :class:`Segment` primitive whose operands are the segment's inputs:

* evaluation runs the segment's own compiled program, so its intermediates are freed
  inside that call and never become values of the enclosing program;
* its JVP is a ``Segment`` of the segment's JVP (primal inputs and tangents in), and
  the transpose of a linear ``Segment`` is a ``Segment`` of its VJP (fixed inputs and
  output cotangents in). The VJP segment recomputes the forward values it reads from
  its inputs. So a backward program stores only segment boundaries, and every
  transform (grad, vjp, jvp, hvp, linearize, jit, any order) composes.

Derived segments are cached per structure (bounded, cleared by ``tf.clear_caches()``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from computegraph import (
    BoundedCache,
    CompiledProgram,
    Derived,
    Input,
    ValueKey,
    compile,
    materialize_merge,
    rewrite,
    structural_view,
)
from tenferro.core.bind import bind
from tenferro.core.kinds import asarray
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.core.pytree import flatten, unflatten
from tenferro.core.rules import RuleValue, rule_bind
from tenferro.dtypes import is_inexact
from tenferro.errors import TenferroError
from tenferro.meta import Meta
from tenferro.traced.ad import jvp_tensors, vjp_tensors
from tenferro.traced.program import SUBSTITUTIONS
from tenferro.traced.tensor import TracedTensor, _records, _unpickle

__all__ = ["Segment", "SegmentArgKey", "checkpoint_traced", "clear_caches"]


@dataclass(frozen=True, slots=True)
class SegmentArgKey:
    """Argument ``index`` of a checkpointed segment (compared by value: structure)."""

    depth: int
    index: int
    meta: Meta

    def __repr__(self) -> str:
        return f"segment{self.depth}_arg{self.index}:{self.meta.describe()}"


def _arg(depth: int, index: int, meta: Meta) -> TracedTensor:
    return TracedTensor(Input(SegmentArgKey(depth, index, meta)), meta)


_NESTING: ContextVar[int] = ContextVar("checkpoint_nesting", default=0)
"""How many segments are being traced (a segment traced inside another one numbers its
arguments at the next depth, so values it captures from the outer one stay distinct)."""


@primitive
class Segment(TensorPrimitive):
    """A checkpointed segment: ``body`` (output keys over ``SegmentArgKey`` inputs)
    applied to the operands; operand ``k`` binds ``SegmentArgKey(depth, params[k])``;
    ``results`` are the output metas."""

    name = "checkpoint"
    depth: int
    body: tuple[ValueKey, ...]
    params: tuple[int, ...]
    results: tuple[Meta, ...]

    def __str__(self) -> str:
        operands = " ".join(m.describe() for m in self.inputs)
        return f"checkpoint[{_count_operations(self.body)} ops]({operands})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The body as flat record lists (pickling nested keys would recurse per operation).
        bodies = [(_records(k), m) for k, m in zip(self.body, self.results, strict=True)]
        return (_remake, (self.inputs, self.depth, bodies, self.params))

    def infer(self) -> Sequence[Meta]:
        if len(self.params) != len(self.inputs) or len(self.results) != len(self.body):
            raise TenferroError("checkpoint", "a segment needs one parameter per operand")
        return self.results

    def output_count(self) -> int:
        return len(self.results)

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        runner = _PROGRAMS.get_or_create(self, lambda: _Runner(self))
        return runner.run(inputs)

    def impl(self, *arrays: Any) -> Any:
        values = self.eval(arrays, None)
        return values[0] if len(values) == 1 else tuple(values)

    def lower(self, lo: Any, *values: Any) -> Any:
        """The segment's program, lowered inline (XLA decides what to keep or recompute)."""
        runner = _PROGRAMS.get_or_create(self, lambda: _Runner(self))
        outputs = lo.run(runner.program, [values[k] for k in runner.order])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def kernel(self) -> Any:
        return self.impl if len(self.results) == 1 else None

    def jvp(
        self,
        xs: tuple[RuleValue, ...],
        ys: tuple[RuleValue, ...],
        ts: tuple[RuleValue | None, ...],
    ) -> Sequence[RuleValue | None]:
        active = tuple(
            t is not None and is_inexact(x.meta.dtype) for x, t in zip(xs, ts, strict=True)
        )
        if not any(active):
            return [None] * len(self.results)
        derived, slots, used = _derived(("jvp", self, active), lambda: _jvp_segment(self, active))
        if derived is None:
            return [None] * len(self.results)
        operands = [*xs, *[t for t, a in zip(ts, active, strict=True) if a]]
        outputs = rule_bind(derived, [operands[k] for k in used])  # type: ignore[misc]
        return _spread(outputs, slots, len(self.results))

    def transpose(
        self,
        cts: tuple[RuleValue | None, ...],
        xs: tuple[RuleValue, ...],
        active: tuple[bool, ...],
    ) -> Sequence[RuleValue | None]:
        seeded = tuple(c is not None for c in cts)
        if not any(seeded):
            return [None] * len(xs)
        derived, slots, used = _derived(
            ("vjp", self, active, seeded), lambda: _vjp_segment(self, active, seeded)
        )
        if derived is None:
            return [None] * len(xs)
        fixed = [x for x, a in zip(xs, active, strict=True) if not a]
        operands = [*fixed, *[c for c in cts if c is not None]]
        outputs = rule_bind(derived, [operands[k] for k in used])
        return _spread(outputs, slots, len(xs))


def _remake(
    inputs: tuple[Meta, ...], depth: int, bodies: list[tuple[Any, Meta]], params: tuple[int, ...]
) -> Segment:
    """Unpickle a segment (see ``Segment.__reduce__``)."""
    outputs = [_unpickle(records, meta) for records, meta in bodies]
    return Segment.make(
        inputs,
        depth=depth,
        body=tuple(o.key for o in outputs),
        params=params,
        results=tuple(o.meta for o in outputs),
    )


Segment.__repr__ = Segment.__str__  # type: ignore[method-assign, assignment]


def _count_operations(body: tuple[ValueKey, ...]) -> int:
    seen: set[int] = set()
    stack: list[Any] = list(body)
    while stack:
        key = stack.pop()
        if type(key) is Derived and id(key.operation_key) not in seen:
            seen.add(id(key.operation_key))
            stack.extend(key.operation_key.inputs)
    return len(seen)


def _spread(values: Sequence[Any], slots: tuple[int, ...], count: int) -> list[Any]:
    """``values`` placed at ``slots`` of a list of ``count`` (``None`` elsewhere)."""
    out: list[Any] = [None] * count
    for value, slot in zip(values, slots, strict=True):
        out[slot] = value
    return out


class _Runner:
    """A segment's compiled program and the operand feeding each program input."""

    __slots__ = ("order", "program")

    def __init__(self, segment: Segment) -> None:
        materialized = materialize_merge(structural_view(), segment.body, substitute=SUBSTITUTIONS)
        self.program: CompiledProgram = compile(materialized, fold_constants=True)
        position = {index: k for k, index in enumerate(segment.params)}
        order = []
        for key in self.program.input_keys:
            name = key.key if type(key) is Input else None
            if (
                type(name) is not SegmentArgKey
                or name.depth != segment.depth
                or name.index not in position
            ):
                raise TenferroError("checkpoint", f"the segment reads an unbound input {key!r}")
            order.append(position[name.index])
        self.order = tuple(order)

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        return self.program.eval([inputs[k] for k in self.order])


_PROGRAMS: BoundedCache[Segment, _Runner] = BoundedCache(256, "checkpoint segment programs")
_Derived = tuple[Segment | None, tuple[int, ...], tuple[int, ...]]
"""A derived segment (``None``: all results are zero), the result slots it computes and
the operand positions it reads."""

_DERIVED: BoundedCache[Any, _Derived] = BoundedCache(256, "checkpoint segment derivatives")


def _derived(key: Any, make: Callable[[], _Derived]) -> _Derived:
    return _DERIVED.get_or_create(key, make)


def clear_caches() -> None:
    """Drop the compiled and derived segments."""
    _PROGRAMS.clear()
    _DERIVED.clear()


def _body_args(segment: Segment) -> list[TracedTensor]:
    return [
        _arg(segment.depth, index, m)
        for index, m in zip(segment.params, segment.inputs, strict=True)
    ]


def _outputs(segment: Segment) -> list[TracedTensor]:
    return [TracedTensor(k, m) for k, m in zip(segment.body, segment.results, strict=True)]


def _make(
    depth: int,
    results: Sequence[TracedTensor | None],
    params: tuple[int, ...],
    metas: tuple[Meta, ...],
) -> _Derived:
    """The segment computing the non-``None`` ``results`` from the operands (``params``,
    ``metas``) it reads: unread operands are dropped, so a derived segment never holds
    on to (or, transposed, depends on) a value it does not use."""
    slots = tuple(i for i, r in enumerate(results) if r is not None)
    if not slots:
        return None, (), ()
    kept = [results[i] for i in slots]
    body = tuple(r.key for r in kept)  # type: ignore[union-attr]
    reads = _reads(body)
    used = tuple(k for k, index in enumerate(params) if index in reads)
    made = Segment.make(
        tuple(metas[k] for k in used),
        depth=depth,
        body=body,
        params=tuple(params[k] for k in used),
        results=tuple(r.meta for r in kept),  # type: ignore[union-attr]
    )
    return made, slots, used


def _jvp_segment(segment: Segment, active: tuple[bool, ...]) -> _Derived:
    """The segment ``(inputs, tangents of the active inputs) -> output tangents``."""
    args = _body_args(segment)
    first = max(segment.params, default=-1) + 1
    wrt = [a for a, on in zip(args, active, strict=True) if on]
    tangents = [
        _arg(segment.depth, first + j, w.meta._replace(weak=False)) for j, w in enumerate(wrt)
    ]
    outputs = _outputs(segment)
    results = jvp_tensors(outputs, wrt, tangents)
    results = [
        r if r is not None and is_inexact(o.meta.dtype) else None
        for r, o in zip(results, outputs, strict=True)
    ]
    params = (*segment.params, *(first + j for j in range(len(tangents))))
    metas = (*segment.inputs, *(t.meta for t in tangents))
    return _make(segment.depth, results, params, metas)


def _vjp_segment(segment: Segment, active: tuple[bool, ...], seeded: tuple[bool, ...]) -> _Derived:
    """The transpose of a segment linear in its ``active`` operands: ``(fixed operands,
    given output cotangents) -> cotangents of the active operands``. Its program
    recomputes the forward values it reads from the fixed operands."""
    args = _body_args(segment)
    first = max(segment.params, default=-1) + 1
    outputs = [o for o, s in zip(_outputs(segment), seeded, strict=True) if s]
    seeds = [
        _arg(segment.depth, first + j, o.meta._replace(weak=False)) for j, o in enumerate(outputs)
    ]
    wrt = [a for a, on in zip(args, active, strict=True) if on]
    found = vjp_tensors(outputs, wrt, seeds)
    results: list[TracedTensor | None] = [None] * len(args)
    for position, value in zip([i for i, on in enumerate(active) if on], found, strict=True):
        results[position] = value
    fixed = [i for i, on in enumerate(active) if not on]
    params = (*(segment.params[i] for i in fixed), *(first + j for j in range(len(seeds))))
    metas = (*(segment.inputs[i] for i in fixed), *(s.meta for s in seeds))
    return _make(segment.depth, results, params, metas)


def _reads(body: tuple[ValueKey, ...]) -> set[int]:
    """The segment argument indices ``body`` reads."""
    found: set[int] = set()
    seen: set[int] = set()
    stack: list[Any] = list(body)
    while stack:
        key = stack.pop()
        if id(key) in seen:
            continue
        seen.add(id(key))
        if type(key) is Derived:
            stack.extend(key.operation_key.inputs)
        elif type(key) is Input and type(key.key) is SegmentArgKey:
            found.add(key.key.index)  # one depth per body: its own arguments
    return found


# ---------------------------------------------------------------------- tracing a segment


def checkpoint_traced(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``f(*args, **kwargs)`` on traced values, as one checkpointed :class:`Segment`."""
    depth = _NESTING.get() + 1
    leaves, treedef = flatten((args, kwargs))
    operands: list[TracedTensor] = []
    replaced: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, TracedTensor):
            replaced.append(_arg(depth, len(operands), leaf.meta))
            operands.append(leaf)
        else:
            replaced.append(leaf)
    call_args, call_kwargs = unflatten(treedef, replaced)
    token = _NESTING.set(depth)
    try:
        result = f(*call_args, **call_kwargs)
    finally:
        _NESTING.reset(token)
    out_leaves, out_treedef = flatten(result)
    outputs = []
    for leaf in out_leaves:
        tensor = asarray(leaf)
        if not isinstance(tensor, TracedTensor):
            tensor = TracedTensor._lift(tensor)
        outputs.append(tensor)
    keys, captured = _close(tuple(o.key for o in outputs), depth, len(operands))
    if not operands and not captured:
        return unflatten(out_treedef, outputs)  # a constant computation: nothing to store
    operands.extend(captured)
    segment = Segment.make(
        tuple(o.meta for o in operands),
        depth=depth,
        body=keys,
        params=tuple(range(len(operands))),
        results=tuple(o.meta for o in outputs),
    )
    return unflatten(out_treedef, list(bind(segment, operands)))


def _close(
    outputs: tuple[ValueKey, ...], depth: int, count: int
) -> tuple[tuple[ValueKey, ...], list[TracedTensor]]:
    """``outputs`` with every input other than the first ``count`` segment arguments
    replaced by a new segment argument (iterative); and the values those stand for."""
    captured: list[TracedTensor] = []

    def argument(key: ValueKey) -> ValueKey:
        if type(key) is not Input:
            return key
        name = key.key
        if type(name) is SegmentArgKey and name.depth == depth and name.index < count:
            return key
        meta = getattr(name, "meta", None)
        if not isinstance(meta, Meta):
            raise TenferroError(
                "checkpoint", f"the segment reads {name!r}, which is not a tensor value"
            )
        captured.append(TracedTensor(key, meta))
        return Input(SegmentArgKey(depth, count + len(captured) - 1, meta))

    return tuple(rewrite(outputs, argument)), captured
