"""Elementwise tests of IEEE special values: ``isnan``, ``isinf``, ``isfinite``, and of
complex values: ``iscomplex``, ``isreal`` (numpy's); ``iscomplexobj`` and ``isrealobj``
test the dtype (a Python bool).

They give bool tensors of the operand's kind (so they work on traced values too);
integers and bools are never NaN or infinite. A complex value is NaN when either
part is, infinite when either part is infinite (and neither is NaN).
"""

from __future__ import annotations

from typing import Any

from tenferro import lax
from tenferro.surface.convert import asarray
from tenferro.surface.signatures import unary

__all__ = ["iscomplex", "iscomplexobj", "isfinite", "isinf", "isnan", "isreal", "isrealobj"]


@unary
def isnan(x: Any) -> Any:
    """Where ``x`` is NaN (``x != x``)."""
    a = asarray(x, op="isnan")
    return lax.compare(a, a, "ne")


@unary
def isinf(x: Any) -> Any:
    """Where ``x`` is +inf or -inf (for complex: either part)."""
    a = asarray(x, op="isinf")
    if a.meta.dtype.kind in "bi":
        return lax.compare(a, a, "ne")
    if a.meta.dtype.kind == "c":
        return lax.logical_or(_infinite(lax.real(a)), _infinite(lax.imag(a)))
    return _infinite(a)


@unary
def isfinite(x: Any) -> Any:
    """Where ``x`` is neither NaN nor infinite (for complex: both parts)."""
    a = asarray(x, op="isfinite")
    if a.meta.dtype.kind in "bi":
        return lax.compare(a, a, "eq")
    if a.meta.dtype.kind == "c":
        return lax.logical_and(_finite(lax.real(a)), _finite(lax.imag(a)))
    return _finite(a)


def _infinite(a: Any) -> Any:
    return lax.compare(lax.abs(a), lax.full_like(a, float("inf")), "eq")


def _finite(a: Any) -> Any:
    # |a| < inf is false for NaN and for both infinities.
    return lax.compare(lax.abs(a), lax.full_like(a, float("inf")), "lt")


@unary
def iscomplex(x: Any) -> Any:
    """Where the imaginary part is non-zero (false everywhere for real dtypes)."""
    a = asarray(x, op="iscomplex")
    if a.meta.dtype.kind != "c":
        zeros = lax.zeros_like(a)
        return lax.compare(zeros, zeros, "ne")
    imaginary = lax.imag(a)
    return lax.compare(imaginary, lax.zeros_like(imaginary), "ne")


@unary
def isreal(x: Any) -> Any:
    """Where the imaginary part is zero (true everywhere for real dtypes)."""
    return lax.logical_not(iscomplex(x))


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (numpy's ``iscomplexobj``: the dtype, not the
    values)."""
    return bool(asarray(x, op="iscomplexobj").meta.dtype.kind == "c")


def isrealobj(x: Any) -> bool:
    """Whether ``x`` does not have a complex dtype."""
    return not iscomplexobj(x)
