"""How the oracle database's solvers linear-algebra ops are written with tf.linalg
(joined to the core table by oracle_table.py; conventions as in oracle_ops.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Op = Callable[[list[Any], list[Any], dict[str, Any]], Any]

OPS: dict[str, Op] = {}


def case_skip_reason(case: dict[str, Any], arrays: dict[str, Any]) -> str | None:
    """Why one case of these ops is not replayed (None: replay it)."""
    return None
