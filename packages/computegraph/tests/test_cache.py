"""The bounded, clearable program cache keyed by graph structure."""

from __future__ import annotations

import pytest
from cg_support import ScalarOp

from computegraph import GraphBuilder, Local, ProgramCache, ValueKey, default_program_cache, resolve


def chain_graph(length: int, op: ScalarOp = ScalarOp.NEG):
    builder = GraphBuilder()
    value = builder.add_input("x")
    for _ in range(length):
        (value,) = builder.add_operation(op, [Local(value)])
    builder.set_outputs([value])
    return builder.build()


def test_hit_on_identical_structure_built_separately():
    cache = ProgramCache(maxsize=4)
    first = chain_graph(3)
    program = cache.get_or_compile(first, first.output_keys())
    assert cache.stats() == (0, 1, 0, 1, 4)
    again = chain_graph(3)  # a new graph object with the same structure
    assert cache.get_or_compile(again, again.output_keys()) is program
    assert cache.stats().hits == 1
    assert program.eval([2.0]) == [-2.0]


def test_miss_on_different_structure_and_outputs():
    cache = ProgramCache()
    three, four = chain_graph(3), chain_graph(4)
    p3 = cache.get_or_compile(three, three.output_keys())
    p4 = cache.get_or_compile(four, four.output_keys())
    assert p3 is not p4
    doubled = cache.get_or_compile(three, three.output_keys() * 2)
    assert doubled is not p3
    assert doubled.eval([1.0]) == [-1.0, -1.0]
    assert cache.stats().misses == 3


def test_accepts_a_resolved_view():
    cache = ProgramCache()
    graph = chain_graph(2)
    program = cache.get_or_compile(resolve(graph), graph.output_keys())
    assert program.eval([5.0]) == [5.0]


def test_bound_evicts_least_recently_used():
    cache = ProgramCache(maxsize=2)
    graphs = [chain_graph(n) for n in (1, 2, 3)]
    outputs: list[tuple[ValueKey, ...]] = [g.output_keys() for g in graphs]
    cache.get_or_compile(graphs[0], outputs[0])
    cache.get_or_compile(graphs[1], outputs[1])
    assert cache.get(outputs[0]) is not None  # 0 becomes most recently used
    cache.get_or_compile(graphs[2], outputs[2])  # evicts 1
    assert cache.get(outputs[1]) is None
    assert cache.get(outputs[0]) is not None
    assert cache.stats().evictions == 1
    assert len(cache) == 2
    cache.maxsize = 1
    assert len(cache) == 1
    assert cache.get(outputs[2]) is None  # 0 was used last, so 2 went


def test_clear_and_disabled_cache():
    cache = ProgramCache()
    graph = chain_graph(1)
    cache.get_or_compile(graph, graph.output_keys())
    cache.clear()
    assert cache.stats() == (0, 0, 0, 0, 256)
    disabled = ProgramCache(maxsize=0)
    first = disabled.get_or_compile(graph, graph.output_keys())
    assert disabled.get_or_compile(graph, graph.output_keys()) is not first
    assert len(disabled) == 0


def test_rejects_bad_sizes():
    with pytest.raises(ValueError, match="maxsize must be an int >= 0, got -1"):
        ProgramCache(maxsize=-1)
    with pytest.raises(ValueError, match=r"got 1\.5"):
        ProgramCache().maxsize = 1.5  # type: ignore[assignment]


def test_default_cache_exists():
    assert isinstance(default_program_cache, ProgramCache)
