"""Rule-test cases of the tf.linalg solvers families (joined to the core table by
test_primitive_rules.py)."""

from __future__ import annotations

from rule_cases import Case

CASES: list[Case] = []
