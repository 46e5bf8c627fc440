"""Large products of test cases (rule x dtype x shape, function x spelling ...), sampled
in the quick tier, as JAX's ``jtu.sample_product`` samples its products.

One setting decides, for every product: ``TENFERRO_TEST_SAMPLE=N`` keeps at most ``N``
cases of each group of a product (a group: the cases of one rule, one function, one
oracle op), ``make test-quick`` sets it; unset (or ``all``) every case runs: the full
sweep of ``make test`` and CI. The same setting has the property tests draw a fifth of
their examples (fuzz_support.py, conftest.py).

The cases kept are the same in every process (a CRC-32 of the case id orders each
group, never Python's salted ``hash``): pytest-xdist's workers collect the same tests,
and a case that fails in the quick tier has the id it has in the full sweep.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Hashable, Iterable
from typing import Any

ENVIRONMENT = "TENFERRO_TEST_SAMPLE"


def _per_group() -> int | None:
    setting = os.environ.get(ENVIRONMENT, "").strip().lower()
    if setting in ("", "all"):
        return None
    count = int(setting)
    if count < 1:
        raise ValueError(f"{ENVIRONMENT} must be a positive count or 'all', got {setting!r}")
    return count


PER_GROUP = _per_group()
"""Cases kept per group (``None``: all of them)."""


def _case_id(case: Any, position: int) -> str:
    identifier = getattr(case, "id", None)
    return identifier if identifier is not None else str(position)


def sample_product(cases: Iterable[Any], per: Callable[[Any], Hashable]) -> list[Any]:
    """``cases`` (``pytest.param`` sets, in order), or in the quick tier at most
    :data:`PER_GROUP` of each group ``per(case)`` names, the same ones in every run."""
    cases = list(cases)
    if PER_GROUP is None:
        return cases
    groups: dict[Hashable, list[tuple[int, int]]] = {}
    for position, case in enumerate(cases):
        rank = zlib.crc32(_case_id(case, position).encode())
        groups.setdefault(per(case), []).append((rank, position))
    kept = {position for group in groups.values() for _, position in sorted(group)[:PER_GROUP]}
    return [case for position, case in enumerate(cases) if position in kept]


def first_value(case: Any) -> Hashable:
    """The group of a ``pytest.param`` set: its first value (a rule, a function name)."""
    value = case.values[0]
    return getattr(value, "name", value)
