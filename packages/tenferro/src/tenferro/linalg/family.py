"""The base of tf.linalg's families, and the preamble of their public functions.

A :class:`LinalgOp` is an :class:`~tenferro.extension.ExtensionOp` whose kernels are
part of the package: they are trusted to return the metas ``infer()`` declared (the
linalg tests check every dtype and shape class), so evaluation is ``impl`` alone,
without the per-output check that guards user-written families. Leading axes are
batch axes (numpy.linalg semantics) for ``vmap``.

:func:`matrix_operand` is the one preamble of the public functions that take one
matrix: a tensor that is already a float/complex matrix passes straight through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from tenferro.concrete import Tensor
from tenferro.core.primitive import TensorPrimitive
from tenferro.extension import ExtensionOp
from tenferro.linalg._common import inexact_operands
from tenferro.linalg.checks import check_matrix, check_square
from tenferro.ops.batching import leading

__all__ = ["LinalgOp", "matrix_operand"]


class LinalgOp(ExtensionOp):
    """An extension family of tf.linalg (see the module documentation)."""

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

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        result = self.impl(*inputs)
        return result if isinstance(result, tuple) else (result,)

    def kernel(self) -> Any:
        """For generated code: ``impl`` itself when it returns one array (trusted, as
        :meth:`eval`: no per-call check of the result)."""
        return self.impl if len(self.outputs) == 1 else None


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
