"""Pytrees: nested tuples, namedtuples, lists, dicts, ``OrderedDict``s and registered
custom nodes of leaves (like ``jax.tree_util``; the public face is
:mod:`tenferro.tree_util`).

A tree's structure (its *treedef*) is a hashable nested tuple, one node per container:
``("*",)`` a leaf, ``("none",)`` ``None`` (a node without children, as in JAX),
``("tuple", children)``, ``("list", children)``, ``("namedtuple", children, type)``,
``("dict", keys, children)`` (keys sorted, by type name first when their types
differ), ``("odict", keys, children)`` (keys in order) and ``("custom", children,
(type, aux))`` for registered node types.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from tenferro.errors import ArgumentTypeError, TenferroError

__all__ = [
    "NodeRules",
    "TreeDef",
    "count_leaves",
    "describe",
    "flatten",
    "rebuilder",
    "register_node",
    "unflatten",
]

TreeDef = Hashable
"""A hashable description of a tree's structure."""

_LEAF = ("*",)
_NONE = ("none",)


class NodeRules(NamedTuple):
    """How a registered node type flattens (``flatten(node) -> (children, aux)``) and
    is rebuilt (``unflatten(aux, children) -> node``)."""

    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]]
    unflatten: Callable[[Hashable, Iterable[Any]], Any]


_REGISTRY: dict[type, NodeRules] = {}


