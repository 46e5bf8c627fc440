"""Every exception and warning class of the stack (computegraph, tidu, tenferro) survives a
pickle round trip with its type, message and attributes, so an error raised in a worker
process (``multiprocessing.Pool``, ``concurrent.futures``) reaches the parent instead of
hanging the pool on an unpicklable exception."""

from __future__ import annotations

import importlib
import inspect
import multiprocessing
import pickle
import pkgutil
from types import ModuleType
from typing import Any

import pytest

import computegraph
import tenferro as tf
import tidu

PACKAGES: tuple[ModuleType, ...] = (computegraph, tidu, tf)

ARGUMENTS: dict[str, Any] = {
    "op": "matmul",
    "message": "shapes (2, 3) and (4,) do not contract",
    "phase": "bind",
    "rule": "transpose",
    "detail": "no transpose for the extra columns of a full SVD",
    "node": "Trace#7",
    "mode": "backward",
    "solver": "cg",
    "tolerance": 1e-10,
    "residual": 3.5e-4,
    "iterations": 200,
    "hint": "precondition the operator",
}
"""Constructor arguments by parameter name (every exception's parameters are named so)."""


def _modules(package: ModuleType) -> list[ModuleType]:
    modules = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        modules.append(importlib.import_module(info.name))
    return modules


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        for module in _modules(package):
            for _, value in inspect.getmembers(module, inspect.isclass):
                if (
                    issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                    and value.__module__.split(".")[0] == package.__name__
                ):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


CLASSES = _exception_classes()


def _instance(cls: type[BaseException]) -> BaseException:
    parameters = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if not parameters:  # BaseException's own constructor: the message alone
        return cls(ARGUMENTS["message"])
    return cls(**{p.name: ARGUMENTS[p.name] for p in parameters})


def test_the_walk_finds_every_public_exception() -> None:
    names = {cls.__name__ for cls in CLASSES}
    exported = {
        name
        for package in PACKAGES
        for name in getattr(package, "__all__", dir(package))
        if inspect.isclass(getattr(package, name, None))
        and issubclass(getattr(package, name), BaseException)
    }
    assert exported <= names
    assert {"TenferroError", "ExecutionError", "ADRuleError", "GraphError"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_exception_round_trips_through_pickle(cls: type[BaseException]) -> None:
    error = _instance(cls)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol))
        assert type(copy) is cls
        assert str(copy) == str(error)
        assert copy.args == error.args
        assert vars(copy) == vars(error)
        for name in ("op", "phase", "rule", "detail", "mode"):
            assert getattr(copy, name, None) == getattr(error, name, None)


WORKER_ERRORS = [
    tf.ShapeError("reshape", "cannot reshape (2, 3) to (4,)"),
    tf.ExecutionError("floor_divide", "integer division by zero"),
    tf.LinAlgError("cholesky", "the input is not positive definite"),
    tidu.ADRuleError("svd", "jvp", "extra columns"),
]


def _raise_in_worker(index: int) -> None:
    raise WORKER_ERRORS[index]


@pytest.mark.parametrize("index", range(len(WORKER_ERRORS)))
def test_an_error_raised_in_a_worker_process_reaches_the_parent(index: int) -> None:
    expected = WORKER_ERRORS[index]
    # multiprocessing.Pool hangs forever on a result it cannot unpickle: the timeout
    # turns that into a failure.
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply_async(_raise_in_worker, (index,))
        with pytest.raises(type(expected)) as caught:
            result.get(timeout=60)
    assert type(caught.value) is type(expected)
    assert str(caught.value) == str(expected)
