"""``linearize``: the output and a function evaluating only the JVP's linear map."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tenferro.concrete import Tensor
from tenferro.core.keys import ArgKey
from tenferro.core.pytree import TreeDef, unflatten
from tenferro.errors import (
    ShapeError,
)
from tenferro.meta import Meta
from tenferro.traced.linear_split import LinearSplit
from tenferro.traced.program import _array
from tenferro.transforms.arguments import _arg_leaves, _Args
from tenferro.transforms.grad import _flat_list
from tenferro.transforms.jvp import _check_tangents, _jvp_outputs, jvp
from tenferro.transforms.plans import (
    _LINEARIZE_PROGRAMS,
    _forward_plan,
    _Trace,
    _trace_call,
    _traced_outputs,
)
from tenferro.transforms.validation import _Aux, _aux_pair, _callable, _check_has_aux


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
        tensors = [Tensor._wrap(_array(v), m.weak) for v, m in zip(values, metas, strict=True)]
        return unflatten(treedef, tensors)


def _linearize_plan(call: _Args, trace: _Trace) -> _LinearizePlan:
    plan: _LinearizePlan = _LINEARIZE_PROGRAMS.get_or_create(
        (call.signature(), trace.key), lambda: _LinearizePlan(call, trace)
    )
    return plan
