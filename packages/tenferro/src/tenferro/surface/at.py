"""Functional updates: ``x.at[index].set(v)``, ``.add``, ``.subtract``, ``.multiply``,
``.divide``, ``.power``, ``.min``, ``.max``, ``.apply`` and ``.get`` (JAX's answer to
"tensors are immutable").

Each returns a new tensor of ``x``'s kind, shape and dtype: ``x`` with the elements
``x[index]`` selects replaced (``set``) or combined with ``v``. ``index`` is any index
``x[index]`` takes (integers, slices, ``None``, ``...``, integer arrays and tensors,
boolean masks); ``v`` broadcasts to the shape of ``x[index]`` and is cast to ``x``'s
dtype (a complex value into a real tensor is refused). Where an index selects an
element more than once, the updates apply in index order, as numpy's unbuffered
``ufunc.at`` applies them: ``add`` sums them all, ``set`` keeps the last.

Everything is differentiable with respect to ``x`` and ``v`` in every mode: the
updates are gathers, scatter-adds and selects of the flattened tensor. Positions come
from the index alone (never from data), computed once with numpy when the index holds
no traced tensor; traced integer index tensors (clamped into range, as in ``x[index]``)
support ``get``, ``set`` and ``add``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

from tenferro import lax
from tenferro.core.bind import lift
from tenferro.core.kinds import concrete_class
from tenferro.errors import DTypeError, UnsupportedError
from tenferro.surface.convert import asarray, astype, broadcast_to
from tenferro.surface.indexing import take

__all__ = ["IndexUpdateHelper", "IndexUpdateRef"]

T = TypeVar("T")

_MAX_TRACED_SET = 4096
"""The most updates ``set`` takes through traced index tensors (its duplicate test
compares every pair)."""


class IndexUpdateHelper(Generic[T]):
    """``x.at``: index it (``x.at[index]``) for an :class:`IndexUpdateRef`."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: T) -> None:
        self.tensor = tensor

    def __getitem__(self, index: Any) -> IndexUpdateRef[T]:
        return IndexUpdateRef(self.tensor, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.tensor!r})"


class IndexUpdateRef(Generic[T]):
    """``x.at[index]``: the updates of the elements ``x[index]`` selects."""

    __slots__ = ("index", "tensor")

    def __init__(self, tensor: T, index: Any) -> None:
        self.tensor = tensor
        self.index = index

    def get(self) -> T:
        """``x[index]``."""
        got: T = self.tensor[self.index]  # type: ignore[index]
        return got

    def set(self, values: Any) -> T:
        """``x`` with ``x[index]`` replaced by ``values`` (the last of repeated indices)."""
        return _update("set", self.tensor, self.index, values, None)

    def add(self, values: Any) -> T:
        """``x`` with ``values`` added at ``index`` (repeated indices add up)."""
        return _update("add", self.tensor, self.index, values, lax.add)

    def subtract(self, values: Any) -> T:
        """``x`` with ``values`` subtracted at ``index``."""
        return _update("subtract", self.tensor, self.index, values, lax.sub)

    def multiply(self, values: Any) -> T:
        """``x`` with ``x[index]`` multiplied by ``values``."""
        return _update("multiply", self.tensor, self.index, values, lax.mul)

    mul = multiply

    def divide(self, values: Any) -> T:
        """``x`` with ``x[index]`` divided by ``values`` (floating and complex tensors)."""
        return _update("divide", self.tensor, self.index, values, lax.div)

    def power(self, values: Any) -> T:
        """``x`` with ``x[index]`` raised to ``values``."""
        return _update("power", self.tensor, self.index, values, lax.pow)

    def min(self, values: Any) -> T:
        """``x`` with ``x[index]`` replaced by its minimum with ``values``."""
        return _update("min", self.tensor, self.index, values, lax.min)

    def max(self, values: Any) -> T:
        """``x`` with ``x[index]`` replaced by its maximum with ``values``."""
        return _update("max", self.tensor, self.index, values, lax.max)

    def apply(self, function: Callable[[Any], Any]) -> T:
        """``x`` with ``function`` (elementwise, of tensors) applied to ``x[index]``."""
        if not callable(function):
            raise UnsupportedError("at.apply", f"needs a function, got {function!r}")
        return _update("apply", self.tensor, self.index, None, lambda old, _: function(old))

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.tensor!r}, {self.index!r})"


def _update(op: str, x: T, index: Any, values: Any, combine: Any) -> T:
    """``x`` updated at ``index``: a tensor of ``x``'s kind."""
    updated: T = _updated(op, x, index, values, combine)
    return updated


def _updated(op: str, x: Any, index: Any, values: Any, combine: Any) -> Any:
    name = f"at.{op}"
    x = asarray(x, op=name)
    masked = _whole_mask(x, index, values)
    if masked is not None:  # x[mask] op= scalar: a select, for traced masks too
        mask, value = masked
        new = value if op == "set" else combine(x, value)
        return lax.select(mask, new, x)
    size = x.meta.size
    flat_x = lax.reshape(x, (size,))
    positions = _positions(x, index)
    flat: Any
    if isinstance(positions, np.ndarray):
        selection = positions.shape
        flat = positions.reshape(-1)
    else:
        selection = positions.meta.shape
        flat = lax.reshape(positions, (positions.meta.size,))
    updates = None if values is None else _updates(name, x, values, selection)
    if isinstance(flat, np.ndarray):
        result = _static(op, flat_x, flat, updates, combine)
    else:
        result = _traced(name, op, flat_x, flat, updates)
    return lax.reshape(result, x.meta.shape)


