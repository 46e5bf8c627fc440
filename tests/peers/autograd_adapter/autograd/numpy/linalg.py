"""``autograd.numpy.linalg``: tenferro.linalg's function of each name, else numpy's;
autograd's own helpers ``_dot`` and ``T``."""

from __future__ import annotations

from typing import Any

import numpy.linalg as _linalg

import tenferro as _tf


def _dot(a: Any, b: Any) -> Any:
    """autograd's own ``linalg._dot`` (no numpy function): a batched matmul."""
    return _tf.matmul(a, b)


def T(x: Any) -> Any:
    """autograd's own ``linalg.T``: the last two axes swapped."""
    return _tf.swapaxes(x, -1, -2)


def __getattr__(name: str) -> Any:
    found = getattr(_tf.linalg, name, None)
    return found if callable(found) else getattr(_linalg, name)
