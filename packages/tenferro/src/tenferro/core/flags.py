"""The one check of boolean keywords (``keepdims``, ``upper``, ``full_matrices`` ...).

A flag is ``True`` or ``False`` (``numpy.bool_`` too); anything else -- a string such
as ``"no"``, which is truthy, an int, ``None``, an array -- raises
:class:`~tenferro.errors.FlagError` (a ``ParameterError`` and a ``TypeError``) naming
the operation, the keyword and the value, instead of being taken for its truth value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tenferro.errors import FlagError

__all__ = ["check_flag", "check_optional_flag"]


def check_flag(op: str, name: str, value: Any) -> bool:
    """``value`` as a Python ``bool``; :class:`FlagError` unless it is a bool."""
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise FlagError(
        op, f"{name} must be True or False, got {value!r} of type {type(value).__name__}"
    )


def check_optional_flag(op: str, name: str, value: Any) -> bool | None:
    """As :func:`check_flag`, with ``None`` (the keyword's "not given") allowed."""
    return None if value is None else check_flag(op, name, value)
