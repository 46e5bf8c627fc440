"""``EagerTensor``: concrete data that records onto a tape when it requires grad.

An eager tensor always holds its value. It is *tracked* when it belongs to a
:class:`~tenferro.Tape` (a leaf made with ``requires_grad=True`` or
``tape.track``, or the result of an operation on tracked tensors) and *detached*
otherwise. Every function of the tenferro surface accepts it: the primitive
executes immediately, and the invocation is recorded on the tape only when some
operand is tracked and recording is enabled (see :func:`~tenferro.no_grad`).

Recording happens in :meth:`EagerTensor._bind` itself, from the plan the tape keeps on
the primitive instance (:mod:`tenferro.eager.tape`: what the derivative reads, so what
to save): one Python frame per call fewer than a call into the tape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from computegraph import Input, ValueKey
from tenferro.concrete import Tensor, filled, to_array
from tenferro.core.flags import check_flag
from tenferro.core.primitive import TensorPrimitive
from tenferro.dtypes import DTYPES
from tenferro.eager.mode import capture_state, captures_open, grad_state, no_grad_open
from tenferro.errors import AllocationError, DTypeError, TenferroError
from tenferro.ieee import IGNORE, error_state
from tenferro.meta import Meta
from tidu.eager import Trace
from tidu.eager.tape import next_trace_serial

__all__ = ["EagerTensor", "provide_tape"]

_set_errors = error_state.set
_reset_errors = error_state.reset
_new = object.__new__
_set_input_key = Input.__dict__["key"].__set__


class _Untracked:
    __slots__ = ()

    def __repr__(self) -> str:
        return "untracked"


_UNTRACKED = Input(_Untracked())
"""The eager key recorded for operands that are not tracked (never accumulated)."""


class _OutputKey(Input):
    """The eager key of a recorded output: ``Input.unique(number)``, whose structural
    fingerprint (the same value) is computed when first read instead of at minting, once
    per recorded output (eager keys name values on the tape; graph structures, which
    read fingerprints, never hold them)."""

    __slots__ = ()

    @property
    def fingerprint(self) -> int:  # type: ignore[override]
        return hash(("Input", self.key))


_TRACKABLE = frozenset(d for d in DTYPES if d.kind in "fc")
"""The supported dtypes a leaf may be tracked in (floating and complex)."""


class _TapeFunctions:
    """What an ``EagerTensor`` asks of the tape: to adopt a new leaf (the default tape's
    ``adopt_fresh_leaf``, or ``default_tape()`` and the check ``refuse_tracked``), and how
    to record a primitive instance (``instance_plan``). They are defined by
    :mod:`tenferro.eager.tape`, which is built on this module, so it gives them when it
    is loaded (:func:`provide_tape`)."""

    __slots__ = ("adopt_fresh_leaf", "default_tape", "instance_plan", "refuse_tracked")
    adopt_fresh_leaf: Callable[[EagerTensor], None]
    default_tape: Callable[[], Any]
    instance_plan: Callable[[TensorPrimitive, int, int], Any]
    refuse_tracked: Callable[[Any], None]

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, _not_loaded)


def _not_loaded(*args: Any) -> Any:
    raise TenferroError("EagerTensor", "tenferro.eager.tape is not loaded: import tenferro")


_TAPE = _TapeFunctions()


def provide_tape(**functions: Callable[..., Any]) -> None:
    """Give ``EagerTensor`` the tape's functions (see :class:`_TapeFunctions`)."""
    for name, function in functions.items():
        setattr(_TAPE, name, function)


