"""Eager reverse mode: walk the tape backwards, driving a downstream executor.

For each trace node, in reverse topological order, whose outputs received a
cotangent: take the node's derivative for its seeded output slots with respect to
its inputs that require grad (linearised once per structure, see
:mod:`tidu.eager.derivatives`), recover any primal value the
transpose needs but the node did not save (``execute_forward`` replays the
recorded graph), run the transposed linear map on the concrete seeds
(``run_transposed_linear``) and accumulate the input cotangents under their eager
keys (``add_operands``). tidu never touches operand values itself, so an executor
that records what it runs makes the backward pass differentiable.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from heapq import heappop as pop
from heapq import heappush as push
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

from computegraph import ValueKey
from tidu.eager.derivatives import NODE_INSTANCE, DerivativeCache, default_derivative_cache
from tidu.eager.tape import RELEASED, Trace
from tidu.errors import ReleasedGraphError, RuleContractError, TransformError
from tidu.linearized import LinearizedGraph, PrimitiveGraph

__all__ = [
    "BackwardExecutor",
    "backward",
    "contributing_nodes",
    "node_values",
    "topological_nodes",
]


@runtime_checkable
class BackwardExecutor(Protocol):
    """The downstream runtime's hooks for :func:`backward`."""

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> Mapping[ValueKey, Any]:
        """Replay a recorded primal graph from its saved values; return its values by key.

        Called only when the transpose needs a primal value the node did not save
        (e.g. an intermediate of a composite graph, or anything a checkpointed node
        dropped). An executor may also define ``execute_forward_subset(graph,
        initial_data, wanted)``, returning only the ``wanted`` values; backward then
        uses it, so a replay keeps alive only what the derivative reads.
        """
        ...

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> Sequence[Any | None]:
        """Apply the transpose of ``linear`` to concrete seeds.

        ``cotangent_out`` lines up with ``linear.tangent_outputs``; ``external_data``
        holds the primal values by key. Returns cotangents lined up with
        ``linear.tangent_inputs`` (``None`` for zero).

        An executor may also define ``transposer(linear, ctx)``, returning this method
        bound to ``linear`` as a function of ``(cotangent_out, external_data)`` (or
        ``None``); backward then asks for it once per node structure and calls it per
        node, skipping the per-call lookups. Likewise ``single_transposer(linear,
        ctx)``, for a node with one seeded output and one input that requires grad: a
        function of ``(seed, external_data)`` returning that input's cotangent (no
        lists), or ``None`` where it does not apply.

        An executor may also offer ``backward_memo``, a bounded dict with ``put`` (a
        ``computegraph.DictCache``) where backward keeps, across its calls, what it
        looked up per node structure (the derivative and the bound runners above):
        only for passes with the default derivative cache and ``ctx=None``.
        """
        ...

    def add_operands(self, a: Any, b: Any) -> Any:
        """``a + b`` for two cotangents of one value (called as ``(existing, new)``)."""
        ...


def node_values(executor: Any, node: Trace, mode: str = "forward") -> Mapping[ValueKey, Any]:
    """The primal values of ``node`` the derivative reads: the executor's
    ``primal_values(node)`` if it defines one (an optional hook, e.g. to hand the rules
    differentiable handles instead of the saved arrays), else what the node saved.
    Raises :class:`~tidu.ReleasedGraphError` (naming ``mode``) if a backward pass
    released them."""
    if node.saved_data is RELEASED:
        raise ReleasedGraphError(node, mode)
    hook = getattr(executor, "primal_values", None)
    return node.saved_data if hook is None else hook(node)


