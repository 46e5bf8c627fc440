"""Thread-aware switches of eager execution: recording (``no_grad``) and composite-node capture.

The hot path (every eager primitive) reads two module-level counters first; only
while some thread has a ``no_grad`` context or a capture open does it consult the
thread-local state (looking up a missing thread-local attribute is slow).
"""

from __future__ import annotations

import threading
from contextlib import ContextDecorator

__all__ = ["capture_state", "captures_open", "grad_state", "is_grad_enabled", "no_grad"]

grad_state = threading.local()
"""``enabled``: whether this thread records (absent: it does)."""
no_grad_open = [0]
"""How many ``no_grad`` contexts are open in any thread."""
capture_state = threading.local()
"""``capture``: the composite node being captured in this thread (see
:mod:`tenferro.eager.composite`), else absent or ``None``."""
captures_open = [0]
"""How many captures are open in any thread."""
_lock = threading.Lock()


def is_grad_enabled() -> bool:
    """Whether operations on tracked tensors are recorded (see :func:`no_grad`)."""
    return not no_grad_open[0] or getattr(grad_state, "enabled", True)


class no_grad(ContextDecorator):  # noqa: N801 - named like torch.no_grad
    """Within this context (or decorated function) nothing is recorded: results of
    operations are detached, as with ``torch.no_grad``."""

    def __enter__(self) -> no_grad:
        self._previous = getattr(grad_state, "enabled", True)
        grad_state.enabled = False
        with _lock:
            no_grad_open[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        grad_state.enabled = self._previous
        with _lock:
            no_grad_open[0] -= 1


def open_capture(capture: object) -> None:
    """Start capturing this thread's primitives into ``capture``."""
    capture_state.capture = capture
    with _lock:
        captures_open[0] += 1


def close_capture() -> None:
    capture_state.capture = None
    with _lock:
        captures_open[0] -= 1
