"""Shared by the XLA backend's tests: run one function on both backends and compare.

``both(f, *args)`` calls ``tf.jit(f)`` (numpy) and ``tf.jit(f, backend="xla")`` on the
same arguments and asserts that every output leaf has the same dtype and shape and the
same values: to 1e-12 of the output's scale in float64/complex128, 1e-5 in
float32/complex64 (``scale`` widens that where a case is ill-conditioned), exactly for
integers and bools, NaN where the numpy backend has NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tenferro as tf
from tenferro.core.pytree import flatten

SINGLE = (np.dtype("float32"), np.dtype("complex64"))


def tolerance(dtype: Any, scale: float = 1.0) -> float:
    return (1e-5 if np.dtype(dtype) in SINGLE else 1e-12) * scale


def leaves(value: Any) -> list[np.ndarray[Any, Any]]:
    found, _ = flatten(value)
    return [np.asarray(leaf) for leaf in found]


def assert_same(xla: Any, numpy: Any, scale: float = 1.0, what: str = "") -> None:
    """Every leaf of ``xla`` equals the matching leaf of ``numpy`` (see the module notes)."""
    got, expected = leaves(xla), leaves(numpy)
    assert len(got) == len(expected), f"{what}: {len(got)} outputs, expected {len(expected)}"
    for position, (a, e) in enumerate(zip(got, expected, strict=True)):
        label = f"{what}[{position}]"
        assert a.dtype == e.dtype, f"{label}: dtype {a.dtype}, expected {e.dtype}"
        assert a.shape == e.shape, f"{label}: shape {a.shape}, expected {e.shape}"
        if e.dtype.kind in "fc":
            finite = np.isfinite(e)
            size = float(np.max(np.abs(e[finite]), initial=0.0))
            atol = tolerance(e.dtype, scale) * max(1.0, size)
            np.testing.assert_allclose(a, e, rtol=0, atol=atol, equal_nan=True, err_msg=label)
        else:
            np.testing.assert_array_equal(a, e, err_msg=label)


def both(f: Any, *args: Any, scale: float = 1.0, what: str = "") -> Any:
    """``f`` on both backends, compared; returns the XLA backend's result."""
    expected = tf.jit(f)(*args)
    got = tf.jit(f, backend="xla")(*args)
    assert_same(got, expected, scale, what)
    return got
