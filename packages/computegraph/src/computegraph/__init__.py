"""computegraph: generic computation graphs over any operation type.

The pipeline::

    GraphBuilder --build--> Graph      (one or more, linked by External keys / parents)
    resolve(roots)                     -> ResolvedView       (which keys are defined)
    materialize_merge(view, outputs)   -> MaterializedGraph  (flattened, CSE, topo order)
    compile(materialized)              -> CompiledProgram    (SSA slots, last-use frees)
    program.eval(inputs, ctx=None)     -> list of output values

Values are identified across graphs by interned structural keys
(:class:`Input`, :class:`Derived`, :class:`OperationKey`). The package has no
dependencies beyond the standard library and no built-in operations.
"""

from computegraph.cache import (
    BoundedCache,
    CacheStats,
    DictCache,
    ProgramCache,
    RegisteredCache,
    cache_stats,
    clear_caches,
    default_program_cache,
    register_cache,
    registered_caches,
)
from computegraph.errors import (
    BindingError,
    GraphBuildError,
    GraphError,
    OperationContractError,
    UnresolvedKeyError,
)
from computegraph.gc_pause import gc_paused
from computegraph.graph import (
    External,
    Graph,
    GraphBuilder,
    Local,
    LocalOperationId,
    LocalValueId,
    OperationNode,
    ValueNode,
    ValueRef,
)
from computegraph.interner import ValueKeyId, ValueKeyInterner
from computegraph.keys import (
    PRIMARY,
    Derived,
    Input,
    Linearized,
    OperationKey,
    OperationRole,
    Primary,
    ValueKey,
    first_output,
    interned_key_count,
)
from computegraph.materialize import (
    MaterializedGraph,
    MaterializedOperation,
    MaterializedValue,
    Substitutions,
    materialize_merge,
)
from computegraph.memo import MEMO_ENTRIES, MEMO_KEYS, memo_put, memos
from computegraph.program import CompiledProgram, Instruction, compile
from computegraph.protocols import EvaluableGraphOperation, GraphOperation
from computegraph.render import describe_key
from computegraph.resolve import (
    InputDef,
    ProducedDef,
    ResolvedView,
    Resolver,
    StructuralView,
    ValueDef,
    resolve,
    structural_view,
)
from computegraph.walk import After, fold, rewrite

__version__ = "0.1.0"

__all__ = [
    "MEMO_ENTRIES",
    "MEMO_KEYS",
    "PRIMARY",
    "After",
    "BindingError",
    "BoundedCache",
    "CacheStats",
    "CompiledProgram",
    "Derived",
    "DictCache",
    "EvaluableGraphOperation",
    "External",
    "Graph",
    "GraphBuildError",
    "GraphBuilder",
    "GraphError",
    "GraphOperation",
    "Input",
    "InputDef",
    "Instruction",
    "Linearized",
    "Local",
    "LocalOperationId",
    "LocalValueId",
    "MaterializedGraph",
    "MaterializedOperation",
    "MaterializedValue",
    "OperationContractError",
    "OperationKey",
    "OperationNode",
    "OperationRole",
    "Primary",
    "ProducedDef",
    "ProgramCache",
    "RegisteredCache",
    "ResolvedView",
    "Resolver",
    "StructuralView",
    "Substitutions",
    "UnresolvedKeyError",
    "ValueDef",
    "ValueKey",
    "ValueKeyId",
    "ValueKeyInterner",
    "ValueNode",
    "ValueRef",
    "cache_stats",
    "clear_caches",
    "compile",
    "default_program_cache",
    "describe_key",
    "first_output",
    "fold",
    "gc_paused",
    "interned_key_count",
    "materialize_merge",
    "memo_put",
    "memos",
    "register_cache",
    "registered_caches",
    "resolve",
    "rewrite",
    "structural_view",
]
