"""``autograd.numpy``: tenferro's function of each name, else numpy's (tensors reach
tenferro through numpy's ``__array_function__``); numpy's types, dtypes and constants;
autograd's own additions (``make_diagonal``) written with tenferro."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as _numpy

import tenferro as _tf
from autograd.numpy import fft, linalg, random  # noqa: F401


def __getattr__(name: str) -> Any:
    found = getattr(_tf, name, None)
    if found is None or isinstance(found, (type, _numpy.dtype, int, float, complex, str)):
        return getattr(_numpy, name)  # numpy's types, dtypes and constants
    if inspect.ismodule(found):
        return getattr(_numpy, name)
    return found  # tenferro's functions, and objects such as r_ and c_


def make_diagonal(d: Any, axis1: int = -1, axis2: int = -2) -> Any:
    """autograd's own ``make_diagonal`` (no numpy function): ``d``'s last axis spread on
    the diagonal of the new axes ``axis1`` and ``axis2`` (the last two here)."""
    if (axis1, axis2) not in ((-1, -2), (-2, -1)):
        raise NotImplementedError("make_diagonal: only the last two axes")
    n = d.shape[-1]
    return _tf.expand_dims(d, -1) * _tf.eye(n)
