"""A dispatch cache for numpy-style functions on concrete tensors.

A numpy-style function (``matmul``, ``x[1:3]``, ``sum``, ``reshape``...) spends most of
a small call deciding *which* primitives to apply: normalising axes and shapes,
promoting, broadcasting, validating. For concrete operands (``Tensor`` and
``EagerTensor``) that decision depends only on the operands' metas and the static
arguments, so :func:`dispatch_cached` makes it once: on a miss the function runs on
*probes* (stand-ins carrying only a meta, whose binds record the primitive instances
applied instead of computing anything), and the recorded steps are cached; on a hit the
steps are replayed on the real operands through the ordinary :func:`~tenferro.core.bind.bind`,
so evaluation, tape recording, ``no_grad`` and composite capture behave exactly as in an
uncached call.

Common calls (no keywords; no static argument, or one that is an int, None, a tuple of
ints, a slice of ints and None, or a basic index tuple of those and ``...``, as in
``x[:, None]``) first take a *direct lane*: a flat, type-exact key to
the primitive the call binds, so a repeated call costs one lookup before evaluation.

The cache holds structure only (primitive instances and operand positions): a function
that reads data, or makes a constant from a value, is not cacheable and runs uncached
(the probe refuses ``_value`` and ``_full``). It is bounded and emptied by
``tf.clear_caches()``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np

from computegraph import DictCache
from tenferro.core.bind import bind
from tenferro.core.primitive import TensorPrimitive
from tenferro.meta import HasMeta, Meta

__all__ = [
    "BINDS_INSTANCES",
    "REPLAYABLE",
    "UnkeyableError",
    "dispatch_cached",
    "is_replayable",
    "register_instance_binding",
    "register_replayable",
    "static_key",
]

F = TypeVar("F", bound=Callable[..., Any])

_PROGRAMS: DictCache[Any, Any] = DictCache(8192, "dispatch programs")
"""(function, kind, operand metas, static key) -> the recorded steps (or _UNCACHEABLE)."""

_DIRECT: DictCache[Any, Any] = DictCache(8192, "dispatch direct keys")
"""The same programs under a flat key, for the common calls (no keywords, and no static
argument or one int, None, tuple of ints, slice of ints and None, or basic index tuple
of ints, None, ``...`` and such slices: :func:`_flat_index`): (function, kind,
operand metas..., the static argument's flat form) -> the one primitive of a
single-primitive program, else a :class:`_Slow` holding the program (or _UNCACHEABLE).
Structure only, like :data:`_PROGRAMS`; a hit skips building the general key."""

_REPLAYABLE: set[type] = set()
"""Tensor kinds whose bind evaluates now (concrete kinds): only those are replayed."""
REPLAYABLE: frozenset[type] | set[type] = _REPLAYABLE
"""The registered concrete kinds themselves, for hot paths that test ``kind in
REPLAYABLE`` without :func:`is_replayable`'s frame (read only: register with
:func:`register_replayable`)."""

_BINDS_INSTANCES: set[type] = set()
BINDS_INSTANCES: frozenset[type] | set[type] = _BINDS_INSTANCES
"""Tensor kinds on which a surface function may bind a primitive instance it made for
the same operand metas before, calling ``kind._bind(instance, operands)`` itself (what
:func:`~tenferro.core.bind.bind` does for operands of one kind, without its frames): the
concrete kinds and the traced kind (read only: register with
:func:`register_instance_binding`)."""

_UNCACHEABLE = "uncacheable"
_REFUSED = "refused"
"""A call the cache does not serve (it runs uncached and leaves no entry)."""


def register_replayable(kind: type) -> None:
    """Let calls on operands of ``kind`` (a concrete tensor class) use the dispatch cache
    (and bind known instances directly: :func:`register_instance_binding`)."""
    _REPLAYABLE.add(kind)
    _BINDS_INSTANCES.add(kind)


def register_instance_binding(kind: type) -> None:
    """Let surface functions bind primitive instances they know for the operands' metas
    directly on operands of ``kind`` (see :data:`BINDS_INSTANCES`)."""
    _BINDS_INSTANCES.add(kind)


def is_replayable(kind: type) -> bool:
    """Whether ``kind`` is a registered concrete tensor kind (see :func:`register_replayable`)."""
    return kind in _REPLAYABLE


class UnkeyableError(Exception):
    """A static argument that cannot be part of a cache key (the call runs uncached)."""


_ATOMS = (int, bool, str, type(None), type(Ellipsis))
_INT = frozenset({int})
_INT_OR_NONE = frozenset({int, type(None)})
_ONLY_INT = _INT.issuperset
"""``_ONLY_INT(map(type, values))``: every value is an ``int`` (not a bool); faster than
building the set of their types."""


def static_key(value: Any) -> Any:
    """A hashable key for a static argument that tells apart values a function may treat
    differently (``1``, ``True`` and ``1.0`` are different keys); raises
    :class:`UnkeyableError` for anything else (floats, arrays, tensors, objects)."""
    kind = type(value)
    if kind in _ATOMS:
        return (kind, value)
    if kind is tuple and _ONLY_INT(map(type, value)):
        return value  # a flat tuple of ints (a shape) is its own key; no other key is one
    if kind is tuple or kind is list:
        return (kind, tuple(map(static_key, value)))
    if kind is slice:
        start, stop, step = value.start, value.stop, value.step
        if _INT_OR_NONE.issuperset((type(start), type(stop), type(step))):  # no bool or float
            return (slice, start, stop, step)
        return (slice, static_key(start), static_key(stop), static_key(step))
    if isinstance(value, np.dtype):
        return (np.dtype, value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return (type, value)
    raise UnkeyableError(value)


def _flat_index(items: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A tuple of ints, None, ``...`` and slices of ints and None (a basic index such as
    ``x[:, None]``) as a flat, type-exact key (each slice as its ``(start, stop, step)``
    triple: no item of such a tuple is itself a tuple), or ``None`` for any other tuple."""
    flat: list[Any] = []
    for item in items:
        kind = type(item)
        if kind is int or item is None or item is Ellipsis:
            flat.append(item)
        elif kind is slice:
            start, stop, step = item.start, item.stop, item.step
            if (
                (start is None or type(start) is int)
                and (stop is None or type(stop) is int)
                and (step is None or type(step) is int)
            ):
                flat.append((start, stop, step))
            else:
                return None
        else:
            return None
    return tuple(flat)


