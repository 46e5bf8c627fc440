"""Einsum: notation (:mod:`.parse`), contraction planning (:mod:`.planners`), plan
reports (:mod:`.path_info`), lowering to primitives (:mod:`.lowering`) and the public
functions (:mod:`.api`)."""

from tenferro.core.names import public_dir as _public_dir
from tenferro.einsum.api import clear_caches, einsum, einsum_path
from tenferro.einsum.path_info import PathInfo

__all__ = ["PathInfo", "clear_caches", "einsum", "einsum_path"]

__dir__ = _public_dir(__all__)
