"""How the oracle database's ops among tenferro's common numerics (erf, erfc, ndtr, relu,
cross, nansum, nanmean) are written with their tenferro functions (joined to the core
table by oracle_table.py, overriding the core table's composites; conventions as in
oracle_ops.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from oracle_ops import Op, _axes, _unary

import tenferro as tf


def _nan_reduction(function: Any) -> Op:
    def apply(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        (a,) = xs
        dim = args[0] if args else kwargs.get("dim")
        return function(a, axis=_axes(a, dim), keepdims=bool(kwargs.get("keepdim", False)))

    return apply


def _cross(xs: list[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    a, b = xs
    dim = kwargs.get("dim")
    if dim is None:  # torch: the first axis of extent 3 of the broadcast shape
        shape = np.broadcast_shapes(a.shape, b.shape)
        dim = next(i for i, n in enumerate(shape) if n == 3) - len(shape)
    return tf.cross(a, b, axis=dim)


OPS: dict[str, Op] = {
    "erf": _unary(tf.erf),
    "erfc": _unary(tf.erfc),
    "special_ndtr": _unary(lambda a: 0.5 * tf.erfc(a * (-1 / math.sqrt(2)))),
    "nn_functional_relu": _unary(tf.relu),
    "cross": _cross,
    "nansum": _nan_reduction(tf.nansum),
    "nanmean": _nan_reduction(tf.nanmean),
}


def case_skip_reason(case: dict[str, Any], arrays: dict[str, np.ndarray[Any, Any]]) -> str | None:
    """Every case of these ops is replayed."""
    return None
