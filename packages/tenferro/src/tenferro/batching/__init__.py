"""Batching: the ``vmap`` transform and the helpers batching rules are written with.

Each primitive defines its batching rule as its ``batch(xs, dims)`` method, beside
its other rules (see :mod:`tenferro.batching.rules`); the transform itself
(:mod:`tenferro.batching.vmap`) is primitive-agnostic.
"""

from tenferro.batching.vmap import vmap

__all__ = ["vmap"]