# ---------------------------------------------------------------------- probes


class _RefusedError(Exception):
    """A probe was asked for data: the function is not a function of metas alone."""


class _Probe(HasMeta):
    """A stand-in operand: only a meta; binding records the step on its recording."""

    __slots__ = ("meta", "recording", "ref")
    _priority: ClassVar[int] = 50

    def __init__(self, meta: Meta, recording: _Recording, ref: int) -> None:
        self.meta = meta
        self.recording = recording
        self.ref = ref

    @classmethod
    def _bind(cls, op: TensorPrimitive, operands: Any, like: Any = None) -> tuple[_Probe, ...]:
        recording = operands[0].recording if operands else like.recording
        for operand in operands:
            if type(operand) is not _Probe or operand.recording is not recording:
                raise _RefusedError  # a constant or another kind met the probe
        probes: tuple[_Probe, ...] = recording.step(op, tuple(o.ref for o in operands))
        return probes

    @classmethod
    def _lift(cls, value: Any) -> _Probe:
        raise _RefusedError

    @classmethod
    def _full(cls, meta: Meta, value: Any) -> _Probe:
        raise _RefusedError  # a constant made from a value: data

    def _rewrap(self, meta: Meta) -> _Probe:
        return self.recording.rewrap(self, meta)

    @property
    def _value(self) -> Any:
        raise _RefusedError


class _Rewrap:
    """A replay step that only changes a tensor's meta (e.g. its weak flag)."""

    __slots__ = ("meta",)

    def __init__(self, meta: Meta) -> None:
        self.meta = meta


class _Recording:
    __slots__ = ("count", "steps")

    def __init__(self, count: int) -> None:
        self.steps: list[tuple[Any, tuple[int, ...]]] = []
        self.count = count

    def step(self, op: TensorPrimitive, refs: tuple[int, ...]) -> tuple[_Probe, ...]:
        self.steps.append((op, refs))
        first = self.count
        self.count += len(op.outputs)
        return tuple(_Probe(m, self, first + i) for i, m in enumerate(op.outputs))

    def rewrap(self, probe: _Probe, meta: Meta) -> _Probe:
        self.steps.append((_Rewrap(meta), (probe.ref,)))
        self.count += 1
        return _Probe(meta, self, self.count - 1)


def _output_refs(result: Any, recording: _Recording) -> Any:
    """The recorded reference(s) of a function's result (a probe or a tuple of probes)."""
    if type(result) is _Probe and result.recording is recording:
        return result.ref
    if type(result) is tuple and all(
        type(r) is _Probe and r.recording is recording for r in result
    ):
        return tuple(r.ref for r in result)
    raise _RefusedError


