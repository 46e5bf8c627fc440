"""numpy-style functions on the bits of values (broadcasting, numpy promotion): bitwise
logic and shifts of integers and bools, and the sign-bit functions of real floats
(``signbit``, ``copysign``, ``nextafter``)."""

from __future__ import annotations

from typing import Any

from tenferro import lax
from tenferro.errors import DTypeError
from tenferro.surface.convert import prepare
from tenferro.surface.math import _inexact
from tenferro.surface.signatures import Binary, binary, unary

__all__ = [
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "copysign",
    "invert",
    "left_shift",
    "nextafter",
    "right_shift",
    "signbit",
]


def _bitwise(op: str, kinds: str, apply: Any) -> Binary:
    def function(x: Any, y: Any) -> Any:
        a, b = prepare(op, (x, y), kinds=kinds)
        return apply(a, b)

    function.__name__ = function.__qualname__ = op
    what = "integers" if kinds == "i" else "integers or bools"
    function.__doc__ = f"Elementwise ``{op}`` of {what} (numpy broadcasting and promotion)."
    return binary(function)


bitwise_and = _bitwise("bitwise_and", "bi", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", "bi", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", "bi", lax.bitwise_xor)
bitwise_left_shift = _bitwise("bitwise_left_shift", "i", lax.shift_left)
bitwise_right_shift = _bitwise("bitwise_right_shift", "i", lax.shift_right_arithmetic)
left_shift = bitwise_left_shift
right_shift = bitwise_right_shift


@unary
def bitwise_invert(x: Any) -> Any:
    """``~x``: two's complement of integers, logical not of bools."""
    (a,) = prepare("bitwise_invert", (x,), kinds="bi")
    return lax.bitwise_not(a)


bitwise_not = invert = bitwise_invert


def _real_floats(op: str, *values: Any) -> list[Any]:
    operands = _inexact(op, *values)
    if operands[0].meta.dtype.kind == "c":
        raise DTypeError(op, f"needs real operands, got {operands[0].meta.dtype}")
    return operands


@unary
def signbit(x: Any) -> Any:
    """Whether the sign bit is set (``-0.0`` and negative NaNs count; integers promote to
    float64 as in numpy)."""
    (a,) = _real_floats("signbit", x)
    return lax.signbit(a)


@binary
def copysign(x: Any, y: Any) -> Any:
    """``|x|`` with the sign of ``y`` (its sign bit: ``-0.0`` counts as negative). The
    derivative with respect to ``x`` is ``±1`` (0 at ``x = 0``, abs's subgradient); with
    respect to ``y`` it is 0."""
    a, b = _real_floats("copysign", x, y)
    magnitude = lax.abs(a)
    return lax.select(lax.signbit(b), lax.neg(magnitude), magnitude)


@binary
def nextafter(x: Any, y: Any) -> Any:
    """The next representable value after ``x`` toward ``y``; derivative 1 in ``x``."""
    a, b = _real_floats("nextafter", x, y)
    return lax.nextafter(a, b)
