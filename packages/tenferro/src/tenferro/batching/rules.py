"""The helpers batching rules are written with: :mod:`tenferro.ops.batching` (this name
keeps working)."""

from tenferro.ops.batching import (
    Batched,
    batch_size,
    counted_indices,
    elementwise,
    leading,
    loop,
    move_axis,
    params_of,
    rebind,
    take,
    to_front,
)

__all__ = [
    "Batched",
    "batch_size",
    "counted_indices",
    "elementwise",
    "leading",
    "loop",
    "move_axis",
    "params_of",
    "rebind",
    "take",
    "to_front",
]
