"""Named families: primitives whose number of outputs depends on their parameters.

The library's larger operations (``tf.linalg``'s decompositions, the iterative solvers)
are primitives like those of :mod:`tenferro.ops`: one class holds the shape rule,
kernel, JVP, transpose and batching rule. They differ in two ways only, which
:class:`FamilyPrimitive` adds to the base: the outputs ``infer()`` declares fix the
output count (``eigh`` has a third output with the canonical gauge), and
:meth:`FamilyPrimitive.apply` takes operands of any kind (arrays, scalars, tensors).

:func:`family` names such a class (``"linalg.qr"``) and lists it in :func:`families`,
where the package's completeness checks find every primitive it defines. Users'
families are made with :mod:`tenferro.extension`, which builds on this base and keeps
its own registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tenferro.core.bind import lift
from tenferro.core.kinds import asarray
from tenferro.core.primitive import TensorPrimitive, primitive
from tenferro.errors import TenferroError

__all__ = ["FamilyPrimitive", "families", "family"]

F = TypeVar("F", bound="FamilyPrimitive")

_FAMILIES: dict[str, type[FamilyPrimitive]] = {}


class FamilyPrimitive(TensorPrimitive):
    """A primitive whose outputs are those ``infer()`` returns (one or several)."""

    __slots__ = ()

    if TYPE_CHECKING:  # a family may have several outputs: bind gives them as a tuple

        @classmethod
        def bind(cls, *operands: Any, like: Any = None, **params: Any) -> Any: ...

    def output_count(self) -> int:
        return len(self.outputs)

    def eval(self, inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        result = self.impl(*inputs)
        return result if isinstance(result, tuple) else (result,)

    def kernel(self) -> Any:
        """For generated code: ``impl`` itself when it returns one array."""
        return self.impl if len(self.outputs) == 1 else None

    @classmethod
    def apply(cls, *operands: Any, **params: Any) -> Any:
        """Apply the family to ``operands`` (tensors of any kind, arrays or scalars).

        Returns one tensor, or a tuple for families with several outputs.
        """
        tensors = lift([asarray(v) for v in operands])
        if not tensors:
            raise TenferroError(cls.name, "an operation of this family needs at least one operand")
        return cls.bind(*tensors, **params)


def family(name: str) -> Callable[[type[F]], type[F]]:
    """Class decorator: make a :class:`FamilyPrimitive` subclass the primitive ``name``
    (its name in graphs and errors) and list it in :func:`families`."""

    def decorate(cls: type[F]) -> type[F]:
        if name in _FAMILIES:
            raise TenferroError(name, "a family of this name is already defined")
        cls.name = name
        made = primitive(cls)
        _FAMILIES[name] = made
        return made

    return decorate


def families() -> dict[str, type[FamilyPrimitive]]:
    """Every family the package defines, by name."""
    return dict(_FAMILIES)
