"""A pytest plugin that runs opt_einsum's own test suite against tenferro's einsum.

Loaded with ``-p opt_einsum_shim`` before opt_einsum's tests are collected, it replaces
``opt_einsum.contract`` and ``contract_path`` (where the tests import them from) by
``tf.einsum`` and ``tf.einsum_path``, ``contract_expression`` by an expression that
calls ``tf.einsum`` along its path, and opt_einsum's named path functions
(``paths.greedy``, ``paths.optimal``, ``paths.branch_*``, ``paths.dynamic_programming``,
``paths.auto``, ``paths.auto_hq`` and the ``_PATH_OPTIONS`` registry) by tenferro's
planners of the same names. opt_einsum's optimizer classes (``RandomGreedy``,
``DynamicProgramming``, ``BranchBound``) stay its own: tenferro takes them as
``optimize=`` objects. Calls with a non-numpy ``backend`` or opt_einsum-only
arguments are passed to opt_einsum unchanged (they test its backends, not planning).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import opt_einsum as oe
import opt_einsum.paths as oe_paths

import tenferro as tf
from tenferro.einsum.planners import plan
from tenferro.einsum.planners.network import Network, ssa_to_linear

tf_einsum = sys.modules["tenferro.einsum"]

oe_contract = sys.modules["opt_einsum.contract"]  # the name ``contract`` is the function
_original_contract = oe_contract.contract
_original_contract_path = oe_contract.contract_path
_original_expression = oe_contract.contract_expression
SUBSTITUTED: dict[str, int] = {"contract": 0, "contract_path": 0, "paths": 0, "expression": 0}


def contract_path(*operands: Any, **kwargs: Any) -> Any:
    if kwargs.get("einsum_call") or kwargs.get("use_blas") is False:
        return _original_contract_path(*operands, **kwargs)
    known = {"optimize", "memory_limit", "shapes", "use_blas"}
    unknown = set(kwargs) - known
    if unknown:
        raise TypeError(f"Did not understand the following kwargs: {unknown}")
    SUBSTITUTED["contract_path"] += 1
    return tf.einsum_path(
        *operands,
        optimize=kwargs.get("optimize", True),
        memory_limit=kwargs.get("memory_limit"),
        shapes=kwargs.get("shapes", False),
    )


def _numeric(arrays: Any) -> bool:
    """numpy arrays (or Python numbers) of a dtype tenferro has: what it is asked."""
    for a in arrays:
        if not isinstance(a, (np.ndarray, np.generic, int, float, complex)):
            return False
        if np.asarray(a).dtype.kind not in "biufc":
            return False
    return True


def contract(*operands: Any, **kwargs: Any) -> Any:
    backend = kwargs.get("backend", "auto")
    extras = set(kwargs) - {"optimize", "memory_limit", "backend", "use_blas", "out", "dtype"}
    arrays = operands[1:] if operands and isinstance(operands[0], str) else operands[0::2]
    sharing = sys.modules["opt_einsum.sharing"].currently_sharing()
    if backend not in ("auto", "numpy") or extras or not _numeric(arrays) or sharing:
        return _original_contract(*operands, **kwargs)  # opt_einsum's backends and caches
    SUBSTITUTED["contract"] += 1
    result = np.asarray(
        tf.einsum(
            *operands,
            optimize=kwargs.get("optimize", True),
            memory_limit=kwargs.get("memory_limit"),
        )
    )
    if kwargs.get("dtype") is not None:
        result = result.astype(kwargs["dtype"])
    out = kwargs.get("out")
    if out is not None:
        out[...] = result
        return out
    return result


class Expression:
    """``contract_expression``'s result: ``tf.einsum`` along the path planned once."""

    def __init__(self, subscripts: str, shapes: list[Any], kwargs: dict[str, Any]) -> None:
        if kwargs.get("optimize") is False:
            raise ValueError("You must set a path optimizer for a `ContractExpression`.")
        self.subscripts = subscripts
        self.original = _original_expression(subscripts, *shapes, **kwargs)
        self.path, self.info = tf.einsum_path(
            subscripts,
            *shapes,
            shapes=True,
            optimize=kwargs.get("optimize", True),
            memory_limit=kwargs.get("memory_limit"),
        )
        self.memory_limit = kwargs.get("memory_limit")
        self.num_args = len(shapes)
        self.contraction_list = self.info.contraction_list

    def __call__(self, *arrays: Any, **kwargs: Any) -> Any:
        if len(arrays) != self.num_args:
            raise ValueError(
                f"This `ContractExpression` takes exactly {self.num_args} array arguments "
                f"but received {len(arrays)}."
            )
        if set(kwargs) - {"out"} or not _numeric(arrays):
            return self.original(*arrays, **kwargs)  # opt_einsum's backends
        SUBSTITUTED["expression calls"] = SUBSTITUTED.get("expression calls", 0) + 1
        try:
            result = np.asarray(
                tf.einsum(
                    self.subscripts, *arrays, optimize=self.path, memory_limit=self.memory_limit
                )
            )
        except tf.TenferroError as error:
            raise ValueError(
                f"Internal error while evaluating `ContractExpression`: {error}"
            ) from error
        out = kwargs.get("out")
        if out is not None:
            if out.shape != result.shape:
                raise ValueError(
                    "Internal error while evaluating `ContractExpression`: `out` has shape "
                    f"{out.shape}, the result {result.shape}"
                )
            out[...] = result
            return out
        return result

    def __repr__(self) -> str:
        return f"<ContractExpression('{self.subscripts}')>"

    def __str__(self) -> str:
        return repr(self)


