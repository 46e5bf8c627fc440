"""``vmap``: batching as a function transform.

``vmap(f)`` traces ``f`` once per call on per-example placeholders (so transforms
applied inside ``f`` are symbolic, as in any trace), then re-applies every primitive
of the traced computation to the batched arguments through the primitive's batching
rule (:meth:`~tenferro.core.primitive.TensorPrimitive.batch`). The transform knows
no primitive: each primitive batches itself, or falls back to a loop over examples.

Because the batched computation is built by binding primitives to the arguments,
the result has the arguments' kind: concrete tensors compute now, eager tensors
record on their tape (gradients flow through a vmapped computation), traced
tensors add nodes (so ``grad(vmap(f))``, ``jit(vmap(f))`` and ``vmap(vmap(f))``
compose). Like the other transforms, ``vmap`` reads closures and globals at call
time (it traces at every call); for concrete arguments it runs a compiled batched
program cached by the *structure* of the trace (the data the function captured are
supplied per call, never cached).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from computegraph import After, BoundedCache, Derived, Input, OperationKey, ValueKey, fold
from tenferro import lax
from tenferro.concrete import Borrowed, Tensor, borrowed_roots, released
from tenferro.core.bind import bind
from tenferro.core.keys import (
    AliasKey,
    ArgKey,
    LeafKey,
    PlaceholderKey,
    SlotAliasKey,
    SlotKey,
    alias_serial,
)
from tenferro.core.kinds import asarray
from tenferro.core.primitive import AddAny, TensorPrimitive
from tenferro.core.pytree import flatten, unflatten
from tenferro.errors import ArgumentTypeError, AxisError, ParameterError, ShapeError
from tenferro.meta import Meta
from tenferro.ops.batching import move_axis, to_front
from tenferro.traced.program import TracedProgram, _array
from tenferro.traced.structure import structure
from tenferro.traced.tensor import EAGER_CAPTURE, TracedTensor
from tenferro.transforms.arguments import _DEPTH, _call

__all__ = ["vmap"]

P = ParamSpec("P")
R = TypeVar("R")

AxisSpec = Any
"""An int, ``None``, or a container of them shaped like (a prefix of) a pytree."""

_Value = tuple[Any, int | None]
"""A value during batching and its batch axis (``None``: the same for every example)."""

_PROGRAMS: BoundedCache[Any, tuple[TracedProgram, list[Meta]]] = BoundedCache(256, "vmap programs")
"""Batched programs of concrete calls, by the structure of the per-example trace (its
slots supply each call's captured data: the cache holds no user data)."""


def vmap(
    fun: Callable[P, R],
    in_axes: AxisSpec = 0,
    out_axes: AxisSpec = 0,
    axis_size: int | None = None,
) -> Callable[P, R]:
    """Vectorise ``fun`` over a batch axis of its arguments, as ``jax.vmap`` does.

    * ``in_axes``: an int or ``None`` for every argument, or a tuple/list with one
      entry per positional argument; an entry is an int (the batch axis of every
      tensor in that argument, negative counts from the end), ``None`` (not batched:
      the same value for every example) or a container of such entries matching the
      argument's structure.
    * ``out_axes``: where the batch axis goes in each output (an int, or a structure
      matching a prefix of the outputs'); ``None`` for an output that must not vary
      over the batch.
    * ``axis_size``: the batch size, needed when no argument is batched.

    Keyword arguments are batched along their axis 0, as in ``jax.vmap``.

    Outputs that do not depend on a batched argument are broadcast along the batch.
    Every primitive batches through its own rule (or loops over the examples when it
    has none), so ``vmap`` composes with every transform in both orders.
    """
    if not callable(fun):
        raise ArgumentTypeError("vmap", f"expected a callable function, got {fun!r}")
    _check_spec(in_axes, "in_axes")
    _check_spec(out_axes, "out_axes")
    if axis_size is not None and (
        isinstance(axis_size, bool) or not isinstance(axis_size, (int, np.integer)) or axis_size < 0
    ):
        raise ParameterError("vmap", f"axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(fun, updated=())
    def batched(*args: Any, **kwargs: Any) -> Any:
        return _vmap_call(fun, in_axes, out_axes, axis_size, args, kwargs)

    return batched


def _check_spec(spec: AxisSpec, what: str) -> None:
    leaves, _ = flatten(spec)
    for leaf in leaves:
        if isinstance(leaf, bool) or not isinstance(leaf, (int, np.integer)):
            raise ArgumentTypeError(
                "vmap", f"{what} entries must be ints or None, got {leaf!r} in {what}={spec!r}"
            )


def _vmap_call(
    fun: Callable[..., Any],
    in_axes: AxisSpec,
    out_axes: AxisSpec,
    axis_size: int | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:

    leaves, treedef = flatten((args, kwargs))
    tensors = [asarray(leaf, op="vmap") for leaf in leaves]
    dims, size = _batch_axes(tensors, _leaf_axes(in_axes, args, kwargs), axis_size)
    trace = _Trace(fun, treedef, tensors, dims)
    out_specs = _broadcast_prefix(out_axes, trace.result, "out_axes")
    roots = borrowed_roots(tensors)  # numpy arguments, read uncopied: results never view them
    if _DEPTH.get() == 0 and all(type(t) is Tensor or type(t) is Borrowed for t in tensors):
        outputs = trace.run_cached(out_specs, size)
        if outputs is not None:
            return released(unflatten(trace.out_treedef, outputs), roots)
    values = _interpret(trace.out_keys, trace.live)
    outputs = [
        _place(value, dim, spec, size, index)
        for index, ((value, dim), spec) in enumerate(zip(values, out_specs, strict=True))
    ]
    return released(unflatten(trace.out_treedef, outputs), roots)


def _leaf_axes(in_axes: AxisSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The batch axis (or ``None``) of every leaf of ``(args, kwargs)``."""
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(args):
            raise ParameterError(
                "vmap",
                f"in_axes={in_axes!r} has {len(in_axes)} entries for {len(args)} positional "
                f"argument(s) (give one entry per argument, or a single int/None for all)",
            )
        per_arg = list(in_axes)
    else:
        per_arg = [in_axes] * len(args)
    axes: list[int | None] = []
    for position, (spec, arg) in enumerate(zip(per_arg, args, strict=True)):
        axes.extend(_broadcast_prefix(spec, arg, f"in_axes for argument {position}"))
    axes.extend(_broadcast_prefix(0, kwargs, "keyword arguments"))  # as jax.vmap
    return axes


def _batch_axes(
    tensors: Sequence[Any], axes: Sequence[int | None], axis_size: int | None
) -> tuple[list[int | None], int]:
    """Each leaf's batch axis (normalised) and the batch size, checked."""
    dims: list[int | None] = []
    size: int | None = None
    sized_by = ""
    for index, (tensor, axis) in enumerate(zip(tensors, axes, strict=True)):
        if axis is None:
            dims.append(None)
            continue
        meta = tensor.meta
        if not -meta.ndim <= axis < meta.ndim:
            raise AxisError(
                "vmap",
                f"in_axes {axis} is out of range for argument leaf {index} of shape "
                f"{meta.shape} (rank {meta.ndim})",
            )
        axis %= meta.ndim
        if axis in meta.dynamic:
            raise ShapeError(
                "vmap", f"cannot batch over data-dependent axis {axis} of {meta.describe()}"
            )
        extent = int(meta.shape[axis])
        described = f"argument leaf {index} (shape {meta.shape}, axis {axis})"
        if size is None:
            size, sized_by = extent, described
        elif extent != size:
            raise ShapeError(
                "vmap",
                f"inconsistent batch sizes: {sized_by} has {size} examples, {described} "
                f"has {extent}",
            )
        dims.append(axis)
    if size is None:
        if axis_size is None:
            raise ParameterError(
                "vmap", "no argument is batched (all in_axes are None): give axis_size"
            )
        return dims, int(axis_size)
    if axis_size is not None and int(axis_size) != size:
        raise ShapeError(
            "vmap", f"axis_size={axis_size} but the batched arguments have {size} examples"
        )
    return dims, size


class _Trace:
    """``fun`` traced on per-example placeholders, and how its inputs are batched."""

    def __init__(
        self,
        fun: Callable[..., Any],
        treedef: Any,
        tensors: Sequence[Any],
        dims: Sequence[int | None],
    ) -> None:

        self.tensors, self.dims, self.treedef = tensors, dims, treedef
        self.env: dict[int, _Value] = {}
        """Batched values by id of the input key standing for them."""
        placeholders = []
        for tensor, dim in zip(tensors, dims, strict=True):
            meta = tensor.meta
            if dim is not None:
                shape = meta.shape[:dim] + meta.shape[dim + 1 :]
                meta = Meta(shape, meta.dtype, meta.weak, _drop_axis(meta.dynamic, dim))
            name = PlaceholderKey(meta, "vmap_arg")
            placeholders.append(TracedTensor(Input(name), meta))
            self.env[id(name)] = (tensor, dim)
        self.positions = {id(p.key.key): i for i, p in enumerate(placeholders)}  # type: ignore[attr-defined]
        self.first_alias = alias_serial()
        token = EAGER_CAPTURE.set(self._capture)
        try:
            traced_args, traced_kwargs = unflatten(treedef, placeholders)
            self.result = _call(lambda *a: fun(*a, **traced_kwargs), traced_args)
        finally:
            EAGER_CAPTURE.reset(token)
        out_leaves, self.out_treedef = flatten(self.result)
        self.out_keys = [_as_traced(leaf).key for leaf in out_leaves]

    def _capture(self, eager: Any) -> TracedTensor:
        """A tracked EagerTensor the function captured: a leaf standing for it."""
        name = LeafKey(eager.meta, np.asarray(eager._value), "vmap_capture")
        self.env[id(name)] = (eager, None)
        return TracedTensor(Input(name), eager.meta)

    def live(self, node: Any, name: Any) -> _Value | None:
        """Inputs when the rules are applied to the arguments themselves."""
        found = self.env.get(id(name))
        if found is not None:
            return found
        if type(name) is AliasKey and name.serial > self.first_alias:
            return None  # made inside the trace: stands for its origin
        return _leaf(node, name), None

    def run_cached(self, out_specs: Sequence[int | None], size: int) -> list[Any] | None:
        """For concrete arguments: the outputs from the batched program of this trace's
        structure (compiled once, cached), or ``None`` when the trace reads values the
        cache cannot stand for (eager captures, user leaves)."""
        shape = structure(self.out_keys)
        if not _cacheable(shape.slots, self.positions, self.first_alias):
            return None
        metas = tuple(t.meta for t in self.tensors)
        key = (shape.keys, self.treedef, self.out_treedef, tuple(out_specs), size, *self.dims)
        key += metas
        key += (tuple(self.positions.get(id(name)) for name in shape.slots),)  # which argument
        program, out_metas = _PROGRAMS.get_or_create(
            key,
            lambda: _batched_program(
                shape.keys, shape.slots, self.positions, self.tensors, self.dims, out_specs, size
            ),
        )
        arrays = program.run([t._value for t in self.tensors], shape.slots)
        return [Tensor._wrap(_array(a), m.weak) for a, m in zip(arrays, out_metas, strict=True)]


def _cacheable(slots: Sequence[Any], positions: dict[int, int], first_alias: int) -> bool:
    """The per-example trace reads only the arguments, captured constants and aliases
    made inside it (no eager captures, user leaves or values of enclosing traces)."""
    for name in slots:
        kind = type(name)
        if id(name) in positions:
            continue
        if kind is LeafKey and name.label == "const":
            continue
        if kind is AliasKey and name.serial > first_alias:
            continue
        return False
    return True


def _batched_program(
    keys: Sequence[ValueKey],
    slots: Sequence[Any],
    positions: dict[int, int],
    tensors: Sequence[Any],
    dims: Sequence[int | None],
    out_specs: Sequence[int | None],
    size: int,
) -> tuple[TracedProgram, list[Meta]]:
    """The batched computation of a per-example structure over the call's arguments
    (``ArgKey`` inputs) and the structure's slots, compiled."""
    arguments = [
        (TracedTensor(Input(ArgKey(i, t.meta)), t.meta), d)
        for i, (t, d) in enumerate(zip(tensors, dims, strict=True))
    ]

    def structural(node: Any, name: Any) -> _Value | None:
        if type(name) is SlotKey:
            position = positions.get(id(slots[name.index]))
            if position is not None:
                return arguments[position]
        elif type(name) is SlotAliasKey:
            return None  # an alias made inside the trace: stands for its origin
        return TracedTensor(node, name.meta), None

    values = _interpret(keys, structural)
    outputs = [
        _as_traced(_place(value, dim, spec, size, index))
        for index, ((value, dim), spec) in enumerate(zip(values, out_specs, strict=True))
    ]
    return TracedProgram(tuple(o.key for o in outputs)), [o.meta for o in outputs]


def _drop_axis(dynamic: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return tuple(a if a < axis else a - 1 for a in dynamic if a != axis)


def _as_traced(value: Any) -> TracedTensor:
    tensor = asarray(value)
    return tensor if isinstance(tensor, TracedTensor) else TracedTensor._lift(tensor)


def _place(value: Any, dim: int | None, spec: int | None, size: int, index: int) -> Any:
    """An output with its batch axis at ``spec`` (broadcast if it does not vary)."""
    ndim = value.meta.ndim
    if spec is None:
        if dim is not None:
            raise ShapeError(
                "vmap",
                f"out_axes is None for output {index}, but it varies over the batch "
                f"(shape {value.meta.shape} with batch axis {dim})",
            )
        return value
    rank = ndim + 1 if dim is None else ndim
    if not -rank <= spec < rank:
        raise AxisError(
            "vmap", f"out_axes {spec} is out of range for output {index} of batched rank {rank}"
        )
    spec %= rank
    if dim is None:
        shape = value.meta.shape
        dims = tuple(a if a < spec else a + 1 for a in range(ndim))
        return lax.broadcast_in_dim(value, (*shape[:spec], size, *shape[spec:]), dims)
    return move_axis(value, dim, spec)


# ---------------------------------------------------------------------- axis specs


def _broadcast_prefix(spec: AxisSpec, tree: Any, where: str) -> list[int | None]:
    """One axis per leaf of ``tree``: ``spec`` is an int/None for a whole subtree, or a
    container matching ``tree``'s container at that level (``jax.vmap``'s prefixes)."""
    if spec is None or isinstance(spec, (int, np.integer)):
        count = len(flatten(tree)[0])
        return [None if spec is None else int(spec)] * count
    if type(spec) is type(tree) and isinstance(spec, (tuple, list)) and len(spec) == len(tree):
        found: list[int | None] = []
        for position, (s, t) in enumerate(zip(spec, tree, strict=True)):
            found.extend(_broadcast_prefix(s, t, f"{where}[{position}]"))
        return found
    if type(spec) is dict and type(tree) is dict and set(spec) == set(tree):
        found = []
        for key in sorted(tree):
            found.extend(_broadcast_prefix(spec[key], tree[key], f"{where}[{key!r}]"))
        return found
    raise ParameterError(
        "vmap",
        f"{where}: the axis specification {spec!r} does not match the structure of the value "
        f"({_describe(tree)}); give an int/None, or a container of the same type and length",
    )


def _describe(tree: Any) -> str:
    if isinstance(tree, (tuple, list)):
        return f"a {type(tree).__name__} of {len(tree)}"
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(tree)!r}"
    return f"a {type(tree).__name__}"


# ---------------------------------------------------------------------- interpretation


def _interpret(
    roots: Sequence[ValueKey], resolve: Callable[[Any, Any], _Value | None]
) -> list[_Value]:
    """The batched values of ``roots``: every operation of their computation applied to
    the batched inputs through its batching rule; operations that do not depend on a
    batched input are applied unchanged. ``resolve(node, name)`` gives each input's
    value, or ``None`` for an alias that stands for its origin (an alias made by a
    transform inside the trace: its derivatives are explicit there; aliases of
    enclosing transforms stay leaves). An iterative walk (any depth)."""

    def leaf(node: ValueKey) -> _Value | After[_Value]:
        name: Any = node.key  # type: ignore[attr-defined]
        found = resolve(node, name)
        return After(name.origin, _itself) if found is None else found

    return fold(roots, _apply_key, _output, leaf)


def _apply_key(operation: OperationKey, inputs: list[_Value]) -> list[_Value]:
    return _apply(operation.operation, inputs)


def _output(results: list[_Value], key: Derived) -> _Value:
    return results[key.output_slot]


def _itself(value: _Value) -> _Value:
    return value


def _leaf(node: Any, name: Any) -> Any:
    """An input of the traced computation that is not a batched argument: a constant
    the function captured (concrete again), or a value of an enclosing trace."""
    if type(name) is LeafKey and name.label == "const":
        return Tensor._wrap(name.data, name.meta.weak)
    return TracedTensor(node, name.meta)


def _apply(op: Any, operands: list[_Value]) -> list[_Value]:
    xs = [v for v, _ in operands]
    dims = [d for _, d in operands]
    if isinstance(op, AddAny):
        return [_add_any(operands)]
    if not operands:
        (array,) = op.eval((), None)
        return [(Tensor._wrap(np.asarray(array), op.outputs[0].weak), None)]
    if all(d is None for d in dims):
        return [(r, None) for r in bind(op, xs)]
    outs, out_dims = op.batch(xs, dims)
    if len(outs) != len(op.outputs) or len(out_dims) != len(op.outputs):
        raise ParameterError(
            op.name,
            f"the batching rule returned {len(outs)} output(s) and {len(out_dims)} batch axes, "
            f"expected {len(op.outputs)}",
        )
    _check_rule(op, outs, out_dims, xs, dims)
    return list(zip(outs, out_dims, strict=True))


def _check_rule(
    op: TensorPrimitive,
    outs: Sequence[Any],
    out_dims: Sequence[int | None],
    xs: Sequence[Any],
    dims: Sequence[int | None],
) -> None:
    """A rule's outputs have the per-example shapes with the batch axis where it says."""
    size = next(int(x.meta.shape[d]) for x, d in zip(xs, dims, strict=True) if d is not None)
    for slot, (out, dim, meta) in enumerate(zip(outs, out_dims, op.outputs, strict=True)):
        expected = meta.shape if dim is None else (*meta.shape[:dim], size, *meta.shape[dim:])
        if tuple(out.meta.shape) != tuple(expected) and not meta.dynamic:
            raise ShapeError(
                op.name,
                f"the batching rule gave output {slot} the shape {out.meta.shape} with batch "
                f"axis {dim}; expected {expected}",
            )


def _add_any(operands: list[_Value]) -> _Value:
    (a, da), (b, db) = operands
    if da == db:
        return lax.add(a, b), da
    size = int(a.meta.shape[da]) if da is not None else int(b.meta.shape[db])

    return lax.add(to_front(a, da, size), to_front(b, db, size)), 0
