"""JAX-style function transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``linearize``, ``hvp`` and ``jit``.

Called with concrete arguments (arrays, ``Tensor``s, Python scalars, or pytrees of
them), a transform traces the function once per argument signature (shapes,
dtypes, weak typing, structure), derives and compiles one program, caches it
(bounded, clearable) and runs it; results are ``Tensor``s. Called with traced
arguments (inside another transform), it differentiates symbolically and returns
traced values, so transforms compose to any order: ``grad(grad(f))``,
``jit(grad(f))``, ``jvp(grad(f), ...)`` (the HVP) and so on.

Inside a transform, arguments are fresh leaves standing for the values passed
(aliases), so a transform differentiates with respect to its own arguments only,
as in JAX.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from computegraph import BoundedCache, Input
from tenferro import lax
from tenferro.core.keys import AliasKey, ArgKey
from tenferro.core.pytree import TreeDef, flatten, unflatten
from tenferro.errors import DTypeError, NonScalarError, ParameterError, ShapeError, TenferroError
from tenferro.meta import Meta
from tenferro.surface.convert import asarray
from tenferro.traced.ad import jvp_tensors, vjp_tensors
from tenferro.traced.program import TracedProgram
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

_caches: weakref.WeakSet[BoundedCache[Any, Any]] = weakref.WeakSet()


def _cache(name: str) -> BoundedCache[Any, Any]:
    cache: BoundedCache[Any, Any] = BoundedCache(128, name)
    _caches.add(cache)
    return cache


def clear_caches() -> None:
    """Drop every program cached by the function transforms."""
    for cache in _caches:
        cache.clear()


# ---------------------------------------------------------------------- arguments


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
        self.traced = any(isinstance(t, TracedTensor) for t in tensors)
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


def _positions(argnums: int | Sequence[int], count: int, op: str) -> tuple[int, ...]:
    listed = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for position in listed:
        if not -count <= position < count:
            raise ParameterError(
                op, f"argnums {argnums!r} out of range for {count} positional argument(s)"
            )
    return tuple(p % count for p in listed)


def _split(treedef: TreeDef, leaves: list[Any]) -> list[Any]:
    """Top-level positional arguments of the flattened ``args`` tuple."""
    return list(unflatten(treedef, leaves))


def _leaf_ranges(treedef: TreeDef, count: int) -> list[range]:
    """For each top-level argument, the range of its leaves in the flat list."""
    ranges, start = [], 0
    for child in treedef[1]:  # type: ignore[index]
        size = _count(child)
        ranges.append(range(start, start + size))
        start += size
    return ranges


def _count(node: Any) -> int:
    kind = node[0]
    if kind == "*":
        return 1
    if kind == "none":
        return 0
    children = node[1] if kind != "dict" else node[2]
    return sum(_count(child) for child in children)


# ---------------------------------------------------------------------- compiled plans


class _Plan:
    """A compiled program and how to rebuild the result structure."""

    __slots__ = ("metas", "out_treedef", "program")

    def __init__(self, outputs: list[TracedTensor], out_treedef: TreeDef) -> None:
        self.program = TracedProgram(tuple(o.key for o in outputs))
        self.metas = [o.meta for o in outputs]
        self.out_treedef = out_treedef

    def __call__(self, arrays: Sequence[Any]) -> Any:
        from tenferro.tensor import Tensor
        from tenferro.traced.program import _array

        values = self.program.run(arrays)
        tensors = [Tensor._wrap(_array(v), m.weak) for v, m in zip(values, self.metas, strict=True)]
        return unflatten(self.out_treedef, tensors)


def _traced_outputs(result: Any) -> tuple[list[TracedTensor], TreeDef]:
    leaves, treedef = flatten(result)
    return [_as_traced(leaf) for leaf in leaves], treedef


# ---------------------------------------------------------------------- jit


def jit(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Trace ``fun`` once per argument signature, compile, and run the cached program."""
    cache = _cache(f"jit({getattr(fun, '__name__', 'fun')})")

    @functools.wraps(fun, updated=())
    def compiled(*args: Any) -> Any:
        call = _Args(args)
        if call.traced:
            return fun(*args)

        def trace() -> _Plan:
            traced_args = _split(call.treedef, _arg_leaves(call.metas))
            outputs, out_treedef = _traced_outputs(fun(*traced_args))
            return _Plan(outputs, out_treedef)

        return cache.get_or_create(call.signature(), trace)(call.arrays())

    compiled.cache = cache  # type: ignore[attr-defined]
    return compiled


# ---------------------------------------------------------------------- grad


