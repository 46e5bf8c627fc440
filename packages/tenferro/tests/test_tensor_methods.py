"""Every tensor kind has, at run time, exactly the operators and methods its type declares.

:class:`tenferro.core.methods.TensorMethods` declares them for type checkers (users'
``mypy --strict``); ``import tenferro`` installs their definitions on it
(:func:`tenferro.surface.methods.register_tensor_methods`). A declared method that is
not installed would fail only when called; an installed one that is not declared would
be invisible to a user's type checker; a signature that differs would type calls wrong.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

import tenferro as tf
from tenferro.core import methods as declaration
from tenferro.core.methods import TensorMethods
from tenferro.surface import methods as definitions
from tenferro.traced.tensor import TracedTensor


def _declared() -> dict[str, ast.FunctionDef]:
    """The methods declared under ``if TYPE_CHECKING:`` in ``TensorMethods``'s body."""
    tree = ast.parse(inspect.getsource(declaration))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TensorMethods"]
    blocks = [n for n in cls.body if isinstance(n, ast.If)]
    assert [ast.unparse(b.test) for b in blocks] == ["TYPE_CHECKING"]
    return {n.name: n for n in blocks[0].body if isinstance(n, ast.FunctionDef)}


def _installed() -> dict[str, Any]:
    """The public methods and operators on ``TensorMethods`` at run time."""
    return {
        name: value
        for name, value in vars(TensorMethods).items()
        if (callable(value) or isinstance(value, property))
        and (not name.startswith("_") or (name.startswith("__") and name.endswith("__")))
        and name != "__hash__"  # object's, kept at class creation
    }


DECLARED = _declared()
INSTALLED = _installed()


def test_every_declared_method_is_installed_and_every_installed_one_is_declared():
    assert sorted(set(DECLARED) - set(INSTALLED)) == []
    assert sorted(set(INSTALLED) - set(DECLARED)) == []
    assert {"__add__", "__getitem__", "T", "sum", "reshape", "__array_namespace__"} <= set(DECLARED)


def _parameters(node: ast.FunctionDef) -> list[tuple[str, str, Any]]:
    """(name, kind, default) of each declared parameter, in inspect's terms."""
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    empty = inspect.Parameter.empty
    defaults = [empty] * (len(positional) - len(arguments.defaults))
    defaults += [ast.literal_eval(d) for d in arguments.defaults]
    only = len(arguments.posonlyargs)
    found = [
        (a.arg, "POSITIONAL_ONLY" if i < only else "POSITIONAL_OR_KEYWORD", d)
        for i, (a, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    if arguments.vararg is not None:
        found.append((arguments.vararg.arg, "VAR_POSITIONAL", empty))
    for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        found.append((a.arg, "KEYWORD_ONLY", empty if d is None else ast.literal_eval(d)))
    if arguments.kwarg is not None:
        found.append((arguments.kwarg.arg, "VAR_KEYWORD", empty))
    return found


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_installed_method_has_its_declared_signature(name):
    node, value = DECLARED[name], INSTALLED[name]
    is_property = any(ast.unparse(d) == "property" for d in node.decorator_list)
    assert is_property == isinstance(value, property)
    if is_property:
        return
    declared = _parameters(node)
    parameters = inspect.signature(value).parameters.values()
    installed = [(p.name, p.kind.name, p.default) for p in parameters]
    if value.__qualname__.startswith(("SurfaceMethods.", "TensorMethods.")):
        assert installed == declared
    else:  # a surface function itself (``__add__`` is ``tf.add``): its own names
        assert [entry[1:] for entry in installed] == [entry[1:] for entry in declared]


def test_the_definitions_are_installed_once_on_the_base_of_every_kind():
    for name, value in vars(definitions.SurfaceMethods).items():
        if callable(value) or isinstance(value, property):
            assert vars(TensorMethods)[name] is value
    for kind in (tf.Tensor, tf.EagerTensor, TracedTensor):
        assert issubclass(kind, TensorMethods)
        assert kind.sum is TensorMethods.sum
    assert tf.Tensor.__add__ is TensorMethods.__add__
    # the traced kind answers its binary operators from its keys' memos
    assert TracedTensor.__add__ is not TensorMethods.__add__
    assert TracedTensor.__add__.__name__ == "__add__"
