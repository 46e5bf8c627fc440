"""tenferro: dense tensors on numpy/scipy with JAX-grade AD and PyTorch-grade eager ergonomics.

This release is a skeleton: the public API arrives with the package's first
feature release.
"""

__version__ = "0.1.0"

__all__: list[str] = []
