"""Which tangents and cotangents may stand for a value: one rule for every transform and
the tape.

A tangent (``jvp``, ``linearize``, ``hvp``, ``tape.jvp``) or cotangent (``vjp``,
``backward(seed)``, ``tape.grad(..., seed)``) handed to tenferro must have the shape and
the dtype of the value it stands for, as PyTorch and JAX require: a complex cotangent for
a real output would lose its imaginary part, a float32 one would silently round. A
Python number (a weak scalar) adapts, as in arithmetic: ``1.0`` seeds a float32 output,
``1`` a float64 one; a Python complex only a complex value.
"""

from __future__ import annotations

from tenferro.errors import DTypeError, ShapeError
from tenferro.meta import Meta

__all__ = ["check_tangent", "tangent_dtype_fits"]

_WEAK_INTO = {"f": "iuf", "c": "iufc", "i": "iu", "u": "iu", "b": "b"}
"""The kinds of Python numbers that adapt to a value of each kind."""


def tangent_dtype_fits(given: Meta, expected: Meta) -> bool:
    """Whether a tangent of ``given``'s dtype may stand for a value of ``expected``'s:
    the same dtype, or a Python number of a kind that converts without loss of kind."""
    if given.dtype == expected.dtype:
        return True
    return given.weak and given.dtype.kind in _WEAK_INTO.get(expected.dtype.kind, "")


def check_tangent(
    op: str, what: str, given: Meta, expected: Meta, *, against: str, shape: bool = True
) -> None:
    """Raise when ``given`` (the meta of ``what``: "cotangent 0", "the seed", ...) cannot
    stand for a value of ``expected`` (``against`` names it: "the output", "the primal");
    ``shape=False`` leaves the shape to the caller (outputs with data-dependent extents)."""
    if shape and given.shape != expected.shape:
        raise ShapeError(op, f"{what} has shape {given.shape}, {against} {expected.describe()}")
    if not tangent_dtype_fits(given, expected):
        raise DTypeError(
            op,
            f"{what} is {given.dtype}, {against} {expected.describe()}: a "
            f"{'cotangent' if 'cotangent' in what or 'seed' in what else 'tangent'} has the "
            f"dtype of the value it stands for (convert it with .astype({expected.dtype}))",
        )
