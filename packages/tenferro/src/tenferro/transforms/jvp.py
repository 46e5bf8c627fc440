"""``jvp``: forward mode, the output and its tangent along given directions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tenferro import lax
from tenferro.core.pytree import TreeDef, describe, unflatten
from tenferro.errors import (
    ShapeError,
)
from tenferro.traced.ad import jvp_tensors
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import (
    _alias_leaves,
    _arg_leaves,
    _Args,
    _as_traced,
    _call,
    _split,
)
from tenferro.transforms.plans import _JVP_PROGRAMS, _Plan, _Trace, _trace_call, _traced_outputs
from tenferro.transforms.validation import _Aux, _aux_pair, _callable, _check_has_aux, _sequence


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
    outputs: tuple[Any, ...] = plan(primal_call.arrays() + tangent_call.arrays(), trace.shape.slots)
    return outputs


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
