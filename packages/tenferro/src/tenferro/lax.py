"""``tenferro.lax``: one strict function per primitive, for any tensor kind.

No broadcasting and no promotion: operands of a primitive share shapes and dtypes
as the primitive requires (the numpy-style functions of ``tenferro`` insert
``broadcast_in_dim`` and ``convert_element_type`` for you). The same functions
serve concrete tensors, eager tensors, traced tensors and AD rules, where they
emit operations into the transform's graph. Semantics follow ``jax.lax`` and
StableHLO.
"""

from __future__ import annotations

from typing import Any

from tenferro.meta import Meta
from tenferro.ops.analytic import cos, exp, expm1, log, log1p, pow, rsqrt, sin, sqrt, tanh
from tenferro.ops.contraction import dot_general
from tenferro.ops.dynamic import constant, dynamic_truncate, pad_to_match, shape_of
from tenferro.ops.elementwise import (
    abs,
    add,
    clamp,
    compare,
    complex,
    conj,
    div,
    imag,
    max,
    min,
    mul,
    neg,
    real,
    rem,
    round,
    select,
    sign,
    sub,
)
from tenferro.ops.indexing import (
    concatenate,
    dynamic_slice,
    dynamic_update_slice,
    gather,
    pad,
    scatter_add,
    slice,
)
from tenferro.ops.reduction import (
    reduce_max,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reduce_sum_squares,
)
from tenferro.ops.structural import (
    broadcast_in_dim,
    convert_element_type,
    embed_diag,
    extract_diag,
    reshape,
    rev,
    transpose,
    tril,
    triu,
)
from tenferro.ops.undefined import no_derivative
from tidu import RuleContractError

__all__ = [
    "abs",
    "add",
    "add_tangents",
    "broadcast_in_dim",
    "clamp",
    "compare",
    "complex",
    "concatenate",
    "conj",
    "constant",
    "convert_element_type",
    "cos",
    "div",
    "dot_general",
    "dynamic_slice",
    "dynamic_truncate",
    "dynamic_update_slice",
    "embed_diag",
    "exp",
    "expm1",
    "extract_diag",
    "full",
    "full_like",
    "gather",
    "imag",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "max",
    "min",
    "mul",
    "neg",
    "no_derivative",
    "not_linear",
    "pad",
    "pad_to_match",
    "pow",
    "real",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reduce_sum_squares",
    "rem",
    "reshape",
    "rev",
    "round",
    "rsqrt",
    "scatter_add",
    "select",
    "shape_of",
    "sign",
    "sin",
    "slice",
    "sqrt",
    "sub",
    "sub_tangents",
    "tanh",
    "transpose",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]


def full(meta: Meta, value: Any, like: Any) -> Any:
    """A value of ``meta``'s shape and dtype filled with ``value`` (kind taken from ``like``).

    Data-dependent axes of ``meta`` take their runtime extent from ``like``.
    """
    filled = broadcast_in_dim(constant(value, meta.dtype, like), meta.shape, ())
    for axis in meta.dynamic:
        filled = dynamic_truncate(filled, shape_of(like, axis), axis)
    return filled


def full_like(x: Any, value: Any) -> Any:
    """``x``'s shape and dtype filled with ``value``."""
    return full(x.meta, value, x)


def zeros(meta: Meta, like: Any) -> Any:
    return full(meta, 0, like)


def zeros_like(x: Any) -> Any:
    return full(x.meta, 0, x)


def add_tangents(a: Any, b: Any) -> Any:
    """``a + b`` where ``None`` is a symbolic zero."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


def sub_tangents(a: Any, b: Any) -> Any:
    """``a - b`` where ``None`` is a symbolic zero."""
    if b is None:
        return a
    if a is None:
        return neg(b)
    return sub(a, b)


def logical_and(a: Any, b: Any) -> Any:
    return select(a, b, zeros_like(b))


def logical_or(a: Any, b: Any) -> Any:
    return select(a, full_like(a, True), b)


def logical_not(a: Any) -> Any:
    return compare(a, zeros_like(a), "eq")


def not_linear(primitive: Any, what: str) -> RuleContractError:
    """The error for a transpose asked of a primitive used non-linearly."""
    return RuleContractError(
        f"{primitive.name} is not linear in {what}; it cannot be transposed so"
    )
