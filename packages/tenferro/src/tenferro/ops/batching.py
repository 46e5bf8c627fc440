"""What a batching rule is, the helpers rules are written with, and the loop fallback.

A batching rule is a primitive's method ``batch(xs, dims)``: ``xs`` are the operands
(tensors of any kind, each holding the whole batch), ``dims[i]`` the axis of ``xs[i]``
that is the batch axis (``None``: ``xs[i]`` is the same for every example; at least
one operand is batched). It returns ``(outputs, out_dims)``: the batched outputs and,
for each, its batch axis (``None`` when the output does not vary over the batch).
Rules compute with :mod:`tenferro.lax`, so they serve every tensor kind and every
transform (a rule applied to traced values adds nodes; to eager values it records
on the tape). The ``vmap`` transform that applies them is
:mod:`tenferro.transforms.vmap`.

A primitive without a rule inherits :meth:`TensorPrimitive.batch`, which is
:func:`loop`: the primitive applied to each example and the results stacked. That
is always correct (only slower); a primitive that loops on purpose says why in its
``batch_loop`` class attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tenferro import lax
from tenferro.core.bind import bind
from tenferro.core.kinds import asarray
from tenferro.errors import ShapeError
from tenferro.meta import Meta

if TYPE_CHECKING:
    from tenferro.core.primitive import TensorPrimitive

__all__ = [
    "Batched",
    "batch_size",
    "counted_indices",
    "elementwise",
    "leading",
    "loop",
    "move_axis",
    "params_of",
    "rebind",
    "take",
    "to_front",
]

Batched = tuple[list[Any], list[int | None]]
"""What a batching rule returns: the outputs and each output's batch axis."""


def params_of(op: TensorPrimitive) -> dict[str, Any]:
    """The parameters of ``op`` (its fields but ``inputs``), by name."""
    return {f: getattr(op, f) for f in op._field_names if f != "inputs"}


def rebind(op: TensorPrimitive, operands: Sequence[Any], **changes: Any) -> list[Any]:
    """``op``'s primitive applied to ``operands`` with ``op``'s parameters (some replaced
    by ``changes``): the outputs as a list."""
    params = params_of(op)
    params.update(changes)
    result = type(op).bind(*operands, **params)
    return list(result) if len(op.outputs) != 1 else [result]


def batch_size(xs: Sequence[Any], dims: Sequence[int | None]) -> int:
    """The extent of the batch axis (the batched operands agree on it)."""
    for x, d in zip(xs, dims, strict=True):
        if d is not None:
            return int(x.meta.shape[d])
    raise ShapeError("vmap", "a batching rule was called without a batched operand")


def move_axis(x: Any, source: int, destination: int) -> Any:
    """``x`` with axis ``source`` moved to position ``destination``."""
    if source == destination:
        return x
    order = [a for a in range(x.meta.ndim) if a != source]
    order.insert(destination, source)
    return lax.transpose(x, order)


def to_front(x: Any, dim: int | None, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast along a new one."""
    if dim is None:
        shape = x.meta.shape
        return lax.broadcast_in_dim(x, (size, *shape), tuple(range(1, len(shape) + 1)))
    return move_axis(x, dim, 0)


def take(x: Any, dim: int, index: int) -> Any:
    """Example ``index`` of ``x`` (its batch axis ``dim`` dropped)."""
    shape = x.meta.shape
    starts = [0] * len(shape)
    limits = list(shape)
    starts[dim], limits[dim] = index, index + 1
    kept = shape[:dim] + shape[dim + 1 :]
    return lax.reshape(lax.slice(x, starts, limits), kept)


def elementwise(op: TensorPrimitive, xs: Sequence[Any], dims: Sequence[int | None]) -> Batched:
    """The rule of primitives that act on each element (or on trailing axes only, with
    batch-independent parameters): every operand's batch axis first, same parameters."""
    size = batch_size(xs, dims)
    if all(d == dims[0] for d in dims):
        return rebind(op, xs), [dims[0]] * len(op.outputs)
    fronted = [to_front(x, d, size) for x, d in zip(xs, dims, strict=True)]
    return rebind(op, fronted), [0] * len(op.outputs)


def leading(op: TensorPrimitive, xs: Sequence[Any], dims: Sequence[int | None]) -> Batched:
    """The rule of families that accept any leading batch axes (numpy.linalg style,
    ``[..., M, N]``): every operand's batch axis first (unbatched ones broadcast)."""
    size = batch_size(xs, dims)
    fronted = [to_front(x, d, size) for x, d in zip(xs, dims, strict=True)]
    return rebind(op, fronted), [0] * len(op.outputs)


def loop(op: TensorPrimitive, xs: Sequence[Any], dims: Sequence[int | None]) -> Batched:
    """The fallback: ``op`` applied to each example, the results stacked on a new leading
    axis. Correct for any primitive (and differentiable: slicing, reshaping and
    concatenation have rules), one primitive application per example."""
    size = batch_size(xs, dims)
    like = next(x for x, d in zip(xs, dims, strict=True) if d is not None)
    if any(m.dynamic for m in op.outputs):  # examples would not share that extent
        raise ShapeError(
            op.name,
            f"cannot batch it: each example would get its own data-dependent extent "
            f"({', '.join(m.describe() for m in op.outputs)}); keep its size unbatched",
        )
    if size == 0:
        return [lax.zeros(Meta((0, *m.shape), m.dtype), like) for m in op.outputs], [0] * len(
            op.outputs
        )
    per_example = []
    for index in range(size):
        operands = [x if d is None else take(x, d, index) for x, d in zip(xs, dims, strict=True)]
        per_example.append(bind(op, operands))
    outputs = []
    for slot in range(len(op.outputs)):
        rows = [results[slot] for results in per_example]
        stacked = [lax.reshape(r, (1, *r.meta.shape)) for r in rows]
        outputs.append(lax.concatenate(stacked, 0))
    return outputs, [0] * len(op.outputs)


def counted_indices(indices: Any, index_vector_dim: int) -> tuple[Any, int]:
    """Batched gather/scatter indices (batch axis first) with the example's number
    prepended to every index vector, so that they address a batched operand's leading
    axis too; returns them and their index vector axis (``index_vector_dim`` is the
    per-example one; an implicit trailing vector of length 1 becomes explicit)."""
    shape = indices.meta.shape
    axis = index_vector_dim + 1
    if axis == len(shape):  # implicit: make the length-1 vector axis explicit
        indices = lax.reshape(indices, (*shape, 1))
        shape = indices.meta.shape
    size = shape[0]
    counter = asarray(np.arange(size, dtype=indices.meta.dtype))
    counter_shape = (*shape[:axis], 1, *shape[axis + 1 :])
    counter = lax.broadcast_in_dim(counter, counter_shape, (0,))
    return lax.concatenate([counter, indices], axis), axis
