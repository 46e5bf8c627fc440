"""Checks shared by the primitives' shape rules: one shape and dtype, dtype kinds,
static shapes. Each raises a tenferro error naming the operation and the offending
metas."""

from __future__ import annotations

from collections.abc import Sequence

from tenferro.errors import DTypeError, ShapeError
from tenferro.meta import Meta

__all__ = ["check_kind", "check_same", "check_static"]


def check_same(op: str, metas: Sequence[Meta], what: str = "operands") -> Meta:
    """All metas share one shape, dtype and set of dynamic axes (primitives never broadcast)."""
    first = metas[0]
    for other in metas[1:]:
        if other.shape != first.shape or other.dynamic != first.dynamic:
            raise ShapeError(
                op,
                f"{what} must have one shape, got "
                f"{' and '.join(m.describe() for m in metas)} "
                f"(use the numpy-style functions to broadcast)",
            )
        if other.dtype != first.dtype:
            raise DTypeError(
                op,
                f"{what} must have one dtype, got {' and '.join(str(m.dtype) for m in metas)} "
                f"(use the numpy-style functions to promote)",
            )
    return first


_KIND_NAMES = {"b": "bool", "i": "integer", "f": "floating", "c": "complex"}


def check_kind(op: str, meta: Meta, kinds: str, what: str = "operand") -> None:
    """The dtype of ``meta`` is of one of ``kinds`` (numpy kind letters among b, i, f, c)."""
    if meta.dtype.kind not in kinds:
        allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
        raise DTypeError(op, f"{what} dtype {meta.dtype} is not supported (allowed: {allowed})")


def check_static(op: str, meta: Meta, what: str = "operand") -> None:
    """``meta`` has no dynamic (upper-bound) axes: ``op`` needs exact static shapes."""
    if meta.dynamic:
        raise ShapeError(
            op,
            f"the {what} {meta.describe()} has data-dependent extents (axes {meta.dynamic}); "
            f"this operation needs a static shape: apply pad_to_match first, or use the eager "
            f"surface for data-dependent shapes",
        )
