"""``ProgramExecutor``: a ready :class:`~tidu.eager.BackwardExecutor` for evaluable primitives.

It compiles the transpose of each node derivative once (memoised on the linear
graph, which the derivative cache shares between nodes of one structure) into a
flat program whose inputs are the seeds and the saved primal values, so a steady
backward step costs a few dictionary lookups and the program's instructions.

A node recorded with a ``RESPECIALIZABLE`` graph (one graph standing for its
operation at every extent) has marked derivatives; with a ``specialize`` hook, the
executor runs their programs as ``specialize(program, inputs, values)`` returns them
(the frontend re-instantiates the instructions for the node, and caches that).

By default instructions run through each operation's ``eval``. With ``apply``,
they run as ``apply(operation, inputs, ctx)``: a frontend passes its own eager
executor there, which records what it runs when its operands are tracked; the
backward pass then lands on the tape and can itself be differentiated (HVP).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from computegraph import (
    BoundedCache,
    CompiledProgram,
    DictCache,
    Graph,
    LocalValueId,
    ValueKey,
    compile,
    materialize_merge,
    resolve,
)
from tidu.eager.derivatives import RESPECIALIZE
from tidu.errors import TransformError
from tidu.linearized import LinearizedGraph, PrimitiveGraph, external_keys
from tidu.transpose import linear_transpose

__all__ = ["Apply", "ProgramExecutor", "Specialize"]

Apply = Callable[[Any, Sequence[Any], Any], Sequence[Any]]
"""``apply(operation, inputs, ctx) -> outputs``: how an instruction is executed."""

Specialize = Callable[[CompiledProgram, Sequence[Any], Mapping[ValueKey, Any]], CompiledProgram]
"""``specialize(program, inputs, values) -> program``: ``program`` itself, or the same
program with its instructions re-instantiated for the node it runs for (``inputs``: the
program's inputs; ``values``: the node's primal values, where a frontend may also keep
what it recorded the node as). It may return another object that evaluates like a
program (``eval(inputs, ctx, apply=None)``), optionally with ``only_kernel()``: the
function it amounts to when it is one instruction."""

_MEMO = "tidu.eager.transposed_program"
_LINEAR_MEMO = "tidu.eager.linear_program"
_RUNNER_MEMO = "tidu.eager.transposer"
_SINGLE_MEMO = "tidu.eager.single_transposer"
_UNSET = object()


class _BoundProgram:
    """A compiled linear map and how to bind its inputs and read its results.

    ``positions`` maps the graph's variable inputs (tangents or seeds) to positions in
    the caller's list; every other program input is a primal value read by key.
    """

    __slots__ = ("bindings", "program", "results")

    def __init__(
        self,
        graph: Graph,
        positions: Mapping[ValueKey, int],
        outputs: Sequence[LocalValueId | None],
        boundary: Iterable[ValueKey],
    ) -> None:
        keys = [graph.value_keys[local] for local in outputs if local is not None]
        self.program: CompiledProgram = compile(
            materialize_merge(resolve(graph), keys, boundary=boundary)
        )
        self.bindings: tuple[int | ValueKey, ...] = tuple(
            positions.get(key, key) for key in self.program.input_keys
        )
        results: list[int | None] = []
        count = 0
        for local in outputs:
            results.append(None if local is None else count)
            count += local is not None
        self.results = tuple(results)

    @classmethod
    def transposed(cls, linear: LinearizedGraph, ctx: Any) -> _BoundProgram:
        """The transpose of ``linear``: seeds (by output position) in, cotangents out.

        Its inputs are the seeds and the primal values the linear graph reads; anything
        the linear graph computes from them (constant coefficients) is recomputed inside.
        """
        transposed = linear_transpose(linear, ctx)
        graph = transposed.graph
        positions: dict[ValueKey, int] = {}
        seeds = iter(transposed.tangent_inputs)
        for position, output in enumerate(linear.tangent_outputs):
            if output is not None:
                _, local = next(seeds)
                positions[graph.value_keys[local]] = position
        return cls(graph, positions, transposed.tangent_outputs, external_keys(linear.graph))

    @classmethod
    def forward(cls, linear: LinearizedGraph) -> _BoundProgram:
        """``linear`` itself: tangents (by input position) in, output tangents out."""
        graph = linear.graph
        positions = {
            graph.value_keys[local]: i for i, (_, local) in enumerate(linear.tangent_inputs)
        }
        return cls(graph, positions, linear.tangent_outputs, external_keys(graph))

    def run(
        self,
        given: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        eval_ctx: Any,
        apply: Apply | None,
        what: str,
        specialize: Specialize | None = None,
    ) -> list[Any | None]:
        try:
            inputs = [
                given[b] if type(b) is int else external_data[b]  # type: ignore[index]
                for b in self.bindings
            ]
        except KeyError as missing:
            raise _missing(what, missing) from None
        program = (
            self.program if specialize is None else specialize(self.program, inputs, external_data)
        )
        values = program.eval(inputs, eval_ctx, apply=apply)
        return [None if position is None else values[position] for position in self.results]


def _only_kernel(program: CompiledProgram) -> Callable[..., Any] | None:
    """The ``kernel()`` of ``program``'s one instruction when running it is the whole
    program (it reads the inputs in order and writes the one output), else ``None``."""
    if len(program.instructions) != 1 or program.constants:
        return None
    (instruction,) = program.instructions
    if instruction.inputs != program.input_slots or instruction.outputs != program.output_slots:
        return None
    make = getattr(instruction.operation, "kernel", None)
    kernel: Callable[..., Any] | None = None if make is None else make()
    return kernel


_KERNELS: DictCache[int, tuple[CompiledProgram, Callable[..., Any] | None]] = DictCache(
    1024, "respecialised program kernels"
)
"""id of a program a ``specialize`` hook returned -> (the program, kept alive; its
:func:`_only_kernel`): a node's respecialised transpose is looked up per node, and
telling whether it is one kernel reads the program each time otherwise."""


def _kernel_of(program: CompiledProgram) -> Callable[..., Any] | None:
    """:func:`_only_kernel` of ``program``, remembered in :data:`_KERNELS`; of another
    object a ``specialize`` hook returned (one that evaluates like a program, made per
    node), its own ``only_kernel()``, if it has one."""
    if type(program) is not CompiledProgram:
        only = getattr(program, "only_kernel", None)
        return None if only is None else only()
    found = _KERNELS.get(id(program))
    if found is None or found[0] is not program:
        found = (program, _only_kernel(program))
        _KERNELS.put(id(program), found)
    return found[1]


def _single_specialized(
    plan: _BoundProgram, specialize: Specialize, eval_ctx: Any
) -> Callable[[Any, Mapping[ValueKey, Any]], Any] | None:
    """The one-seed runner of a respecialised transpose of one or two inputs (the seed,
    then maybe one saved value): the program ``specialize`` returns for the node, as
    its one kernel when it is one instruction."""
    program, bindings = plan.program, plan.bindings
    kernels = _KERNELS.get
    saved = bindings[1] if len(bindings) == 2 else None
    if saved is not None and not isinstance(saved, ValueKey):
        return None

    def run(seed: Any, values: Mapping[ValueKey, Any]) -> Any:
        if saved is None:
            inputs = [seed]
        else:
            try:
                inputs = [seed, values[saved]]
            except KeyError as missing:
                raise _missing("backward: the transpose", missing) from None
        made = specialize(program, inputs, values)
        found = kernels(id(made))  # _kernel_of(made), inlined: this runs once per node
        kernel = found[1] if found is not None and found[0] is made else _kernel_of(made)
        return kernel(*inputs) if kernel is not None else made.eval(inputs, eval_ctx)[0]

    return run


def _missing(what: str, missing: KeyError) -> TransformError:
    return TransformError(
        f"{what} needs the primal value {missing.args[0]!r}, which was neither saved nor recomputed"
    )


class ProgramExecutor:
    """Executes eager backward steps with compiled programs.

    * ``add``: the primitive set's addition for :meth:`add_operands`; learned from the
      linear graphs it runs when not given.
    * ``apply``: how to execute an instruction (default: ``operation.eval``).
    * ``eval_ctx``: the evaluation context passed to ``eval`` / ``apply``.
    * ``specialize``: how to run the derivative programs of ``RESPECIALIZABLE`` nodes at
      their actual extents (see :data:`Specialize`); without it, they run as derived.
    """

    def __init__(
        self,
        add: Any = None,
        *,
        apply: Apply | None = None,
        eval_ctx: Any = None,
        specialize: Specialize | None = None,
    ) -> None:
        self._add = add
        self._apply = apply
        self._eval_ctx = eval_ctx
        self._specialize = specialize
        self._forward: BoundedCache[Any, CompiledProgram] = BoundedCache(256, "replays")
        self.backward_memo: DictCache[Any, Any] = DictCache(1024, "backward node runners")
        """What :func:`~tidu.eager.backward` looked up per node structure (derivative and
        bound runners), kept across its calls with this executor (structure only)."""

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> dict[ValueKey, Any]:
        """Evaluate the recorded graph from its saved inputs; return every value by key."""
        recorded = graph.as_graph()
        program = self._forward.get_or_create(
            recorded, lambda: compile(materialize_merge(resolve(recorded), recorded.value_keys))
        )
        try:
            inputs = [initial_data[key] for key in program.input_keys]
        except KeyError as missing:
            raise TransformError(
                f"backward: cannot replay {recorded!r}: no saved value for input {missing}"
            ) from None
        values = program.eval(inputs, self._eval_ctx, apply=self._apply)
        return dict(zip(recorded.value_keys, values, strict=True))

    def execute_forward_subset(
        self,
        graph: PrimitiveGraph,
        initial_data: Mapping[ValueKey, Any],
        wanted: Collection[ValueKey],
    ) -> dict[ValueKey, Any]:
        """Like :meth:`execute_forward`, computing and returning only ``wanted`` (each
        intermediate is freed after its last use, so a replay's peak stays small)."""
        recorded = graph.as_graph()
        keys = tuple(key for key in recorded.value_keys if key in wanted)
        program = self._forward.get_or_create(
            (recorded, keys), lambda: compile(materialize_merge(resolve(recorded), keys))
        )
        try:
            inputs = [initial_data[key] for key in program.input_keys]
        except KeyError as missing:
            raise TransformError(
                f"backward: cannot replay {recorded!r}: no saved value for input {missing}"
            ) from None
        values = program.eval(inputs, self._eval_ctx, apply=self._apply)
        return dict(zip(keys, values, strict=True))

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any | None]:
        """Apply the (compiled, memoised) transpose of ``linear`` to ``cotangent_out``."""
        plan: _BoundProgram | None = linear.memo.get(_MEMO)
        if plan is None:
            plan = linear.memo.setdefault(_MEMO, _BoundProgram.transposed(linear, ctx))
            if self._add is None and linear.add_operation is not None:
                self._add = linear.add_operation
        try:
            inputs = [
                cotangent_out[b] if type(b) is int else external_data[b]  # type: ignore[index]
                for b in plan.bindings
            ]
        except KeyError as missing:
            raise _missing("backward: the transpose", missing) from None
        program = plan.program
        if self._specialize is not None and linear.memo.get(RESPECIALIZE):
            program = self._specialize(program, inputs, external_data)
        values = program.eval(inputs, self._eval_ctx, apply=self._apply)
        return [None if position is None else values[position] for position in plan.results]

    def transposer(
        self, linear: LinearizedGraph, ctx: Any
    ) -> Callable[..., list[Any | None]] | None:
        """``run_transposed_linear`` for ``linear`` as a function of ``(cotangent_out,
        external_data)`` alone: the compiled transpose bound once, so a backward pass
        calls it per node without looking anything up (the optional hook
        :func:`~tidu.eager.backward` uses when an executor has it). ``None`` when a
        subclass overrides ``run_transposed_linear`` (its override is then called).

        Without ``apply``, the function depends only on ``linear``, ``eval_ctx`` and
        ``specialize``: it is kept in ``linear.memo`` and shared by every executor (and
        backward pass) with those two, so a pass meets each structure's binding once."""
        if type(self).run_transposed_linear is not ProgramExecutor.run_transposed_linear:
            return None
        if self._apply is not None:
            return self._bind_transposer(linear, ctx)
        try:
            key = (_RUNNER_MEMO, self._eval_ctx, self._specialize)
            runner = linear.memo.get(key)
        except TypeError:  # an unhashable eval_ctx: not shared
            return self._bind_transposer(linear, ctx)
        if runner is None:
            runner = linear.memo.setdefault(key, self._bind_transposer(linear, ctx))
        elif self._add is None and linear.add_operation is not None:
            self._add = linear.add_operation  # as a first binding here would have learnt it
        return runner

    def _bind_transposer(
        self, linear: LinearizedGraph, ctx: Any
    ) -> Callable[..., list[Any | None]] | None:
        """:meth:`transposer`'s function, made."""
        plan: _BoundProgram | None = linear.memo.get(_MEMO)
        if plan is None:
            plan = linear.memo.setdefault(_MEMO, _BoundProgram.transposed(linear, ctx))
            if self._add is None and linear.add_operation is not None:
                self._add = linear.add_operation
        bindings, results = plan.bindings, plan.results
        evaluate, eval_ctx, apply = plan.program.eval, self._eval_ctx, self._apply
        specialize = self._specialize
        if specialize is not None and linear.memo.get(RESPECIALIZE):
            program = plan.program
            single = apply is None and results == (0,) and _only_kernel(program) is not None

            def run_specialized(
                seeds: Sequence[Any], values: Mapping[ValueKey, Any]
            ) -> list[Any | None]:
                try:
                    inputs = [
                        seeds[b] if type(b) is int else values[b]  # type: ignore[index]
                        for b in bindings
                    ]
                except KeyError as missing:
                    raise _missing("backward: the transpose", missing) from None
                specialized = specialize(program, inputs, values)
                if single:  # one instruction: its kernel, not an interpreted program
                    kernel = _kernel_of(specialized)
                    if kernel is not None:
                        return [kernel(*inputs)]
                out = specialized.eval(inputs, eval_ctx, apply=apply)
                return [None if position is None else out[position] for position in results]

            return run_specialized
        if apply is None and results == (0,) and len(bindings) <= 2:
            # The common node: one cotangent out of a program of one or two inputs. A
            # program of one instruction with a kernel runs as that kernel (no interpreter,
            # and no code generated for a structure that may never come back).
            kernel = _only_kernel(plan.program)
            if bindings == (0,):
                if kernel is not None:
                    only: Callable[[Any], Any] = kernel

                    def run_kernel(
                        seeds: Sequence[Any], values: Mapping[ValueKey, Any]
                    ) -> list[Any]:
                        return [only(seeds[0])]

                    return run_kernel

                def run_one(seeds: Sequence[Any], values: Mapping[ValueKey, Any]) -> list[Any]:
                    return evaluate(seeds, eval_ctx)

                return run_one
            last = bindings[-1]
            if len(bindings) == 2 and bindings[0] == 0 and isinstance(last, ValueKey):
                saved: ValueKey = last
                if kernel is not None:
                    binary: Callable[[Any, Any], Any] = kernel

                    def run_kernel_with_saved(
                        seeds: Sequence[Any], values: Mapping[ValueKey, Any]
                    ) -> list[Any]:
                        try:
                            value = values[saved]
                        except KeyError as missing:
                            raise _missing("backward: the transpose", missing) from None
                        return [binary(seeds[0], value)]

                    return run_kernel_with_saved

                def run_seed_and_saved(
                    seeds: Sequence[Any], values: Mapping[ValueKey, Any]
                ) -> list[Any]:
                    try:
                        value = values[saved]
                    except KeyError as missing:
                        raise _missing("backward: the transpose", missing) from None
                    return evaluate([seeds[0], value], eval_ctx)

                return run_seed_and_saved

        def run(seeds: Sequence[Any], values: Mapping[ValueKey, Any]) -> list[Any | None]:
            try:
                inputs = [
                    seeds[b] if type(b) is int else values[b]  # type: ignore[index]
                    for b in bindings
                ]
            except KeyError as missing:
                raise _missing("backward: the transpose", missing) from None
            out = evaluate(inputs, eval_ctx, apply=apply)
            return [None if position is None else out[position] for position in results]

        return run

    def single_transposer(
        self, linear: LinearizedGraph, ctx: Any
    ) -> Callable[[Any, Mapping[ValueKey, Any]], Any] | None:
        """For a node with one seed and one input that requires grad: ``run_transposed_
        linear`` for ``linear`` as a function of ``(seed, external_data)`` returning the
        one cotangent (the optional hook :func:`~tidu.eager.backward` prefers to
        :meth:`transposer` there: no lists per node). ``None`` unless the compiled
        transpose is one or two inputs (the seed, then maybe one saved value) and one
        result, and :meth:`transposer` would bind it (no override, no ``apply``); a
        respecialised program runs as the ``specialize`` hook returns it."""
        if type(self).run_transposed_linear is not ProgramExecutor.run_transposed_linear:
            return None
        if self._apply is not None:
            return None
        # Like transposer's function, it depends only on ``linear``, ``eval_ctx`` and
        # ``specialize``: kept in ``linear.memo`` (``None`` too) for every pass to share.
        try:
            key = (_SINGLE_MEMO, self._eval_ctx, self._specialize)
            found = linear.memo.get(key, _UNSET)
        except TypeError:  # an unhashable eval_ctx: not shared
            return self._bind_single(linear, ctx)
        if found is _UNSET:
            found = linear.memo.setdefault(key, self._bind_single(linear, ctx))
        elif self._add is None and linear.add_operation is not None:
            self._add = linear.add_operation  # as a first binding here would have learnt it
        single: Callable[[Any, Mapping[ValueKey, Any]], Any] | None = found
        return single

    def _bind_single(
        self, linear: LinearizedGraph, ctx: Any
    ) -> Callable[[Any, Mapping[ValueKey, Any]], Any] | None:
        """:meth:`single_transposer`'s function (or ``None``), made."""
        plan: _BoundProgram | None = linear.memo.get(_MEMO)
        if plan is None:
            plan = linear.memo.setdefault(_MEMO, _BoundProgram.transposed(linear, ctx))
            if self._add is None and linear.add_operation is not None:
                self._add = linear.add_operation
        bindings = plan.bindings
        if plan.results != (0,) or not 1 <= len(bindings) <= 2 or bindings[0] != 0:
            return None
        if self._specialize is not None and linear.memo.get(RESPECIALIZE):
            return _single_specialized(plan, self._specialize, self._eval_ctx)
        kernel = _only_kernel(plan.program)
        evaluate, eval_ctx = plan.program.eval, self._eval_ctx
        if len(bindings) == 1:
            if kernel is not None:
                only: Callable[[Any], Any] = kernel
                return lambda seed, values: only(seed)
            return lambda seed, values: evaluate([seed], eval_ctx)[0]
        last = bindings[1]
        if not isinstance(last, ValueKey):
            return None
        saved: ValueKey = last

        if kernel is not None:
            binary: Callable[[Any, Any], Any] = kernel

            def run_kernel_with_saved(seed: Any, values: Mapping[ValueKey, Any]) -> Any:
                try:
                    value = values[saved]
                except KeyError as missing:
                    raise _missing("backward: the transpose", missing) from None
                return binary(seed, value)

            return run_kernel_with_saved

        def run_seed_and_saved(seed: Any, values: Mapping[ValueKey, Any]) -> Any:
            try:
                value = values[saved]
            except KeyError as missing:
                raise _missing("backward: the transpose", missing) from None
            return evaluate([seed, value], eval_ctx)[0]

        return run_seed_and_saved

    def run_linear(
        self,
        linear: LinearizedGraph,
        tangent_in: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any | None]:
        """Apply the (compiled, memoised) linear map ``linear`` to ``tangent_in`` (lined
        up with ``linear.tangent_inputs``); return tangents lined up with its outputs."""
        plan: _BoundProgram | None = linear.memo.get(_LINEAR_MEMO)
        if plan is None:
            plan = linear.memo.setdefault(_LINEAR_MEMO, _BoundProgram.forward(linear))
        specialize = self._specialize if linear.memo.get(RESPECIALIZE) else None
        return plan.run(
            tangent_in, external_data, self._eval_ctx, self._apply, "forward: the JVP", specialize
        )

    def add_operands(self, a: Any, b: Any) -> Any:
        """``a + b`` with the primitive set's addition."""
        if self._add is None:
            raise TransformError(
                "ProgramExecutor.add_operands: no addition known yet; pass add= to the executor"
            )
        if self._apply is not None:
            (total,) = self._apply(self._add, [a, b], self._eval_ctx)
        else:
            (total,) = self._add.eval([a, b], self._eval_ctx)
        return total