def contract_expression(subscripts: Any, *shapes: Any, **kwargs: Any) -> Any:
    if "out" in kwargs:
        raise ValueError("`out` should only be specified when calling a `ContractExpression`.")
    simple = set(kwargs) <= {"optimize", "memory_limit"}
    if (
        not isinstance(subscripts, str)
        or not simple
        or any(not hasattr(s, "__len__") for s in shapes)
    ):
        return _original_expression(subscripts, *shapes, **kwargs)
    if any(hasattr(s, "shape") for s in shapes):  # constants: opt_einsum's own feature
        return _original_expression(subscripts, *shapes, **kwargs)
    SUBSTITUTED["expression"] += 1
    return Expression(subscripts, [tuple(s) for s in shapes], kwargs)


def _named(name: str) -> Any:
    def planner(
        inputs: Any, output: Any, size_dict: Any, memory_limit: Any = None, **_: Any
    ) -> Any:
        SUBSTITUTED["paths"] += 1
        network = Network(tuple(frozenset(t) for t in inputs), frozenset(output), dict(size_dict))

        def fail(message: str) -> Exception:
            return ValueError(message)

        ssa = plan(network, name, memory_limit, fail)
        return ssa_to_linear(ssa, len(inputs))

    planner.__name__ = name
    return planner


_NAMES = {
    "greedy": "greedy",
    "optimal": "optimal",
    "branch_all": "branch-all",
    "branch_2": "branch-2",
    "branch_1": "branch-1",
    "dynamic_programming": "dp",
    "auto": "auto",
    "auto_hq": "auto-hq",
}


_original_register = oe_paths.register_path_fn


def register_path_fn(name: str, fn: Any) -> None:
    """opt_einsum's registration, mirrored in tenferro's registry."""
    _original_register(name, fn)
    tf_einsum.register_path_fn(name, fn)


def pytest_configure(config: Any) -> None:
    oe_paths.register_path_fn = register_path_fn
    for module in (oe, oe_contract):
        module.contract = contract  # type: ignore[attr-defined]
        module.contract_path = contract_path  # type: ignore[attr-defined]
        module.contract_expression = contract_expression  # type: ignore[attr-defined]
    for attribute, name in _NAMES.items():
        setattr(oe_paths, attribute, _named(name))
    for key in list(oe_paths._PATH_OPTIONS):
        name = {"dynamic-programming": "dp"}.get(key, key)
        oe_paths._PATH_OPTIONS[key] = _named(name)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    terminalreporter.write_line(f"tenferro substitutions: {SUBSTITUTED}")
