"""Primitives on the bits of values: bitwise logic and shifts of integers (and bools),
the sign bit of real floating values and the next representable float.

None of them is differentiable in its integer or bool result; ``nextafter`` moves its
first operand by one unit in the last place, so its derivative is that operand's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tenferro.core.primitive import primitive
from tenferro.core.rules import RuleValue, Ts, Xs
from tenferro.dtypes import bool_
from tenferro.meta import Meta
from tenferro.ops.elementwise import Elementwise

__all__ = [
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "NextAfter",
    "ShiftLeft",
    "ShiftRightArithmetic",
    "SignBit",
]


class _Bitwise(Elementwise):
    """An elementwise integer (or bool) operation of two operands: no derivative. A bool
    result is never weakly typed (as comparisons' are not)."""

    __slots__ = ()
    kinds = "bi"

    def infer(self) -> tuple[Meta]:
        (meta,) = super().infer()
        return (meta._replace(weak=False) if meta.dtype.kind == "b" else meta,)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


@primitive
class BitwiseAnd(_Bitwise):
    """``x & y`` of integers or bools."""

    name = "bitwise_and"
    ufunc = np.bitwise_and
    lax_name = "bitwise_and"


@primitive
class BitwiseOr(_Bitwise):
    """``x | y`` of integers or bools."""

    name = "bitwise_or"
    ufunc = np.bitwise_or
    lax_name = "bitwise_or"


@primitive
class BitwiseXor(_Bitwise):
    """``x ^ y`` of integers or bools."""

    name = "bitwise_xor"
    ufunc = np.bitwise_xor
    lax_name = "bitwise_xor"


@primitive
class ShiftLeft(_Bitwise):
    """``x << y`` of integers (numpy's: shifts past the width give 0)."""

    name = "shift_left"
    kinds = "i"
    ufunc = np.left_shift
    lax_name = "shift_left"


@primitive
class ShiftRightArithmetic(_Bitwise):
    """``x >> y`` of integers, the sign bit copied in (numpy's right shift)."""

    name = "shift_right_arithmetic"
    kinds = "i"
    ufunc = np.right_shift
    lax_name = "shift_right_arithmetic"


@primitive
class BitwiseNot(_Bitwise):
    """``~x`` of integers (two's complement) or bools (logical not)."""

    name = "bitwise_not"
    ufunc = np.invert
    lax_name = "bitwise_not"


@primitive
class SignBit(Elementwise):
    """Whether the sign bit of a real floating value is set (``-0.0`` and negative NaNs
    included); bool result."""

    name = "signbit"
    kinds = "f"

    ufunc = np.signbit

    def lower(self, lo: Any, x: Any) -> Any:
        return lo.jnp.signbit(x)

    def result_dtype(self, dtype: np.dtype[Any]) -> np.dtype[Any]:
        return bool_

    def infer(self) -> tuple[Meta]:
        (meta,) = super().infer()
        return (meta._replace(weak=False),)

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [None]


@primitive
class NextAfter(Elementwise):
    """The representable value after ``x`` in the direction of ``y`` (real floating). Its
    derivative is ``x``'s tangent (the step of one unit in the last place is constant
    almost everywhere)."""

    name = "nextafter"
    kinds = "f"

    ufunc = np.nextafter
    lax_name = "nextafter"

    def jvp(self, xs: Xs, ys: Xs, ts: Ts) -> list[RuleValue | None]:
        return [ts[0]]
