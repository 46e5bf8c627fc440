"""Shared helpers for tenferro's tests: dtypes, samples, tolerances, test ids."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

import tenferro as tf

FLOATS = (np.dtype("float32"), np.dtype("float64"))
COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))
INEXACT = FLOATS + COMPLEX


def dtype_id(dt: Any) -> str:
    return np.dtype(dt).name


def stable_id(value: Any) -> str:
    """``repr(value)`` without memory addresses: a test id that is the same in every
    process (pytest-xdist's workers must collect the same ids)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def sample(
    shape: tuple[int, ...],
    dt: Any,
    rng: np.random.Generator,
    *,
    positive: bool = False,
    away_from_zero: bool = False,
) -> np.ndarray[Any, Any]:
    """Random values of ``dt``: standard normal (complex: both parts), or with a positive
    real part in [0.5, 2] (``positive``), or with magnitude at least 0.3."""
    dt = np.dtype(dt)
    if positive:
        real = rng.uniform(0.5, 2.0, shape)
    else:
        real = rng.standard_normal(shape)
    if dt.kind == "c":
        imag = rng.standard_normal(shape) * (0.5 if positive else 1.0)
        values = real + 1j * imag
    else:
        values = real
    if away_from_zero:
        magnitude = np.abs(values)
        values = np.where(magnitude < 0.3, values / np.maximum(magnitude, 1e-3) * 0.3, values)
    return np.asarray(values, dtype=dt)


def tolerance(dt: Any) -> float:
    """Comparison tolerance for values computed in ``dt``."""
    return 1e-4 if np.dtype(dt) in (np.dtype("float32"), np.dtype("complex64")) else 1e-10


def real_loss(f: Any, weights: list[np.ndarray[Any, Any]]) -> Any:
    """``x ↦ Σ Re(conj(w)·f(x))`` over the inexact outputs of ``f``: a real scalar."""

    def loss(*args: Any) -> Any:
        out = f(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        total = None
        for o, w in zip((o for o in outs if o.dtype.kind in "fc"), weights, strict=True):
            term = tf.sum(tf.real(tf.conj(tf.asarray(w)) * o))
            total = term if total is None else total + term
        return total

    return loss


def output_weights(f: Any, args: list[Any], rng: np.random.Generator) -> list[np.ndarray[Any, Any]]:
    out = f(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [sample(o.shape, o.dtype, rng) for o in outs if o.dtype.kind in "fc"]
