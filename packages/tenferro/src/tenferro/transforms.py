"""JAX-style function transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``linearize``, ``hvp`` and ``jit``.

Called with concrete arguments (arrays, ``Tensor``s, Python scalars, or pytrees of
them), ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``linearize`` and ``hvp``
trace the function at every call, so they compute with the values it reads at
call time (closures, globals), as ``jax.grad`` does. What they cache is
*structure*: the derivative program of a traced computation is compiled once
per graph structure (arrays the function captured are program inputs, supplied
at each call) and reused by every later call, of any function, with the same
structure; the caches hold no user data. Scalars the function captures are
part of the structure (a changed scalar compiles a new program).

``jit`` traces once per argument signature and freezes what the function
captured, as ``jax.jit`` does (see :func:`jit`).

Called with traced arguments (inside another transform), a transform
differentiates symbolically and returns traced values, so transforms compose to
any order: ``grad(grad(f))``, ``jit(grad(f))``, ``jvp(grad(f), ...)`` (the HVP)
and so on. Inside a transform, arguments are fresh leaves standing for the
values passed (aliases), so a transform differentiates with respect to its own
arguments only, as in JAX.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable, Hashable, Sequence
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import numpy as np

from computegraph import BoundedCache, Input, gc_paused
from tenferro import lax
from tenferro.core.flags import check_flag
from tenferro.core.keys import AliasKey, ArgKey
from tenferro.core.params import argnum_positions, as_argnums, as_int_or_ints
from tenferro.core.pytree import TreeDef, count_leaves, describe, flatten, unflatten
from tenferro.errors import (
    ArgumentTypeError,
    DTypeError,
    NonScalarError,
    ParameterError,
    ShapeError,
    TenferroError,
)
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.traced.ad import jvp_tensors, vjp_tensors
from tenferro.traced.linear_split import LinearSplit
from tenferro.traced.program import TracedProgram
from tenferro.traced.structure import Structure, structure
from tenferro.traced.tensor import TracedTensor

__all__ = [
    "clear_caches",
    "grad",
    "hvp",
    "jit",
    "jvp",
    "linearize",
    "value_and_grad",
    "vjp",
]

P = ParamSpec("P")
R = TypeVar("R")

_caches: weakref.WeakSet[BoundedCache[Any, Any]] = weakref.WeakSet()


def _cache(name: str, maxsize: int = 128) -> BoundedCache[Any, Any]:
    cache: BoundedCache[Any, Any] = BoundedCache(maxsize, name)
    _caches.add(cache)
    return cache


_GRAD_PROGRAMS = _cache("value_and_grad programs", 256)
_JVP_PROGRAMS = _cache("jvp programs", 256)
_VJP_PROGRAMS = _cache("vjp programs", 256)
_FORWARD_PROGRAMS = _cache("forward programs", 256)
_LINEARIZE_PROGRAMS = _cache("linearize programs", 256)
"""Derivative (and forward) programs by traced structure, shared by every function."""


def clear_caches() -> None:
    """Drop every program cached by the function transforms."""
    for cache in _caches:
        cache.clear()


# ---------------------------------------------------------------------- validation


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


# ---------------------------------------------------------------------- arguments

_DEPTH: ContextVar[int] = ContextVar("tenferro_transform_trace_depth", default=0)
"""How many transform traces enclose the running code. Inside one, every transform is
symbolic (its results are traced values of the enclosing trace), so a function that
captures a value of an enclosing trace is differentiated correctly, as in JAX."""


def _call(fun: Callable[..., Any], args: Sequence[Any]) -> Any:
    """``fun(*args)`` as a trace (see ``_DEPTH``)."""
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        with gc_paused():  # tracing builds many long-lived keys and no cycles
            return fun(*args)
    finally:
        _DEPTH.reset(token)


class _Args:
    """Flattened call arguments: concrete values (arrays) or traced tensors."""

    __slots__ = ("metas", "traced", "treedef", "values")

    def __init__(self, args: tuple[Any, ...]) -> None:
        leaves, self.treedef = flatten(args)
        tensors = [asarray(leaf) for leaf in leaves]
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


# ---------------------------------------------------------------------- compiled plans


class _Plan:
    """A compiled program and how to rebuild the result structure."""

    __slots__ = ("metas", "out_treedef", "program")

    def __init__(self, outputs: list[TracedTensor], out_treedef: TreeDef) -> None:
        self.program = TracedProgram(tuple(o.key for o in outputs))
        self.metas = [o.meta for o in outputs]
        self.out_treedef = out_treedef

    def __call__(self, arrays: Sequence[Any], slots: Sequence[Any] = ()) -> Any:
        from tenferro.concrete import Tensor
        from tenferro.traced.program import _array

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


# ---------------------------------------------------------------------- jit


def jit(
    fun: Callable[P, R],
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[P, R]:
    """Trace ``fun`` once per argument signature, compile, and run the cached program.

    Like ``jax.jit``, the trace is cached by the arguments' tree structure, shapes,
    dtypes and weak typing, so ``jit`` *freezes* what ``fun`` reads from its closure
    or globals at that first trace: arrays and scalars captured there are constants
    of the compiled program, and later changes to them are not seen. Pass data that
    changes as arguments (or call ``tf.clear_caches()``). The other transforms
    (``grad``, ``vjp``, ``jvp``, ...) never freeze captured values.

    Keyword arguments are traced like positional ones. Arguments named by
    ``static_argnums`` (positions) or ``static_argnames`` (keywords) are passed to
    ``fun`` as they are -- Python values such as flags, sizes or strings -- and are
    part of the cache key: they must be hashable, and each distinct value traces
    anew. A parameter named in one list is static whichever way it is passed, when
    ``fun``'s signature says where it is. The cache is bounded (least recently used
    traces are dropped).
    """
    _callable(fun, "jit")
    numbers, names = _static_spec(fun, static_argnums, static_argnames)
    cache = _cache(f"jit({getattr(fun, '__name__', 'fun')})")

    @functools.wraps(fun, updated=())
    def compiled(*args: Any, **kwargs: Any) -> Any:
        static_positions = _static_positions(numbers, len(args))
        if static_positions or (names and kwargs):
            return _jit_static(fun, cache, args, kwargs, static_positions, names)
        call = _jit_args((args, kwargs) if kwargs else args)
        if call.traced:
            return fun(*args, **kwargs)

        def trace() -> _Plan:
            traced = _split(call.treedef, _arg_leaves(call.metas))
            if kwargs:
                traced_args, traced_kwargs = traced
                outputs, out_treedef = _traced_outputs(
                    _call(functools.partial(fun, **traced_kwargs), traced_args)
                )
            else:
                outputs, out_treedef = _traced_outputs(_call(fun, traced))
            return _Plan(outputs, out_treedef)

        key = ("keywords", call.signature()) if kwargs else call.signature()
        return cache.get_or_create(key, trace)(call.arrays())

    compiled.cache = cache  # type: ignore[attr-defined]
    return compiled


def _static_spec(
    fun: Callable[..., Any], argnums: int | Sequence[int], argnames: str | Sequence[str]
) -> tuple[tuple[int, ...], frozenset[str]]:
    """The static positions and names, each completed from ``fun``'s signature."""
    numbers = as_int_or_ints("jit", "static_argnums", argnums, ArgumentTypeError)
    names = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    if not numbers and not names:  # nothing to check or complete: no signature to read
        return (), frozenset()
    for name in names:
        if not isinstance(name, str):
            raise ArgumentTypeError("jit", f"static_argnames must be strings, got {argnames!r}")
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature: take the lists as given
        return numbers, frozenset(names)
    positional = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    outside = [n for n in numbers if not -len(positional) <= n < len(positional)]
    if outside and not variadic:
        raise ParameterError(
            "jit",
            f"static_argnums {tuple(outside)} are out of range for "
            f"{getattr(fun, '__name__', 'the function')} with {len(positional)} positional "
            f"parameter(s) {tuple(positional)}",
        )
    known = [n for n in numbers if -len(positional) <= n < len(positional)]
    unknown = [name for name in names if name not in {p.name for p in parameters}]
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        raise ParameterError(
            "jit",
            f"static_argnames {tuple(unknown)} are not parameters of "
            f"{getattr(fun, '__name__', 'the function')} {tuple(p.name for p in parameters)}",
        )
    more_names = {positional[n] for n in known}
    more_numbers = {i for i, name in enumerate(positional) if name in names}
    return tuple(sorted({*numbers, *more_numbers})), frozenset({*names, *more_names})


