"""The helpers batching rules are written with: :mod:`tenferro.ops.batching` (this name
keeps working)."""

from tenferro.ops.batching import *  # noqa: F403
from tenferro.ops.batching import __all__ as __all__
