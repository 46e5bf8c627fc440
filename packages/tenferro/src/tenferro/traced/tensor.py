"""``TracedTensor``: a lazy value, identified by its structural key.

Applying operations to traced tensors builds keys (no graph objects: the key of
a value describes its whole computation). ``eval`` materialises and compiles the
computation once per structure (cached) and runs it. Leaves are placeholders
(bound at evaluation), constants with data, function arguments, checkpoints or
aliases; a concrete tensor used with a traced one becomes a constant leaf (a
scalar becomes a structural constant).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from computegraph import (
    PRIMARY,
    BoundedCache,
    Derived,
    DictCache,
    Input,
    OperationKey,
    ValueKey,
    first_output,
)
from tenferro import lax
from tenferro.core.flags import check_flag
from tenferro.core.keys import AliasKey, CheckpointKey, LeafKey, PlaceholderKey
from tenferro.core.primitive import TensorPrimitive
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import ArgumentTypeError, TenferroError
from tenferro.meta import Meta
from tenferro.surface import math as _math
from tenferro.surface.methods import TensorMethods

__all__ = ["TracedTensor", "placeholder", "traced"]


EAGER_CAPTURE: ContextVar[Callable[[Any], Any] | None] = ContextVar(
    "tenferro_eager_capture", default=None
)
"""Set by ``vmap`` while it traces: turns a tracked EagerTensor the function captured into
a leaf that ``vmap`` replaces by the tensor itself (so the tape sees the batched use)."""


_LANES: DictCache[Any, Any] = DictCache(8192, "traced operator lanes")
"""(surface function, operand order, the traced operand's meta, then the other operand's
meta or its number type and value) -> how that call binds: ``(instance, result meta,
constant key or None, traced operand first)``, or ``_GENERAL``. Learned from the first
such call, whose result must be one primary operation applied to the two operands (the
number as a constant computed from no input). Structure only: a number met while
tracing is part of the structure (a literal of the program), like the program itself."""

_GENERAL = "general"


def _operator_lane(name: str, function: Callable[[Any, Any], Any], swapped: bool) -> Any:
    """A binary operator method of :class:`TracedTensor` (``function(self, other)``, or
    ``function(other, self)`` when ``swapped``): a call whose structure was seen before
    binds the primitive instance the surface chose then, without its frames."""

    def method(self: TracedTensor, other: Any) -> Any:
        kind = type(other)
        if kind is TracedTensor:
            key: Any = (function, swapped, self.meta, other.meta)
        elif (kind is float or kind is int) and other == other and other != 0:
            # 0.0 == -0.0 and nan != nan as keys: those take the surface's path
            key = (function, swapped, self.meta, kind, other)
        else:
            return function(other, self) if swapped else function(self, other)
        found = _LANES.get(key)
        if found is None:
            result = function(other, self) if swapped else function(self, other)
            _LANES.put(key, _recipe(result, self, other))
            return result
        if found is _GENERAL:
            return function(other, self) if swapped else function(self, other)
        instance, meta, constant, self_first = found
        partner = other.key if constant is None else constant
        inputs = (self.key, partner) if self_first else (partner, self.key)
        return TracedTensor(first_output(instance, inputs), meta)

    method.__name__ = method.__qualname__ = name
    return method


def _recipe(result: Any, tensor: TracedTensor, other: Any) -> Any:
    """How ``result`` was made from ``tensor`` and ``other`` when it is one primary
    single-output operation of the two (see :data:`_LANES`), else ``_GENERAL``."""
    key = getattr(result, "key", None)
    if type(result) is not TracedTensor or type(key) is not Derived or key.output_slot != 0:
        return _GENERAL
    operation = key.operation_key
    inputs = operation.inputs
    if operation.role is not PRIMARY or operation.output_count != 1 or len(inputs) != 2:
        return _GENERAL
    mine = tensor.key
    if type(other) is TracedTensor:
        if inputs == (mine, other.key):
            return (operation.operation, result.meta, None, True)
        if inputs == (other.key, mine):
            return (operation.operation, result.meta, None, False)
        return _GENERAL
    if inputs[0] is mine:
        constant, self_first = inputs[1], True
    elif inputs[1] is mine:
        constant, self_first = inputs[0], False
    else:
        return _GENERAL
    if not _reads_no_input(constant):
        return _GENERAL
    return (operation.operation, result.meta, constant, self_first)


def _reads_no_input(root: ValueKey) -> bool:
    """Whether the computation of ``root`` has no inputs (a constant; iterative walk)."""
    stack: list[ValueKey] = [root]
    seen: set[int] = set()
    while stack:
        key = stack.pop()
        if type(key) is not Derived:
            return False
        operation = key.operation_key
        if id(operation) not in seen:
            seen.add(id(operation))
            stack.extend(operation.inputs)
    return True


class TracedTensor(TensorMethods):
    """A lazy tensor value on a computation graph (see the module documentation)."""

    __slots__ = ("key", "meta")
    _priority: ClassVar[int] = 2

    key: ValueKey
    meta: Meta

    def __init__(self, key: ValueKey, meta: Meta) -> None:
        self.key = key
        self.meta = meta

    if not TYPE_CHECKING:  # the surface's signatures (TensorMethods) stand for these
        __add__ = _operator_lane("__add__", _math.add, False)
        __radd__ = _operator_lane("__radd__", _math.add, True)
        __sub__ = _operator_lane("__sub__", _math.subtract, False)
        __rsub__ = _operator_lane("__rsub__", _math.subtract, True)
        __mul__ = _operator_lane("__mul__", _math.multiply, False)
        __rmul__ = _operator_lane("__rmul__", _math.multiply, True)
        __truediv__ = _operator_lane("__truediv__", _math.true_divide, False)
        __rtruediv__ = _operator_lane("__rtruediv__", _math.true_divide, True)

    # ------------------------------------------------------------------ kind protocol

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[TracedTensor], like: Any = None
    ) -> tuple[TracedTensor, ...]:
        if len(op.outputs) == 1:
            if len(operands) == 1:
                return (cls(first_output(op, (operands[0].key,)), op.outputs[0]),)
            return (cls(first_output(op, tuple([o.key for o in operands])), op.outputs[0]),)
        operation_key = OperationKey(op, tuple([o.key for o in operands]))
        return tuple(
            cls(k, m) for k, m in zip(operation_key.output_keys(), op.outputs, strict=True)
        )

    @classmethod
    def _lift(cls, value: Any) -> TracedTensor:
        if getattr(value, "tape", None) is not None:
            capture = EAGER_CAPTURE.get()
            if capture is not None:
                return capture(value)
            raise TenferroError(
                "traced",
                "a tracked EagerTensor cannot enter a traced computation (its gradient "
                "would be lost); detach() it to use its value as a constant",
            )
        meta = value.meta
        data = np.asarray(value._value)
        if meta.shape == ():
            # Scalars become structural constants, so retracing gives the same graph.
            (constant,) = _constant_like(data, meta)
            return constant
        return cls(Input(LeafKey(meta, data, "const")), meta)

    @classmethod
    def _full(cls, meta: Meta, value: Any) -> TracedTensor:
        """A structural constant of ``meta`` holding the Python scalar ``value``
        (the numpy-style surface caches these per meta and scalar: they hold no data)."""
        scalar_meta = Meta((), meta.dtype, meta.weak)
        (scalar,) = _constant_like(np.asarray(value, meta.dtype), scalar_meta)
        if meta.shape == ():
            return scalar
        return lax.broadcast_in_dim(scalar, meta.shape, ())._rewrap(meta)

    def _rewrap(self, meta: Meta) -> TracedTensor:
        return TracedTensor(self.key, meta)

    # ------------------------------------------------------------------ evaluation

    def eval(self, bindings: Mapping[Any, Any] | None = None) -> Any:
        """The value, as a concrete ``Tensor`` (placeholders bound by ``bindings``:
        ``{placeholder_tensor: value}``)."""
        from tenferro.traced.program import evaluate

        return evaluate([self], bindings)[0]

    def is_leaf(self) -> bool:
        """Whether this value is an input of the computation (differentiable with respect to)."""
        return type(self.key) is Input

    # ------------------------------------------------------------------ AD

    def grad(self, wrt: Any, *, allow_unused: bool = False) -> Any:
        """The gradient of this real scalar with respect to leaf ``wrt`` (or a sequence of
        them). A leaf this value does not depend on raises :class:`~tenferro.InactiveError`,
        or gives ``None`` with ``allow_unused=True``."""
        from tenferro.traced.ad import grad

        return grad(self, wrt, optional=check_flag("grad", "allow_unused", allow_unused))

    def vjp(self, wrt: Any, cotangent: Any, *, allow_unused: bool = False) -> Any:
        """The vector-Jacobian product with ``cotangent`` (conjugate convention);
        ``allow_unused`` as in :meth:`grad`."""
        from tenferro.traced.ad import vjp

        return vjp(self, wrt, cotangent, optional=check_flag("vjp", "allow_unused", allow_unused))

    def jvp(self, wrt: Any, tangent: Any, *, allow_unused: bool = False) -> Any:
        """The Jacobian-vector product along ``tangent`` (one per leaf in ``wrt``);
        ``allow_unused`` as in :meth:`grad`."""
        from tenferro.traced.ad import jvp

        return jvp(self, wrt, tangent, optional=check_flag("jvp", "allow_unused", allow_unused))

    def checkpoint(self) -> TracedTensor:
        """Evaluate now and continue from the stored value; derivatives still flow to the
        original inputs (the prefix is recomputed when a derivative needs it)."""
        from tenferro.traced.ad import checkpoint

        return checkpoint(self)

    def __repr__(self) -> str:
        return f"TracedTensor({self.meta.describe()}, key={self.key!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The computation as a flat record list (pickling nested keys would recurse once
        # per operation). Leaves come back as new leaves holding the same data.
        return (_unpickle, (_records(self.key), self.meta))

    def item(self) -> Any:
        raise ArgumentTypeError(
            "item",
            f"a TracedTensor ({self.meta.describe()}) has no concrete value while it is traced; "
            f"use .eval().item() outside a transform",
        )

    def __bool__(self) -> bool:
        raise TypeError(
            "the truth value of a TracedTensor is not known while tracing; evaluate it first, "
            "or use tf.where for data-dependent choices"
        )

    def __len__(self) -> int:
        if not self.meta.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.meta.shape[0]


def _constant_like(data: Any, meta: Meta) -> tuple[TracedTensor]:
    key = (meta, data.tobytes())
    found = _SCALARS.get(key)
    if found is None:
        found = lax.constant(data, meta.dtype, _ANCHOR)._rewrap(meta)
        _SCALARS.put(key, found)
    return (found,)


_SCALARS: BoundedCache[tuple[Meta, bytes], TracedTensor] = BoundedCache(
    4096, "traced scalar constants"
)
"""Scalar constants by meta and bits (structure: retraces reuse them)."""


def clear_caches() -> None:
    """Drop the cached scalar constants."""
    _SCALARS.clear()


class _Anchor:
    """Gives primitives without operands (constants) the traced kind."""

    _priority = TracedTensor._priority
    meta = None

    @staticmethod
    def _bind(op: TensorPrimitive, operands: Sequence[Any], like: Any = None) -> Any:
        return TracedTensor._bind(op, operands)


_ANCHOR = _Anchor()


def placeholder(
    shape: Sequence[int], dtype: Any = "float64", name: str | None = None
) -> TracedTensor:
    """A traced input without data, bound when evaluated: ``y.eval({x: value})``."""
    meta = Meta(_shape(shape), as_dtype(dtype, "placeholder"))
    return TracedTensor(Input(PlaceholderKey(meta, name)), meta)


def _shape(shape: Any) -> tuple[int, ...]:
    from tenferro.surface.convert import as_shape

    return as_shape(shape, "placeholder")


def traced(data: Any, dtype: Any = None, name: str = "leaf") -> TracedTensor:
    """A traced leaf holding ``data`` (evaluation uses the data; derivatives may be taken
    with respect to it)."""
    from tenferro.concrete import Tensor

    tensor = data if isinstance(data, Tensor) and dtype is None else Tensor(data, dtype)
    meta = tensor.meta._replace(weak=False)
    return TracedTensor(Input(LeafKey(meta, np.asarray(tensor._value), name)), meta)


def _records(root: ValueKey) -> list[tuple[Any, ...]]:
    """The computation of ``root`` as records in dependency order (iterative)."""
    index: dict[int, int] = {}
    records: list[tuple[Any, ...]] = []
    stack: list[Any] = [root]
    while stack:
        node = stack[-1]
        if id(node) in index:
            stack.pop()
            continue
        if type(node) is Derived:
            operation = node.operation_key
            if id(operation) not in index:
                stack.append(operation)
                continue
            record: tuple[Any, ...] = ("out", index[id(operation)], node.output_slot)
        elif type(node) is OperationKey:
            pending = [k for k in node.inputs if id(k) not in index]
            if pending:
                stack.extend(reversed(pending))
                continue
            inputs = tuple([index[id(k)] for k in node.inputs])
            record = ("op", node.operation, node.role, inputs)
        elif type(node) is Input and isinstance(node.key, (AliasKey, CheckpointKey)):
            name = node.key
            if id(name.origin) not in index:
                stack.append(name.origin)
                continue
            origin = index[id(name.origin)]
            if isinstance(name, CheckpointKey):
                record = ("checkpoint", name.meta, name.data, origin)
            else:
                record = ("alias", name.meta, origin)
        else:
            record = ("key", node)
        index[id(node)] = len(records)
        records.append(record)
        stack.pop()
    return records


def _unpickle(records: list[tuple[Any, ...]], meta: Meta) -> TracedTensor:
    built: list[Any] = []
    for record in records:
        kind = record[0]
        if kind == "out":
            built.append(Derived(built[record[1]], record[2]))
        elif kind == "op":
            built.append(OperationKey(record[1], [built[i] for i in record[3]], record[2]))
        elif kind == "alias":
            built.append(Input(AliasKey(record[1], built[record[2]])))
        elif kind == "checkpoint":
            built.append(Input(CheckpointKey(record[1], record[2], built[record[3]])))
        else:
            built.append(record[1])
    return TracedTensor(built[-1], meta)
