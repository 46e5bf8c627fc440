"""``linearize``: forward mode, building the JVP as a new linear graph.

The resolved logical DAG is walked in topological order (never physically
merged); each reachable operation with at least one active input calls its
primitive's JVP rule, which emits linear operations into a fresh graph and refers
to primal values as ``External`` keys. Inactive values have no tangent (a
symbolic zero) and cost nothing; structurally identical operations are linearised
once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any

from computegraph import (
    Derived,
    Graph,
    Input,
    Local,
    LocalValueId,
    OperationKey,
    ResolvedView,
    UnresolvedKeyError,
    ValueKey,
    gc_paused,
    resolve,
)
from tidu.errors import PassReuseError, TransformError
from tidu.keys import CopyPass, DiffPassId, fresh_pass_id, tangent_key
from tidu.linearized import LinearizedGraph
from tidu.primitive import ADD_ROLE, GraphPrimitiveBuilder, call_jvp_rule

__all__ = ["as_view", "find_add_operation", "linearize"]


def as_view(view: ResolvedView | Graph | Iterable[Graph]) -> ResolvedView:
    """``view`` itself, or the resolved view of a graph or graphs."""
    return view if isinstance(view, ResolvedView) else resolve(view)


def find_add_operation(operations: Iterable[Any]) -> Any:
    """The ``add()`` of the first operation that has one, or ``None``."""
    for operation in operations:
        method = getattr(operation, "add", None)
        if method is not None:
            return method()
    return None


def linearize(
    view: ResolvedView | Graph | Iterable[Graph],
    outputs: Iterable[ValueKey],
    wrt: Iterable[Hashable],
    pass_id: DiffPassId | None = None,
    ctx: Any = None,
    aliases: Mapping[Hashable, ValueKey] | None = None,
    *,
    add: Any = None,
) -> LinearizedGraph:
    """The JVP of ``outputs`` with respect to the inputs named in ``wrt``, as a linear graph.

    * ``view``: a resolved view (or graphs to resolve) defining everything reachable
      from ``outputs``; an undefined reachable key raises ``UnresolvedKeyError``
      rather than being treated as a constant.
    * ``wrt``: primal input keys. Tangent input ``i`` is named
      ``tangent_key(wrt[i], pass_id)``. A key listed twice gets two tangent inputs,
      and its tangent is their sum (so the JVP and its transpose stay adjoint).
    * ``pass_id``: must differ from the pass of every earlier ``linearize`` whose graph
      is in ``view`` (a reuse is detected); ``None`` mints a fresh one.
    * ``ctx``: passed to every JVP rule.
    * ``aliases``: ``{input key: value key}``; such an input inherits the tangent of
      the aliased value instead of being a constant (checkpoint boundaries).
    * ``add``: the primitive set's addition, for when the graphs hold no operation
      to ask for it (only needed to sum repeated ``wrt`` entries).

    Rule errors (:class:`~tidu.ADRuleError`) propagate unchanged.
    """
    resolved = as_view(view)
    requested = tuple(outputs)
    for position, key in enumerate(requested):
        if not isinstance(key, ValueKey):
            raise TypeError(f"linearize: output {position} is not a ValueKey: {key!r}")
    alias_map = dict(aliases or {})
    for name, target in alias_map.items():
        if not isinstance(target, ValueKey):
            raise TypeError(f"linearize: alias of {name!r} must be a ValueKey, got {target!r}")
    with gc_paused():
        return _linearize(
            resolved,
            requested,
            tuple(wrt),
            fresh_pass_id() if pass_id is None else pass_id,
            ctx,
            alias_map,
            add,
        )


def _linearize(
    view: ResolvedView,
    outputs: tuple[ValueKey, ...],
    wrt: tuple[Hashable, ...],
    pass_id: DiffPassId,
    ctx: Any,
    aliases: dict[Hashable, ValueKey],
    add: Any,
) -> LinearizedGraph:
    defined = view.defined_keys
    order = _topological_order(outputs, aliases, defined)
    add_operation = add if add is not None else find_add_operation(_operations(order, view))

    builder = GraphPrimitiveBuilder()
    for root in view.roots:
        builder.add_parent(root)  # so resolve(linear graph) finds the primal definitions
    tangents: dict[ValueKey, LocalValueId | None] = {}
    tangent_inputs: list[tuple[Hashable, LocalValueId]] = []
    copies: dict[Hashable, list[LocalValueId]] = {}
    for name in wrt:
        occurrences = copies.setdefault(name, [])
        this_pass = pass_id if not occurrences else CopyPass(pass_id, len(occurrences))
        key = tangent_key(name, this_pass)
        if Input(key) in defined:
            raise PassReuseError(
                f"linearize: the tangent key {key!r} of {name!r} is already an input of the "
                f"resolved graphs, so pass id {pass_id!r} was used by an earlier linearize "
                f"over them; use a fresh pass id (tidu.fresh_pass_id())"
            )
        local = builder.add_input(key)
        occurrences.append(local)
        tangent_inputs.append((name, local))
    for name, locals_ in copies.items():
        total = locals_[0]
        for other in locals_[1:]:
            if add_operation is None:
                raise TransformError(
                    f"linearize: {name!r} is listed more than once in wrt, so its tangents "
                    f"must be summed, but no operation is known to supply add(); pass add="
                )
            (total,) = builder.add_primitive(add_operation, [Local(total), Local(other)], ADD_ROLE)
        tangents[Input(name)] = total

    processed: set[OperationKey] = set()
    for key in order:
        if key in tangents:
            continue
        if type(key) is Derived:
            operation_key = key.operation_key
            if operation_key in processed:
                continue
            processed.add(operation_key)
            inputs = tuple([tangents.get(k) for k in operation_key.inputs])
            output_keys = (key,) if operation_key.output_count == 1 else operation_key.output_keys()
            if inputs.count(None) == len(inputs):
                for output_key in output_keys:
                    tangents[output_key] = None
                continue
            results = call_jvp_rule(
                operation_key.operation, builder, operation_key.inputs, output_keys, inputs, ctx
            )
            for output_key, tangent in zip(output_keys, results, strict=True):
                tangents[output_key] = tangent
        else:
            assert type(key) is Input
            alias = aliases.get(key.key)
            tangents[key] = None if alias is None else tangents.get(alias)

    tangent_outputs = tuple(tangents.get(key) for key in outputs)
    builder.set_outputs([t for t in tangent_outputs if t is not None])
    return LinearizedGraph(builder.build(), tuple(tangent_inputs), tangent_outputs, add_operation)


def _operations(order: list[ValueKey], view: ResolvedView) -> Iterator[Any]:
    """Operations that could supply ``add()``: those reached first, then any in the view."""
    for key in order:
        if type(key) is Derived:
            yield key.operation_key.operation
    for graph in view.graphs:
        for operation_key in graph.operation_keys:
            yield operation_key.operation


def _topological_order(
    outputs: tuple[ValueKey, ...],
    aliases: dict[Hashable, ValueKey],
    defined: Any,
) -> list[ValueKey]:
    """Depth-first post-order from the outputs, without recursion.

    A derived key depends on its operation's inputs; an aliased input on the aliased
    key. Raises on keys the view does not define and on alias cycles.
    """
    order: list[ValueKey] = []
    done: set[ValueKey] = set()
    in_progress: set[ValueKey] = set()
    for root in outputs:
        stack: list[tuple[ValueKey, bool]] = [(root, False)]
        while stack:
            key, expanded = stack.pop()
            if key in done:
                continue
            if expanded:
                in_progress.discard(key)
                done.add(key)
                order.append(key)
                continue
            if key in in_progress:
                raise TransformError(f"linearize: the aliases form a cycle through {key!r}")
            if key not in defined:
                origin = "" if key is root else f" (reached from output {root!r})"
                raise UnresolvedKeyError(
                    f"linearize: key {key!r} is not defined by the resolved view{origin}; "
                    f"pass every graph the outputs depend on"
                )
            in_progress.add(key)
            stack.append((key, True))
            if type(key) is Derived:
                dependencies: tuple[ValueKey, ...] = key.operation_key.inputs
            else:
                alias = aliases.get(key.key)  # type: ignore[attr-defined]
                dependencies = () if alias is None else (alias,)
            stack.extend((d, False) for d in reversed(dependencies) if d not in done)
    return order
