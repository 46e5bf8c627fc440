"""``autograd.numpy``: tenferro's function of each name, else numpy's (tensors reach
tenferro through numpy's ``__array_function__``); numpy's types, dtypes and constants."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as _numpy

import tenferro as _tf
from autograd.numpy import fft, linalg, random  # noqa: F401


def __getattr__(name: str) -> Any:
    found = getattr(_tf, name, None)
    if callable(found) and not isinstance(found, type) and not inspect.ismodule(found):
        return found
    return getattr(_numpy, name)
