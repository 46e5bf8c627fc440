"""Exceptions raised by computegraph.

Every error names the operation (or graph element) involved and the offending
values, and is raised before any state is mutated, so a failed call leaves the
builder, view or program exactly as it was.
"""

from __future__ import annotations

__all__ = [
    "BindingError",
    "GraphBuildError",
    "GraphError",
    "OperationContractError",
    "UnresolvedKeyError",
]


class GraphError(ValueError):
    """Base class of computegraph's errors about malformed graphs or calls."""


class GraphBuildError(GraphError):
    """A graph was built wrongly: wrong input count, unknown local id, bad role."""


class UnresolvedKeyError(GraphError, LookupError):
    """A value key is not defined by any graph of a resolved view."""


class BindingError(GraphError):
    """Program inputs were bound wrongly: wrong count or a missing binding."""


class OperationContractError(GraphError):
    """An operation broke its own contract, e.g. ``eval`` returned the wrong number of outputs."""
