"""``linearize``: forward mode, building the JVP as a new linear graph.

The resolved logical DAG is walked in topological order (never physically
merged); each reachable operation with at least one active input calls its
primitive's JVP rule, which emits linear operations and refers to primal values
as ``External`` keys. Inactive values have no tangent (a symbolic zero) and cost
nothing; structurally identical operations are linearised once.

``linearize`` mints tangent inputs and returns a :class:`LinearizedGraph`;
``linearize_with_builder`` runs the same sweep into a caller's builder with
caller-supplied tangent values.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import Any, Protocol

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
from tidu.primitive import ADD_ROLE, GraphPrimitiveBuilder, PrimitiveBuilder, call_jvp_rule

__all__ = ["Aliases", "as_view", "find_add_operation", "linearize", "linearize_with_builder"]


class Aliases(Protocol):
    """Anything with ``get(input_key)`` returning the aliased value key or ``None``."""

    def get(self, key: Hashable, /) -> ValueKey | None: ...


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
    aliases: Aliases | None = None,
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
    * ``pass_id``: must differ from the pass of every earlier ``linearize`` whose
      tangents the outputs depend on (a reuse is detected); ``None`` mints a fresh one.
    * ``ctx``: passed to every JVP rule.
    * ``aliases``: ``{input key: value key}`` (anything with ``get``); such an input
      inherits the tangent of the aliased value instead of being a constant
      (checkpoint boundaries).
    * ``add``: the primitive set's addition, for when the graphs hold no operation
      to ask for it (only needed to sum repeated ``wrt`` entries).

    Rule errors (:class:`~tidu.ADRuleError`) propagate unchanged.
    """
    resolved = as_view(view)
    requested = _check_outputs(outputs, "linearize")
    names = tuple(wrt)
    pass_id = fresh_pass_id() if pass_id is None else pass_id
    with gc_paused():
        order = _topological_order(requested, aliases, resolved.defined_keys)
        builder = GraphPrimitiveBuilder()
        for root in resolved.roots:
            builder.add_parent(root)  # so resolve(linear graph) finds the primal definitions
        reachable_inputs = {key for key in order if type(key) is Input}
        tangent_inputs: list[tuple[Hashable, LocalValueId]] = []
        occurrences: dict[Hashable, int] = {}
        for name in names:
            occurrence = occurrences.get(name, 0)
            occurrences[name] = occurrence + 1
            key = tangent_key(name, pass_id if not occurrence else CopyPass(pass_id, occurrence))
            if Input(key) in reachable_inputs:
                raise PassReuseError(
                    f"linearize: the outputs already depend on the tangent key {key!r} of "
                    f"{name!r}, so pass id {pass_id!r} was used by an earlier linearize; use a "
                    f"fresh pass id (tidu.fresh_pass_id())"
                )
            tangent_inputs.append((name, builder.add_input(key)))
        add_operation = add if add is not None else find_add_operation(_operations(order, resolved))
        seeds = [local for _, local in tangent_inputs]
        tangent_outputs = _sweep(
            order, requested, names, seeds, builder, ctx, aliases, add_operation
        )
        builder.set_outputs([t for t in tangent_outputs if t is not None])
        return LinearizedGraph(
            builder.build(), tuple(tangent_inputs), tangent_outputs, add_operation
        )


def linearize_with_builder(
    view: ResolvedView | Graph | Iterable[Graph],
    outputs: Iterable[ValueKey],
    wrt: Iterable[Hashable],
    builder: PrimitiveBuilder,
    tangent_seeds: Sequence[LocalValueId | None],
    ctx: Any = None,
    aliases: Aliases | None = None,
    *,
    add: Any = None,
) -> tuple[LocalValueId | None, ...]:
    """Run the forward sweep of :func:`linearize` into a caller's ``builder``.

    ``tangent_seeds[i]`` is the builder's id of the tangent of ``wrt[i]`` (``None``
    for none): the caller supplies the tangent values and no tangent inputs are
    made, so no pass id is needed. Returns the tangent ids aligned with
    ``outputs``. Use it to apply a JVP to values the caller already has, or to
    execute it immediately with an executing builder.
    """
    resolved = as_view(view)
    requested = _check_outputs(outputs, "linearize_with_builder")
    names = tuple(wrt)
    seeds = list(tangent_seeds)
    if len(seeds) != len(names):
        raise TransformError(
            f"linearize_with_builder: {len(seeds)} tangent seed(s) for {len(names)} wrt entries"
        )
    with gc_paused():
        order = _topological_order(requested, aliases, resolved.defined_keys)
        add_operation = add if add is not None else find_add_operation(_operations(order, resolved))
        return _sweep(order, requested, names, seeds, builder, ctx, aliases, add_operation)


def _check_outputs(outputs: Iterable[ValueKey], where: str) -> tuple[ValueKey, ...]:
    requested = tuple(outputs)
    for position, key in enumerate(requested):
        if not isinstance(key, ValueKey):
            raise TypeError(f"{where}: output {position} is not a ValueKey: {key!r}")
    return requested


def _sweep(
    order: list[ValueKey],
    outputs: tuple[ValueKey, ...],
    wrt: tuple[Hashable, ...],
    seeds: Sequence[LocalValueId | None],
    builder: PrimitiveBuilder,
    ctx: Any,
    aliases: Aliases | None,
    add_operation: Any,
) -> tuple[LocalValueId | None, ...]:
    """Seed the wrt tangents (summing repeated entries), then call JVP rules in order."""
    tangents: dict[ValueKey, LocalValueId | None] = {}
    for name, seed in zip(wrt, seeds, strict=True):
        wrt_key = Input(name)
        previous = tangents.get(wrt_key)
        if previous is None or seed is None:
            tangents[wrt_key] = seed if previous is None else previous
            continue
        if add_operation is None:
            raise TransformError(
                f"linearize: {name!r} is listed more than once in wrt, so its tangents "
                f"must be summed, but no operation is known to supply add(); pass add="
            )
        (tangents[wrt_key],) = builder.add_primitive(
            add_operation, [Local(previous), Local(seed)], ADD_ROLE
        )
    seeded = set(tangents)

    processed: set[OperationKey] = set()
    for key in order:
        if key in seeded:
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
            alias = _alias_of(aliases, key)
            tangents[key] = None if alias is None else tangents.get(alias)
    return tuple(tangents.get(key) for key in outputs)


def _alias_of(aliases: Aliases | None, key: Input) -> ValueKey | None:
    if aliases is None:
        return None
    target = aliases.get(key.key)
    if target is not None and not isinstance(target, ValueKey):
        raise TypeError(f"linearize: the alias of {key.key!r} must be a ValueKey, got {target!r}")
    return target


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
    aliases: Aliases | None,
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
                alias = _alias_of(aliases, key)  # type: ignore[arg-type]
                dependencies = () if alias is None else (alias,)
            stack.extend((d, False) for d in reversed(dependencies) if d not in done)
    return order
