"""``TracedTensor``: a lazy value, identified by its structural key.

Applying operations to traced tensors builds keys (no graph objects: the key of
a value describes its whole computation). ``eval`` materialises and compiles the
computation once per structure (cached) and runs it. Leaves are placeholders
(bound at evaluation), constants with data, function arguments, checkpoints or
aliases; a concrete tensor used with a traced one becomes a constant leaf (a
scalar becomes a structural constant).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, cast

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
    memo_put,
)
from tenferro import lax
from tenferro.concrete import Tensor
from tenferro.core.flags import check_flag
from tenferro.core.keys import AliasKey, CheckpointKey, LeafKey, PlaceholderKey
from tenferro.core.methods import TensorMethods
from tenferro.core.primitive import TensorPrimitive
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import ArgumentTypeError, TenferroError
from tenferro.meta import Meta, as_shape

__all__ = ["TracedTensor", "operator_lane", "placeholder", "provide", "traced"]


EAGER_CAPTURE: ContextVar[Callable[[Any], TracedTensor] | None] = ContextVar(
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

# Memos (computegraph.memo) of traced values' keys. A retrace meets the keys it made
# before, so what an operation applied to a key gave is found on the key itself:
#   operator lanes: (lane, number type, number, weak) -> (meta, result key ref, result meta)
#                   (lane, id(other key), weak, other weak) -> (meta, other meta,
#                                            other key ref, result key ref, result meta)
#   binds:          serial of the instance -> result key ref             (one operand)
#                   (serial, id(second key)) -> (second key ref, result key ref)
#                   (serial, ids of the others) -> (their refs, result key ref)  (3+)
#   (single-output instances; constants, with no operand, are in _NULLARY)
# ``meta`` is the traced operand's: a key does not fix its weak flag (a Python number and
# a numpy scalar of one value lift to one constant key), so the flags are in the tokens and
# the metas checked. Every key is held weakly, so a memo keeps no graph alive and an
# entry whose key died is a miss.

_SERIALS = itertools.count()
_ref = weakref.ref


def _serial(op: TensorPrimitive) -> int:
    """A number naming the instance ``op`` in memos (never reused: an instance equal to a
    dropped one gets a new number, and misses, but never meets a wrong entry)."""
    try:
        return op._serial
    except AttributeError:
        serial = next(_SERIALS)
        object.__setattr__(op, "_serial", serial)
        return serial


def operator_lane(name: str, function: Callable[[Any, Any], Any], swapped: bool) -> Any:
    """A binary operator method of :class:`TracedTensor` (``function(self, other)``, or
    ``function(other, self)`` when ``swapped``): a call whose structure was seen before
    binds the primitive instance the surface chose then, without its frames; one met
    on these very keys before answers from the traced operand's key memo."""
    lane = object()  # names this operator in memo tokens (hashed by identity)

    def method(self: TracedTensor, other: Any) -> Any:
        kind = other.__class__
        meta = self.meta
        try:
            memo = self.key.memo
        except AttributeError:  # a key made without the constructors: no memo
            memo = None
        if kind is TracedTensor:
            other_key = other.key
            token: Any = (lane, id(other_key), meta.weak, other.meta.weak)
            entry = None if memo is None else memo.get(token)
            if (
                entry is not None
                and (entry[0] is meta or entry[0] == meta)
                and (entry[1] is other.meta or entry[1] == other.meta)
                and entry[2]() is other_key
            ):
                found = entry[3]()
                if found is not None:
                    return TracedTensor(found, entry[4])
            key: Any = (function, swapped, meta, other.meta)
        elif (kind is float or kind is int) and other == other and other != 0:
            # 0.0 == -0.0 and nan != nan as keys: those take the surface's path
            token = (lane, kind, other, meta.weak)
            entry = None if memo is None else memo.get(token)
            if entry is not None and (entry[0] is meta or entry[0] == meta):
                found = entry[1]()
                if found is not None:
                    return TracedTensor(found, entry[2])
            key = (function, swapped, meta, kind, other)
        else:
            return function(other, self) if swapped else function(self, other)
        recipe = _LANES.get(key)
        if recipe is None:
            result = function(other, self) if swapped else function(self, other)
            recipe = _recipe(result, self, other)
            _LANES.put(key, recipe)
        elif recipe is _GENERAL:
            return function(other, self) if swapped else function(self, other)
        else:
            instance, result_meta, constant, self_first = recipe
            partner = other.key if constant is None else constant
            inputs = (self.key, partner) if self_first else (partner, self.key)
            result = TracedTensor(first_output(instance, inputs), result_meta)
        if recipe is not _GENERAL:
            if kind is TracedTensor:
                entry = (meta, other.meta, _ref(other.key), _ref(result.key), result.meta)
            else:
                entry = (meta, _ref(result.key), result.meta)
            memo_put(self.key, token, entry)
        return result

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