def _whole_mask(x: Any, index: Any, values: Any) -> tuple[Any, Any] | None:
    """``(mask, value)`` broadcast to ``x`` when ``index`` is one boolean mask of ``x``'s
    shape and ``values`` is a scalar (or absent, for ``apply``), else ``None``."""
    if isinstance(index, tuple):
        if len(index) != 1:
            return None
        index = index[0]
    meta = getattr(index, "meta", None)
    dtype, shape = (
        (meta.dtype, meta.shape)
        if meta is not None
        else (getattr(index, "dtype", None), getattr(index, "shape", None))
    )
    if dtype != np.bool_ or shape != x.meta.shape or not shape:
        return None
    value = None
    if values is not None:
        value = asarray(values, op="at")
        if value.meta.ndim:
            return None
        if value.meta.dtype.kind == "c" and x.meta.dtype.kind != "c":
            raise DTypeError(
                "at", f"cannot put {value.meta.dtype} values into a {x.meta.dtype} tensor"
            )
        value = broadcast_to(astype(value, x.meta.dtype), x.meta.shape)
    mask, x_lifted = lift([asarray(index), x])
    if value is not None:
        value = lift([value, x_lifted])[0]
    return mask, value


def _positions(x: Any, index: Any) -> Any:
    """The flat positions ``x[index]`` selects, shaped as ``x[index]`` (the index is
    checked as ``x[index]`` checks it): a numpy array when the index holds no traced
    tensor, else a traced tensor."""
    numbering = concrete_class()(np.arange(x.meta.size, dtype=np.int64).reshape(x.meta.shape))
    positions = numbering[index]
    if isinstance(positions, concrete_class()):
        return np.asarray(positions._value)
    return positions


def _updates(name: str, x: Any, values: Any, selection: tuple[int, ...]) -> Any:
    v = asarray(values, op=name)
    target = x.meta.dtype
    if v.meta.dtype.kind == "c" and target.kind != "c":
        raise DTypeError(name, f"cannot put {v.meta.dtype} values into a {target} tensor")
    if v.meta.dtype != target:
        v = astype(v, target)
    v = broadcast_to(v, selection)
    return lax.reshape(v, (v.meta.size,))


def _scatter(flat_x: Any, positions: Any, updates: Any) -> Any:
    """Zeros of ``flat_x``'s shape with ``updates`` added at ``positions`` (1-D)."""
    indices = (
        positions.reshape(-1, 1)
        if isinstance(positions, np.ndarray)
        else (lax.reshape(positions, (positions.meta.size, 1)))
    )
    zeros, indices, updates = lift([lax.zeros_like(flat_x), asarray(indices), updates])
    return lax.scatter_add(
        zeros,
        indices,
        updates,
        update_window_dims=(),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
    )


def _static(op: str, flat_x: Any, flat: np.ndarray[Any, Any], updates: Any, combine: Any) -> Any:
    if not flat.size:
        return flat_x
    if op == "add":
        return lax.add(flat_x, _scatter(flat_x, flat, updates))
    # The k-th occurrence of each position applies in round k (numpy's unbuffered order).
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ordered)) + 1]
    rank = np.empty(flat.size, np.int64)
    rank[order] = np.arange(flat.size) - np.repeat(starts, np.diff(np.r_[starts, flat.size]))
    result = flat_x
    for round_ in range(int(rank.max()) + 1):
        chosen = np.flatnonzero(rank == round_)
        where = flat[chosen]
        hit = np.zeros(flat_x.meta.size, dtype=bool)
        hit[where] = True
        new = None if updates is None else _take(updates, chosen, flat.size)
        if op != "set":
            new = combine(_take(result, where, flat_x.meta.size), new)
        placed = _scatter(flat_x, where, new)
        mask = lift([asarray(hit), result])[0]
        result = lax.select(mask, placed, result)
    return result


def _take(values: Any, chosen: np.ndarray[Any, Any], size: int) -> Any:
    """``values[chosen]`` of a 1-D tensor (itself when ``chosen`` is everything in order)."""
    if chosen.size == size and np.array_equal(chosen, np.arange(size)):
        return values
    return take(values, chosen)


def _traced(name: str, op: str, flat_x: Any, flat: Any, updates: Any) -> Any:
    if op == "get":  # pragma: no cover - get never updates
        raise AssertionError
    if op == "add":
        return lax.add(flat_x, _scatter(flat_x, flat, updates))
    if op != "set":
        raise UnsupportedError(
            name,
            "with traced integer index tensors only get, set and add are supported (the "
            "order of repeated positions is data); use concrete indices",
        )
    count = flat.meta.size
    if count > _MAX_TRACED_SET:
        raise UnsupportedError(
            name,
            f"set through traced index tensors takes at most {_MAX_TRACED_SET} updates "
            f"(got {count}); use concrete indices",
        )
    # An update wins unless a later one targets the same position.
    same = lax.compare(
        lax.broadcast_in_dim(flat, (count, count), (0,)),
        lax.broadcast_in_dim(flat, (count, count), (1,)),
        "eq",
    )
    later = lift([asarray(np.triu(np.ones((count, count), dtype=bool), 1)), same])[0]
    overwritten = lax.compare(
        lax.reduce_sum(
            lax.convert_element_type(lax.logical_and(same, later), np.dtype(np.int64)), (1,)
        ),
        lax.zeros_like(flat),
        "gt",
    )
    kept = lax.select(overwritten, lax.zeros_like(updates), updates)
    placed = _scatter(flat_x, flat, kept)
    ones = lax.full_like(lax.convert_element_type(flat, np.dtype(np.int64)), 1)
    hits = _scatter(
        lax.convert_element_type(lax.zeros_like(flat_x), np.dtype(np.int64)), flat, ones
    )
    return lax.select(lax.compare(hits, lax.zeros_like(hits), "gt"), placed, flat_x)
