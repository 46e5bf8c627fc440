"""The oracle replay's whole table: the core ops of oracle_ops.py plus the tf.linalg ops.

``OPS`` maps a database op name to its tenferro formulation, ``SKIPPED_OPS`` gives the
reason for each op that is not replayed, and ``case_skip_reason`` the reason for a single
case of a replayed op (``None``: replay it); ``OBSERVABLES`` the gauge-invariant
functions of decompositions that non-identity cases differentiate.
"""

from __future__ import annotations

from typing import Any

import oracle_linalg_solvers
import oracle_linalg_spectral
import oracle_numerics
import oracle_ops

_PARTS = (oracle_linalg_spectral, oracle_linalg_solvers, oracle_numerics)

OPS = {**oracle_ops.OPS}
for _part in _PARTS:
    OPS.update(_part.OPS)

OBSERVABLES: dict[str, Any] = {}
for _part in _PARTS:
    OBSERVABLES.update(getattr(_part, "OBSERVABLES", {}))

SKIPPED_OPS = {op: why for op, why in oracle_ops.SKIPPED_OPS.items() if op not in OPS}


def case_skip_reason(case: dict[str, Any], arrays: dict[str, Any]) -> str | None:
    """Why one case of a replayed op is not replayed (``None``: replay it)."""
    for rule in (oracle_ops.case_skip_reason, *(p.case_skip_reason for p in _PARTS)):
        reason = rule(case, arrays)
        if reason is not None:
            return reason
    return None
