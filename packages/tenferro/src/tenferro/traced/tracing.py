"""Calling a function on traced values: the trace depth, and the traced call.

Transforms (``grad``, ``jit``, ``vmap`` ...) and the library's iterative solvers trace
users' functions. While any trace runs, every transform called inside it is symbolic
(its results are traced values of the enclosing trace), so a function that captures a
value of an enclosing trace is differentiated correctly, as in JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from computegraph import gc_paused

__all__ = ["TRACE_DEPTH", "call_traced"]

TRACE_DEPTH: ContextVar[int] = ContextVar("tenferro_transform_trace_depth", default=0)
"""How many traces enclose the running code (see the module documentation)."""


def call_traced(fun: Callable[..., Any], args: Sequence[Any]) -> Any:
    """``fun(*args)`` as a trace (one level deeper in :data:`TRACE_DEPTH`)."""
    token = TRACE_DEPTH.set(TRACE_DEPTH.get() + 1)
    try:
        with gc_paused():  # tracing builds many long-lived keys and no cycles
            return fun(*args)
    finally:
        TRACE_DEPTH.reset(token)
