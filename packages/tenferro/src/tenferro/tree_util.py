"""``tf.tree_util``: pytrees as in ``jax.tree_util``.

A pytree is a nested structure of containers -- tuples, lists, dicts (keys sorted),
``OrderedDict``s, namedtuples, ``None`` (a container without children) and node types
you register -- whose non-container values are its *leaves*. Every transform
(``grad``, ``vjp``, ``jvp``, ``jit``, ...) accepts and returns pytrees of tensors, user
registered node types included::

    tf.tree_util.register_pytree_node(
        Params,
        lambda p: ((p.w, p.b), None),            # children, hashable aux data
        lambda aux, children: Params(*children),
    )
    tf.grad(loss)(Params(w, b))                  # a Params of gradients
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar, cast

from tenferro.core.names import public_dir as _public_dir
from tenferro.core.pytree import count_leaves, describe, flatten, register_node, unflatten
from tenferro.errors import ArgumentTypeError, ShapeError

__all__ = [
    "PyTreeDef",
    "register_pytree_node",
    "register_pytree_node_class",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]

C = TypeVar("C", bound=type)


class PyTreeDef:
    """The structure of a pytree: hashable, comparable, printable (``*`` marks leaves)."""

    __slots__ = ("_node",)

    def __init__(self, node: Hashable) -> None:
        self._node = node

    @property
    def num_leaves(self) -> int:
        """How many leaves a tree of this structure holds."""
        return count_leaves(self._node)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """The tree of this structure holding ``leaves`` (see :func:`tree_unflatten`)."""
        return tree_unflatten(self, leaves)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PyTreeDef) and self._node == other._node

    def __hash__(self) -> int:
        return hash(self._node)

    def __repr__(self) -> str:
        return f"PyTreeDef({describe(self._node)})"


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """``(leaves, treedef)``: the leaves depth first (dict keys sorted) and the structure.
    ``is_leaf(node)`` returning true stops the descent at ``node``."""
    leaves, node = flatten(tree, is_leaf)
    return leaves, PyTreeDef(node)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` holding ``leaves`` (exactly as many as it has)."""
    if not isinstance(treedef, PyTreeDef):
        raise ArgumentTypeError(
            "tree_unflatten", f"expected a PyTreeDef (from tree_flatten), got {treedef!r}"
        )
    values = list(leaves)
    if len(values) != treedef.num_leaves:
        raise ShapeError(
            "tree_unflatten",
            f"{len(values)} leaves for the structure {describe(treedef._node)} "
            f"of {treedef.num_leaves} leaves",
        )
    return unflatten(treedef._node, values)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, depth first."""
    return flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure of ``tree``."""
    return PyTreeDef(flatten(tree, is_leaf)[1])


def tree_map(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """The tree of ``tree``'s structure holding ``f(leaf, *matching leaves of rest)``.

    Every tree of ``rest`` must have ``tree``'s structure (a mismatch raises
    :class:`~tenferro.ShapeError` showing both structures).
    """
    if not callable(f):
        raise ArgumentTypeError("tree_map", f"expected a callable, got {f!r}")
    leaves, node = flatten(tree, is_leaf)
    others = []
    for position, other in enumerate(rest, start=1):
        other_leaves, other_node = flatten(other, is_leaf)
        if other_node != node:
            raise ShapeError(
                "tree_map",
                f"tree {position} has structure {describe(other_node)}, "
                f"tree 0 has {describe(node)}",
            )
        others.append(other_leaves)
    return unflatten(node, [f(*values) for values in zip(leaves, *others, strict=True)])


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Make instances of ``nodetype`` pytree nodes.

    ``flatten_func(node)`` returns ``(children, aux_data)``: the children (an iterable
    of subtrees) and hashable data that is part of the structure; ``unflatten_func(
    aux_data, children)`` rebuilds a node. Subclasses are not covered (register each).
    """
    register_node(nodetype, flatten_func, unflatten_func)


def register_pytree_node_class(cls: C) -> C:
    """Class decorator: register ``cls`` using its ``tree_flatten()`` method and its
    ``tree_unflatten(aux_data, children)`` classmethod (as in JAX)."""
    rebuild = cast(Any, cls).tree_unflatten
    register_node(cls, lambda node: node.tree_flatten(), rebuild)
    return cls


__dir__ = _public_dir(__all__)
