"""``jit``: trace once per argument signature, compile, run the cached program."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from computegraph import BoundedCache
from tenferro.core.params import as_int_or_ints
from tenferro.errors import (
    ArgumentTypeError,
    DTypeError,
    ParameterError,
)
from tenferro.transforms.arguments import _arg_leaves, _Args, _call, _split
from tenferro.transforms.plans import _cache, _Plan, _traced_outputs
from tenferro.transforms.validation import _callable
from tenferro.transforms.xla import (
    MISS,
    FastLane,
    Lowered,
    XlaPlan,
    check_backend,
    current_backend,
    device_leaf,
)

P = ParamSpec("P")
R = TypeVar("R")


def jit(
    fun: Callable[P, R],
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    *,
    backend: str | None = None,
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

    ``backend`` says where the compiled program runs: ``"numpy"`` (numpy and scipy
    kernels, one by one) or ``"xla"`` (the whole program compiled by XLA through JAX,
    on CPU, GPU or TPU: ``pip install 'tenferro[xla]'``). ``None`` (the default) takes
    the backend of the enclosing ``tf.default_backend(...)`` block at each call, else
    ``"numpy"``. Every transform inside ``fun`` is tenferro's own on both backends (JAX
    never differentiates), so values and derivatives agree. On ``"xla"``, JAX arrays
    in give JAX arrays out on their devices (sharded inputs keep their sharding), and
    other inputs give ``tf.Tensor``s; ``compiled.lower(*args)`` gives the program's
    StableHLO (``.as_stablehlo()``) and a ``jax.export.Exported`` (``.export()``). A
    ``jit`` called inside another transform is part of that transform's program.
    """
    _callable(fun, "jit")
    if backend is not None:
        check_backend("jit", backend)
    numbers, names = _static_spec(fun, static_argnums, static_argnames)
    cache = _cache(f"jit({getattr(fun, '__name__', 'fun')})")

    lane = FastLane(f"jit({getattr(fun, '__name__', 'fun')})")

    def run(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        chosen: str,
        lowering: bool,
        lane_key: Any = None,
    ) -> Any:
        static_positions = _static_positions(numbers, len(args))
        if static_positions or (names and kwargs):
            return _jit_static(fun, cache, args, kwargs, static_positions, names, chosen, lowering)
        call = _jit_args((args, kwargs) if kwargs else args, chosen)
        if call.traced:
            if lowering:
                raise ArgumentTypeError("jit.lower", "needs concrete arguments, got traced ones")
            return fun(*args, **kwargs)

        def trace() -> _Plan | XlaPlan:
            traced = _split(call.treedef, _arg_leaves(call.metas))
            if kwargs:
                traced_args, traced_kwargs = traced
                outputs, out_treedef = _traced_outputs(
                    _call(functools.partial(fun, **traced_kwargs), traced_args)
                )
            else:
                outputs, out_treedef = _traced_outputs(_call(fun, traced))
            return _PLANS[chosen](outputs, out_treedef)

        key = ("keywords", call.signature()) if kwargs else call.signature()
        plan = cache.get_or_create((chosen, key), trace)
        if lane_key is not None and isinstance(plan, XlaPlan):
            return plan(call.arrays(), lane, lane_key)
        return call.release(_finish(plan, call.arrays(), lowering))

    @functools.wraps(fun, updated=())
    def compiled(*args: Any, **kwargs: Any) -> Any:
        chosen = backend or current_backend()
        if chosen == "xla" and not kwargs and not numbers:
            # the steady state of a call of JAX arrays (see FastLane)
            result = lane.call(args)
            if result is not MISS:
                return result
            return run(args, kwargs, chosen, False, lane.key(args))
        return run(args, kwargs, chosen, False)

    def lower(*args: Any, **kwargs: Any) -> Lowered:
        """The function lowered to XLA for these arguments: ``.as_stablehlo()`` gives
        its StableHLO text, ``.export()`` a ``jax.export.Exported``."""
        lowered: Lowered = run(args, kwargs, "xla", True)
        return lowered

    compiled.cache = cache  # type: ignore[attr-defined]
    compiled.lower = lower  # type: ignore[attr-defined]
    return compiled


_PLANS: dict[str, Callable[[Any, Any], _Plan | XlaPlan]] = {"numpy": _Plan, "xla": XlaPlan}


def _finish(plan: Any, arrays: list[Any], lowering: bool) -> Any:
    """Run ``plan`` on ``arrays``, or (``lowering``) lower it for them."""
    if lowering:
        return plan.lower(arrays)
    return plan(arrays)


def _static_spec(
    fun: Callable[..., Any], argnums: int | Sequence[int], argnames: str | Sequence[str]
) -> tuple[tuple[int, ...], frozenset[str]]:
    """The static positions and names, each completed from ``fun``'s signature."""
    numbers = as_int_or_ints("jit", "static_argnums", argnums, ArgumentTypeError)
    if isinstance(argnames, str):
        names: tuple[Any, ...] = (argnames,)
    elif isinstance(argnames, (list, tuple, set, frozenset)):
        names = tuple(argnames)
    else:
        raise ArgumentTypeError(
            "jit",
            f"static_argnames must be a parameter name or a sequence of names, got {argnames!r}",
        )
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


def _jit_args(packed: Any, backend: str = "numpy") -> _Args:
    try:
        return _Args(packed, convert=device_leaf) if backend == "xla" else _Args(packed)
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
    backend: str,
    lowering: bool,
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

    call = _jit_args((dynamic_args, dynamic_kwargs), backend)
    if call.traced:
        if lowering:
            raise ArgumentTypeError("jit.lower", "needs concrete arguments, got traced ones")
        return fun(*args, **kwargs)

    def trace() -> _Plan | XlaPlan:
        traced_args, traced_kwargs = _split(call.treedef, _arg_leaves(call.metas))
        return _PLANS[backend](*_traced_outputs(_call(full, (traced_args, traced_kwargs))))

    key = ("static", call.signature(), tuple([(at, _static_key(v)) for at, v in statics]))
    plan = cache.get_or_create((backend, key), trace)
    return call.release(_finish(plan, call.arrays(), lowering))
