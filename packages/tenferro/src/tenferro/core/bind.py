"""``bind``: apply a primitive to operands of whatever tensor kind they are.

The numpy-style surface and :mod:`tenferro.lax` are written once; the kind of
the operands decides what binding means:

* :class:`~tenferro.Tensor`: evaluate now;
* :class:`~tenferro.EagerTensor`: evaluate now and record on the tape;
* :class:`~tenferro.TracedTensor`: add a node (a structural key);
* rule values: emit into the graph of the AD rule being run.

Operands of different kinds are lifted to the highest kind present (a concrete
tensor used in a traced computation becomes a constant leaf, and so on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tenferro.errors import TenferroError

if TYPE_CHECKING:
    from tenferro.core.primitive import TensorPrimitive

__all__ = ["TensorKind", "bind", "bind1", "highest_kind", "lift"]


class TensorKind(Protocol):
    """What a tensor class provides to :func:`bind`."""

    _priority: float

    @classmethod
    def _bind(
        cls, op: TensorPrimitive, operands: Sequence[Any], like: Any = None
    ) -> tuple[Any, ...]: ...

    @classmethod
    def _lift(cls, value: Any) -> Any: ...


def bind(op: TensorPrimitive, operands: Sequence[Any], like: Any = None) -> tuple[Any, ...]:
    """Apply ``op`` to ``operands`` (tensors of any kinds); return its outputs.

    ``like`` gives the kind (and context) for primitives without operands.
    """
    if not operands:
        if like is None:
            raise TenferroError(op.name, "a primitive without operands needs a `like` value")
        like_kind: type[TensorKind] = type(like)
        return like_kind._bind(op, (), like)
    kind: type[TensorKind] = type(operands[0])
    count = len(operands)
    if count == 1 or (count == 2 and type(operands[1]) is kind):
        return kind._bind(op, operands, like)  # the common cases, without a loop
    if all(type(o) is kind for o in operands):
        return kind._bind(op, operands, like)
    kind, _ = _highest_kind(operands)
    lift_to = kind._lift
    return kind._bind(op, [o if type(o) is kind else lift_to(o) for o in operands], like)


def bind1(op: TensorPrimitive, operands: Sequence[Any], like: Any = None) -> Any:
    """``bind`` for single-output primitives."""
    return bind(op, operands, like)[0]


def lift(operands: Sequence[Any]) -> list[Any]:
    """``operands`` lifted to the highest tensor kind among them."""
    kind, mixed = _highest_kind(operands)
    if not mixed:
        return list(operands)
    lift_to = kind._lift
    return [o if type(o) is kind else lift_to(o) for o in operands]


def highest_kind(operands: Sequence[Any]) -> Any:
    """The kind that binds an operation on ``operands`` (tensors of any kinds)."""
    return _highest_kind(operands)[0]


def _highest_kind(operands: Sequence[Any]) -> tuple[Any, bool]:
    """The operands' kind of highest priority, and whether several kinds are present."""
    kind = type(operands[0])
    mixed = False
    for operand in operands:
        other = type(operand)
        if other is not kind:
            mixed = True
            if _priority(other) > _priority(kind):
                kind = other
    return kind, mixed


def _priority(kind: type) -> float:
    priority = getattr(kind, "_priority", None)
    if priority is None:
        raise TenferroError(
            "bind", f"{kind.__name__} is not a tensor; convert it with tf.asarray first"
        )
    return float(priority)
