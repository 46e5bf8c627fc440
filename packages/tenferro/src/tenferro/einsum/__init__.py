"""Einsum: notation (:mod:`.parse`), contraction planning (:mod:`.planners`), plan
reports (:mod:`.path_info`), lowering to primitives (:mod:`.lowering`), sliced
contractions (:mod:`.sliced`) and the public functions (:mod:`.api`)."""

from tenferro.core.names import public_dir as _public_dir
from tenferro.einsum.api import clear_caches, einsum, einsum_path
from tenferro.einsum.path_info import PathInfo
from tenferro.einsum.planners.registry import PlanningError, PlanningWarning, register_path_fn

__all__ = [
    "PathInfo",
    "PlanningError",
    "PlanningWarning",
    "clear_caches",
    "einsum",
    "einsum_path",
    "register_path_fn",
]

__dir__ = _public_dir(__all__)
