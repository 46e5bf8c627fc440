"""Users' own derivative rules: ``stop_gradient``, ``custom_jvp``, ``custom_vjp``
(JAX's API; see the functions' documentation)."""

from __future__ import annotations

from typing import Any

from tenferro import lax
from tenferro.core.pytree import flatten, unflatten
from tenferro.surface.convert import asarray

__all__ = ["stop_gradient"]


def stop_gradient(x: Any) -> Any:
    """``x`` (a tensor or a pytree of them) with a zero derivative by contract.

    The value passes through unchanged; no derivative flows back through it in any
    mode (``grad``, ``vjp``, ``jvp``, the tape) or at any order, as with JAX's
    ``lax.stop_gradient``. On a tape the result is a new node with no derivative
    (``x.detach()`` is the PyTorch spelling; both stay available).
    """
    leaves, treedef = flatten(x)
    return unflatten(treedef, [lax.stop_gradient(asarray(leaf)) for leaf in leaves])
