"""``grad`` and ``value_and_grad``: reverse mode for real scalar functions."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, overload

from tenferro import lax
from tenferro.core.params import argnum_positions, as_argnums
from tenferro.core.pytree import TreeDef, flatten, unflatten
from tenferro.errors import (
    DTypeError,
    NonScalarError,
)
from tenferro.traced.ad import vjp_tensors
from tenferro.traced.tensor import TracedTensor
from tenferro.transforms.arguments import (
    _alias_leaves,
    _arg_leaves,
    _Args,
    _as_traced,
    _call,
    _leaf_ranges,
    _split,
)
from tenferro.transforms.plans import _GRAD_PROGRAMS, _Plan, _Trace, _traced_outputs
from tenferro.transforms.validation import (
    _Aux,
    _aux_pair,
    _bound,
    _callable,
    _check_has_aux,
    _pass_through,
)

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
A = TypeVar("A")

# Typing: the transformed function takes tensors, arrays, numbers and pytrees of them for
# every parameter (a function annotated ``x: tf.Tensor`` is called with numpy arrays), so
# its parameters are not checked; its result is typed: with ``argnums=0`` (the default)
# the gradient has the type of ``fun``'s first parameter (a gradient has its argument's
# structure), and the value the type ``fun`` returns.


@overload
def value_and_grad(
    fun: Callable[Concatenate[T, P], R], argnums: Literal[0] = 0, has_aux: Literal[False] = False
) -> Callable[..., tuple[R, T]]: ...
@overload
def value_and_grad(
    fun: Callable[Concatenate[T, P], R], argnums: Literal[0] = 0, *, has_aux: Literal[True]
) -> Callable[..., tuple[R, T]]: ...
@overload
def value_and_grad(
    fun: Callable[..., R], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., tuple[R, Any]]: ...
def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., tuple[Any, Any]]:
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
        _check_differentiable(call, positions, op)
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
        (value, aux_values), gradient = call.release(plan(call.arrays(), trace.shape.slots))
        return ((value, aux.rebuild(aux_values)), gradient) if has_aux else (value, gradient)

    return transformed


def _check_differentiable(call: _Args, positions: tuple[int, ...], op: str) -> None:
    """Each argument differentiated with respect to holds floating or complex values
    (checked before the function runs, so the error names the argument)."""
    ranges = _leaf_ranges(call.treedef, len(call.metas))
    for position in dict.fromkeys(positions):
        for leaf in ranges[position]:
            meta = call.metas[leaf]
            if meta.dtype.kind not in "fc":
                where = (
                    "" if len(ranges[position]) == 1 else f" (leaf {leaf - ranges[position].start})"
                )
                raise DTypeError(
                    op,
                    f"cannot differentiate with respect to argument {position}{where}, of "
                    f"dtype {meta.dtype}: derivatives need floating or complex values; pass "
                    f"it as floats (np.asarray(x, dtype=float), x.astype(tf.float64)) or "
                    f"leave it out of argnums",
                )


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


@overload
def grad(
    fun: Callable[Concatenate[T, P], Any],
    argnums: Literal[0] = 0,
    has_aux: Literal[False] = False,
) -> Callable[..., T]: ...
@overload
def grad(
    fun: Callable[Concatenate[T, P], tuple[Any, A]],
    argnums: Literal[0] = 0,
    *,
    has_aux: Literal[True],
) -> Callable[..., tuple[T, A]]: ...
@overload
def grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]: ...
def grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The gradient of a real scalar ``fun`` with respect to ``args[argnums]``
    (see :func:`value_and_grad`); with ``has_aux``, ``(gradient, aux)``."""
    both = _value_and_grad_transform(fun, argnums, has_aux, "grad")

    @functools.wraps(fun, updated=())
    def gradient(*args: Any, **kwargs: Any) -> Any:
        value, g = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return gradient
