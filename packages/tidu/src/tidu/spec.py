"""Spec-level operation contracts (after TorchLean's ``Spec.OpSpec``).

An :class:`OpSpec` is the mathematical contract of an operation: its forward map
and its vector-Jacobian product (``backward(x, dL/dy) = dL/dx``), independent of any
graph or tape. Specs compose by the reverse chain rule. They serve as an
independent referee: :func:`primitive_spec` derives a spec from a primitive's
tidu rules (JVP, then transpose), and :func:`check_vjp` compares a primitive's
rules with a hand-written spec on given points.

Multi-input operations take a tuple of operands and multi-output ones return a
tuple; ``backward`` takes the inputs and a tuple of output cotangents and returns
a tuple of input cotangents.
"""

from __future__ import annotations

import cmath
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from computegraph import GraphBuilder, Local, compile, materialize_merge, resolve
from tidu.linearize import linearize
from tidu.transpose import linear_transpose

__all__ = ["OpSpec", "check_vjp", "default_close", "primitive_spec"]

X = TypeVar("X")
Y = TypeVar("Y")
Z = TypeVar("Z")


@dataclass(frozen=True)
class OpSpec(Generic[X, Y]):
    """Forward map plus VJP of an operation from ``X`` to ``Y``."""

    forward: Callable[[X], Y]
    backward: Callable[[X, Y], X]
    """``backward(x, dL/dy) -> dL/dx``; it takes ``x`` because derivatives depend on it."""
    name: str = "op"

    @staticmethod
    def identity(name: str = "id") -> OpSpec[Any, Any]:
        """Forward is the identity; backward returns the upstream cotangent."""
        return OpSpec(lambda x: x, lambda x, dy: dy, name)

    def compose(self, after: OpSpec[Y, Z]) -> OpSpec[X, Z]:
        """``after ∘ self``, by the reverse chain rule.

        ``dL/dx = self.backward(x, after.backward(self.forward(x), dz))``.
        """
        first = self

        def forward(x: X) -> Z:
            return after.forward(first.forward(x))

        def backward(x: X, dz: Z) -> X:
            return first.backward(x, after.backward(first.forward(x), dz))

        return OpSpec(forward, backward, f"{after.name}∘{first.name}")

    def vjp(self, x: X, dy: Y) -> tuple[Y, X]:
        """``(forward(x), backward(x, dy))``."""
        return self.forward(x), self.backward(x, dy)


def primitive_spec(primitive: Any, ctx: Any = None) -> OpSpec[tuple[Any, ...], tuple[Any, ...]]:
    """The spec a primitive's tidu rules imply: forward by ``eval``, backward by JVP + transpose.

    Input cotangents that tidu proves zero come back as ``None``.
    """
    builder = GraphBuilder()
    names = [f"x{i}" for i in range(primitive.input_count())]
    locals_ = [Local(builder.add_input(name)) for name in names]
    outputs = builder.add_operation(primitive, locals_)
    builder.set_outputs(outputs)
    graph = builder.build()
    output_keys = graph.output_keys()
    forward_program = compile(materialize_merge(resolve(graph), output_keys))
    linear = linearize(resolve(graph), output_keys, names, None, ctx)
    transposed = linear_transpose(linear, ctx)
    seed_names = [key for key, _ in transposed.tangent_inputs]
    seeded = [i for i, out in enumerate(linear.tangent_outputs) if out is not None]
    result_keys = [
        None if local is None else transposed.graph.value_keys[local]
        for local in transposed.tangent_outputs
    ]
    backward_program = compile(
        materialize_merge(
            resolve([graph, transposed.graph]), [k for k in result_keys if k is not None]
        )
    )

    def forward(x: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(forward_program.eval_with(dict(zip(names, x, strict=True))))

    def backward(x: tuple[Any, ...], dy: tuple[Any, ...]) -> tuple[Any, ...]:
        bindings: dict[Any, Any] = dict(zip(names, x, strict=True))
        bindings.update({seed: dy[i] for seed, i in zip(seed_names, seeded, strict=True)})
        values = iter(backward_program.eval_with(bindings))
        return tuple(None if key is None else next(values) for key in result_keys)

    return OpSpec(forward, backward, str(primitive))


def default_close(a: Any, b: Any) -> bool:
    """Numbers within 1e-9 relative / 1e-12 absolute; ``None`` (a proven zero) matches zero."""
    if a is None or b is None:
        other = b if a is None else a
        return other is None or (isinstance(other, numbers.Complex) and other == 0)
    if isinstance(a, numbers.Complex) and isinstance(b, numbers.Complex):
        return cmath.isclose(complex(a), complex(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def check_vjp(
    primitive: Any,
    spec: OpSpec[Any, Any],
    inputs: Sequence[Any],
    cotangents: Sequence[Any],
    *,
    close: Callable[[Any, Any], bool] = default_close,
    ctx: Any = None,
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Check a primitive's forward and VJP (by its tidu rules) against ``spec`` at one point.

    Returns ``(tidu's input cotangents, the spec's)``; raises ``AssertionError`` with
    both on any mismatch.
    """
    derived = primitive_spec(primitive, ctx)
    x, dy = tuple(inputs), tuple(cotangents)
    ours_y, ours_dx = derived.vjp(x, dy)
    spec_y, spec_dx = spec.vjp(x, dy)
    spec_y = tuple(spec_y) if isinstance(spec_y, (tuple, list)) else (spec_y,)
    spec_dx = tuple(spec_dx) if isinstance(spec_dx, (tuple, list)) else (spec_dx,)
    if len(ours_y) != len(spec_y) or not all(map(close, ours_y, spec_y)):
        raise AssertionError(f"{primitive!r}: forward {ours_y!r} != spec {spec_y!r} at {x!r}")
    if len(ours_dx) != len(spec_dx) or not all(map(close, ours_dx, spec_dx)):
        raise AssertionError(
            f"{primitive!r}: VJP {ours_dx!r} != spec {spec_dx!r} at x={x!r}, dy={dy!r}"
        )
    return ours_dx, spec_dx
