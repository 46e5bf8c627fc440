"""Shared by the property and differential fuzz tests: how many examples to draw.

In CI (the derandomized ``deterministic`` profile) each test draws a fixed, modest
number of examples; ``HYPOTHESIS_PROFILE=explore`` draws fresh examples, twenty times
as many, on every run; the quick tier (``TENFERRO_TEST_SAMPLE``, see sampling.py) draws
a fifth of them (at least two), with the same fixed seed.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings
from sampling import PER_GROUP

EXPLORING = os.environ.get("HYPOTHESIS_PROFILE") == "explore"
QUICK = PER_GROUP is not None and not EXPLORING


def fuzz_settings(examples: int) -> Any:
    """``@settings`` for a property test drawing ``examples`` cases in CI."""
    if EXPLORING:
        examples *= 20
    elif QUICK:
        examples = max(2, examples // 5)
    return settings(max_examples=examples, deadline=None)
