"""Every shipped benchmark instance (../shared/bench-instances) is planned; the cheap ones
are executed with seeded data and compared with a pairwise numpy reference that follows
the instance's own shipped path. Also the planners' guarantees on these networks."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest

import tenferro as tf
from tenferro.einsum.parse import parse
from tenferro.einsum.planners import Network, greedy, path_cost
from tenferro.einsum.planners.network import linear_to_ssa

ROOT = Path(__file__).resolve()
CANDIDATES = [p / "shared" / "bench-instances" for p in ROOT.parents] + [
    Path("/work/shared/bench-instances")
]
FOLDER = next((c for c in CANDIDATES if c.is_dir()), None)
pytestmark = pytest.mark.skipif(FOLDER is None, reason="bench-instances not available")


def instances():
    if FOLDER is None:
        return []
    found = []
    for path in sorted(FOLDER.glob("*.json")):
        content = json.loads(path.read_text())
        if "format_string" in content:
            found.append(pytest.param(content, id=content["name"]))
    return found


def shipped_path(instance):
    entry = instance["paths"]["opt_flops"]
    if isinstance(entry, str):
        entry = ast.literal_eval(entry)
    return [tuple(step) for step in entry["path"]]


def network_of(instance):
    equation = parse(instance["format_string"], instance["shapes"])
    return equation, Network(
        tuple(frozenset(t) for t in equation.inputs), frozenset(equation.output), equation.sizes
    )


@pytest.mark.parametrize("instance", instances())
def test_instance_is_planned(instance):
    shapes = [tuple(s) for s in instance["shapes"]]
    count = len(shapes)
    _, network = network_of(instance)
    costs = {}
    for optimize in ("greedy", "auto"):
        path, info = tf.einsum_path(
            instance["format_string"], *shapes, shapes=True, optimize=optimize
        )
        remaining = count
        for step in path:
            assert list(step) == sorted(set(step))
            assert step[0] >= 0
            assert step[-1] < remaining
            remaining -= len(step) - 1
        assert remaining == 1
        assert info.opt_cost == path_cost(network, linear_to_ssa(path, count))[0]
        costs[optimize] = info.opt_cost
    assert costs["auto"] <= costs["greedy"]
    # The instance's shipped path is accepted as an explicit path and costed alike.
    shipped = shipped_path(instance)
    _, info = tf.einsum_path(instance["format_string"], *shapes, shapes=True, optimize=shipped)
    assert info.path == [tuple(sorted(s)) for s in shipped]


def test_permutation_patterns_are_planned():
    if FOLDER is None or not (FOLDER / "permutation_patterns.json").exists():
        pytest.skip("no permutation patterns")
    content = json.loads((FOLDER / "permutation_patterns.json").read_text())
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for pattern in content["patterns"]:
        shape, perm = pattern["shape"], pattern["perm"]
        labels = letters[: len(shape)]
        subscripts = labels + "->" + "".join(labels[p] for p in perm)
        path, info = tf.einsum_path(subscripts, shape, shapes=True)
        assert path == [(0,)]  # opt_einsum's one-term step, costing one pass over it
        assert info.opt_cost == math.prod(shape)
        small = [min(n, 2) if axis < 8 else 1 for axis, n in enumerate(shape)]
        x = np.arange(math.prod(small), dtype=np.float64).reshape(small)
        np.testing.assert_array_equal(tf.einsum(subscripts, x), np.transpose(x, perm))


def _ascii_einsum(subscripts, *operands):
    """numpy.einsum of subscripts in any labels (numpy takes ASCII letters only), a pair
    of operands contracted through BLAS where it can (``optimize``: its unoptimized loop
    took 30 s on one instance's wide intermediates)."""
    letters = {}
    for c in subscripts:
        if c not in ",->" and c not in letters:
            letters[c] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(letters)]
    return np.einsum("".join(letters.get(c, c) for c in subscripts), *operands, optimize=True)


def reference(instance, xs):
    """numpy.einsum, two operands at a time, along the instance's shipped path."""
    equation, network = network_of(instance)
    terms = list(equation.inputs)
    values = list(xs)
    ssa = linear_to_ssa(shipped_path(instance), len(xs))
    _, _, results = path_cost(network, ssa)
    for (a, b), kept in zip(ssa, results, strict=True):
        order = "".join(sorted(kept))
        values.append(_ascii_einsum(f"{terms[a]},{terms[b]}->{order}", values[a], values[b]))
        values[a] = values[b] = None
        terms.append(order)
    final = terms[-1] if ssa else terms[0]
    return _ascii_einsum(f"{final}->{equation.output}", values[-1])


@pytest.mark.parametrize("instance", instances())
def test_cheap_instances_execute_like_the_reference(instance):
    shapes = [tuple(s) for s in instance["shapes"]]
    _, info = tf.einsum_path(instance["format_string"], *shapes, shapes=True)
    if info.opt_cost > 5e7 or info.largest_intermediate > 2**22:
        pytest.skip(f"too costly for CI ({info.opt_cost:.1e} flops)")
    rng = np.random.default_rng(14)
    # Entries near 1 keep long products of many factors well scaled.
    xs = [1.0 + 0.1 * rng.standard_normal(s) for s in shapes]
    out = np.asarray(tf.einsum(instance["format_string"], *xs))
    expected = reference(instance, xs)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10 * np.max(np.abs(expected)))


@pytest.mark.parametrize("instance", instances())
def test_auto_never_worse_than_our_greedy_and_reports_its_cost(instance):
    _, network = network_of(instance)
    ours = greedy(network)
    assert ours is not None
    _, info = tf.einsum_path(
        instance["format_string"], *[tuple(s) for s in instance["shapes"]], shapes=True
    )
    assert info.opt_cost <= path_cost(network, ours)[0]
    assert info.naive_cost >= info.opt_cost or len(network.inputs) <= 2