class EagerTensor(Tensor):
    """A concrete tensor with tape-based reverse and forward mode AD.

    ``EagerTensor(data, dtype=None, requires_grad=False, tape=None)``: with
    ``requires_grad``, a tracked leaf of ``tape`` (the default tape unless given),
    whose gradient :meth:`backward` accumulates into :attr:`grad`.
    """

    __slots__ = ("__weakref__", "_grad", "key", "node", "tape")
    _priority: ClassVar[int] = 1

    key: Any
    node: Any
    """The tape node that produced this tensor (None for leaves and detached tensors)."""
    tape: Any
    _grad: EagerTensor | None

    def __init__(
        self,
        data: Any,
        dtype: Any = None,
        *,
        requires_grad: bool = False,
        tape: Any = None,
    ) -> None:
        requires_grad = check_flag("EagerTensor", "requires_grad", requires_grad)
        if requires_grad and type(data) is np.ndarray and dtype is None and tape is None:
            value = np.array(data, copy=True)  # to_array's copy, without its frames
            meta_dtype = value.dtype
            if meta_dtype in _TRACKABLE:  # else the general path raises its error
                value.flags.writeable = False
                self._value = value
                self.meta = Meta(value.shape, meta_dtype)
                self.node = None
                self._grad = None
                _TAPE.adopt_fresh_leaf(self)  # the default tape's leaf
                return
        if isinstance(data, Tensor) and dtype is None:
            value, meta = data._value, data.meta
        else:
            value, weak = to_array(data, dtype, "EagerTensor")
            meta = Meta(value.shape, value.dtype, weak)
        self._value = value
        self.meta = meta
        self.key = None
        self.node = None
        self.tape = None
        self._grad = None
        if requires_grad:
            _TAPE.refuse_tracked(data)
            (tape if tape is not None else _TAPE.default_tape()).adopt_leaf(self)
        elif tape is not None:
            raise TenferroError("EagerTensor", "a tape is given but requires_grad is False")

    @classmethod
    def _make(cls, value: Any, meta: Meta, key: Any, node: Any, tape: Any) -> EagerTensor:
        tensor = object.__new__(cls)
        tensor._value = value
        tensor.meta = meta
        tensor.key = key
        tensor.node = node
        tensor.tape = tape
        tensor._grad = None
        return tensor

    # ------------------------------------------------------------------ kind protocol

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Any], like: Any = None
    ) -> tuple[EagerTensor, ...]:
        ufunc = op.ufunc
        count = len(operands)
        if op.moves_data and count == 1 and op.direct_impl:  # no arithmetic: no warnings
            try:
                values: Sequence[Any] = (op.impl(operands[0]._value),)
            except MemoryError as error:
                raise AllocationError(op.name, str(error)) from None
        else:
            token = _set_errors(IGNORE)  # IEEE special values are data: no warnings
            try:
                if ufunc is None:
                    if count == 1:
                        if op.direct_impl:  # op.eval's frame skipped
                            values = (op.impl(operands[0]._value),)
                        else:
                            values = op.eval((operands[0]._value,), None)
                    elif count == 2:
                        if op.direct_impl:
                            values = (op.impl(operands[0]._value, operands[1]._value),)
                        else:
                            values = op.eval((operands[0]._value, operands[1]._value), None)
                    else:
                        values = op.eval([o._value for o in operands], None)
                elif count == 1:  # the common cases, without a list or two Python frames
                    values = (ufunc(operands[0]._value),)
                elif count == 2:
                    values = (ufunc(operands[0]._value, operands[1]._value),)
                else:
                    values = (ufunc(*[o._value for o in operands]),)
            except MemoryError as error:
                raise AllocationError(op.name, str(error)) from None
            finally:
                _reset_errors(token)
        if captures_open[0]:
            capture = getattr(capture_state, "capture", None)
            if capture is not None:
                captured: tuple[EagerTensor, ...] = capture.apply(op, list(operands), values)
                return captured
        if count == 1:
            tape = operands[0].tape
        elif count == 2:  # unrolled: the common binary case
            tape = operands[0].tape
            other = operands[1].tape
            if tape is None:
                tape = other
            elif other is not None and other is not tape:
                raise TenferroError(
                    op.name,
                    "operands belong to different tapes; detach() one of them or "
                    "track both on one tape",
                )
        else:
            tape = None
            for operand in operands:
                owner = operand.tape
                if owner is not None:
                    if tape is None:
                        tape = owner
                    elif owner is not tape:
                        raise TenferroError(
                            op.name,
                            "operands belong to different tapes; detach() one of them or "
                            "track both on one tape",
                        )
        if tape is not None and (not no_grad_open[0] or getattr(grad_state, "enabled", True)):
            # Record on the tape (inlined here: no Python frame of its own per call).
            # ``code``: the tracked positions as a bit mask (plans are per instance,
            # whose operand count is fixed, so the mask tells the tracked operands apart).
            if count == 1:
                operand = operands[0]
                edges: tuple[Any, ...] = (operand.node, operand.key, True)
                code = 1
            elif count == 2:
                first, second = operands
                if second.tape is None:
                    edges = (first.node, first.key, True, None, _UNTRACKED, False)
                    code = 1
                elif first.tape is None:
                    edges = (None, _UNTRACKED, False, second.node, second.key, True)
                    code = 2
                else:
                    edges = (first.node, first.key, True, second.node, second.key, True)
                    code = 3
            else:
                code = 0
                flat: list[Any] = []
                for position, operand in enumerate(operands):
                    if operand.tape is None:
                        flat += (None, _UNTRACKED, False)
                    else:
                        flat += (operand.node, operand.key, True)
                        code |= 1 << position
                edges = tuple(flat)
            try:
                plan = op._tape_plans[code]  # type: ignore[index]  # None: TypeError, below
            except (AttributeError, TypeError, KeyError):  # no plans yet, or not for ``code``
                plan = _TAPE.instance_plan(op, code, count)
            recorded, active, one_key, one_position, save_inputs, save_outputs, instance = plan
            saved: dict[ValueKey, Any]
            if one_key is not None:  # the common save: one input
                saved = {one_key: operands[one_position]._value}
            else:
                saved = {}
                if save_inputs:
                    for i, key in save_inputs:  # loops, not comprehensions: no extra frame
                        saved[key] = operands[i]._value
                if save_outputs:
                    for slot, key in save_outputs:
                        saved[key] = values[slot]
            if len(values) != 1:
                return cls._record_outputs(
                    op, values, tape, recorded, saved, edges, active, instance
                )
            key = _new(_OutputKey)  # Input.unique(number), inlined
            _set_input_key(key, next(tape._counter))
            node = _new(Trace)  # Trace(recorded, (key,), saved, edges, active), inlined
            node.recorded = recorded
            node.output_keys = (key,)
            node.saved_data = saved
            node.edges = edges
            node.active = active
            node.serial = next_trace_serial()
            node.instance = instance
            tensor = _new(cls)
            tensor._value = values[0]
            tensor.meta = op.outputs[0]
            tensor.key = key
            tensor.node = node
            tensor.tape = tape
            tensor._grad = None
            return (tensor,)
        if len(values) == 1:
            tensor = _new(cls)
            tensor._value = values[0]
            tensor.meta = op.outputs[0]
            tensor.key = tensor.node = tensor.tape = tensor._grad = None
            return (tensor,)
        make = cls._make
        return tuple(
            make(value, meta, None, None, None)
            for value, meta in zip(values, op.outputs, strict=True)
        )

    @classmethod
    def _record_outputs(
        cls,
        op: TensorPrimitive,
        values: Sequence[Any],
        tape: Any,
        recorded: Any,
        saved: dict[ValueKey, Any],
        edges: tuple[Any, ...],
        active: Any,
        instance: Any,
    ) -> tuple[EagerTensor, ...]:
        """The tracked results of a recorded primitive of several outputs (factorizations):
        one node, one fresh key per output (the construction ``_bind`` inlines for one;
        unrolled for two, the count of most factorizations)."""
        counter = tape._counter
        if len(values) == 2:
            first_key = _new(_OutputKey)
            _set_input_key(first_key, next(counter))
            second_key = _new(_OutputKey)
            _set_input_key(second_key, next(counter))
            keys: tuple[Any, ...] = (first_key, second_key)
        else:
            keys_made: list[Any] = []
            for _ in values:
                key = _new(_OutputKey)
                _set_input_key(key, next(counter))
                keys_made.append(key)
            keys = tuple(keys_made)
        node = _new(Trace)
        node.recorded = recorded
        node.output_keys = keys
        node.saved_data = saved
        node.edges = edges
        node.active = active
        node.serial = next_trace_serial()
        node.instance = instance
        metas = op.outputs
        if len(values) == 2:
            first = _new(cls)
            first._value = values[0]
            first.meta = metas[0]
            first.key = first_key
            first.node = node
            first.tape = tape
            first._grad = None
            second = _new(cls)
            second._value = values[1]
            second.meta = metas[1]
            second.key = second_key
            second.node = node
            second.tape = tape
            second._grad = None
            return (first, second)
        tensors: list[EagerTensor] = []
        for value, meta, key in zip(values, metas, keys, strict=True):
            tensor = _new(cls)
            tensor._value = value
            tensor.meta = meta
            tensor.key = key
            tensor.node = node
            tensor.tape = tape
            tensor._grad = None
            tensors.append(tensor)
        return tuple(tensors)

    @classmethod
    def _full(cls, meta: Meta, value: Any) -> EagerTensor:
        """A detached constant of ``meta`` holding the Python scalar ``value``."""
        return cls._make(filled(meta, value), meta, None, None, None)

    @classmethod
    def _scalar_operand(cls, meta: Meta, value: Any) -> EagerTensor:
        """A detached operand of ``meta`` holding the numpy scalar ``value`` (see
        :meth:`Tensor._scalar_operand <tenferro.concrete.Tensor._scalar_operand>`)."""
        tensor = _new(cls)
        tensor._value = value
        tensor.meta = meta
        tensor.key = tensor.node = tensor.tape = tensor._grad = None
        return tensor

    @classmethod
    def _lift(cls, value: Any) -> EagerTensor:
        if isinstance(value, Tensor):
            return cls._make(value._value, value.meta, None, None, None)
        raise TypeError(f"cannot use {type(value).__name__} as an EagerTensor")

    def _rewrap(self, meta: Meta) -> EagerTensor:
        tensor = EagerTensor._make(self._value, meta, self.key, self.node, self.tape)
        return tensor

    # ------------------------------------------------------------------ autograd API

    @property
    def requires_grad(self) -> bool:
        """Whether this tensor is tracked (gradients flow into it)."""
        return self.tape is not None

    @property
    def is_leaf(self) -> bool:
        """A tensor no recorded operation produced (tracked leaves and detached tensors)."""
        return self.node is None

    @property
    def grad(self) -> EagerTensor | None:
        """The gradient accumulated by :meth:`backward` (``None`` before any, or after
        :meth:`zero_grad`). Only tracked leaves accumulate gradients."""
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is None:
            self._grad = None
            return
        gradient = value if isinstance(value, Tensor) else Tensor(value)
        if gradient.meta.shape != self.meta.shape or gradient.meta.dtype != self.meta.dtype:
            raise TenferroError(
                "grad",
                f"a gradient for a {self.meta.describe()} tensor cannot be "
                f"{gradient.meta.describe()}",
            )
        self._grad = EagerTensor._make(gradient._value, gradient.meta, None, None, None)

    def zero_grad(self) -> None:
        """Forget the accumulated gradient (``grad`` becomes ``None``)."""
        self._grad = None

    def detach(self) -> EagerTensor:
        """The same value, not tracked: gradients do not flow through the result."""
        return EagerTensor._make(self._value, self.meta._replace(weak=False), None, None, None)

    def backward(
        self,
        seed: Any = None,
        *,
        retain_graph: bool = False,
        inputs: EagerTensor | Sequence[EagerTensor] | None = None,
    ) -> None:
        """Reverse mode from this tensor, accumulating into ``.grad`` of every tracked
        leaf it depends on (only of ``inputs`` when given; see :meth:`Tape.backward`).
        A non-scalar tensor needs a ``seed`` of its shape and dtype.
        The graph's saved values are freed as the pass uses them (a second backward
        through it raises :class:`~tenferro.ReleasedGraphError`) unless
        ``retain_graph=True``, as in PyTorch."""
        if self.tape is None:
            raise TenferroError(
                "backward",
                "this tensor does not require grad (no tracked tensor was used to compute it)",
            )
        retain_graph = check_flag("backward", "retain_graph", retain_graph)
        self.tape.backward(self, seed, retain_graph=retain_graph, inputs=inputs)

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="EagerTensor(")
        tracked = ", requires_grad=True" if self.tape is not None else ""
        return f"EagerTensor({body}, dtype={self.meta.dtype}{tracked})"

    def __reduce__(self) -> Any:
        if self.tape is not None:
            raise TypeError("a tracked EagerTensor cannot be pickled; detach() it first")
        return (EagerTensor, (np.asarray(self._value), self.meta.dtype))

    def _check_trackable(self) -> None:
        if self.meta.dtype.kind not in "fc":
            raise DTypeError(
                "requires_grad",
                f"only floating and complex tensors can require grad, not {self.meta.dtype}",
            )
