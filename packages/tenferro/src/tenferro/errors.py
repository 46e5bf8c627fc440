"""Exceptions raised by tenferro, and its warnings.

Every error names the operation, the phase in which the problem was found
(``build``: while constructing a value or graph, ``bind``: when binding inputs,
``execution``: while computing) and the offending shapes, dtypes or axes.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator
from typing import Any, Literal

import computegraph

__all__ = [
    "AllocationError",
    "ArgumentTypeError",
    "AxisError",
    "BackendUnavailableError",
    "BindingError",
    "ConvergenceError",
    "DTypeError",
    "DegenerateDerivativeWarning",
    "ExecutionError",
    "FlagError",
    "InPlaceError",
    "InactiveError",
    "IndexingError",
    "LinAlgError",
    "LoweringError",
    "NonScalarError",
    "ParameterError",
    "Phase",
    "ReleasedGraphError",
    "ScalarOverflowError",
    "ShapeError",
    "TenferroError",
    "UnsupportedError",
]

Phase = Literal["build", "bind", "execution"]


class TenferroError(Exception):
    """Base class of tenferro's errors; ``op`` and ``phase`` say where it happened and
    ``message`` what happened. Every error pickles (it crosses process boundaries)."""

    def __init__(self, op: str, message: str, phase: Phase = "build") -> None:
        self.op = op
        self.message = message
        self.phase = phase
        super().__init__(f"{op}: {message} [{phase}]")

    def __reduce__(self) -> tuple[Any, ...]:
        # Every tenferro error takes ``(op, message)`` first (subclasses fix or default
        # the phase); the formatted arguments and attributes are restored after, so an
        # error raised in a worker process (``multiprocessing``, ``concurrent.futures``)
        # reaches the parent intact instead of failing to unpickle there.
        return (_rebuild, (type(self), self.op, self.message, self.args), self.__dict__)


def _rebuild(
    cls: type[TenferroError], op: str, message: str, args: tuple[Any, ...]
) -> TenferroError:
    """A pickled tenferro error, made again by its constructor; pickle then restores its
    attributes."""
    error = cls(op, message)
    error.args = args
    if isinstance(error, ImportError):  # its str() is its msg, set by the constructor
        error.msg = str(args[0]) if args else ""
    return error


class ShapeError(TenferroError, ValueError):
    """Incompatible or invalid shapes."""


class AxisError(ShapeError, IndexError):
    """An axis out of range, repeated, or otherwise invalid."""


class ParameterError(TenferroError, ValueError):
    """An invalid operation parameter (an unknown mode, direction or option)."""


class IndexingError(TenferroError, IndexError):
    """An index out of bounds, or an index expression that does not fit the tensor."""


class DTypeError(TenferroError, TypeError):
    """An unsupported dtype, or dtypes an operation cannot combine."""


class NonScalarError(ShapeError):
    """A gradient was asked of a value that is not a scalar."""


class InactiveError(TenferroError, ValueError):
    """A derivative was asked of a value that does not depend on the inputs."""


class BindingError(TenferroError, computegraph.BindingError):
    """A placeholder was bound wrongly or not at all."""


class ArgumentTypeError(TenferroError, TypeError):
    """An argument of the wrong kind: not callable, not a tuple of primals, a traced value
    where a concrete one is needed."""


class FlagError(ParameterError, ArgumentTypeError):
    """A boolean keyword (``keepdims``, ``upper``, ``full_matrices``, ``has_aux`` ...)
    given something other than ``True`` or ``False``: a :class:`ParameterError` and, as
    Python has it for a value of the wrong type, a ``TypeError``."""


class ExecutionError(TenferroError, ArithmeticError):
    """A computation that has no value (integer division by zero, ...)."""

    def __init__(self, op: str, message: str) -> None:
        super().__init__(op, message, "execution")


class LinAlgError(ExecutionError):
    """A linear-algebra computation failed on its data (singular, not positive definite,
    no convergence, non-finite input); the message names the shape and, for batches, the
    first failing batch index."""


class ConvergenceError(LinAlgError):
    """An iterative solver stopped before it reached its tolerance. ``solver`` names the
    method (``"cg"``, ``"lanczos"`` ...), ``tolerance`` is what was asked, ``residual``
    what was reached (in the same norm) and ``iterations`` how many were run."""

    def __init__(
        self,
        op: str,
        solver: str,
        tolerance: float,
        residual: float,
        iterations: int,
        hint: str = "",
    ) -> None:
        self.solver = solver
        self.tolerance = tolerance
        self.residual = residual
        self.iterations = iterations
        self.hint = hint
        message = (
            f"{solver} did not converge: residual {residual:.3g} after {iterations} "
            f"iteration(s), tolerance {tolerance:.3g}"
        )
        super().__init__(op, f"{message}{'; ' + hint if hint else ''}")

    def __reduce__(self) -> tuple[Any, ...]:
        # made again from the solver's figures (its constructor does not take a message)
        figures = (self.solver, self.tolerance, self.residual, self.iterations, self.hint)
        return (type(self), (self.op, *figures), self.__dict__)


class UnsupportedError(TenferroError, TypeError):
    """An operation tenferro does not provide for tensors (a numpy function without a
    tenferro counterpart, or an option of one that tenferro does not implement)."""


class LoweringError(TenferroError, NotImplementedError):
    """A program the XLA backend cannot run as asked: an operation without a lowering
    rule, a data-dependent extent, or an operation or dtype the target device lacks.
    Raised while the program is lowered, before anything runs."""


class BackendUnavailableError(TenferroError, ImportError):
    """A backend was asked for whose optional dependency is not installed (the XLA
    backend needs JAX: ``pip install 'tenferro[xla]'``)."""


class ScalarOverflowError(TenferroError, OverflowError):
    """A Python scalar that does not fit the dtype it must take (``int32 + 2**40``)."""


class AllocationError(TenferroError, MemoryError):
    """A result too large to allocate."""

    def __init__(self, op: str, message: str, phase: Phase = "execution") -> None:
        super().__init__(op, message, phase)


class InPlaceError(TenferroError, RuntimeError):
    """An in-place operation (``x += 1``, ``x[i] = v``) on a tracked leaf: as in PyTorch,
    it would lose the leaf whose gradient the tape accumulates."""


class ReleasedGraphError(TenferroError, RuntimeError):
    """A backward or forward pass through tape nodes whose saved values an earlier
    backward pass freed: as in PyTorch, ``tape.grad``/``.backward()`` free them as they
    use them unless given ``retain_graph=True``."""


class DegenerateDerivativeWarning(RuntimeWarning):
    """A derivative asked for where it is not defined, or not to working precision: a
    loss that weights tied eigen/singular values differently, or that depends on the
    rotation of tied vectors (see :mod:`tenferro.linalg.degeneracy`)."""


_FINDINGS: contextvars.ContextVar[list[tuple[type[Warning], str]] | None] = contextvars.ContextVar(
    "tenferro_findings", default=None
)


def warn_once_per_call(category: type[Warning], message: str) -> None:
    """Warn ``message``: at once outside an evaluation, else once at the end of the
    enclosing :func:`one_warning_per_call` (its first message only)."""
    pending = _FINDINGS.get()
    if pending is None:
        warnings.warn(message, category, stacklevel=3)
    elif not pending:
        pending.append((category, message))


@contextlib.contextmanager
def one_warning_per_call() -> Iterator[None]:
    """Around one evaluation (a traced program's run, an eager backward pass): the
    messages of :func:`warn_once_per_call` inside it become one warning, the first, at
    its end (nested evaluations report through the outermost)."""
    if _FINDINGS.get() is not None:
        yield
        return
    pending: list[tuple[type[Warning], str]] = []
    token = _FINDINGS.set(pending)
    try:
        yield
    finally:
        _FINDINGS.reset(token)
    if pending:
        category, message = pending[0]
        warnings.warn(message, category, stacklevel=3)
