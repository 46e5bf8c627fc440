"""The vector spaces the iterative solvers work in, and users' maps on them.

A solver's unknown is a pytree of tensors of one inexact dtype (an MPS site tensor, a
pair of environment tensors, a plain vector). Its kernels see it as one flat numpy
vector (:class:`Space` joins and splits the leaves); users' functions see the pytree.
:func:`close_map` turns a user's map on the pytree (an operator, a fixed-point map, a
residual) into a :class:`~tenferro.solvers.closure.ClosedFunction` of the leaves and
the parameters, and checks that it maps the space into itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.checks import check_static
from tenferro.core.kinds import asarray
from tenferro.core.pytree import TreeDef, describe, flatten, unflatten
from tenferro.errors import DTypeError, ShapeError, TenferroError
from tenferro.meta import Meta
from tenferro.solvers.closure import ClosedFunction, close

__all__ = ["Space", "close_map", "leaves_of", "promoted", "tensors_of"]

Array = np.ndarray[Any, Any]


class Space:
    """The flat vector of the leaves ``metas`` (one dtype), C order, leaf after leaf."""

    __slots__ = ("dtype", "metas", "offsets", "size")

    def __init__(self, metas: Sequence[Meta]) -> None:
        self.metas = tuple(metas)
        self.dtype = self.metas[0].dtype
        offsets = [0]
        for meta in self.metas:
            offsets.append(offsets[-1] + meta.size)
        self.offsets = tuple(offsets)
        self.size = offsets[-1]

    def join(self, arrays: Sequence[Any]) -> Array:
        if len(arrays) == 1:
            return np.asarray(arrays[0], self.dtype).reshape(-1)
        return np.concatenate([np.asarray(a, self.dtype).reshape(-1) for a in arrays])

    def split(self, flat: Array) -> list[Array]:
        bounds = zip(self.offsets[:-1], self.offsets[1:], strict=True)
        return [
            flat[start:stop].reshape(meta.shape)
            for (start, stop), meta in zip(bounds, self.metas, strict=True)
        ]

    def zeros(self) -> Array:
        return np.zeros(self.size, self.dtype)


def tensors_of(op: str, what: str, value: Any, dtype: Any = None) -> tuple[list[Any], TreeDef]:
    """The leaves of the pytree ``value`` as tensors of one kind and one inexact dtype
    (integers and bool promote to float64, mixed leaves to their common type; ``dtype``
    raises the common type further), with static shapes."""
    leaves, treedef = flatten(value)
    if not leaves:
        raise ShapeError(op, f"{what} holds no tensor")
    try:
        tensors = lift([asarray(leaf) for leaf in leaves])
    except TenferroError:
        kinds = ", ".join(type(leaf).__name__ for leaf in leaves)
        raise DTypeError(op, f"{what} must hold tensors, got {kinds}") from None
    dtypes = [_inexact(t.meta.dtype) for t in tensors]
    common = np.result_type(*dtypes, *([] if dtype is None else [dtype]))
    for tensor in tensors:
        check_static(op, tensor.meta, what)
    return [
        t if t.meta.dtype == common else lax.convert_element_type(t, common) for t in tensors
    ], treedef


def _inexact(dt: np.dtype[Any]) -> np.dtype[Any]:
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def leaves_of(values: Sequence[Any]) -> tuple[list[Any], TreeDef]:
    """Parameters (a sequence of pytrees) as a flat list of tensors (any dtypes)."""
    leaves, treedef = flatten(tuple(values))
    return [asarray(leaf) for leaf in leaves], treedef


def close_map(
    op: str,
    call: Callable[[Any, list[Any]], Any],
    treedef: TreeDef,
    metas: Sequence[Meta],
    params: Sequence[Any],
    what: str,
    out_dtype: Any = None,
    promote: bool = False,
) -> tuple[ClosedFunction, list[Any]]:
    """``call(vector_pytree, param_leaves)`` as a closed function of the vector's
    leaves (``metas``) and ``params`` (tensors) that maps the space into itself (or,
    with ``out_dtype``, into the space of the same shapes in that dtype). Returns it and
    its operands after the vector: ``params``, then the values ``call`` captured.
    With ``promote``, a map that widens the dtype (real vectors to complex ones) is
    traced again on vectors of the wider dtype: the closed function's first inputs then
    say which. ``what`` names the function in errors."""
    count = len(metas)

    def flat(*leaves: Any) -> list[Any]:
        result = call(unflatten(treedef, list(leaves[:count])), list(leaves[count:]))
        out, out_tree = flatten(result)
        if out_tree != treedef:
            raise ShapeError(
                op,
                f"{what} returned structure {describe(out_tree)}, expected that of its "
                f"input {describe(treedef)}",
            )
        return out

    closed, captured = close(op, flat, [*metas, *(p.meta for p in params)])
    got = closed.output_metas
    if promote and out_dtype is None and _same_shapes(got, metas):
        wider = np.result_type(*(m.dtype for m in metas), *(g.dtype for g in got))
        if any(m.dtype != wider for m in metas):
            metas = [m._replace(dtype=wider) for m in metas]
            closed, captured = close(op, flat, [*metas, *(p.meta for p in params)])
            got = closed.output_metas
    expected = [m.dtype if out_dtype is None else np.dtype(out_dtype) for m in metas]
    for position, (meta_out, meta, dt) in enumerate(zip(got, metas, expected, strict=True)):
        if meta_out.shape != meta.shape or meta_out.dtype != dt:
            raise ShapeError(
                op,
                f"{what} maps leaf {position} of {meta.describe()} to {meta_out.describe()}; "
                f"it must keep shapes and dtypes (give the input the result's dtype)",
            )
    return closed, [*params, *captured]


def _same_shapes(got: Sequence[Meta], metas: Sequence[Meta]) -> bool:
    return all(g.shape == m.shape for g, m in zip(got, metas, strict=True))


def promoted(tensors: Sequence[Any], closed: ClosedFunction) -> list[Any]:
    """``tensors`` (a vector's leaves) in the dtypes of ``closed``'s first inputs."""
    return [
        t if t.meta.dtype == m.dtype else lax.convert_element_type(t, m.dtype)
        for t, m in zip(tensors, closed.inputs, strict=False)
    ]
