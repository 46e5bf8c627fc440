"""opt_einsum's ``optimize=`` interface: optimizer objects are asked again when their
settings change (functions on every call), ``optimal`` and ``dp`` say so rather than
silently answering another planner's path, and a search for subscripts already planned
at other extents starts from those paths."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import tenferro as tf
from tenferro.einsum import PlanningWarning

api = sys.modules["tenferro.einsum.api"]
planners = sys.modules["tenferro.einsum.planners"]
auto_module = sys.modules["tenferro.einsum.planners.auto"]

CHAIN = "ab,bc,cd,de->ae"
SHAPES = [(2, 8), (8, 8), (8, 8), (8, 2)]


class Reversed:
    """An opt_einsum-style PathOptimizer: contract from the right (or the left)."""

    def __init__(self) -> None:
        self.from_right = True
        self.calls = 0

    def __call__(self, inputs: Any, output: Any, size_dict: Any, memory_limit: Any = None) -> Any:
        self.calls += 1
        count = len(inputs)
        if self.from_right:
            return [(count - 2 - k, count - 1 - k) for k in range(count - 1)]
        return [(0, 1)] * (count - 1)


def test_an_optimizer_object_is_asked_again_when_its_settings_change() -> None:
    tf.clear_caches()
    xs = [np.ones(s) for s in SHAPES]
    optimizer = Reversed()
    tf.einsum(CHAIN, *xs, optimize=optimizer)
    tf.einsum(CHAIN, *xs, optimize=optimizer)
    path, _ = tf.einsum_path(CHAIN, *SHAPES, shapes=True, optimize=optimizer)
    assert path == [(2, 3), (1, 2), (0, 1)]
    # calls bump an attribute: each call sees new settings, so asks again; reset it
    optimizer.calls = 0
    optimizer.from_right = False
    path, _ = tf.einsum_path(CHAIN, *SHAPES, shapes=True, optimize=optimizer)
    assert path == [(0, 1), (0, 1), (0, 1)]
    np.testing.assert_allclose(
        np.asarray(tf.einsum(CHAIN, *xs, optimize=optimizer)), np.einsum(CHAIN, *xs)
    )


def test_an_optimizer_with_fixed_settings_is_asked_once() -> None:
    tf.clear_caches()
    asked: list[int] = []

    class Fixed:
        def __init__(self) -> None:
            self.reverse = False

        def __call__(
            self, inputs: Any, output: Any, size_dict: Any, memory_limit: Any = None
        ) -> Any:
            asked.append(1)
            return [(0, 1)] * (len(inputs) - 1)

    optimizer = Fixed()
    xs = [np.ones(s) for s in SHAPES]
    for _ in range(3):
        tf.einsum(CHAIN, *xs, optimize=optimizer)
    assert len(asked) == 1
    optimizer.reverse = True
    tf.einsum(CHAIN, *xs, optimize=optimizer)
    assert len(asked) == 2


def test_a_function_optimizer_is_asked_on_every_call() -> None:
    tf.clear_caches()
    asked: list[int] = []
    order = {"path": [(0, 1), (0, 1), (0, 1)]}

    def optimizer(inputs: Any, output: Any, size_dict: Any, memory_limit: Any = None) -> Any:
        asked.append(1)
        return order["path"]

    xs = [np.random.default_rng(0).standard_normal(s) for s in SHAPES]
    first = tf.einsum(CHAIN, *xs, optimize=optimizer)
    order["path"] = [(2, 3), (1, 2), (0, 1)]
    second = tf.einsum(CHAIN, *xs, optimize=optimizer)
    assert len(asked) == 2
    np.testing.assert_allclose(np.asarray(first), np.asarray(second), rtol=1e-12)


def test_opt_einsums_optimizers_plug_in() -> None:
    oe = pytest.importorskip("opt_einsum")
    xs = [np.random.default_rng(1).standard_normal(s) for s in SHAPES]
    for optimizer in (oe.RandomGreedy(max_repeats=4), oe.DynamicProgramming(), oe.BranchBound()):
        got = tf.einsum(CHAIN, *xs, optimize=optimizer)
        np.testing.assert_allclose(np.asarray(got), np.einsum(CHAIN, *xs), rtol=1e-12)


def test_optimal_beyond_its_operand_limit_says_so() -> None:
    count = planners.OPERAND_LIMIT + 1
    letters = "abcdefghijklmnopqrstuvwxyz"
    subscripts = ",".join(letters[k : k + 2] for k in range(count))
    shapes = [(3, 3)] * count
    with pytest.warns(PlanningWarning, match=f"at most {planners.OPERAND_LIMIT} operands"):
        path, info = tf.einsum_path(subscripts, *shapes, shapes=True, optimize="optimal")
    _, greedy = tf.einsum_path(subscripts, *shapes, shapes=True, optimize="greedy")
    assert len(path) == count - 1
    assert info.opt_cost <= greedy.opt_cost


def test_dp_and_optimal_past_their_time_say_so(monkeypatch: Any) -> None:
    monkeypatch.setattr(planners, "EXACT_SECONDS", 0.0)
    subscripts = "ab,bc,cd,de,ef,fg,gh,hi,ij,jk,ka"
    shapes = [(4, 4)] * 11
    for optimize in ("dp", "optimal", "branch-all"):
        tf.clear_caches()
        with pytest.warns(PlanningWarning, match="did not finish|found no path"):
            path, _ = tf.einsum_path(subscripts, *shapes, shapes=True, optimize=optimize)
        assert len(path) == 10


def _grid(side: int) -> tuple[str, list[tuple[int, ...]]]:
    """A closed ``side`` by ``side`` lattice of tensors with bonds of extent 3."""
    symbols = iter(oe_symbols())
    right = {(r, c): next(symbols) for r in range(side) for c in range(side - 1)}
    down = {(r, c): next(symbols) for r in range(side - 1) for c in range(side)}
    terms = []
    for r in range(side):
        for c in range(side):
            legs = [
                right.get((r, c)),
                right.get((r, c - 1)),
                down.get((r, c)),
                down.get((r - 1, c)),
            ]
            terms.append("".join(leg for leg in legs if leg))
    return ",".join(terms), [(3,) * len(term) for term in terms]


def oe_symbols() -> Iterator[str]:
    return (chr(code) for code in range(0x100, 0x100 + 1000))


def test_exact_searches_and_their_fallback_share_one_budget(monkeypatch: Any) -> None:
    """A search past its share leaves the fallback only what is left of the budget, so
    ``dp`` and ``optimal`` plan in ``EXACT_SECONDS`` in all (``branch-*`` returns its
    best path at the deadline, or falls back the same way when it has none)."""
    monkeypatch.setattr(planners, "EXACT_SECONDS", 0.2)
    budgets: list[float] = []
    real = planners.auto_hq

    def spy(network: Any, memory_limit: Any = None, **options: Any) -> Any:
        budgets.append(options["budget"])
        return real(network, memory_limit, **options)

    monkeypatch.setattr(planners, "auto_hq", spy)
    grid, shapes = _grid(6)
    for optimize in ("dp", "optimal"):
        tf.clear_caches()
        with pytest.warns(PlanningWarning):
            tf.einsum_path(grid, *shapes, shapes=True, optimize=optimize)
    dp_left, optimal_left = budgets  # dp searched first; optimal refused 36 operands at once
    assert 0 < dp_left <= 0.2 * (1 - planners.SEARCH_SHARE) + 1e-9
    assert 0.2 * (1 - planners.SEARCH_SHARE) < optimal_left <= 0.2


def test_true_and_none_mean_auto_and_minus_one_no_limit() -> None:
    auto, _ = tf.einsum_path(CHAIN, *SHAPES, shapes=True)
    for optimize in (True, None):
        assert tf.einsum_path(CHAIN, *SHAPES, shapes=True, optimize=optimize)[0] == auto
    for limit in (-1, None):
        assert tf.einsum_path(CHAIN, *SHAPES, shapes=True, memory_limit=limit)[0] == auto
    _, info = tf.einsum_path(CHAIN, *SHAPES, shapes=True, memory_limit=Decimal(16))
    assert not info.sliced


def test_a_new_extent_starts_from_the_paths_of_other_extents(monkeypatch: Any) -> None:
    """An MPS overlap planned at one bond dimension seeds the search at the next: a warm
    polish of that path (a quarter of the budget), not a cold search."""
    tf.clear_caches()
    sites = 6
    bra = ",".join(f"{chr(97 + k)}{chr(65 + k)}{chr(97 + k + 1)}" for k in range(sites))
    ket = ",".join(f"{chr(110 + k)}{chr(65 + k)}{chr(110 + k + 1)}" for k in range(sites))
    subscripts = f"{bra},{ket}->"
    calls: list[tuple[bool, int]] = []
    original = auto_module.refine

    def spy(
        network: Any, deadline: Any, *, seeds: Any = (), seed: int = 0, warm: bool = False
    ) -> Any:
        calls.append((warm, len(seeds)))
        return original(network, deadline, seeds=seeds, seed=seed, warm=warm)

    monkeypatch.setattr(auto_module, "refine", spy)
    for chi in (4, 6, 4, 8):
        shapes = []
        for _ in range(2):
            for k in range(sites):
                left = 1 if k == 0 else chi
                right = 1 if k == sites - 1 else chi
                shapes.append((left, 2, right))
        tf.einsum_path(subscripts, *shapes, shapes=True)
    assert calls[0] == (False, 0)  # cold at the first bond dimension
    assert all(warm and known >= 1 for warm, known in calls[1:])
    assert len(calls) == 3  # chi = 4 again is a cached plan
    assert len(api._hints) == 1
    tf.clear_caches()
    assert len(api._hints) == 0


def test_warnings_name_what_was_returned_instead() -> None:
    count = planners.OPERAND_LIMIT + 2
    subscripts = ",".join("ab" if k % 2 == 0 else "ba" for k in range(count)) + "->"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.einsum_path(subscripts, *[(2, 2)] * count, shapes=True, optimize="optimal")
    (warning,) = [w for w in caught if issubclass(w.category, PlanningWarning)]
    assert "auto-hq" in str(warning.message)
    assert "optimal" in str(warning.message)
