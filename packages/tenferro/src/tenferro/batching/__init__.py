"""The helpers batching rules are written with, under their former name: they live in
:mod:`tenferro.ops.batching`, beside the primitives whose rules use them."""
