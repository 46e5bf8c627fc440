"""Global, structural identity of values and operations.

A :class:`ValueKey` names a value independently of the graph that holds it:

* ``Input(key)`` is a graph input; two graphs declaring the same input key refer
  to the same logical value;
* ``Derived(operation_key, output_slot)`` is output ``output_slot`` of the
  structurally identified operation ``operation_key``.

An :class:`OperationKey` is ``(operation, input value keys, role)``. The role
(:class:`Primary` or :class:`Linearized` with its active mask) is part of the
identity: the same multiplication used as a primal operation and as a linear
map with different active operands transposes differently, so the three must
never be merged.

**Hash-consing.** Keys are interned: constructing a key that is structurally
equal to a live key returns that very object. Structural equality is therefore
object identity, and hashing and comparison are O(1) regardless of how deep the
computation behind a key is (no tree is ever re-walked, no recursion). Interning
tables hold keys weakly, so keys are freed as soon as nothing else uses them.
Each key also carries a structural :attr:`~OperationKey.fingerprint` computed once,
at construction, from its direct parts.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NoReturn

from computegraph.errors import GraphBuildError
from computegraph.protocols import GraphOperation

__all__ = [
    "PRIMARY",
    "Derived",
    "Input",
    "Linearized",
    "OperationKey",
    "OperationRole",
    "Primary",
    "ValueKey",
    "first_output",
]


# --------------------------------------------------------------------------- roles


class OperationRole:
    """How an operation is used: as a primal computation or as a linear map."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")


class Primary(OperationRole):
    """A primal (non-linear-map) use of an operation. A singleton: ``Primary() is PRIMARY``."""

    __slots__ = ()

    def __new__(cls) -> Primary:
        return PRIMARY

    def __repr__(self) -> str:
        return "Primary()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Primary, ())


