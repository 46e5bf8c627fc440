"""The base of tf.linalg's families, and the preamble of their public functions.

A :class:`LinalgOp` is a :class:`~tenferro.core.families.FamilyPrimitive`, defined
as every primitive is (shape rule, kernel, JVP, transpose, batching rule in one class)
and named with :func:`~tenferro.core.families.family` (``"linalg.qr"``). Its kernels
are trusted to return the metas ``infer()`` declared (the linalg tests check every
dtype and shape class). Leading axes are batch axes (numpy.linalg semantics) for
``vmap``. :class:`SquareMatrixOp` is the base of the families of one square matrix.

:func:`matrix_operand` is the one preamble of the public functions that take one
matrix: a tensor that is already a float/complex matrix passes straight through.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tenferro.concrete import Tensor
from tenferro.core.families import FamilyPrimitive
from tenferro.core.primitive import TensorPrimitive
from tenferro.linalg._common import inexact_operands, require_inexact
from tenferro.linalg.checks import check_matrix, check_square
from tenferro.meta import Meta
from tenferro.ops.batching import leading

__all__ = ["LinalgOp", "SquareMatrixOp", "matrix_operand"]


class LinalgOp(FamilyPrimitive):
    """A family of tf.linalg (see the module documentation)."""

    __slots__ = ()

    batch = leading  # numpy.linalg semantics: leading axes are batch axes
    single_output: ClassVar[bool] = False
    """Every instance has one output and ``impl`` returns it (an array, never a tuple):
    then ``eval`` is the primitives' plain ``(impl(*inputs),)``, so concrete kinds call
    ``impl`` directly (``direct_impl``), without an ``eval`` frame."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.single_output:
            cls.eval = TensorPrimitive.eval  # type: ignore[method-assign]
        super().__init_subclass__(**kwargs)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "_prepared", None)  # a family's kernel plan, if it has one


class SquareMatrixOp(LinalgOp):
    """A family of one (batch of) square float or complex matrices, its first operand:
    ``infer`` checks it, naming ``subject`` (the public function), and gives
    :meth:`square_outputs`."""

    __slots__ = ()
    subject: ClassVar[str] = ""
    """The function named in errors (the family's own name when empty)."""

    def infer(self) -> list[Meta]:
        a = self.inputs[0]
        op = self.subject or self.name
        check_square(op, a)
        require_inexact(op, a)
        return self.square_outputs(a)

    def square_outputs(self, a: Meta) -> list[Meta]:
        """The output metas for the square operand ``a`` (default: one like ``a``)."""
        return [a]


def matrix_operand(op: str, a: Any, *, square: bool = False) -> Any:
    """``a`` as a tensor of a float or complex dtype (integers and bool promote to
    float64) holding a matrix or a batch of them (square ones with ``square``); raises
    naming ``op`` otherwise."""
    meta = getattr(a, "meta", None)
    if meta is None or not isinstance(a, Tensor) or meta.dtype.kind not in "fc":
        (a,) = inexact_operands(op, a)
        meta = a.meta
    if meta.ndim < 2 or meta.dynamic or (square and meta.shape[-1] != meta.shape[-2]):
        (check_square if square else check_matrix)(op, meta)
    return a
