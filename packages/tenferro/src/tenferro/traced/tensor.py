"""``TracedTensor``: a lazy value, identified by its structural key.

Applying operations to traced tensors builds keys (no graph objects: the key of
a value describes its whole computation). ``eval`` materialises and compiles the
computation once per structure (cached) and runs it. Leaves are placeholders
(bound at evaluation), constants with data, function arguments, checkpoints or
aliases; a concrete tensor used with a traced one becomes a constant leaf (a
scalar becomes a structural constant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from computegraph import Derived, Input, OperationKey, ValueKey
from tenferro import lax
from tenferro.core.keys import LeafKey, PlaceholderKey
from tenferro.core.primitive import TensorPrimitive
from tenferro.dtypes import dtype as as_dtype
from tenferro.errors import TenferroError
from tenferro.meta import Meta
from tenferro.surface.methods import TensorMethods

__all__ = ["TracedTensor", "placeholder", "traced"]


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
        operation_key = OperationKey(op, tuple([o.key for o in operands]))
        if len(op.outputs) == 1:
            return (cls(Derived(operation_key, 0), op.outputs[0]),)
        return tuple(
            cls(k, m) for k, m in zip(operation_key.output_keys(), op.outputs, strict=True)
        )

    @classmethod
    def _lift(cls, value: Any) -> TracedTensor:
        if getattr(value, "tape", None) is not None:
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

    def _rewrap(self, meta: Meta) -> TracedTensor:
        return TracedTensor(self.key, meta)

    # ------------------------------------------------------------------ evaluation

    def eval(self, bindings: Mapping[Any, Any] | None = None) -> Any:
        """The value, as a concrete ``Tensor`` (placeholders bound by ``bindings``:
        ``{placeholder_tensor: value}``)."""
        from tenferro.traced.program import evaluate

        return evaluate([self], bindings)[0]

    def is_leaf(self) -> bool:
        """Whether this value is an input of the computation (differentiable with respect to)."""
        return type(self.key) is Input

    # ------------------------------------------------------------------ AD

    def grad(self, wrt: Any, *, allow_unused: bool = False) -> Any:
        """The gradient of this real scalar with respect to leaf ``wrt`` (or a sequence of
        them). A leaf this value does not depend on raises :class:`~tenferro.InactiveError`,
        or gives ``None`` with ``allow_unused=True``."""
        from tenferro.traced.ad import grad

        return grad(self, wrt, optional=allow_unused)

    def vjp(self, wrt: Any, cotangent: Any, *, allow_unused: bool = False) -> Any:
        """The vector-Jacobian product with ``cotangent`` (conjugate convention);
        ``allow_unused`` as in :meth:`grad`."""
        from tenferro.traced.ad import vjp

        return vjp(self, wrt, cotangent, optional=allow_unused)

    def jvp(self, wrt: Any, tangent: Any, *, allow_unused: bool = False) -> Any:
        """The Jacobian-vector product along ``tangent`` (one per leaf in ``wrt``);
        ``allow_unused`` as in :meth:`grad`."""
        from tenferro.traced.ad import jvp

        return jvp(self, wrt, tangent, optional=allow_unused)

    def checkpoint(self) -> TracedTensor:
        """Evaluate now and continue from the stored value; derivatives still flow to the
        original inputs (the prefix is recomputed when a derivative needs it)."""
        from tenferro.traced.ad import checkpoint

        return checkpoint(self)

    def __repr__(self) -> str:
        return f"TracedTensor({self.meta.describe()}, key={self.key!r})"

    def __bool__(self) -> bool:
        raise TypeError(
            "the truth value of a TracedTensor is not known while tracing; evaluate it first, "
            "or use tf.where for data-dependent choices"
        )

    def __len__(self) -> int:
        if not self.meta.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.meta.shape[0]


def _constant_like(data: Any, meta: Meta) -> tuple[TracedTensor]:
    constant = lax.constant(data, meta.dtype, _ANCHOR)
    return (constant._rewrap(meta),)


class _Anchor:
    """Gives primitives without operands (constants) the traced kind."""

    _priority = TracedTensor._priority
    meta = None

    @staticmethod
    def _bind(op: TensorPrimitive, operands: Sequence[Any], like: Any = None) -> Any:
        return TracedTensor._bind(op, operands)


_ANCHOR = _Anchor()


def placeholder(
    shape: Sequence[int], dtype: Any = "float64", name: str | None = None
) -> TracedTensor:
    """A traced input without data, bound when evaluated: ``y.eval({x: value})``."""
    meta = Meta(tuple(int(n) for n in shape), as_dtype(dtype, "placeholder"))
    return TracedTensor(Input(PlaceholderKey(meta, name)), meta)


def traced(data: Any, dtype: Any = None, name: str = "leaf") -> TracedTensor:
    """A traced leaf holding ``data`` (evaluation uses the data; derivatives may be taken
    with respect to it)."""
    from tenferro.tensor import Tensor

    tensor = data if isinstance(data, Tensor) and dtype is None else Tensor(data, dtype)
    meta = tensor.meta._replace(weak=False)
    return TracedTensor(Input(LeafKey(meta, np.asarray(tensor._value), name)), meta)
