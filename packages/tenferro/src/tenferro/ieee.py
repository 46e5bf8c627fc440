"""Evaluating with IEEE special values silent (numpy's ``errstate(all="ignore")``), cheaply.

Primitives meet ``inf`` and ``nan`` as ordinary data; numpy's floating-point warnings
are switched off around every evaluation. ``np.errstate`` costs about a microsecond
to enter and leave, more than a small ufunc call, so eager execution uses numpy's
underlying context variable directly when this numpy exposes it (``quiet()`` /
``restore(token)``), and ``np.errstate`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["IGNORE", "error_state", "quiet", "restore"]

try:  # numpy >= 2: error state lives in a context variable
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar,
        _make_extobj,
    )

    IGNORE: Any = _make_extobj(all="ignore")
    error_state: Any = _extobj_contextvar
    """Hot paths: ``token = error_state.set(IGNORE)`` ... ``error_state.reset(token)``."""

    def quiet() -> Any:
        """Silence floating-point warnings; returns a token for :func:`restore`."""
        return _extobj_contextvar.set(IGNORE)

    def restore(token: Any) -> None:
        """Undo the matching :func:`quiet`."""
        _extobj_contextvar.reset(token)

except ImportError:  # pragma: no cover - other numpy versions

    class _ErrState:
        """``set``/``reset`` over ``np.errstate`` for numpy without the context variable."""

        def set(self, value: Any) -> Any:
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        def reset(self, token: Any) -> None:
            token.__exit__(None, None, None)

    IGNORE = None
    error_state = _ErrState()

    def quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token: Any) -> None:
        token.__exit__(None, None, None)
