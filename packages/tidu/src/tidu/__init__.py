"""tidu: generic automatic differentiation over computegraph graphs.

* :func:`linearize` builds the JVP of a resolved view as a new linear graph;
* :func:`linear_transpose` transposes a linear graph (reverse mode, VJP);
* higher order by repetition: resolve the graphs so far, transform again with a
  fresh pass id (forward-over-forward, forward-over-reverse, ... to any order);
* :mod:`tidu.eager`: PyTorch-style ``backward()`` over recorded invocations;
* :mod:`tidu.spec`: spec-level operation contracts (forward + VJP) as a referee.

tidu knows no concrete primitive: everything is generic over :class:`Primitive`.
A missing rule raises :class:`ADRuleError`, never a silent zero.
"""

from computegraph import External, Local
from tidu.errors import (
    ADRuleError,
    ADRuleKind,
    PassReuseError,
    ReleasedGraphError,
    RuleContractError,
    TransformError,
)
from tidu.keys import (
    ADKey,
    CopyPass,
    DiffPassId,
    FreshPass,
    SeedPass,
    Tangent,
    fresh_pass_id,
    tangent_key,
)
from tidu.linearize import Aliases, as_view, find_add_operation, linearize, linearize_with_builder
from tidu.linearized import LinearizedGraph, PrimitiveGraph, external_keys
from tidu.primitive import (
    ADD_ROLE,
    GraphPrimitiveBuilder,
    Primitive,
    PrimitiveBuilder,
    PrimitiveValue,
    call_jvp_rule,
    call_transpose_rule,
)
from tidu.transpose import linear_transpose, linear_transpose_with_builder

__version__ = "0.1.0"

__all__ = [
    "ADD_ROLE",
    "ADKey",
    "ADRuleError",
    "ADRuleKind",
    "Aliases",
    "CopyPass",
    "DiffPassId",
    "External",
    "FreshPass",
    "GraphPrimitiveBuilder",
    "LinearizedGraph",
    "Local",
    "PassReuseError",
    "Primitive",
    "PrimitiveBuilder",
    "PrimitiveGraph",
    "PrimitiveValue",
    "ReleasedGraphError",
    "RuleContractError",
    "SeedPass",
    "Tangent",
    "TransformError",
    "as_view",
    "call_jvp_rule",
    "call_transpose_rule",
    "external_keys",
    "find_add_operation",
    "fresh_pass_id",
    "linear_transpose",
    "linear_transpose_with_builder",
    "linearize",
    "linearize_with_builder",
    "tangent_key",
]