class _Provided:
    """The functions behind :class:`TracedTensor`'s evaluation and AD methods. They are
    defined by :mod:`tenferro.traced.program` (``evaluate``) and :mod:`tenferro.traced.ad`
    (``grad``, ``vjp``, ``jvp``, ``checkpoint``), which are built on this module, so each
    gives its own when it is loaded (:func:`provide`)."""

    __slots__ = ("checkpoint", "evaluate", "grad", "jvp", "vjp")
    checkpoint: Callable[[TracedTensor], TracedTensor]
    evaluate: Callable[..., Any]
    grad: Callable[..., Any]
    jvp: Callable[..., Any]
    vjp: Callable[..., Any]

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, _not_loaded)


def _not_loaded(*args: Any, **kwargs: Any) -> Any:
    raise TenferroError("traced", "tenferro.traced.program is not loaded: import tenferro first")


_PROVIDED = _Provided()


def provide(**functions: Callable[..., Any]) -> None:
    """Give :class:`TracedTensor`'s evaluation and AD methods the functions they call
    (``evaluate``, ``grad``, ``vjp``, ``jvp``, ``checkpoint``; see :class:`_Provided`)."""
    for name, function in functions.items():
        setattr(_PROVIDED, name, function)


class TracedTensor(TensorMethods):
    """A lazy tensor value on a computation graph (see the module documentation)."""

    __slots__ = ("key", "meta")
    _priority: ClassVar[int] = 2

    key: ValueKey
    meta: Meta

    def __init__(self, key: ValueKey, meta: Meta) -> None:
        self.key = key
        self.meta = meta

    # ------------------------------------------------------------------ kind protocol

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[TracedTensor], like: Any = None
    ) -> tuple[TracedTensor, ...]:
        outputs = op.outputs
        if len(outputs) == 1:
            if len(operands) == 1:
                key = operands[0].key
                try:  # the key's memo (see _unary_key), inline: this is the hot path
                    memo = key.memo
                    found = None if memo is None else memo.get(op._serial)
                except AttributeError:  # an instance without a serial yet
                    found = None
                made = None if found is None else found()
                return (cls(_unary_key(op, key) if made is None else made, outputs[0]),)
            if len(operands) == 2:
                return (cls(_binary_key(op, operands[0].key, operands[1].key), outputs[0]),)
            return (cls(_other_key(op, tuple([o.key for o in operands])), outputs[0]),)
        operation_key = OperationKey(op, tuple([o.key for o in operands]))
        return tuple(cls(k, m) for k, m in zip(operation_key.output_keys(), outputs, strict=True))

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
        return _PROVIDED.evaluate([self], bindings)[0]

    def is_leaf(self) -> bool:
        """Whether this value is an input of the computation (differentiable with respect to)."""
        return type(self.key) is Input

    # ------------------------------------------------------------------ AD

    def grad(self, wrt: Any, *, allow_unused: bool = False) -> Any:
        """The gradient of this real scalar with respect to leaf ``wrt`` (or a sequence of
        them). A leaf this value does not depend on raises :class:`~tenferro.InactiveError`,
        or gives ``None`` with ``allow_unused=True``."""
        return _PROVIDED.grad(self, wrt, optional=check_flag("grad", "allow_unused", allow_unused))

    def vjp(self, wrt: Any, cotangent: Any, *, allow_unused: bool = False) -> Any:
        """The vector-Jacobian product with ``cotangent`` (conjugate convention);
        ``allow_unused`` as in :meth:`grad`."""
        return _PROVIDED.vjp(
            self, wrt, cotangent, optional=check_flag("vjp", "allow_unused", allow_unused)
        )

    def jvp(self, wrt: Any, tangent: Any, *, allow_unused: bool = False) -> Any:
        """The Jacobian-vector product along ``tangent`` (one per leaf in ``wrt``);
        ``allow_unused`` as in :meth:`grad`."""
        return _PROVIDED.jvp(
            self, wrt, tangent, optional=check_flag("jvp", "allow_unused", allow_unused)
        )

    def checkpoint(self) -> TracedTensor:
        """Evaluate now and continue from the stored value; derivatives still flow to the
        original inputs (the prefix is recomputed when a derivative needs it)."""
        return _PROVIDED.checkpoint(self)

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