class _Program:
    """Recorded steps, replayable on operands of any concrete kind."""

    __slots__ = ("output", "single", "steps")

    def __init__(self, steps: list[tuple[Any, tuple[int, ...]]], output: Any, count: int) -> None:
        self.steps = tuple(steps)
        self.output = output
        self.single: TensorPrimitive | None = None
        """The one primitive when the whole call is that primitive on the operands."""
        if len(steps) == 1 and output == count:
            op, refs = steps[0]
            if type(op) is not _Rewrap and len(op.outputs) == 1 and refs == tuple(range(count)):
                self.single = op

    def replay(self, operands: tuple[Any, ...]) -> Any:
        single = self.single
        if single is not None:
            return bind(single, operands)[0]
        values = list(operands)
        like = operands[0]
        # Every operand is of one kind (both lanes check it), and so is every step's
        # result: each step binds through that kind directly, as ``bind`` would.
        apply = type(like)._bind
        for op, refs in self.steps:
            if type(op) is _Rewrap:
                values.append(values[refs[0]]._rewrap(op.meta))
            elif len(refs) == 1:
                values.extend(apply(op, (values[refs[0]],), like))
            else:
                values.extend(apply(op, [values[r] for r in refs], like))
        output = self.output
        if type(output) is int:
            return values[output]
        return tuple(values[r] for r in output)


class _Slow:
    """A direct-lane outcome other than one primitive: a program of several steps, or
    ``_UNCACHEABLE``."""

    __slots__ = ("program",)

    def __init__(self, program: Any) -> None:
        self.program = program


