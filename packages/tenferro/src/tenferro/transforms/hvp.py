"""``hvp``: Hessian-vector products, forward over reverse."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tenferro.errors import (
    ParameterError,
    ShapeError,
)
from tenferro.transforms.arguments import _arg_leaves, _Args
from tenferro.transforms.grad import _call_value, _gradient_tree, grad
from tenferro.transforms.jvp import _check_tangents, _jvp_outputs, jvp
from tenferro.transforms.plans import _JVP_PROGRAMS, _Plan, _Trace, _traced_outputs
from tenferro.transforms.validation import _callable, _sequence


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
    result = tangent_call.release(primal_call.release(result))
    return result[0] if count == 1 else result
