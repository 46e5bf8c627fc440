"""Checkpointing on the eager tape: store a segment's inputs, recompute the rest.

A checkpointed segment is a composite tape node (:mod:`tenferro.eager.composite`)
whose save policy keeps only its inputs and outputs: the intermediates of the
segment are freed as soon as it no longer needs them, and the backward pass replays
the segment from the saved inputs to get them back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenferro.eager.composite import composite

__all__ = ["checkpoint"]


def checkpoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` as one checkpointed segment of the eager tape: ``composite(f, save="inputs")``.

    ``f`` takes and returns tensors (or tuples/lists/dicts of them). Only the returned
    tensors carry gradients out of the segment.
    """
    return composite(f, save="inputs")
