"""Shared by the differential fuzz suites: how many examples to draw.

In CI (the derandomized ``deterministic`` profile) each fuzz test draws a fixed, modest
number of examples; ``HYPOTHESIS_PROFILE=explore`` draws fresh examples, twenty times
as many, on every run.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

EXPLORING = os.environ.get("HYPOTHESIS_PROFILE") == "explore"


def fuzz_settings(examples: int) -> Any:
    """``@settings`` for a fuzz test drawing ``examples`` cases in CI."""
    return settings(max_examples=examples * (20 if EXPLORING else 1), deadline=None)
