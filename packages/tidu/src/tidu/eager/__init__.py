"""tidu.eager: PyTorch-style ``backward()`` over recorded eager invocations.

A frontend records each eager invocation with a :class:`Recorder` (one primitive
as a one-operation :class:`RecordedGraph`, or a composite graph as one tape node),
and runs reverse mode with :func:`backward` through a :class:`BackwardExecutor`
(:class:`ProgramExecutor` is a ready one for evaluable primitives), or forward mode
with :func:`forward`. Derivatives of
recorded structures are cached (:class:`DerivativeCache`).
"""

from tidu.eager.backward import (
    BackwardExecutor,
    backward,
    contributing_nodes,
    topological_nodes,
)
from tidu.eager.derivatives import (
    NODE_INSTANCE,
    RESPECIALIZABLE,
    DerivativeCache,
    NodeDerivative,
    default_derivative_cache,
)
from tidu.eager.executor import Apply, ProgramExecutor, Specialize
from tidu.eager.forward import ForwardExecutor, forward
from tidu.eager.recorded import EAGER_PASS, RecordedGraph
from tidu.eager.tape import (
    CountingKeySource,
    EagerInput,
    EagerKey,
    EagerOutput,
    KeySource,
    Recorder,
    Trace,
)

__all__ = [
    "EAGER_PASS",
    "NODE_INSTANCE",
    "RESPECIALIZABLE",
    "Apply",
    "BackwardExecutor",
    "CountingKeySource",
    "DerivativeCache",
    "EagerInput",
    "EagerKey",
    "EagerOutput",
    "ForwardExecutor",
    "KeySource",
    "NodeDerivative",
    "ProgramExecutor",
    "RecordedGraph",
    "Recorder",
    "Specialize",
    "Trace",
    "backward",
    "contributing_nodes",
    "default_derivative_cache",
    "forward",
    "topological_nodes",
]
