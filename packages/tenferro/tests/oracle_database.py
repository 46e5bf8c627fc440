"""The external derivative oracle database (``../shared/oracles``, 61 MB of JSON lines),
read lazily.

Collecting the replay tests needs only each case's id and op: :func:`index` finds them
with one scan for ``"case_id"`` (no JSON is parsed, a tenth of a second); a test parses
its own case when it runs (:func:`load`: one line, read at its offset), and the tests
over the whole database parse it once per process (:func:`cases`). So neither
collection nor a pytest-xdist worker pays for the cases it does not run.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


def _find_root() -> Path | None:
    configured = os.environ.get("TENFERRO_ORACLES")
    candidates = [Path(configured)] if configured else []
    here = Path(__file__).resolve()
    candidates += [parent / "shared" / "oracles" for parent in here.parents]
    candidates += [parent.parent / "shared" / "oracles" for parent in here.parents]
    return next((c for c in candidates if (c / "cases").is_dir()), None)


ROOT = _find_root()
"""The database's folder (``None`` where it is absent: the replay is skipped)."""

_CASE_ID = re.compile(rb'"case_id"\s*:\s*"([^"]+)"')
_DTYPE = re.compile(rb'"dtype"\s*:\s*"([^"]+)"')
"""The case's own dtype is the line's first ``"dtype"`` (before its inputs': the keys are
sorted); :func:`load` checks it."""


@dataclass(frozen=True)
class CaseRef:
    """Where one case is: its id, its op (the folder ``cases/<op>/``), its dtype, its file
    and the byte offset of its line there."""

    case_id: str
    op: str
    dtype: str
    path: Path
    offset: int


@functools.cache
def index() -> tuple[CaseRef, ...]:
    """Every case of the database, in file order (empty without a database)."""
    if ROOT is None:
        return ()
    found = []
    for path in sorted((ROOT / "cases").glob("*/*.jsonl")):
        offset = 0
        for line in path.read_bytes().splitlines(keepends=True):
            if line.strip():
                case_id, dtype = _CASE_ID.search(line), _DTYPE.search(line)
                assert case_id is not None, f"{path} at byte {offset}: a case without an id"
                assert dtype is not None, f"{path} at byte {offset}: a case without a dtype"
                found.append(
                    CaseRef(
                        case_id.group(1).decode(),
                        path.parent.name,
                        dtype.group(1).decode(),
                        path,
                        offset,
                    )
                )
            offset += len(line)
    return tuple(found)


def load(ref: CaseRef) -> dict[str, Any]:
    """The case ``ref`` points at, parsed."""
    with ref.path.open("rb") as handle:
        handle.seek(ref.offset)
        case: dict[str, Any] = json.loads(handle.readline())
    assert case["case_id"] == ref.case_id, (ref, case["case_id"])
    assert case["op"] == ref.op, (ref, case["op"])
    assert case["dtype"] == ref.dtype, (ref, case["dtype"])
    return case


@functools.cache
def cases() -> tuple[dict[str, Any], ...]:
    """Every case, parsed (once per process: for the tests over the whole database)."""
    return tuple(load(ref) for ref in index())


def array(spec: dict[str, Any]) -> np.ndarray[Any, Any]:
    """The array a case stores (row-major data, complex values as ``[re, im]`` pairs)."""
    dtype = np.dtype(spec["dtype"])
    data = spec["data"]
    if dtype.kind == "c":
        values = np.array([complex(re, im) for re, im in data], dtype=dtype)
    else:
        values = np.array(data, dtype=dtype)
    return values.reshape(spec["shape"])
