"""``autograd.numpy.linalg``: tenferro.linalg's function of each name, else numpy's."""

from __future__ import annotations

from typing import Any

import numpy.linalg as _linalg

import tenferro as _tf


def __getattr__(name: str) -> Any:
    found = getattr(_tf.linalg, name, None)
    return found if callable(found) else getattr(_linalg, name)
