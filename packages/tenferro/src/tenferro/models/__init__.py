"""Ready-made models on tenferro: :mod:`tenferro.models.mps` (matrix product states and
operators, the Ising chain, MPS compression by truncated SVDs).

``from tenferro.models import mps``; nothing here is imported by ``import tenferro``.
"""

from tenferro.core.names import public_dir as _public_dir
from tenferro.models import mps

__all__ = ["mps"]

__dir__ = _public_dir(__all__)