def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``(fun(*args), gradient)`` of a real scalar ``fun`` with respect to ``args[argnums]``.

    The gradient has the structure of the selected arguments (a tuple when
    ``argnums`` is a tuple); complex arguments get the conjugate-Wirtinger gradient
    (PyTorch's; the conjugate of JAX's). With ``has_aux``, ``fun`` returns
    ``(value, aux)`` and the result is ``((value, aux), gradient)``.
    """
    cache = _cache(f"value_and_grad({getattr(fun, '__name__', 'fun')})")

    @functools.wraps(fun, updated=())
    def transformed(*args: Any) -> Any:
        call = _Args(args)
        positions = _positions(argnums, len(args), "grad")
        if call.traced:
            leaves = _alias_leaves(call.values)
            return _value_and_grad(fun, call.treedef, leaves, positions, argnums, has_aux)

        def trace() -> _Plan:
            leaves = _arg_leaves(call.metas)
            result = _value_and_grad(fun, call.treedef, leaves, positions, argnums, has_aux)
            outputs, out_treedef = _traced_outputs(result)
            return _Plan(outputs, out_treedef)

        return cache.get_or_create((call.signature(), positions, has_aux), trace)(call.arrays())

    return transformed


def _value_and_grad(
    fun: Callable[..., Any],
    treedef: TreeDef,
    leaves: list[TracedTensor],
    positions: tuple[int, ...],
    argnums: int | Sequence[int],
    has_aux: bool,
) -> Any:
    args = _split(treedef, leaves)
    result = fun(*args)
    value, aux = result if has_aux else (result, None)
    value = _as_traced(value)
    if value.meta.shape != ():
        raise NonScalarError(
            "grad", f"the function must return a scalar, got shape {value.meta.shape}"
        )
    if value.meta.dtype.kind != "f":
        raise DTypeError(
            "grad", f"the function must return a real floating scalar, got {value.meta.dtype}"
        )
    ranges = _leaf_ranges(treedef, len(leaves))
    selected = [i for p in positions for i in ranges[p]]
    wrt = [leaves[i] for i in selected]
    for leaf in wrt:
        if leaf.meta.dtype.kind not in "fc":
            raise DTypeError(
                "grad", f"cannot differentiate with respect to a {leaf.meta.dtype} argument"
            )
    grads = vjp_tensors([value], wrt, [lax.full_like(value, 1)])
    filled = [lax.zeros_like(w) if g is None else g for g, w in zip(grads, wrt, strict=True)]
    iterator = iter(filled)
    per_argument = [
        unflatten(treedef[1][p], [next(iterator) for _ in ranges[p]])  # type: ignore[index]
        for p in positions
    ]
    gradient = per_argument[0] if isinstance(argnums, int) else tuple(per_argument)
    return ((value, aux), gradient) if has_aux else (value, gradient)


def grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The gradient of a real scalar ``fun`` with respect to ``args[argnums]``
    (see :func:`value_and_grad`); with ``has_aux``, ``(gradient, aux)``."""
    both = value_and_grad(fun, argnums, has_aux)

    @functools.wraps(fun, updated=())
    def gradient(*args: Any) -> Any:
        value, g = both(*args)
        return (g, value[1]) if has_aux else g

    return gradient


# ---------------------------------------------------------------------- jvp / hvp / linearize


