"""The helpers batching rules are written with (:mod:`tenferro.batching.rules`).

Each primitive defines its batching rule as its ``batch(xs, dims)`` method, beside
its other rules; the ``vmap`` transform that applies them is primitive-agnostic
(:mod:`tenferro.transforms.vmap`).
"""
