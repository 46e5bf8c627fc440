"""How :mod:`tenferro.lax` functions take their operands: as ``jax.lax`` does.

``jax.lax`` functions accept numpy arrays and Python or numpy scalars wherever an array
is expected, and return an array. Each ``tenferro.lax`` function declares its operand
parameters with :func:`takes`; the declaration wraps it so that an operand that is not
a tensor (an ``ndarray``, a numpy scalar, a Python bool/int/float/complex) is made a
concrete :class:`~tenferro.Tensor` first (Python scalars weak, as everywhere), and
anything else (a list, a string, ``None``) raises :class:`ArgumentTypeError` naming
the function and the parameter. Operands that are tensors of any kind (and values of
AD rules) pass unchanged: the wrapper is generated with the function's own signature,
so that path costs one type check per operand and no argument packing.

:data:`DECLARED` records every declaration (function name to operand parameters), so
the tests can check that each public lax function has one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from tenferro.errors import ArgumentTypeError
from tenferro.meta import HasMeta

__all__ = ["DECLARED", "lift_operand", "takes"]

F = TypeVar("F", bound=Callable[..., Any])

DECLARED: dict[str, tuple[str, ...]] = {}
"""Each declared function's name and its operand parameters (``name[]``: a sequence of
operands)."""

_DATA = (bool, int, float, complex, np.generic, np.ndarray)
"""What ``jax.lax`` takes as an operand besides its arrays."""


def lift_operand(op: str, name: str, value: Any) -> Any:
    """``value`` (an operand of ``op`` that is not a tensor) as a concrete tensor, or
    :class:`ArgumentTypeError` when it is not numeric data ``jax.lax`` would take."""
    if isinstance(value, HasMeta) or getattr(type(value), "_priority", None) is not None:
        return value  # a tensor kind, or what stands for one (a traced constant's anchor)
    if not isinstance(value, _DATA):
        raise ArgumentTypeError(
            op,
            f"operand {name} must be a tensor, a numpy array or a scalar, got "
            f"{type(value).__name__} {_short(value)}",
        )
    from tenferro.surface.convert import asarray

    return asarray(value, op=op)


def lift_operands(op: str, name: str, values: Any) -> list[Any]:
    """A sequence of operands of ``op`` (``concatenate``'s), each lifted."""
    if isinstance(values, (HasMeta, np.ndarray, str)) or not isinstance(values, (list, tuple)):
        raise ArgumentTypeError(
            op, f"{name} must be a list or tuple of operands, got {type(values).__name__}"
        )
    return [lift_operand(op, f"{name}[{i}]", v) for i, v in enumerate(values)]


def takes(*operands: str) -> Callable[[F], F]:
    """Declare the operand parameters of a lax function (``name[]`` for a parameter
    holding a sequence of operands) and make it lift non-tensor operands (see the
    module documentation). Without operands the function is only recorded."""

    def declare(function: F) -> F:
        name = function.__name__
        DECLARED[name] = operands
        if not operands:
            return function
        return cast(F, functools.update_wrapper(_wrapper(function, operands), function))

    return declare


def _wrapper(function: Callable[..., Any], operands: tuple[str, ...]) -> Callable[..., Any]:
    """A function of ``function``'s signature that lifts ``operands`` and calls it."""
    signature = inspect.signature(function)
    parameters, arguments = [], []
    defaults: dict[str, Any] = {}
    keyword_only_started = False
    for parameter in signature.parameters.values():
        text = parameter.name
        if parameter.default is not inspect.Parameter.empty:
            defaults[text] = parameter.default
            text += f"=_defaults[{parameter.name!r}]"
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            if not keyword_only_started:
                parameters.append("*")
                keyword_only_started = True
            arguments.append(f"{parameter.name}={parameter.name}")
        elif parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
            arguments.append(parameter.name)
        else:
            raise TypeError(f"{function.__name__}: unsupported parameter {parameter}")
        parameters.append(text)
    op = function.__name__
    lines = [f"def {op}({', '.join(parameters)}):"]
    for operand in operands:
        if operand.endswith("[]"):
            name = operand[:-2]
            lines.append(f"    {name} = _lift_all({op!r}, {name!r}, {name})")
        else:
            if operand not in signature.parameters:
                raise TypeError(f"{op} has no parameter {operand!r}")
            lines.append(f"    if not isinstance({operand}, _HasMeta):")
            lines.append(f"        {operand} = _lift({op!r}, {operand!r}, {operand})")
    lines.append(f"    return _function({', '.join(arguments)})")
    namespace: dict[str, Any] = {
        "_defaults": defaults,
        "_function": function,
        "_HasMeta": HasMeta,
        "_lift": lift_operand,
        "_lift_all": lift_operands,
    }
    exec("\n".join(lines), namespace)  # the source is built from the signature above
    return cast(Callable[..., Any], namespace[op])


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
