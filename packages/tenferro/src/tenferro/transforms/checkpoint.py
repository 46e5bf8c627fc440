"""Checkpointing: store a segment's inputs, recompute the rest when derivatives need it.

On the eager tape a checkpointed segment is a composite tape node
(:mod:`tenferro.eager.composite`) whose save policy keeps only its inputs and
outputs: the intermediates of the segment are freed as soon as it no longer needs
them, and the backward pass replays the segment from the saved inputs to get them
back. Applied to traced values (inside ``tf.grad``, ``tf.jit`` and the other
transforms, or on traced leaves) the segment becomes one primitive whose derivative
programs recompute it (:mod:`tenferro.traced.remat`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from tenferro.core.pytree import flatten
from tenferro.eager.composite import composite
from tenferro.errors import TenferroError
from tenferro.traced.remat import checkpoint_traced
from tenferro.traced.tensor import TracedTensor

__all__ = ["checkpoint"]

P = ParamSpec("P")
R = TypeVar("R")


def checkpoint(f: Callable[P, R]) -> Callable[P, R]:
    """``f`` as one checkpointed segment: on eager tensors ``composite(f, save="inputs")``;
    on traced values a segment whose backward recomputes ``f`` from its inputs.

    ``f`` takes and returns tensors (or tuples/lists/dicts of them). Only the returned
    tensors carry gradients out of the segment.
    """
    if not callable(f):
        raise TenferroError("checkpoint", f"needs a callable, got {f!r}")
    eager = composite(f, save="inputs")

    @functools.wraps(f)
    def segment(*args: Any, **kwargs: Any) -> Any:
        leaves, _ = flatten((args, kwargs))
        if any(isinstance(leaf, TracedTensor) for leaf in leaves):
            return checkpoint_traced(f, args, kwargs)
        return eager(*args, **kwargs)

    return segment
