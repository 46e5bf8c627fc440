"""``tenferro.__all__`` is a literal list whose every name the module binds statically
(an import or an assignment), so type checkers and IDEs see each public name."""

from __future__ import annotations

import ast
from pathlib import Path

import tenferro as tf

SOURCE = Path(tf.__file__)


def _module() -> ast.Module:
    return ast.parse(SOURCE.read_text())


def _static_all(module: ast.Module) -> list[str]:
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            assert isinstance(node.value, ast.List), "__all__ must be a literal list"
            names = []
            for element in node.value.elts:
                assert isinstance(element, ast.Constant), ast.dump(element)
                names.append(element.value)
            return names
    raise AssertionError("tenferro/__init__.py has no __all__")


def _bound_names(module: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                assert alias.name != "*", "star imports hide names from type checkers"
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Assign):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return bound


def test_every_public_name_is_bound_statically():
    module = _module()
    names = _static_all(module)
    assert len(names) == len(set(names)), "duplicates in __all__"
    assert sorted(set(names) - _bound_names(module)) == []


def test_static_all_is_the_runtime_public_surface():
    names = _static_all(_module())
    assert names == tf.__all__
    for name in names:
        assert getattr(tf, name) is not None, name
    for name in ("tensor", "asarray", "exp", "tanh", "where", "InPlaceError", "linalg"):
        assert name in names
    assert callable(tf.tensor)


PUBLIC_MODULES = [
    "tenferro",
    "tenferro.lax",
    "tenferro.ops",
    "tenferro.random",
    "tenferro.tree_util",
    "tenferro.typing",
    "tenferro.testing",
    "tenferro.extension",
    "tenferro.linalg",
    "tenferro.solvers",
    "tenferro.array_api",
    "tenferro.models",
    "tenferro.models.mps",
]


def test_public_modules_list_only_their_own_names():
    """``dir()`` (what tab completion offers) of every public module is its ``__all__``: no
    ``np``, ``Any`` or ``builtins`` imported for its own use; and each listed function or
    class is tenferro's (or numpy's dtypes and the Array API constants)."""
    import importlib
    import inspect

    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        listed = [n for n in dir(module) if not n.startswith("_")]
        assert listed == sorted(module.__all__), name
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if inspect.isfunction(value) or inspect.isclass(value):
                owner = getattr(value, "__module__", "") or ""
                assert owner.split(".")[0] in ("tenferro", "computegraph", "tidu"), (
                    name,
                    attribute,
                    owner,
                )
