"""How :mod:`tenferro.lax` functions take their operands: as ``jax.lax`` does.

``jax.lax`` functions accept numpy arrays and Python or numpy scalars wherever an array
is expected, and return an array. Each ``tenferro.lax`` function declares its operand
parameters with ``takes`` (made by :func:`declarer`); the declaration wraps it so that
an operand that is not a tensor (an ``ndarray``, a numpy scalar, a Python
bool/int/float/complex) is made a concrete :class:`~tenferro.Tensor` first (Python
scalars weak, as everywhere), and anything else (a list, a string, ``None``) raises
:class:`ArgumentTypeError` naming the function and the parameter. Operands that are
tensors of any kind (and values of AD rules) pass unchanged: the wrapper is generated
with the function's own signature, so that path costs one type check per operand and no
argument packing.

Elementwise functions also take what ``jax.lax`` takes beside an array (as ``jax.lax``
0.10.2 does):

* a rank-0 operand, broadcast to the others' shape: either operand of a binary
  function (``mul(x, 2.0)``, ``mul(np.array(2.0), x)``), the predicate of ``select``
  (``select(True, x, y)``; its two cases still share one shape), the bounds of
  ``clamp`` (``clamp(0.0, x, 1.0)``; ``x`` itself never broadcasts). Operands of rank
  1 or more still share one shape: no other broadcasting happens.
* a weak operand (a Python scalar, or a weak tensor made from them) beside strong ones
  of the same kind takes their dtype: ``mul(float32 array, 2.0)`` is float32, as
  ``jax.lax`` gives in its default precision (with x64 on, ``jax.lax`` refuses it:
  tenferro reads Python numbers as 64-bit, like x64, but weakly, like ``jax.numpy``).
  Of another kind (``mul(float array, 2)``) or strong (``np.float64(2.0)`` beside
  float32) it is refused by the primitive, as by ``jax.lax``: lax never promotes.

The check that nothing needs doing is inlined in the wrapper (a comparison of shapes and
dtypes); the broadcast and conversion happen only when it fails.

:data:`DECLARED` records every declaration (function name to operand parameters), and
:data:`ELEMENTWISE` the elementwise ones, so the tests can check that each public lax
function has one.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from tenferro.core.kinds import asarray
from tenferro.errors import ArgumentTypeError
from tenferro.meta import HasMeta

__all__ = ["DECLARED", "ELEMENTWISE", "Unify", "declarer", "lift_operand"]

F = TypeVar("F", bound=Callable[..., Any])

DECLARED: dict[str, tuple[str, ...]] = {}
"""Each declared function's name and its operand parameters (``name[]``: a sequence of
operands)."""

ELEMENTWISE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
"""Each elementwise function's name, the operands that share one dtype and the operands
that may be rank-0 beside the others (see :func:`declarer`)."""

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
    return asarray(value, op=op)


def lift_operands(op: str, name: str, values: Any) -> list[Any]:
    """A sequence of operands of ``op`` (``concatenate``'s), each lifted."""
    if isinstance(values, (HasMeta, np.ndarray, str)) or not isinstance(values, (list, tuple)):
        raise ArgumentTypeError(
            op, f"{name} must be a list or tuple of operands, got {type(values).__name__}"
        )
    return [lift_operand(op, f"{name}[{i}]", v) for i, v in enumerate(values)]


Unify = Callable[..., tuple[Any, ...]]
"""``unify(op, names, same, spread, *values)``: the elementwise operands ``values`` made
to agree (weak dtypes, rank-0 operands broadcast), by the rules of the functions
declared with it; it is given by the module that declares them (:mod:`tenferro.lax`,
whose primitives it applies)."""


def declarer(unify: Unify) -> Callable[..., Callable[[F], F]]:
    """``takes``, the decorator that declares a function's operands, whose wrappers make
    elementwise operands agree with ``unify``."""

    def takes(
        *operands: str, elementwise: tuple[str, ...] = (), scalars: tuple[str, ...] | None = None
    ) -> Callable[[F], F]:
        """Declare the operand parameters of a lax function (``name[]`` for a parameter
        holding a sequence of operands) and make it lift non-tensor operands (see the
        module documentation). Without operands the function is only recorded.

        ``elementwise`` names the operands combined elementwise in one dtype (a weak one
        takes the strong ones' dtype when of their kind); ``scalars`` those of them, or
        others, that may be rank-0 beside the rest and are then broadcast (all of
        ``elementwise`` unless given)."""
        spread = elementwise if scalars is None else scalars

        def declare(function: F) -> F:
            name = function.__name__
            DECLARED[name] = operands
            if elementwise or spread:
                ELEMENTWISE[name] = (elementwise, spread)
            if not operands:
                return function
            wrapper = _wrapper(function, operands, elementwise, spread, unify)
            return cast(F, functools.update_wrapper(wrapper, function))

        return declare

    return takes


def _wrapper(
    function: Callable[..., Any],
    operands: tuple[str, ...],
    elementwise: tuple[str, ...],
    spread: tuple[str, ...],
    unify: Unify,
) -> Callable[..., Any]:
    """A function of ``function``'s signature that lifts ``operands``, makes the
    elementwise ones agree (``unify``) and calls it."""
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
    joined = tuple(n for n in operands if n in elementwise or n in spread)
    if joined:
        for name in joined:
            if name not in signature.parameters:
                raise TypeError(f"{op} has no parameter {name!r}")
        meta = {n: f"_meta{i}" for i, n in enumerate(joined)}
        lines.extend(f"    {meta[n]} = {n}.meta" for n in joined)
        grouped = [meta[n] for n in joined if n in elementwise]
        # shapes compared by value, dtypes by identity (numpy's are singletons; a false
        # mismatch only costs unify's exact check)
        tests = [f"{a}[0] != {b}[0]" for a, b in itertools.pairwise(meta.values())]
        tests += [f"{a}[1] is not {b}[1]" for a, b in itertools.pairwise(grouped)]
        names = ", ".join(joined)
        lines.append(f"    if {' or '.join(tests)}:")
        lines.append(f"        {names}, = _unify({op!r}, {joined!r}, _same, _spread, {names})")
    lines.append(f"    return _function({', '.join(arguments)})")
    namespace: dict[str, Any] = {
        "_defaults": defaults,
        "_function": function,
        "_HasMeta": HasMeta,
        "_lift": lift_operand,
        "_lift_all": lift_operands,
        "_unify": unify,
        "_same": tuple(n in elementwise for n in joined),
        "_spread": tuple(n in spread for n in joined),
    }
    exec("\n".join(lines), namespace)  # the source is built from the signature above
    return cast(Callable[..., Any], namespace[op])


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
