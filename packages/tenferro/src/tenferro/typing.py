"""Types for annotating code that uses tenferro (as ``numpy.typing`` is for numpy).

Every function of tenferro gives back the tensor kind it was given: ``lax.exp(x)``
is a ``TracedTensor`` for a ``TracedTensor``, an ``EagerTensor`` for an
``EagerTensor``. The type variables below say so to a type checker, and user code can
use them the same way::

    from tenferro.typing import TensorT

    def step(x: TensorT, h: float) -> TensorT:
        return x - h * tf.sin(x)  # a checker knows step(traced) is a TracedTensor

* :class:`TensorLike`: anything tenferro computes with, structurally: every tensor kind
  and the values an AD rule receives (an object with a ``meta``: shape, dtype, ...);
* :data:`TensorLikeT`: a type variable over those (what :mod:`tenferro.lax` and the
  matrix helpers of :mod:`tenferro.algebra` take and give back);
* :data:`TensorT`: a type variable over the tensor kinds (``Tensor``, ``EagerTensor``,
  ``TracedTensor``), which also have the operators and methods of numpy arrays;
* :data:`Scalar`: the Python numbers that stand for rank-0 operands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from tenferro.meta import Meta

if TYPE_CHECKING:
    from tenferro.core.methods import TensorMethods

__all__ = ["Scalar", "TensorLike", "TensorLikeT", "TensorT"]


@runtime_checkable
class TensorLike(Protocol):
    """A tensor of any kind, or a value inside an AD rule: it has a :class:`Meta`."""

    @property
    def meta(self) -> Meta: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def ndim(self) -> int: ...


TensorLikeT = TypeVar("TensorLikeT", bound=TensorLike)
"""Any :class:`TensorLike`; a function ``(x: TensorLikeT) -> TensorLikeT`` gives back the
kind it was given."""

TensorT = TypeVar("TensorT", bound="TensorMethods")
"""Any tensor kind: ``Tensor``, ``EagerTensor``, ``TracedTensor``."""

Scalar = bool | int | float | complex
"""Python numbers: rank-0 operands (weakly typed, as in JAX)."""