def register_node(
    nodetype: type,
    flatten_fn: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_fn: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Make instances of ``nodetype`` pytree nodes (see ``tree_util.register_pytree_node``)."""
    op = "register_pytree_node"
    if not isinstance(nodetype, type):
        raise ArgumentTypeError(op, f"expected a class, got {nodetype!r}")
    if nodetype in (tuple, list, dict, OrderedDict, type(None)) or nodetype in _REGISTRY:
        raise TenferroError(op, f"{nodetype.__qualname__} is already a pytree node type")
    if not callable(flatten_fn) or not callable(unflatten_fn):
        raise ArgumentTypeError(op, "flatten_fn and unflatten_fn must be callable")
    _REGISTRY[nodetype] = NodeRules(flatten_fn, unflatten_fn)


def _custom(node: Any, rules: NodeRules) -> Any:
    flattened = rules.flatten(node)
    name = type(node).__qualname__
    if not (isinstance(flattened, (tuple, list)) and len(flattened) == 2):
        raise ArgumentTypeError(
            "tree_flatten",
            f"the flatten function of {name} must return a pair (children, aux_data), "
            f"got {_short(flattened)}",
        )
    children, aux = flattened
    try:
        children = tuple(children)
    except TypeError:
        raise ArgumentTypeError(
            "tree_flatten",
            f"the flatten function of {name} returned children {_short(children)}, which "
            f"is not an iterable of subtrees; it must return (children, aux_data)",
        ) from None
    try:
        hash(aux)
    except TypeError:
        raise TenferroError(
            "tree_flatten",
            f"the flatten function of {type(node).__qualname__} returned unhashable auxiliary "
            f"data {aux!r}; it must be hashable (it is part of the tree structure)",
        ) from None
    return children, (type(node), aux)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _sorted_keys(node: dict[Any, Any]) -> tuple[Any, ...]:
    """A dict's keys in the order its leaves take: sorted (as JAX), keys of different
    types grouped by type name first (``{1: a, "b": c}`` is a pytree too)."""
    try:
        return tuple(sorted(node))
    except TypeError:
        pass
    try:
        return tuple(sorted(node, key=lambda k: (type(k).__module__, type(k).__qualname__, k)))
    except TypeError:
        raise ArgumentTypeError(
            "tree_flatten",
            f"the keys of a dict in a pytree must be sortable within each type (their order "
            f"is the order of its leaves), got {_short(list(node))}",
        ) from None


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree`` (depth first, dict keys sorted) and its structure.

    ``is_leaf(node)`` returning true makes ``node`` a leaf even if it is a container.
    """
    leaves: list[Any] = []
    return leaves, _walk(tree, leaves, is_leaf)


# The walks below are module functions, not recursive closures: a closure calling itself
# is a reference cycle holding the leaves, which (with the cyclic collector paused during
# program evaluation) kept every array a custom rule flattened alive until the next
# collection.


def _walk(node: Any, leaves: list[Any], is_leaf: Callable[[Any], bool] | None) -> TreeDef:
    if is_leaf is not None and is_leaf(node):
        leaves.append(node)
        return _LEAF
    if node is None:
        return _NONE
    kind = type(node)
    if kind is tuple:
        return ("tuple", tuple([_walk(child, leaves, is_leaf) for child in node]))
    if kind is list:
        return ("list", tuple([_walk(child, leaves, is_leaf) for child in node]))
    if kind is dict:
        keys = _sorted_keys(node)
        return ("dict", keys, tuple([_walk(node[k], leaves, is_leaf) for k in keys]))
    rules = _REGISTRY.get(kind)
    if rules is not None:
        children, tag = _custom(node, rules)
        return ("custom", tuple([_walk(child, leaves, is_leaf) for child in children]), tag)
    if isinstance(node, tuple) and hasattr(kind, "_fields"):
        return ("namedtuple", tuple([_walk(child, leaves, is_leaf) for child in node]), kind)
    if kind is OrderedDict:
        keys = tuple(node)
        return ("odict", keys, tuple([_walk(node[k], leaves, is_leaf) for k in keys]))
    leaves.append(node)
    return _LEAF


def unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` holding ``leaves``."""
    return _build(treedef, iter(leaves))


def _build(node: Any, iterator: Iterator[Any]) -> Any:
    kind = node[0]
    if kind == "*":
        return next(iterator)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple([_build(child, iterator) for child in node[1]])
    if kind == "list":
        return [_build(child, iterator) for child in node[1]]
    if kind == "namedtuple":
        return node[2](*[_build(child, iterator) for child in node[1]])
    if kind == "custom":
        nodetype, aux = node[2]
        return _REGISTRY[nodetype].unflatten(aux, [_build(child, iterator) for child in node[1]])
    values = [_build(child, iterator) for child in node[2]]
    made = dict(zip(node[1], values, strict=True))
    return made if kind == "dict" else OrderedDict(made)


Rebuild = Callable[[Sequence[Any]], Any]
"""A function from a sequence of leaves to the tree a :func:`rebuilder` was made for."""


def rebuilder(treedef: TreeDef) -> Rebuild:
    """A function from a sequence of leaves to the tree of structure ``treedef``,
    equal to ``lambda leaves: unflatten(treedef, leaves)`` but prepared once, for a
    structure rebuilt on every call of a hot path: leaves are picked by position, and
    a tuple or list of leaves is one slice."""
    return _rebuilder(treedef, 0)[0]


def _rebuilder(node: Any, start: int) -> tuple[Rebuild, int]:
    """The rebuild of ``node`` from leaves ``start``, ``start + 1``, ... and how many
    leaves it takes."""
    kind = node[0]
    if kind == "*":
        return (lambda leaves: leaves[start]), 1
    if kind in ("tuple", "list"):
        children = node[1]
        stop = start + len(children)
        if all(child == _LEAF for child in children):
            if kind == "tuple":
                return (lambda leaves: tuple(leaves[start:stop])), len(children)
            return (lambda leaves: list(leaves[start:stop])), len(children)
        parts: list[Rebuild] = []
        offset = start
        for child in children:
            part, taken = _rebuilder(child, offset)
            parts.append(part)
            offset += taken
        if kind == "tuple":
            return (lambda leaves: tuple([part(leaves) for part in parts])), offset - start
        return (lambda leaves: [part(leaves) for part in parts]), offset - start
    count = count_leaves(node)
    stop = start + count
    return (lambda leaves: _build(node, iter(leaves[start:stop]))), count


def count_leaves(treedef: TreeDef) -> int:
    """How many leaves a tree of structure ``treedef`` holds."""
    count = 0
    stack = [treedef]
    while stack:
        node: Any = stack.pop()
        kind = node[0]
        if kind == "*":
            count += 1
        elif kind in ("dict", "odict"):
            stack.extend(node[2])
        elif kind != "none":
            stack.extend(node[1])
    return count


def describe(treedef: TreeDef) -> str:
    """A readable rendering of a structure: ``*`` for leaves, containers as in Python
    (``(*, {'b': *, 'c': [*, None]})``), namedtuples and custom nodes by class name."""

    def show(node: Any) -> str:
        kind = node[0]
        if kind == "*":
            return "*"
        if kind == "none":
            return "None"
        if kind == "tuple":
            inner = ", ".join(show(c) for c in node[1])
            return f"({inner},)" if len(node[1]) == 1 else f"({inner})"
        if kind == "list":
            return "[" + ", ".join(show(c) for c in node[1]) + "]"
        if kind == "namedtuple":
            fields = node[2]._fields
            inner = ", ".join(f"{f}={show(c)}" for f, c in zip(fields, node[1], strict=True))
            return f"{node[2].__name__}({inner})"
        if kind == "custom":
            nodetype, aux = node[2]
            inner = ", ".join(show(c) for c in node[1])
            return f"{nodetype.__name__}[{aux!r}]({inner})"
        inner = ", ".join(f"{k!r}: {show(c)}" for k, c in zip(node[1], node[2], strict=True))
        return "{" + inner + "}" if kind == "dict" else f"OrderedDict({{{inner}}})"

    return show(treedef)