class Linearized(OperationRole):
    """A linear-map use of an operation.

    ``active_mask[i]`` is true when input ``i`` is a tangent (linear) operand and
    false when it is a constant primal operand. Equal masks give the same object.
    """

    __slots__ = ("_hash", "active_mask")
    __match_args__ = ("active_mask",)
    active_mask: tuple[bool, ...]
    _hash: int

    def __new__(cls, active_mask: Iterable[bool]) -> Linearized:
        mask = tuple(active_mask)
        for entry in mask:  # before the cache: (1, 0) == (True, False) as tuples
            if entry is not True and entry is not False:
                raise TypeError(
                    f"Linearized: active_mask entries must be bool, got {entry!r} in {mask!r}"
                )
        found = _LINEARIZED_ROLES.get(mask)
        if found is not None:
            return found
        role = object.__new__(cls)
        object.__setattr__(role, "active_mask", mask)
        object.__setattr__(role, "_hash", hash(("Linearized", mask)))
        if len(_LINEARIZED_ROLES) >= _LINEARIZED_CACHE_LIMIT:
            _LINEARIZED_ROLES.clear()
        return _LINEARIZED_ROLES.setdefault(mask, role)

    def __eq__(self, other: object) -> bool:
        return self is other or (
            type(other) is Linearized and self.active_mask == other.active_mask
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Linearized({list(self.active_mask)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Linearized, (self.active_mask,))


PRIMARY: Primary = object.__new__(Primary)
"""The shared :class:`Primary` role."""

_LINEARIZED_CACHE_LIMIT = 4096
_LINEARIZED_ROLES: dict[tuple[bool, ...], Linearized] = {}


# --------------------------------------------------------------------------- interning
#
# Input and operation keys live in global tables mapping a probe (the key's
# structural parts) to a weak reference whose callback removes the entry when
# the key dies. Derived keys need no table: each operation key keeps one weak
# reference per output slot. Inserts use ``dict.setdefault`` (atomic); the lock
# guards replacing an entry whose key has died and the callbacks' check-then-delete
# (unguarded, a callback could delete the live entry that replaced its own between the
# two steps, and a key equal to a live one could then be made: two keys of one
# structure). It is reentrant: a callback may run in the thread that holds it, when
# garbage collection triggers inside the guarded code.

_INTERN_LOCK = threading.RLock()


class _InternRef(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to an interned key that remembers the probe it is filed under."""

    __slots__ = ("probe",)
    probe: Hashable


_INPUT_KEYS: dict[Any, _InternRef] = {}
_OPERATION_KEYS: dict[Any, _InternRef] = {}


def _forget_input(ref: _InternRef) -> None:
    """Weak-reference callback: drop a dead input key's entry unless already replaced."""
    with _INTERN_LOCK:
        if _INPUT_KEYS.get(ref.probe) is ref:
            del _INPUT_KEYS[ref.probe]


def _forget_operation(ref: _InternRef) -> None:
    """Weak-reference callback: drop a dead operation key's entry unless already replaced."""
    with _INTERN_LOCK:
        if _OPERATION_KEYS.get(ref.probe) is ref:
            del _OPERATION_KEYS[ref.probe]


def _register(
    table: dict[Any, _InternRef], probe: Hashable, obj: Any, forget: Callable[[Any], None]
) -> Any:
    """Intern ``obj`` under ``probe`` unless a live equal key exists; return the canonical key."""
    ref = _InternRef(obj, forget)
    ref.probe = probe
    existing = table.setdefault(probe, ref)
    if existing is ref:
        return obj
    with _INTERN_LOCK:
        winner = existing()
        if winner is not None:
            return winner
        current = table.get(probe)
        winner = None if current is None else current()
        if winner is not None:
            return winner
        table[probe] = ref
        return obj


def interned_key_count() -> int:
    """Number of live interned input and operation keys. For diagnostics and leak tests."""
    return len(_INPUT_KEYS) + len(_OPERATION_KEYS)


# --------------------------------------------------------------------------- value keys


class ValueKey:
    """Global identity of a value: :class:`Input` or :class:`Derived`.

    Keys are immutable and interned; ``==`` and ``hash`` are identity-based and
    coincide with structural equality.
    """

    __slots__ = ("__weakref__", "fingerprint", "memo")
    fingerprint: int
    """A structural hash computed once at construction (stable within a process)."""
    memo: dict[Hashable, Any] | None
    """A frontend's memo of this key (:mod:`computegraph.memo`): ``None`` until one is made
    on interned keys; unset (reading raises ``AttributeError``) on keys never interned
    (:meth:`Input.unique`). Not part of the key's identity."""

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __copy__(self) -> ValueKey:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ValueKey:
        return self


class Input(ValueKey):
    """The graph input named ``key``: any hashable, compared by type and value."""

    __slots__ = ("key",)
    __match_args__ = ("key",)
    key: Hashable

    def __new__(cls, key: Hashable) -> Input:
        probe = (key.__class__, key)  # 1, 1.0 and True are equal in a dict, not here
        try:
            ref = _INPUT_KEYS.get(probe)
        except TypeError:
            raise TypeError(f"Input: input key must be hashable, got {key!r}") from None
        if ref is not None:
            found = ref()
            if found is not None:
                return found  # type: ignore[no-any-return]
        obj = object.__new__(cls)
        _set_input_key(obj, key)
        _set_fingerprint(obj, hash(("Input", key)))
        _set_memo(obj, None)
        return _register(_INPUT_KEYS, probe, obj, _forget_input)  # type: ignore[no-any-return]

    @classmethod
    def unique(cls, key: Hashable) -> Input:
        """An input key for ``key`` without consulting the intern table.

        Only for keys that are never constructed again by value (fresh counters, such
        as eager tape keys): ``Input(key)`` would then give a different, unequal key.
        Skipping the table makes minting keys several times cheaper.
        """
        obj = object.__new__(cls)
        _set_input_key(obj, key)
        _set_fingerprint(obj, hash(("Input", key)))
        return obj  # its memo slot stays unset: a memo made for it is registered apart

    def __repr__(self) -> str:
        return f"Input({self.key!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Input, (self.key,))


class Derived(ValueKey):
    """Output ``output_slot`` of the operation identified by ``operation_key``."""

    __slots__ = ("operation_key", "output_slot")
    __match_args__ = ("operation_key", "output_slot")
    operation_key: OperationKey
    output_slot: int

    def __new__(cls, operation_key: OperationKey, output_slot: int) -> Derived:
        try:
            ref = operation_key._outputs[output_slot]
        except (AttributeError, TypeError, IndexError):
            _reject_derived(operation_key, output_slot)
        if type(output_slot) is not int or output_slot < 0:
            _reject_derived(operation_key, output_slot)
        if ref is not None:
            found = ref()
            if found is not None:
                return found
        obj = object.__new__(cls)
        _set_operation_key(obj, operation_key)
        _set_output_slot(obj, output_slot)
        _set_fingerprint(obj, hash((operation_key.fingerprint, output_slot)))
        _set_memo(obj, None)
        with _INTERN_LOCK:
            ref = operation_key._outputs[output_slot]
            found = None if ref is None else ref()
            if found is not None:
                return found
            operation_key._outputs[output_slot] = weakref.ref(obj)
        return obj

    def __repr__(self) -> str:
        opk = self.operation_key
        return f"Derived({opk.operation!r}#{opk.fingerprint & 0xFFFF:04x}, slot={self.output_slot})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Derived, (self.operation_key, self.output_slot))


def _reject_derived(operation_key: object, output_slot: object) -> NoReturn:
    if not isinstance(operation_key, OperationKey):
        raise TypeError(f"Derived: expected an OperationKey, got {operation_key!r}")
    raise GraphBuildError(
        f"Derived: output slot {output_slot!r} out of range for operation "
        f"{operation_key.operation!r} with {operation_key.output_count} output(s)"
    )


# --------------------------------------------------------------------------- operation keys


class OperationKey:
    """Structural identity of an operation application: ``(operation, inputs, role)``.

    Validated and interned at construction: ``inputs`` must be value keys, as many
    as ``operation.input_count()``, and a :class:`Linearized` role must carry one
    mask entry per input.
    """

    __slots__ = (
        "__weakref__",
        "_outputs",
        "fingerprint",
        "inputs",
        "operation",
        "output_count",
        "role",
    )
    __match_args__ = ("operation", "inputs", "role")
    operation: GraphOperation
    inputs: tuple[ValueKey, ...]
    role: OperationRole
    output_count: int
    fingerprint: int
    _outputs: list[weakref.ref[Derived] | None]

    def __new__(
        cls,
        operation: GraphOperation,
        inputs: Iterable[ValueKey],
        role: OperationRole = PRIMARY,
    ) -> OperationKey:
        if type(inputs) is not tuple:
            inputs = tuple(inputs)
        probe = (operation, role, inputs)
        try:
            ref = _OPERATION_KEYS.get(probe)
        except TypeError:
            raise TypeError(
                f"OperationKey: operation {operation!r} and role {role!r} must be hashable"
            ) from None
        if ref is not None:
            found = ref()
            if found is not None:
                return found  # type: ignore[no-any-return]
        output_count = _validate_operation(operation, inputs, role)
        obj = object.__new__(cls)
        _set_operation(obj, operation)
        _set_inputs(obj, inputs)
        _set_role(obj, role)
        _set_output_count(obj, output_count)
        _set_outputs(obj, [None] * output_count)
        _set_op_fingerprint(obj, hash((operation, role, *map(_fingerprint_of, inputs))))
        return _register(_OPERATION_KEYS, probe, obj, _forget_operation)  # type: ignore[no-any-return]

    def output_keys(self) -> tuple[Derived, ...]:
        """The value keys of every output slot, in slot order."""
        return tuple(Derived(self, slot) for slot in range(self.output_count))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("OperationKey is immutable")

    def __copy__(self) -> OperationKey:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> OperationKey:
        return self

    def __repr__(self) -> str:
        role = "" if self.role is PRIMARY else f", {self.role!r}"
        return (
            f"OperationKey({self.operation!r}#{self.fingerprint & 0xFFFF:04x}, "
            f"{len(self.inputs)} input(s){role})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (OperationKey, (self.operation, self.inputs, self.role))


def first_output(operation: GraphOperation, inputs: tuple[ValueKey, ...]) -> Derived:
    """``Derived(OperationKey(operation, inputs), 0)`` (primary role) in one call.

    The hot path of tracing: retracing a computation meets keys that exist already,
    and a hit here is one table lookup. ``inputs`` must be a tuple; anything the
    constructors would refuse reaches them and is refused there.
    """
    try:
        ref = _OPERATION_KEYS.get((operation, PRIMARY, inputs))
    except TypeError:
        ref = None
    if ref is not None:
        found = ref()
        if found is not None:
            outputs = found._outputs
            if outputs:
                output = outputs[0]
                if output is not None:
                    value = output()
                    if value is not None:
                        return value  # type: ignore[no-any-return]
    return Derived(OperationKey(operation, inputs), 0)


# Direct slot writers: the classes forbid attribute assignment, and descriptor
# ``__set__`` is the cheapest way around their ``__setattr__``.
_set_fingerprint = ValueKey.__dict__["fingerprint"].__set__
_set_memo = ValueKey.__dict__["memo"].__set__
_set_input_key = Input.__dict__["key"].__set__
_set_operation_key = Derived.__dict__["operation_key"].__set__
_set_output_slot = Derived.__dict__["output_slot"].__set__
_set_operation = OperationKey.__dict__["operation"].__set__
_set_inputs = OperationKey.__dict__["inputs"].__set__
_set_role = OperationKey.__dict__["role"].__set__
_set_output_count = OperationKey.__dict__["output_count"].__set__
_set_outputs = OperationKey.__dict__["_outputs"].__set__
_set_op_fingerprint = OperationKey.__dict__["fingerprint"].__set__
_fingerprint_of = operator.attrgetter("fingerprint")


def _validate_operation(
    operation: GraphOperation, inputs: tuple[ValueKey, ...], role: OperationRole
) -> int:
    """Check an operation application; return the operation's output count."""
    try:
        input_count = operation.input_count()
        output_count = operation.output_count()
    except AttributeError:
        raise TypeError(
            f"{operation!r} is not a GraphOperation: it needs input_count() and output_count()"
        ) from None
    if len(inputs) != input_count:
        raise GraphBuildError(
            f"operation {operation!r} expects {input_count} input(s), got {len(inputs)}"
        )
    if type(output_count) is not int or output_count < 0:
        raise GraphBuildError(
            f"operation {operation!r} declares an invalid output count {output_count!r}"
        )
    for position, key in enumerate(inputs):
        if not isinstance(key, ValueKey):
            raise TypeError(
                f"operation {operation!r}: input {position} must be a ValueKey, got {key!r}"
            )
    if not isinstance(role, OperationRole):
        raise TypeError(f"operation {operation!r}: role must be an OperationRole, got {role!r}")
    if isinstance(role, Linearized) and len(role.active_mask) != len(inputs):
        raise GraphBuildError(
            f"operation {operation!r}: active mask {list(role.active_mask)} has "
            f"{len(role.active_mask)} entries for {len(inputs)} input(s)"
        )
    return output_count