def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """``(fun(*primals), J(primals) · tangents)`` (one tangent per primal, same structure)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ShapeError("jvp", f"{len(tangents)} tangent(s) for {len(primals)} primal(s)")
    primal_call, tangent_call = _Args(primals), _Args(tangents)
    _check_tangents("jvp", primal_call, tangent_call)
    if primal_call.traced or tangent_call.traced:
        return _jvp(
            fun,
            primal_call.treedef,
            _alias_leaves(primal_call.values),
            _tangent_leaves(tangent_call.values),
        )
    cache = _function_cache(fun, "jvp")

    def trace() -> _Plan:
        n = len(primal_call.metas)
        result = _jvp(
            fun,
            primal_call.treedef,
            _arg_leaves(primal_call.metas),
            _arg_leaves(tangent_call.metas, n),
        )
        outputs, out_treedef = _traced_outputs(result)
        return _Plan(outputs, out_treedef)

    plan = cache.get_or_create((primal_call.signature(), tangent_call.signature()), trace)
    return plan(primal_call.arrays() + tangent_call.arrays())


def _tangent_leaves(values: Sequence[Any]) -> list[TracedTensor]:
    return [_as_traced(v) for v in values]


def _check_tangents(op: str, primals: _Args, tangents: _Args) -> None:
    if primals.treedef != tangents.treedef:
        raise ShapeError(op, "tangents must have the structure of the primals")
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
    out = fun(*_split(treedef, leaves))
    outputs, out_treedef = _traced_outputs(out)
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


def linearize(fun: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(fun(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the JVP at ``primals``."""
    out = _memo_on(fun, "jit", lambda: jit(fun))(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(fun, primals, tangents)[1]

    return out, jvp_fn


def hvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product of a real scalar ``fun`` (forward over reverse):
    the derivative of ``grad(fun)`` along ``tangents`` (a tuple when there are several
    primals)."""
    primals, tangents = tuple(primals), tuple(tangents)
    count = len(primals)
    gradient = _memo_on(fun, f"grad{count}", lambda: grad(fun, argnums=tuple(range(count))))
    result = jvp(gradient, primals, tangents)[1]
    return result[0] if count == 1 else result


_MEMO = "__tenferro_memo__"


def _memo_on(fun: Callable[..., Any], name: str, make: Callable[[], Any]) -> Any:
    """A derived transform of ``fun``, kept on ``fun`` (so its program cache is reused by
    later calls with the same function). The memo records its owner: a copy made by
    ``functools.wraps`` on another function is recognised as foreign and ignored."""
    memo: tuple[weakref.ref[Any], dict[str, Any]] | None = getattr(fun, _MEMO, None)
    if memo is None or memo[0]() is not fun:
        try:
            memo = (weakref.ref(fun), {})
            setattr(fun, _MEMO, memo)
        except (AttributeError, TypeError):  # builtins, bound methods: no memo
            return make()
    found = memo[1].get(name)
    if found is None:
        found = memo[1][name] = make()
    return found


# ---------------------------------------------------------------------- vjp


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` returns one cotangent per
    primal (conjugate convention); with ``has_aux``, ``(out, vjp_fn, aux)``."""
    call = _Args(primals)
    if call.traced:
        leaves = _alias_leaves(call.values)
        result = fun(*_split(call.treedef, leaves))
        out, aux = result if has_aux else (result, None)
        outputs, out_treedef = _traced_outputs(out)

        def symbolic_vjp(cotangent: Any) -> tuple[Any, ...]:
            cts, ct_treedef = flatten(cotangent)
            if ct_treedef != out_treedef:
                raise ShapeError("vjp", "the cotangent must have the structure of the output")
            return _vjp_result(call.treedef, leaves, outputs, [_as_traced(c) for c in cts])

        packed = (unflatten(out_treedef, outputs), symbolic_vjp)
        return (*packed, aux) if has_aux else packed

    cache = _function_cache(fun, "vjp")

    def forward() -> _Plan:
        result = fun(*_split(call.treedef, _arg_leaves(call.metas)))
        out, aux = result if has_aux else (result, None)
        outputs, out_treedef = _traced_outputs((out, aux) if has_aux else out)
        return _Plan(outputs, out_treedef)

    forward_plan = cache.get_or_create(("forward", call.signature(), has_aux), forward)
    result = forward_plan(call.arrays())
    out, aux = result if has_aux else (result, None)
    out_leaves, out_treedef = flatten(out)
    out_metas = [asarray(o).meta for o in out_leaves]

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        ct_call = _Args((cotangent,))
        if ct_call.traced:
            leaves = _alias_leaves(call.values)
            traced_out = fun(*_split(call.treedef, leaves))
            traced_out = traced_out[0] if has_aux else traced_out
            outputs, _ = _traced_outputs(traced_out)
            return _vjp_result(
                call.treedef, leaves, outputs, [_as_traced(c) for c in ct_call.values]
            )
        if [m.shape for m in ct_call.metas] != [m.shape for m in out_metas]:
            raise ShapeError(
                "vjp",
                f"cotangent shapes {[m.shape for m in ct_call.metas]} do not match "
                f"the output {[m.shape for m in out_metas]}",
            )

        def backward() -> _Plan:
            leaves = _arg_leaves(call.metas)
            traced_out = fun(*_split(call.treedef, leaves))
            traced_out = traced_out[0] if has_aux else traced_out
            outputs, _ = _traced_outputs(traced_out)
            cts = _arg_leaves(ct_call.metas, len(call.metas))
            result = _vjp_result(call.treedef, leaves, outputs, cts)
            flat, treedef = _traced_outputs(result)
            return _Plan(flat, treedef)

        plan = cache.get_or_create(
            ("backward", call.signature(), ct_call.signature(), has_aux), backward
        )
        return plan(call.arrays() + ct_call.arrays())

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


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


def _function_cache(fun: Callable[..., Any], kind: str) -> BoundedCache[Any, Any]:
    """One program cache per (function, transform), kept on the function when possible."""
    return _memo_on(
        fun, f"{kind}_cache", lambda: _cache(f"{kind}({getattr(fun, '__name__', 'fun')})")
    )