def backward(
    output_key: ValueKey,
    output_trace: Trace | None,
    seed: Any,
    executor: BackwardExecutor,
    ctx: Any = None,
    *,
    cache: DerivativeCache | None = None,
    reached: set[ValueKey] | None = None,
    keep: Collection[ValueKey] | None = None,
    retain_graph: bool = True,
    only: Collection[Trace] | None = None,
) -> dict[ValueKey, Any]:
    """Reverse mode from ``output_key`` (produced by ``output_trace``) with cotangent ``seed``.

    Returns the cotangent of every eager key that received one: the output (its
    seed), intermediates and the leaves that require grad. Inputs recorded with
    ``requires_grad=False`` get nothing. ``output_trace`` is ``None`` for a value
    that no tracked invocation produced; the result is then just the seed.
    Rule errors (:class:`~tidu.ADRuleError`) propagate. An executor may define
    ``primal_values(node)`` to supply the primal values of a node itself (see
    :func:`node_values`).

    ``reached``, when given, receives the eager key of every input that requires grad
    and that ``output_key`` depends on through the recorded graph, whether or not a
    non-zero cotangent arrived there (a runtime gives those a zero gradient, as PyTorch
    does after a step function, or tells unused inputs from used ones).

    ``keep``, when given, frees memory: the cotangent of an intermediate value is dropped
    as soon as its producer has consumed it, unless its key is in ``keep``; the result
    then holds the inputs' cotangents and those of ``keep`` only.

    ``retain_graph=False`` frees more: each node's saved values are released
    (:meth:`Trace.release`) as soon as its derivative has run, so they die during the
    pass instead of with the tape. A later pass that needs them raises
    :class:`~tidu.ReleasedGraphError`, as does this one on reaching a node an earlier
    pass released.

    ``only``, when given, restricts the pass to those nodes (e.g.
    :func:`contributing_nodes` of the wanted keys): the others are walked (for
    ``reached``) but neither differentiated nor released.
    """
    if not isinstance(output_key, ValueKey):
        raise TypeError(f"backward: output_key must be a ValueKey, got {output_key!r}")
    cotangents: dict[ValueKey, Any] = {output_key: seed}
    if output_trace is None:
        return cotangents
    if not isinstance(output_trace, Trace):
        raise TypeError(f"backward: output_trace must be a Trace or None, got {output_trace!r}")
    if output_key not in output_trace.output_keys:
        raise TransformError(
            f"backward: {output_key!r} is not an output of the given trace (its outputs are "
            f"{list(output_trace.output_keys)!r})"
        )
    derivatives = default_derivative_cache if cache is None else cache
    # Nodes of one structure share a derivative: look each up once per call, not once
    # per node (the shared cache's LRU bookkeeping costs more than a local lookup). An
    # executor may keep these lookups across calls (its optional ``backward_memo``, a
    # dict it bounds): then with the default cache and context only, which they assume.
    memo = getattr(executor, "backward_memo", None) if cache is None and ctx is None else None
    local: dict[tuple[Any, ...], Any] = {} if memo is None else memo
    supply = getattr(executor, "primal_values", None)
    transposer = getattr(executor, "transposer", None)  # an optional hook: bound runners
    transpose = executor.run_transposed_linear
    add = executor.add_operands
    get = cotangents.get
    reach = (set() if reached is None else reached).add
    release = not retain_graph
    # Walk and differentiate in one loop, latest node first: a node is visited after
    # every consumer of its outputs (consumers are created later, so have larger
    # serials), and the heap holds only the frontier of the walk. A node found when
    # the frontier is empty (along a chain) is the next one: every node still to visit
    # is then among its producers, so it skips the heap.
    seen = {output_trace}
    see = seen.add
    single_transposer = getattr(executor, "single_transposer", None)  # optional, likewise
    frontier: list[tuple[int, Trace]] = []
    following: Trace | None = output_trace
    while True:
        if following is not None:
            node = following
            following = None
        elif frontier:
            node = pop(frontier)[1]
        else:
            break
        edges = node.edges
        if len(edges) == 3:  # one input: no slice, no loop
            parent = edges[0]
            if parent is not None and parent not in seen:
                see(parent)
                if frontier:
                    push(frontier, (-parent.serial, parent))
                else:
                    following = parent
        else:
            for parent in edges[::3]:
                if parent is not None and parent not in seen:
                    see(parent)
                    push(frontier, (-parent.serial, parent))
        active = node.active  # the positions whose edges require grad
        outputs = node.output_keys
        seeds: list[Any] | None
        if len(outputs) == 1:
            output = outputs[0]
            seed_in = get(output)
            if seed_in is None:
                for position in active:
                    reach(edges[3 * position + 1])
                continue
            slots: tuple[int, ...] = _FIRST
            seeds = None  # [seed_in], built only if the node needs the general runner
        else:
            output = None
            pending = [get(key) for key in outputs]
            slots = tuple(slot for slot, c in enumerate(pending) if c is not None)
            if not slots:
                for position in active:
                    reach(edges[3 * position + 1])
                continue
            seeds = [pending[slot] for slot in slots]
        if not active:
            continue
        if only is not None and node not in only:
            for position in active:
                reach(edges[3 * position + 1])
            if keep is not None:
                for key in outputs:
                    if key not in keep:
                        cotangents.pop(key, None)
            continue
        recorded = node.recorded
        memo_key = (id(recorded), slots, active)
        found = local.get(memo_key)
        if found is None or found[0] is not recorded:  # (an id outlives its graph)
            derivative = derivatives.derivative(recorded, slots, ctx, active)
            linear = derivative.linear
            runner = None if transposer is None else transposer(linear, ctx)
            single = (
                single_transposer(linear, ctx)
                if single_transposer is not None and seeds is None and len(active) == 1
                else None
            )
            found = (
                recorded,  # kept alive with its entry, so its id is not reused meanwhile
                linear,
                derivative.needed,
                runner,
                single,
                3 * active[0] + 1,  # the edge holding the first active input's key
            )
            if memo is None:
                local[memo_key] = found
            else:
                memo.put(memo_key, found)
        _, linear, needed, runner, single, first_key = found
        saved = node.saved_data
        if saved is RELEASED:
            raise ReleasedGraphError(node, "backward")
        values = saved if supply is None else supply(node)
        if needed and not needed <= values.keys():
            values = _replay(executor, recorded, values, needed)
        if node.instance is not None:
            values = {**values, NODE_INSTANCE: node.instance}
        if single is not None:  # one seed in, one cotangent out: no lists
            cotangent = single(seed_in, values)
            if release and saved:
                node.saved_data = RELEASED
            if keep is not None:
                if output not in keep:
                    del cotangents[outputs[0]]  # the output itself (typed as a key)
                del values, saved
            key = edges[first_key]
            reach(key)
            if cotangent is not None:
                existing = get(key)
                cotangents[key] = cotangent if existing is None else add(existing, cotangent)
            continue
        if seeds is None:
            seeds = [seed_in]
        incoming = (
            transpose(linear, seeds, values, ctx) if runner is None else runner(seeds, values)
        )
        if release and saved:
            node.saved_data = RELEASED
        if keep is not None:
            if output is None:
                for key in outputs:
                    if key not in keep:
                        cotangents.pop(key, None)
            elif output not in keep:
                del cotangents[output]
            del seeds, values, saved
        if len(active) == 1:
            try:
                (cotangent,) = incoming
            except ValueError:
                raise _miscounted(incoming, active) from None
            key = edges[first_key]
            reach(key)
            if cotangent is not None:
                existing = get(key)
                cotangents[key] = cotangent if existing is None else add(existing, cotangent)
            continue
        if len(incoming) != len(active):
            raise _miscounted(incoming, active)
        for position, cotangent in zip(active, incoming, strict=True):
            key = edges[3 * position + 1]
            reach(key)
            if cotangent is not None:
                existing = get(key)
                cotangents[key] = cotangent if existing is None else add(existing, cotangent)
    return cotangents


