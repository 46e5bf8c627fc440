"""Minimal pytrees: nested tuples, namedtuples, lists and dicts of leaves (like
``jax.tree_util``)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["TreeDef", "flatten", "unflatten"]

TreeDef = Hashable
"""A hashable description of a tree's structure."""

_LEAF = ("*",)


def flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree`` (depth first, dict keys sorted) and its structure."""
    leaves: list[Any] = []

    def walk(node: Any) -> TreeDef:
        if node is None:
            return ("none",)
        if type(node) is tuple:
            return ("tuple", tuple(walk(child) for child in node))
        if isinstance(node, tuple) and hasattr(type(node), "_fields"):
            return ("namedtuple", tuple(walk(child) for child in node), type(node))
        if type(node) is list:
            return ("list", tuple(walk(child) for child in node))
        if type(node) is dict:
            keys = tuple(sorted(node))
            return ("dict", keys, tuple(walk(node[k]) for k in keys))
        leaves.append(node)
        return _LEAF

    return leaves, walk(tree)


def unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """The tree of structure ``treedef`` holding ``leaves``."""
    iterator = iter(leaves)

    def build(node: Any) -> Any:
        kind = node[0]
        if kind == "*":
            return next(iterator)
        if kind == "none":
            return None
        if kind == "tuple":
            return tuple(build(child) for child in node[1])
        if kind == "namedtuple":
            return node[2](*(build(child) for child in node[1]))
        if kind == "list":
            return [build(child) for child in node[1]]
        return {key: build(child) for key, child in zip(node[1], node[2], strict=True)}

    return build(treedef)
