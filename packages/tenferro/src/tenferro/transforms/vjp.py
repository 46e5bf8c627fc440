"""``vjp``: the output and a function pulling cotangents back to the arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenferro import lax
from tenferro.core.kinds import asarray
from tenferro.core.pytree import TreeDef, describe, flatten, unflatten
from tenferro.errors import (
    ShapeError,
)
from tenferro.meta import Meta
from tenferro.traced.ad import vjp_tensors
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import (
    _alias_leaves,
    _arg_leaves,
    _Args,
    _as_traced,
    _call,
    _split,
)
from tenferro.transforms.jvp import _cast
from tenferro.transforms.plans import _VJP_PROGRAMS, _forward_plan, _Plan, _Trace, _traced_outputs
from tenferro.transforms.validation import _Aux, _aux_pair, _callable, _check_has_aux


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
        cotangents: tuple[Any, ...] = plan(call.arrays() + ct_call.arrays(), trace.shape.slots)
        return cotangents

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