_FIRST = (0,)
"""The seeded slots of a single-output node."""


def _miscounted(incoming: Sequence[Any], active: tuple[int, ...]) -> RuleContractError:
    return RuleContractError(
        f"backward: run_transposed_linear returned {len(incoming)} cotangent(s) for "
        f"{len(active)} input(s) that require grad"
    )


def _replay(
    executor: BackwardExecutor, recorded: Any, values: Mapping[ValueKey, Any], needed: Any
) -> dict[ValueKey, Any]:
    """The saved values plus the ``needed`` ones a replay of the recorded graph recovers
    (nothing else of the replay is kept alive: a checkpointed segment's intermediates
    exist only while its own derivative runs)."""
    graph = PrimitiveGraph(recorded.graph)
    subset = getattr(executor, "execute_forward_subset", None)
    if subset is not None:  # an optional hook: replay only what is needed
        replayed = subset(graph, values, [key for key in needed if key not in values])
    else:
        replayed = executor.execute_forward(graph, values)
    recovered = {key: replayed[key] for key in needed if key not in values and key in replayed}
    return {**values, **recovered}


def contributing_nodes(root: Trace, keys: Collection[ValueKey]) -> set[Trace]:
    """The nodes below ``root`` whose derivatives carry cotangents to any of ``keys``:
    those with an input edge that requires grad and either has one of ``keys`` or
    comes from such a node (a reverse pass for ``keys`` needs to run no other)."""
    contributing: set[Trace] = set()
    for node in topological_nodes([root]):  # producers first
        edges = node.edges
        for position in range(0, len(edges), 3):
            if edges[position + 2] and (
                edges[position + 1] in keys or edges[position] in contributing
            ):
                contributing.add(node)
                break
    return contributing


def topological_nodes(roots: Sequence[Trace]) -> list[Trace]:
    """Nodes reachable from ``roots`` through input edges, producers before consumers.

    Nodes are numbered at creation and a producer always exists before its
    consumers, so creation order is a topological order of any reachable set.
    """
    seen = set(roots)
    stack = list(seen)
    while stack:
        edges = stack.pop().edges
        for position in range(0, len(edges), 3):
            parent = edges[position]
            if parent is not None and parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return sorted(seen, key=_serial)  # attrgetter: no Python frame per node


_serial = attrgetter("serial")
"""A node's creation serial (its sort key)."""