def _unary_key(op: TensorPrimitive, key: ValueKey) -> ValueKey:
    """``first_output(op, (key,))``, remembered in ``key``'s memo (where the caller looked
    first)."""
    made = first_output(op, (key,))
    memo_put(key, _serial(op), _ref(made))
    return made


def _binary_key(op: TensorPrimitive, first: ValueKey, second: ValueKey) -> ValueKey:
    """``first_output(op, (first, second))``, found in ``first``'s memo when made before."""
    try:
        memo = first.memo
        token = (op._serial, id(second))
    except AttributeError:  # an instance without a serial yet
        memo = None
    if memo is not None:
        found = memo.get(token)
        if found is not None and found[0]() is second:
            made: ValueKey | None = found[1]()
            if made is not None:
                return made
    made = first_output(op, (first, second))
    memo_put(first, (_serial(op), id(second)), (_ref(second), _ref(made)))
    return made


_NULLARY: DictCache[int, Any] = DictCache(4096, "traced constants")
"""Serial of an instance without operands (a constant) -> a weak reference to its value
key (structure only; a dead reference is a miss)."""


def _other_key(op: TensorPrimitive, keys: tuple[ValueKey, ...]) -> ValueKey:
    """``first_output(op, keys)`` for no operand (found in :data:`_NULLARY`) or three and
    more (found in the first key's memo)."""
    serial = _serial(op)
    if not keys:
        found = _NULLARY.get(serial)
        made = None if found is None else found()
        if made is None:
            made = first_output(op, keys)
            _NULLARY.put(serial, _ref(made))
        return made
    first, others = keys[0], keys[1:]
    token = (serial, *[id(k) for k in others])
    try:
        memo = first.memo
    except AttributeError:  # a key made without the constructors: no memo
        memo = None
    entry = None if memo is None else memo.get(token)
    if entry is not None and all(r() is k for r, k in zip(entry[0], others, strict=True)):
        remembered: ValueKey | None = entry[1]()
        if remembered is not None:
            return remembered
    made = first_output(op, keys)
    memo_put(first, token, (tuple([_ref(k) for k in others]), _ref(made)))
    return made


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


_ANCHOR = cast("TracedTensor", _Anchor())  # binds operand-free primitives as traced


def placeholder(
    shape: Sequence[int], dtype: Any = "float64", name: str | None = None
) -> TracedTensor:
    """A traced input without data, bound when evaluated: ``y.eval({x: value})``."""
    meta = Meta(_shape(shape), as_dtype(dtype, "placeholder"))
    return TracedTensor(Input(PlaceholderKey(meta, name)), meta)


def _shape(shape: Any) -> tuple[int, ...]:
    return as_shape(shape, "placeholder")


def traced(data: Any, dtype: Any = None, name: str = "leaf") -> TracedTensor:
    """A traced leaf holding ``data`` (evaluation uses the data; derivatives may be taken
    with respect to it)."""
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
