"""Pytrees in every function that takes them: malformed registered nodes raise a named
``ArgumentTypeError`` (not a bare unpacking error), and dicts whose keys have different
types are pytrees with one leaf order whatever the insertion order (keys grouped by type
name, then sorted, as JAX sorts keys)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_support import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tf
from tenferro import tree_util


def _total(tree: Any) -> Any:
    return sum(tf.sum(leaf * leaf) for leaf in tree_util.tree_leaves(tree))


CONSUMERS: dict[str, Callable[[Any], Any]] = {
    "tree_flatten": tree_util.tree_flatten,
    "tree_leaves": tree_util.tree_leaves,
    "tree_structure": tree_util.tree_structure,
    "tree_map": lambda tree: tree_util.tree_map(lambda x: x, tree),
    "grad": lambda tree: tf.grad(_total)(tree),
    "value_and_grad": lambda tree: tf.value_and_grad(_total)(tree),
    "vjp": lambda tree: tf.vjp(_total, tree),
    "jvp": lambda tree: tf.jvp(_total, (tree,), (tree,)),
    "jit": lambda tree: tf.jit(_total)(tree),
    "hessian": lambda tree: tf.hessian(_total)(tree),
    "stop_gradient": tf.stop_gradient,
}


class _Node:
    def __init__(self, *children: Any) -> None:
        self.children = children


def _register(name: str, flatten: Callable[[Any], Any]) -> type:
    node = type(name, (_Node,), {})
    tree_util.register_pytree_node(node, flatten, lambda aux, children: node(*children))
    return node


BAD_NODES = {
    "a single value": _register("Single", lambda n: n.children[0]),
    "a triple": _register("Triple", lambda n: (n.children, None, None)),
    "children that are not iterable": _register("Scalar", lambda n: (3, None)),
    "unhashable aux data": _register("Unhashable", lambda n: (n.children, [1, 2])),
    "None": _register("Nothing", lambda n: None),
}


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("mistake", sorted(BAD_NODES))
def test_malformed_registered_nodes_raise_named_errors(consumer: str, mistake: str) -> None:
    node = BAD_NODES[mistake]
    with pytest.raises(tf.TenferroError, match=rf"tree_flatten: .*{node.__qualname__}"):
        CONSUMERS[consumer]({"w": node(np.ones(2), np.ones(3))})


class _Opaque:
    """A key type without an order."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"_Opaque({self.name!r})"


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
def test_unorderable_keys_of_one_type_raise_named_errors(consumer: str) -> None:
    tree = {_Opaque("a"): np.ones(2), _Opaque("b"): np.ones(2)}
    with pytest.raises(tf.ArgumentTypeError, match=r"tree_flatten: .*sortable.*_Opaque"):
        CONSUMERS[consumer](tree)


KEYS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["a", "b", "z"]),
    st.sampled_from([0.5, 2.5]),
    st.tuples(st.integers(0, 2)),
)


@fuzz_settings(40)
@given(keys=st.lists(KEYS, min_size=1, max_size=6, unique=True), seed=st.integers(0, 99))
def test_dicts_with_keys_of_several_types_are_pytrees_in_every_transform(
    keys: list[Any], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    values = {key: rng.standard_normal(2) for key in keys}
    shuffled = dict(sorted(values.items(), key=lambda _: rng.random()))
    leaves, structure = tree_util.tree_flatten(values)
    other_leaves, other_structure = tree_util.tree_flatten(shuffled)
    assert structure == other_structure
    for a, b in zip(leaves, other_leaves, strict=True):
        assert a is b
    gradient = tf.grad(_total)(shuffled)
    assert set(gradient) == set(values)
    for key, value in values.items():
        np.testing.assert_allclose(gradient[key], 2 * value)
    np.testing.assert_allclose(tf.jit(_total)(values), sum(np.sum(v * v) for v in values.values()))