class _Ran:
    """The result of a call that ran uncached while its program was being looked up."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


def _record(function: Callable[..., Any], metas: tuple[Meta, ...], static: Any) -> Any:
    recording = _Recording(len(metas))
    probes = [_Probe(m, recording, i) for i, m in enumerate(metas)]
    args, kwargs = static
    try:
        result = function(*probes, *args, **kwargs)
        output = _output_refs(result, recording)
    except _RefusedError:
        return _UNCACHEABLE
    return _Program(recording.steps, output, len(metas))


def dispatch_cached(operands: int = 1, key: Callable[..., Any] | None = None) -> Callable[[F], F]:
    """Decorate a numpy-style function whose first ``operands`` arguments are tensors and
    whose other arguments are static: calls on concrete tensors of one kind replay the
    primitives recorded for their metas and static arguments.

    ``key(*static_args, **kwargs)`` turns the static arguments into a hashable key and the
    ``(args, kwargs)`` the function is called with on probes (default: :func:`static_key`
    of both, the arguments unchanged); it raises :class:`UnkeyableError` when the call cannot be
    cached.
    """

    def decorate(function: F) -> F:
        # The direct lane: no keywords, operands of one concrete kind, and no static
        # argument or (one operand) one of a flat kind: an int, None, a tuple of ints, a
        # slice of ints and None. Its key is flat and type-exact (``1`` and ``True``
        # never meet: only exact ints enter), so a hit costs one lookup; _DIRECT holds
        # the single primitive a call binds, else a _Slow outcome (see ``served``).

        def served(direct: Any, found: Any, args: tuple[Any, ...]) -> Any:
            """A direct-lane call that missed (``found`` None) or is not one primitive."""
            if found is None:
                found = _lookup(args, {})
                if found is _REFUSED:
                    return function(*args)
                if type(found) is _Ran:
                    _DIRECT.put(direct, _Slow(_UNCACHEABLE))
                    return found.result
                if type(found) is not _Program and found is not _UNCACHEABLE:
                    _DIRECT.put(direct, found)
                    return type(args[0])._bind(found, args[:operands])[0]
                found = _Slow(found)
                _DIRECT.put(direct, found)
            program = found.program
            if program is _UNCACHEABLE:
                return function(*args)
            return program.replay(args[:operands])

        if key is not None:  # the caller's key decides what is cacheable: no direct lane

            @functools.wraps(function)
            def cached(*args: Any, **kwargs: Any) -> Any:
                return general(args, kwargs)

        elif operands == 1:

            @functools.wraps(function)
            def cached(*args: Any, **kwargs: Any) -> Any:
                if not kwargs:
                    count = len(args)
                    if count == 2:
                        first, only = args
                        kind = type(first)
                        if kind in _REPLAYABLE:
                            direct: Any = None
                            flat = type(only)
                            if flat is tuple:
                                for extent in only:
                                    if type(extent) is not int:
                                        flat_index = _flat_index(only)
                                        if flat_index is not None:
                                            direct = (cached, kind, first.meta, tuple, flat_index)
                                        break
                                else:
                                    direct = (cached, kind, first.meta, only)
                            elif flat is int or only is None:
                                direct = (cached, kind, first.meta, flat, only)
                            elif flat is slice:
                                start, stop, step = only.start, only.stop, only.step
                                if (
                                    (start is None or type(start) is int)
                                    and (stop is None or type(stop) is int)
                                    and (step is None or type(step) is int)
                                ):
                                    direct = (cached, kind, first.meta, start, stop, step)
                            if direct is not None:
                                found = _DIRECT.get(direct)
                                if found is None or type(found) is _Slow:
                                    return served(direct, found, args)
                                return kind._bind(found, (first,))[0]
                    elif count == 1:
                        first = args[0]
                        kind = type(first)
                        if kind in _REPLAYABLE:
                            direct = (cached, kind, first.meta)
                            found = _DIRECT.get(direct)
                            if found is None or type(found) is _Slow:
                                return served(direct, found, args)
                            return kind._bind(found, args)[0]
                return general(args, kwargs)

        else:

            @functools.wraps(function)
            def cached(*args: Any, **kwargs: Any) -> Any:
                if not kwargs and len(args) == operands:
                    first = args[0]
                    kind = type(first)
                    if kind in _REPLAYABLE:
                        if operands == 2:
                            second = args[1]
                            same = type(second) is kind
                            if same:
                                direct = (cached, kind, first.meta, second.meta)
                        else:
                            same = all(type(other) is kind for other in args)
                            if same:
                                direct = (cached, kind, *[a.meta for a in args])
                        if same:
                            found = _DIRECT.get(direct)
                            if found is None or type(found) is _Slow:
                                return served(direct, found, args)
                            return kind._bind(found, args)[0]
                return general(args, kwargs)

        def general(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            """A call outside the direct lane, through the general key."""
            found = _lookup(args, kwargs)
            if found is _REFUSED or found is _UNCACHEABLE:
                return function(*args, **kwargs)
            if type(found) is _Ran:
                return found.result
            if type(found) is _Program:
                return found.replay(args[:operands])
            return type(args[0])._bind(found, args[:operands])[0]

        def _lookup(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            """The cached program of a call (its single primitive when it has one,
            recorded on a miss), ``_UNCACHEABLE``, or ``_REFUSED`` when the call runs
            uncached without a cache entry (mixed kinds, unkeyable arguments, or bad
            arguments: the uncached call then raises the function's own error)."""
            signature: Any
            probe_args: Any
            if len(args) < operands:
                return _REFUSED
            first = args[0]
            kind = type(first)
            if kind not in _REPLAYABLE:
                return _REFUSED
            if operands == 1:
                metas: tuple[Meta, ...] = (first.meta,)
            elif operands == 2:
                second = args[1]
                if type(second) is not kind:
                    return _REFUSED
                metas = (first.meta, second.meta)
            else:
                for other in args[1:operands]:
                    if type(other) is not kind:
                        return _REFUSED
                metas = tuple([a.meta for a in args[:operands]])
            static = args[operands:]
            try:
                if key is not None:
                    signature, probe_args = key(*static, **kwargs)
                elif kwargs or len(static) != 1:
                    signature = (
                        static_key(static) if static else (),
                        tuple([(k, static_key(v)) for k, v in kwargs.items()]) if kwargs else (),
                    )
                    probe_args = (static, kwargs)
                else:  # one static argument: a shape or an int/None slice is keyed inline
                    probe_args = (static, kwargs)
                    only = static[0]
                    if type(only) is tuple and _ONLY_INT(map(type, only)):
                        signature = (only,)  # 1-tuple: never a general signature (a pair)
                    elif type(only) is slice and (
                        ((start := only.start) is None or type(start) is int)
                        and ((stop := only.stop) is None or type(stop) is int)
                        and ((step := only.step) is None or type(step) is int)
                    ):
                        signature = (start, stop, step)  # a triple: likewise
                    else:
                        signature = (static_key(static), ())
                cache_key = (cached, kind, metas, signature)
                program = _PROGRAMS.get(cache_key)
            except (UnkeyableError, TypeError):
                return _REFUSED
            if program is None:
                try:
                    program = _record(function, metas, probe_args)
                except Exception:
                    # Bad arguments: the uncached call raises the function's own error;
                    # if it does not, the function needs more than probes give.
                    ran = _Ran(function(*args, **kwargs))
                    _PROGRAMS.put(cache_key, _UNCACHEABLE)
                    return ran
                _PROGRAMS.put(cache_key, program)
            if program is _UNCACHEABLE:
                return program
            single = program.single
            return program if single is None else single

        return cached  # type: ignore[return-value]

    return decorate
