"""Static signatures of the numpy-style surface, for type checkers.

Every function of the surface returns the tensor kind of its operands: ``tf.exp(x)``
is a ``TracedTensor`` for a ``TracedTensor``, an ``EagerTensor`` for an
``EagerTensor``; plain data (arrays, sequences, scalars) gives a ``Tensor``. The
protocols below say so to mypy; the decorators are identities at run time (they
only give a function its static type).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, cast, overload

from tenferro.typing import TensorT

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from tenferro.concrete import Tensor

__all__ = [
    "Binary",
    "BinaryPreserving",
    "Joining",
    "Preserving",
    "Select",
    "Stacking",
    "TensorT",
    "Unary",
    "binary",
    "binary_preserving",
    "joining",
    "preserving",
    "select",
    "stacking",
    "unary",
]

P = ParamSpec("P")


class Unary(Protocol):
    """``f(x) -> same kind as x`` (data gives a ``Tensor``)."""

    @overload
    def __call__(self, x: TensorT, /) -> TensorT: ...
    @overload
    def __call__(self, x: ArrayLike, /) -> Tensor: ...


class Binary(Protocol):
    """``f(x, y) -> the kind of the tensor operand`` (two plain operands give a ``Tensor``)."""

    @overload
    def __call__(self, x: TensorT, y: TensorT | ArrayLike, /) -> TensorT: ...
    @overload
    def __call__(self, x: ArrayLike, y: TensorT, /) -> TensorT: ...
    @overload
    def __call__(self, x: ArrayLike, y: ArrayLike, /) -> Tensor: ...


class Preserving(Protocol[P]):
    """``f(x, *options) -> same kind as x`` (data gives a ``Tensor``)."""

    @overload
    def __call__(self, x: TensorT, /, *args: P.args, **kwargs: P.kwargs) -> TensorT: ...
    @overload
    def __call__(self, x: ArrayLike, /, *args: P.args, **kwargs: P.kwargs) -> Tensor: ...


class BinaryPreserving(Protocol[P]):
    """``f(x, y, *options) -> the kind of the tensor operand`` (data gives a ``Tensor``)."""

    @overload
    def __call__(
        self, x: TensorT, y: TensorT | ArrayLike, /, *args: P.args, **kwargs: P.kwargs
    ) -> TensorT: ...
    @overload
    def __call__(
        self, x: ArrayLike, y: TensorT, /, *args: P.args, **kwargs: P.kwargs
    ) -> TensorT: ...
    @overload
    def __call__(
        self, x: ArrayLike, y: ArrayLike, /, *args: P.args, **kwargs: P.kwargs
    ) -> Tensor: ...


class Joining(Protocol):
    """``f(arrays, axis) -> the kind of the tensors`` (data gives a ``Tensor``; a sequence
    mixing kinds with data is typed ``Any``; one tensor is the sequence of its rows)."""

    @overload
    def __call__(self, arrays: TensorT, axis: int = 0) -> TensorT: ...
    @overload
    def __call__(self, arrays: NDArray[Any], axis: int = 0) -> Tensor: ...
    @overload
    def __call__(self, arrays: Sequence[TensorT], axis: int = 0) -> TensorT: ...
    @overload
    def __call__(self, arrays: Sequence[ArrayLike], axis: int = 0) -> Tensor: ...
    @overload
    def __call__(self, arrays: Sequence[Any], axis: int = 0) -> Any: ...


class Stacking(Protocol):
    """``f(arrays) -> the kind of the tensors`` (``hstack``, ``vstack``, ...; data gives a
    ``Tensor``; a sequence mixing kinds with data is typed ``Any``; one tensor is the
    sequence of its rows)."""

    @overload
    def __call__(self, tup: TensorT, /) -> TensorT: ...
    @overload
    def __call__(self, tup: NDArray[Any], /) -> Tensor: ...
    @overload
    def __call__(self, tup: Sequence[TensorT], /) -> TensorT: ...
    @overload
    def __call__(self, tup: Sequence[ArrayLike], /) -> Tensor: ...
    @overload
    def __call__(self, tup: Sequence[Any], /) -> Any: ...


class Select(Protocol):
    """``where(condition, x, y) -> the kind of the tensor operands`` (plain operands give
    a ``Tensor``)."""

    @overload
    def __call__(self, condition: Any, x: TensorT, y: TensorT | ArrayLike, /) -> TensorT: ...
    @overload
    def __call__(self, condition: Any, x: ArrayLike, y: TensorT, /) -> TensorT: ...
    @overload
    def __call__(self, condition: TensorT, x: ArrayLike, y: ArrayLike, /) -> TensorT: ...
    @overload
    def __call__(self, condition: ArrayLike, x: ArrayLike, y: ArrayLike, /) -> Tensor: ...


def binary_preserving(function: Callable[Concatenate[Any, Any, P], Any]) -> BinaryPreserving[P]:
    """Type ``function`` as :class:`BinaryPreserving` (the function itself, unchanged)."""
    return cast("BinaryPreserving[P]", function)


def joining(function: Callable[[Any, int], Any]) -> Joining:
    """Type ``function`` as :class:`Joining` (the function itself, unchanged)."""
    return cast("Joining", function)


def stacking(function: Callable[[Any], Any]) -> Stacking:
    """Type ``function`` as :class:`Stacking` (the function itself, unchanged)."""
    return cast("Stacking", function)


def select(function: Callable[[Any, Any, Any], Any]) -> Select:
    """Type ``function`` as :class:`Select` (the function itself, unchanged)."""
    return cast("Select", function)


def unary(function: Callable[[Any], Any]) -> Unary:
    """Type ``function`` as :class:`Unary` (the function itself, unchanged)."""
    return cast("Unary", function)


def binary(function: Callable[[Any, Any], Any]) -> Binary:
    """Type ``function`` as :class:`Binary` (the function itself, unchanged)."""
    return cast("Binary", function)


def preserving(function: Callable[Concatenate[Any, P], Any]) -> Preserving[P]:
    """Type ``function`` as :class:`Preserving` (the function itself, unchanged)."""
    return cast("Preserving[P]", function)