def _static_positions(numbers: tuple[int, ...], count: int) -> frozenset[int]:
    """The static positions among ``count`` positional arguments (others are absent)."""
    return frozenset(n % count for n in numbers if -count <= n < count)


def _hashable_static(what: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise ArgumentTypeError(
            "jit",
            f"static argument {what} is an unhashable {type(value).__name__} ({value!r}); "
            f"static arguments must be hashable (use a tuple instead of a list), or pass "
            f"it as a traced argument",
        ) from None


def _static_key(value: Any) -> Any:
    """A cache key of a static argument that tells apart what ``==`` does not but a
    function may: the type (``2``, ``2.0``, ``True``, ``np.float32(2)``) and a float's
    sign and NaN (``0.0`` and ``-0.0``), also inside tuples."""
    kind = type(value)
    if kind is float:
        return (float, value.hex())
    if kind is complex:
        return (complex, value.real.hex(), value.imag.hex())
    if isinstance(value, np.inexact):
        return (kind, value.tobytes())
    if kind is tuple:
        return (tuple, tuple([_static_key(item) for item in value]))
    return (kind, value)


def _jit_args(packed: Any) -> _Args:
    try:
        return _Args(packed)
    except (ArgumentTypeError, DTypeError) as error:
        raise ArgumentTypeError(
            "jit",
            f"{error}; pass Python values that are not arrays (strings, flags, sizes) as "
            f"static arguments (static_argnums / static_argnames)",
        ) from None


def _jit_static(
    fun: Callable[..., Any],
    cache: BoundedCache[Any, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_positions: frozenset[int],
    static_names: frozenset[str],
) -> Any:
    """A call with static arguments: they are keys of the cache, the rest is traced."""
    statics: list[tuple[Any, Any]] = []
    for position in sorted(static_positions):
        _hashable_static(f"{position}", args[position])
        statics.append((position, args[position]))
    for name in sorted(kwargs):
        if name in static_names:
            _hashable_static(f"{name!r}", kwargs[name])
            statics.append((name, kwargs[name]))
    dynamic_args = tuple(a for i, a in enumerate(args) if i not in static_positions)
    dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
    static_kwargs = {k: v for k, v in kwargs.items() if k in static_names}

    def full(traced_args: Sequence[Any], traced_kwargs: dict[str, Any]) -> Any:
        remaining = iter(traced_args)
        merged = [args[i] if i in static_positions else next(remaining) for i in range(len(args))]
        return fun(*merged, **traced_kwargs, **static_kwargs)

    call = _jit_args((dynamic_args, dynamic_kwargs))
    if call.traced:
        return fun(*args, **kwargs)

    def trace() -> _Plan:
        traced_args, traced_kwargs = _split(call.treedef, _arg_leaves(call.metas))
        return _Plan(*_traced_outputs(_call(full, (traced_args, traced_kwargs))))

    key = ("static", call.signature(), tuple([(at, _static_key(v)) for at, v in statics]))
    return cache.get_or_create(key, trace)(call.arrays())


# ---------------------------------------------------------------------- grad


def value_and_grad(
    fun: Callable[P, R], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[P, tuple[R, Any]]:
    """``(fun(*args), gradient)`` of a real scalar ``fun`` with respect to ``args[argnums]``.

    The gradient has the structure of the selected arguments (a tuple when
    ``argnums`` is a tuple); complex arguments get the conjugate-Wirtinger gradient
    (PyTorch's; the conjugate of JAX's). With ``has_aux``, ``fun`` returns
    ``(value, aux)`` and the result is ``((value, aux), gradient)``. Every call
    computes with the values ``fun`` reads at that time (see the module notes).
    """
    return _value_and_grad_transform(fun, argnums, has_aux, "value_and_grad")


def _value_and_grad_transform(
    fun: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool, op: str
) -> Callable[..., Any]:
    _callable(fun, op)
    argnums = as_argnums(op, argnums)
    _check_has_aux(has_aux, op)
    single = isinstance(argnums, int)

    @functools.wraps(fun, updated=())
    def transformed(*args: Any, **kwargs: Any) -> Any:
        target = _bound(fun, kwargs)
        positions = argnum_positions(op, argnums, len(args))
        try:
            call = _Args(args)
        except DTypeError:
            target, args, positions = _pass_through(target, args, positions, op)
            call = _Args(args)
        if call.traced:
            leaves = _alias_leaves(call.values)
            value, aux = _call_with_aux(target, call.treedef, leaves, has_aux, op)
            traced_aux = aux.traced
            (value, traced_aux), gradient = _gradient_tree(
                value,
                traced_aux,
                _flat_list(len(traced_aux)),
                call.treedef,
                leaves,
                positions,
                single,
                True,
                op,
            )
            return ((value, aux.rebuild(traced_aux)), gradient) if has_aux else (value, gradient)
        leaves = _arg_leaves(call.metas)
        value, aux = _call_with_aux(target, call.treedef, leaves, has_aux, op)
        trace = _Trace([value, *aux.traced], aux.key)

        def derive() -> _Plan:
            traced_value, *traced_aux = trace.outputs
            result = _gradient_tree(
                traced_value,
                traced_aux,
                _flat_list(len(traced_aux)),
                call.treedef,
                leaves,
                positions,
                single,
                True,
                op,
            )
            return _Plan(*_traced_outputs(result))

        key = (call.signature(), positions, single, trace.key)
        plan = _GRAD_PROGRAMS.get_or_create(key, derive)
        (value, aux_values), gradient = plan(call.arrays(), trace.shape.slots)
        return ((value, aux.rebuild(aux_values)), gradient) if has_aux else (value, gradient)

    return transformed


def _call_with_aux(
    fun: Callable[..., Any], treedef: TreeDef, leaves: list[TracedTensor], has_aux: bool, op: str
) -> tuple[TracedTensor, _Aux]:
    """Call ``fun`` on traced arguments: its value and its aux output (``None`` without
    ``has_aux``)."""
    result = _call(fun, _split(treedef, leaves))
    value, aux = _aux_pair(result, op) if has_aux else (result, None)
    return _as_traced(value), _Aux(aux)


def _flat_list(count: int) -> TreeDef:
    """The structure of a list of ``count`` leaves."""
    return flatten([0] * count)[1]


def _call_value(
    fun: Callable[..., Any], treedef: TreeDef, leaves: list[TracedTensor], has_aux: bool, op: str
) -> tuple[TracedTensor, list[TracedTensor], TreeDef]:
    """Call ``fun`` on traced arguments: its value and its aux outputs (flattened)."""
    result = _call(fun, _split(treedef, leaves))
    value, aux = _aux_pair(result, op) if has_aux else (result, None)
    aux_outputs, aux_def = _traced_outputs(aux)
    return _as_traced(value), aux_outputs, aux_def


def _gradient_tree(
    value: TracedTensor,
    aux_outputs: list[TracedTensor],
    aux_def: TreeDef,
    treedef: TreeDef,
    leaves: list[TracedTensor],
    positions: tuple[int, ...],
    single: bool,
    has_aux: bool,
    op: str,
) -> Any:
    if value.meta.shape != ():
        raise NonScalarError(op, f"the function must return a scalar, got shape {value.meta.shape}")
    if value.meta.dtype.kind != "f":
        raise DTypeError(
            op, f"the function must return a real floating scalar, got {value.meta.dtype}"
        )
    ranges = _leaf_ranges(treedef, len(leaves))
    selected = [i for p in positions for i in ranges[p]]
    wrt = [leaves[i] for i in selected]
    for leaf in wrt:
        if leaf.meta.dtype.kind not in "fc":
            raise DTypeError(
                op, f"cannot differentiate with respect to a {leaf.meta.dtype} argument"
            )
    grads = vjp_tensors([value], wrt, [lax.full_like(value, 1)])
    filled = [lax.zeros_like(w) if g is None else g for g, w in zip(grads, wrt, strict=True)]
    iterator = iter(filled)
    per_argument = [
        unflatten(treedef[1][p], [next(iterator) for _ in ranges[p]])  # type: ignore[index]
        for p in positions
    ]
    gradient = per_argument[0] if single else tuple(per_argument)
    if not has_aux:
        return (value, gradient)
    return ((value, unflatten(aux_def, aux_outputs)), gradient)


def grad(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[P, Any]:
    """The gradient of a real scalar ``fun`` with respect to ``args[argnums]``
    (see :func:`value_and_grad`); with ``has_aux``, ``(gradient, aux)``."""
    both = _value_and_grad_transform(fun, argnums, has_aux, "grad")

    @functools.wraps(fun, updated=())
    def gradient(*args: Any, **kwargs: Any) -> Any:
        value, g = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return gradient


# ---------------------------------------------------------------------- jvp / hvp / linearize


def jvp(
    fun: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    has_aux: bool = False,
) -> tuple[Any, ...]:
    """``(fun(*primals), J(primals) · tangents)`` (one tangent per primal, same structure;
    ``primals`` and ``tangents`` are tuples or lists, as in JAX). With ``has_aux``,
    ``fun`` returns ``(output, aux)`` and the result is ``(output, tangent, aux)``."""
    _callable(fun, "jvp")
    _check_has_aux(has_aux, "jvp")
    primals = _sequence(primals, "jvp", "primals")
    tangents = _sequence(tangents, "jvp", "tangents")
    if len(primals) != len(tangents):
        raise ShapeError("jvp", f"{len(tangents)} tangent(s) for {len(primals)} primal(s)")
    primal_call, tangent_call = _Args(primals), _Args(tangents)
    _check_tangents("jvp", primal_call, tangent_call)
    if has_aux:
        return _jvp_with_aux(fun, primal_call, tangent_call)
    if primal_call.traced or tangent_call.traced:
        return _jvp(
            fun,
            primal_call.treedef,
            _alias_leaves(primal_call.values),
            _tangent_leaves(tangent_call.values),
        )
    trace = _trace_call(fun, primal_call)
    plan = _jvp_plan(primal_call, tangent_call, trace)
    return plan(primal_call.arrays() + tangent_call.arrays(), trace.shape.slots)


def _jvp_with_aux(
    fun: Callable[..., Any], primal_call: _Args, tangent_call: _Args
) -> tuple[Any, Any, Any]:
    """``jvp(..., has_aux=True)``: the aux output is computed, never differentiated."""
    symbolic = primal_call.traced or tangent_call.traced
    leaves = _alias_leaves(primal_call.values) if symbolic else _arg_leaves(primal_call.metas)
    out, raw_aux = _aux_pair(_call(fun, _split(primal_call.treedef, leaves)), "jvp")
    aux = _Aux(raw_aux)
    outputs, out_def = _traced_outputs(out)
    if symbolic:
        primal_out, tangent_out = _jvp_outputs(
            outputs, out_def, leaves, _tangent_leaves(tangent_call.values)
        )
        return primal_out, tangent_out, raw_aux
    count = len(outputs)
    trace = _Trace([*outputs, *aux.traced], out_def)

    def derive() -> _Plan:
        primal_tree, tangent_tree = _jvp_outputs(
            trace.outputs[:count],
            out_def,
            _arg_leaves(primal_call.metas),
            _arg_leaves(tangent_call.metas, len(primal_call.metas)),
        )
        return _Plan(*_traced_outputs((primal_tree, tangent_tree, trace.outputs[count:])))

    key = ("aux", count, primal_call.signature(), tangent_call.signature(), trace.key)
    plan = _JVP_PROGRAMS.get_or_create(key, derive)
    primal_out, tangent_out, aux_values = plan(
        primal_call.arrays() + tangent_call.arrays(), trace.shape.slots
    )
    return primal_out, tangent_out, aux.rebuild(aux_values)


def _jvp_plan(primal_call: _Args, tangent_call: _Args, trace: _Trace) -> _Plan:
    def derive() -> _Plan:
        result = _jvp_outputs(
            trace.outputs,
            trace.treedef,
            _arg_leaves(primal_call.metas),
            _arg_leaves(tangent_call.metas, len(primal_call.metas)),
        )
        return _Plan(*_traced_outputs(result))

    key = (primal_call.signature(), tangent_call.signature(), trace.key)
    return _JVP_PROGRAMS.get_or_create(key, derive)


def _tangent_leaves(values: Sequence[Any]) -> list[TracedTensor]:
    return [_as_traced(v) for v in values]


def _check_tangents(op: str, primals: _Args, tangents: _Args) -> None:
    if primals.treedef != tangents.treedef:
        raise ShapeError(
            op,
            f"tangents must have the structure of the primals: tangents "
            f"{describe(tangents.treedef)}, primals {describe(primals.treedef)}",
        )
    for position, (p, t) in enumerate(zip(primals.metas, tangents.metas, strict=True)):
        if p.shape != t.shape or (p.dtype != t.dtype and p.dtype.kind in "fc"):
            raise ShapeError(
                op, f"tangent {position} is {t.describe()}, the primal is {p.describe()}"
            )


def _jvp(
    fun: Callable[..., Any],
    treedef: TreeDef,
    leaves: list[TracedTensor],
    tangents: list[TracedTensor],
) -> tuple[Any, Any]:
    outputs, out_treedef = _traced_outputs(_call(fun, _split(treedef, leaves)))
    return _jvp_outputs(outputs, out_treedef, leaves, tangents)


def _jvp_outputs(
    outputs: list[TracedTensor],
    out_treedef: TreeDef,
    leaves: list[TracedTensor],
    tangents: list[TracedTensor],
) -> tuple[Any, Any]:
    active = [i for i, leaf in enumerate(leaves) if leaf.meta.dtype.kind in "fc"]
    results = jvp_tensors(
        outputs, [leaves[i] for i in active], [_cast(tangents[i], leaves[i]) for i in active]
    )
    tangent_out = [
        lax.zeros_like(o) if r is None or o.meta.dtype.kind not in "fc" else r
        for r, o in zip(results, outputs, strict=True)
    ]
    return unflatten(out_treedef, outputs), unflatten(out_treedef, tangent_out)


def _cast(tangent: TracedTensor, leaf: TracedTensor) -> TracedTensor:
    if tangent.meta.dtype == leaf.meta.dtype:
        return tangent
    return lax.convert_element_type(tangent, leaf.meta.dtype)


def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the JVP at ``primals``,
    with the values ``fun`` read when ``linearize`` was called (``fun`` is traced once).

    As ``jax.linearize`` promises, the primal outputs and every primal value the JVP
    reads (the residuals) are computed here, once; ``jvp_fn`` evaluates only the linear
    map (its program is cached by the traced structure). With ``has_aux``, ``fun``
    returns ``(output, aux)`` and the result is ``(output, jvp_fn, aux)``."""
    _callable(fun, "linearize")
    _check_has_aux(has_aux, "linearize")
    if has_aux:
        return _linearize_with_aux(fun, primals)
    call = _Args(primals)
    if call.traced:

        def symbolic_jvp_fn(*tangents: Any) -> Any:
            return jvp(fun, primals, tangents)[1]

        return fun(*primals), symbolic_jvp_fn
    trace = _trace_call(fun, call)
    plan = _linearize_plan(call, trace)
    outputs, residual_values = plan.split.primal_values(call.arrays(), trace.shape.slots)
    out = plan.wrap(outputs, plan.primal_metas, plan.out_treedef)

    def jvp_fn(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise ShapeError(
                "linearize", f"{len(tangents)} tangent(s) for {len(primals)} primal(s)"
            )
        tangent_call = _Args(tangents)
        _check_tangents("linearize", call, tangent_call)
        if tangent_call.traced:
            return jvp(fun, primals, tangents)[1]
        arrays = [
            np.asarray(t, p.dtype) if p.dtype.kind in "fc" else t
            for t, p in zip(tangent_call.arrays(), call.metas, strict=True)
        ]
        values = plan.split.apply(residual_values, arrays)
        return plan.wrap(values, plan.tangent_metas, plan.out_treedef)

    return out, jvp_fn


def _linearize_with_aux(fun: Callable[..., Any], primals: tuple[Any, ...]) -> tuple[Any, ...]:
    """``linearize(..., has_aux=True)``: the aux output is evaluated by its own forward
    program (cached by structure), never differentiated."""
    found: list[Any] = []

    def main(*args: Any) -> Any:
        out, aux = _aux_pair(fun(*args), "linearize")
        found[:] = [aux]
        return out

    out, jvp_fn = linearize(main, *primals)
    call = _Args(primals)
    if call.traced:
        return out, jvp_fn, found[0]
    aux = _Aux(found[0])
    trace = _Trace(aux.traced, _flat_list(len(aux.positions)))
    values = _forward_plan(call, trace)(call.arrays(), trace.shape.slots)
    return out, jvp_fn, aux.rebuild(values)


class _LinearizePlan:
    """The primal/residual program and the linear program of one traced structure."""

    __slots__ = ("out_treedef", "primal_metas", "split", "tangent_metas")

    def __init__(self, call: _Args, trace: _Trace) -> None:
        count = len(call.metas)
        tangent_leaves = _arg_leaves(call.metas, count)
        primal_tree, tangent_tree = _jvp_outputs(
            trace.outputs, trace.treedef, _arg_leaves(call.metas), tangent_leaves
        )
        primal_out, self.out_treedef = _traced_outputs(primal_tree)
        tangent_out, _ = _traced_outputs(tangent_tree)
        self.primal_metas = [o.meta for o in primal_out]
        self.tangent_metas = [o.meta for o in tangent_out]

        def is_tangent(key: Any) -> bool:
            name = getattr(key, "key", None)
            return type(name) is ArgKey and name.position >= count

        def tangent_position(key: Any) -> int:
            return int(key.key.position) - count

        self.split = LinearSplit(
            [o.key for o in primal_out], [o.key for o in tangent_out], is_tangent, tangent_position
        )

    @staticmethod
    def wrap(values: Sequence[Any], metas: Sequence[Meta], treedef: TreeDef) -> Any:
        from tenferro.concrete import Tensor
        from tenferro.traced.program import _array

        tensors = [Tensor._wrap(_array(v), m.weak) for v, m in zip(values, metas, strict=True)]
        return unflatten(treedef, tensors)


def _linearize_plan(call: _Args, trace: _Trace) -> _LinearizePlan:
    return _LINEARIZE_PROGRAMS.get_or_create(
        (call.signature(), trace.key), lambda: _LinearizePlan(call, trace)
    )


def hvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product of a real scalar ``fun`` (forward over reverse):
    the derivative of ``grad(fun)`` along ``tangents`` (a tuple when there are several
    primals). ``fun`` is traced once per call (values read at call time); the HVP
    program is cached by the structure of that trace."""
    _callable(fun, "hvp")
    primals = _sequence(primals, "hvp", "primals")
    tangents = _sequence(tangents, "hvp", "tangents")
    count = len(primals)
    if count == 0:
        raise ParameterError("hvp", "needs at least one primal")
    if len(tangents) != count:
        raise ShapeError("hvp", f"{len(tangents)} tangent(s) for {count} primal(s)")
    primal_call, tangent_call = _Args(primals), _Args(tangents)
    _check_tangents("hvp", primal_call, tangent_call)
    positions = tuple(range(count))
    if primal_call.traced or tangent_call.traced:
        result = jvp(grad(fun, argnums=positions), primals, tangents)[1]
        return result[0] if count == 1 else result
    leaves = _arg_leaves(primal_call.metas)
    value, _, none_def = _call_value(fun, primal_call.treedef, leaves, False, "hvp")
    trace = _Trace([value], none_def)

    def derive() -> _Plan:
        (traced_value,) = trace.outputs
        _, gradient = _gradient_tree(
            traced_value, [], none_def, primal_call.treedef, leaves, positions, False, False, "hvp"
        )
        grad_leaves, grad_def = _traced_outputs(gradient)
        tangent_leaves = _arg_leaves(tangent_call.metas, len(leaves))
        _, tangent_out = _jvp_outputs(grad_leaves, grad_def, leaves, tangent_leaves)
        return _Plan(*_traced_outputs(tangent_out))

    key = ("hvp", primal_call.signature(), tangent_call.signature(), trace.key)
    plan = _JVP_PROGRAMS.get_or_create(key, derive)
    result = plan(primal_call.arrays() + tangent_call.arrays(), trace.shape.slots)
    return result[0] if count == 1 else result


# ---------------------------------------------------------------------- vjp


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` returns one cotangent per
    primal (conjugate convention); with ``has_aux``, ``(out, vjp_fn, aux)``. ``fun`` is
    traced once, with the values it reads when ``vjp`` is called."""
    _callable(fun, "vjp")
    _check_has_aux(has_aux, "vjp")
    call = _Args(primals)
    if call.traced:
        return _symbolic_vjp(fun, call, has_aux)
    result = _call(fun, _split(call.treedef, _arg_leaves(call.metas)))
    out, raw_aux = _aux_pair(result, "vjp") if has_aux else (result, None)
    aux_tree = _Aux(raw_aux)
    out_leaves, out_def = flatten(out)
    count = len(out_leaves)
    packed, packed_def = _traced_outputs((out, aux_tree.traced))
    trace = _Trace(packed, packed_def)
    out, aux_values = _forward_plan(call, trace)(call.arrays(), trace.shape.slots)
    aux = aux_tree.rebuild(aux_values)
    out_metas = [asarray(o).meta for o in flatten(out)[0]]

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        ct_call = _Args((cotangent,))
        if ct_call.traced:
            leaves = _alias_leaves(call.values)
            traced_out = _call(fun, _split(call.treedef, leaves))
            traced_out = _aux_pair(traced_out, "vjp")[0] if has_aux else traced_out
            outputs, _ = _traced_outputs(traced_out)
            return _vjp_result(
                call.treedef, leaves, outputs, [_as_traced(c) for c in ct_call.values]
            )
        if ct_call.treedef[1][0] != out_def:  # type: ignore[index]
            raise ShapeError(
                "vjp",
                f"the cotangent has structure {describe(ct_call.treedef[1][0])}, "  # type: ignore[index]
                f"the output {describe(out_def)}",
            )
        if [m.shape for m in ct_call.metas] != [m.shape for m in out_metas]:
            raise ShapeError(
                "vjp",
                f"cotangent shapes {[m.shape for m in ct_call.metas]} do not match "
                f"the output {[m.shape for m in out_metas]}",
            )

        def derive() -> _Plan:
            leaves = _arg_leaves(call.metas)
            cts = _arg_leaves(ct_call.metas, len(call.metas))
            result = _vjp_result(call.treedef, leaves, trace.outputs[:count], cts)
            return _Plan(*_traced_outputs(result))

        key = (call.signature(), ct_call.signature(), count, trace.key)
        plan = _VJP_PROGRAMS.get_or_create(key, derive)
        return plan(call.arrays() + ct_call.arrays(), trace.shape.slots)

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _symbolic_vjp(fun: Callable[..., Any], call: _Args, has_aux: bool) -> tuple[Any, ...]:
    leaves = _alias_leaves(call.values)
    result = _call(fun, _split(call.treedef, leaves))
    out, aux = _aux_pair(result, "vjp") if has_aux else (result, None)
    outputs, out_treedef = _traced_outputs(out)

    def symbolic_vjp(cotangent: Any) -> tuple[Any, ...]:
        cts, ct_treedef = flatten(cotangent)
        if ct_treedef != out_treedef:
            raise ShapeError(
                "vjp",
                f"the cotangent has structure {describe(ct_treedef)}, "
                f"the output {describe(out_treedef)}",
            )
        return _vjp_result(call.treedef, leaves, outputs, [_as_traced(c) for c in cts])

    packed = (unflatten(out_treedef, outputs), symbolic_vjp)
    return (*packed, aux) if has_aux else packed


def _vjp_result(
    treedef: TreeDef,
    leaves: list[TracedTensor],
    outputs: list[TracedTensor],
    cts: list[TracedTensor],
) -> tuple[Any, ...]:
    for position, (c, o) in enumerate(zip(cts, outputs, strict=True)):
        if not _fits(c.meta, o.meta):
            raise ShapeError(
                "vjp",
                f"cotangent {position} has shape {c.meta.shape}, the output {o.meta.describe()}",
            )
    cts = [
        _cast(
            c if c.meta.shape == o.meta.shape else c._rewrap(o.meta._replace(dtype=c.meta.dtype)), o
        )
        for c, o in zip(cts, outputs, strict=True)
    ]
    differentiable = [i for i, leaf in enumerate(leaves) if leaf.meta.dtype.kind in "fc"]
    active_outputs = [i for i, o in enumerate(outputs) if o.meta.dtype.kind in "fc"]
    results = (
        vjp_tensors(
            [outputs[i] for i in active_outputs],
            [leaves[i] for i in differentiable],
            [cts[i] for i in active_outputs],
        )
        if active_outputs and differentiable
        else [None] * len(differentiable)
    )
    by_leaf: dict[int, Any] = dict(zip(differentiable, results, strict=True))
    filled = [
        lax.zeros_like(leaf) if by_leaf.get(i) is None else by_leaf[i]
        for i, leaf in enumerate(leaves)
    ]
    return tuple(_split(treedef, filled))


def _fits(value: Meta, output: Meta) -> bool:
    """A value of ``value``'s shape can stand for ``output`` (data-dependent axes of the
    output only bound their extent)."""
    if value.shape == output.shape:
        return True
    if len(value.shape) != len(output.shape) or not output.dynamic:
        return False
    return all(
        n <= bound if axis in output.dynamic else n == bound
        for axis, (n, bound) in enumerate(zip(value.shape, output.shape, strict=True))
    )
