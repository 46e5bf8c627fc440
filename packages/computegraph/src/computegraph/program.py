"""Compilation to an SSA instruction list, and evaluation.

``compile(materialized)`` turns a :class:`~computegraph.MaterializedGraph` into a
:class:`CompiledProgram`: one instruction per operation, in the same order, whose
slots are exactly the materialised value indices (each written once: SSA).
Compilation also computes, for every slot, the instruction after which it is
dead, so :meth:`CompiledProgram.eval` releases each intermediate right after its
last use and peak memory stays close to what the program really needs.

Two optional speed-ups. ``compile(..., fold_constants=True)`` evaluates, once,
the instructions that depend on no program input (for pure operations; results
larger than ``fold_limit`` bytes are left to run time). And a program evaluated
more than once switches to generated straight-line code (:mod:`computegraph.codegen`),
which runs the same instructions without the interpreter loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

from computegraph.codegen import GeneratedRun, generate
from computegraph.errors import BindingError, OperationContractError
from computegraph.gc_pause import gc_paused
from computegraph.keys import Input, ValueKey
from computegraph.materialize import MaterializedGraph
from computegraph.protocols import GraphOperation

__all__ = ["CompiledProgram", "Instruction", "compile"]


class Instruction(NamedTuple):
    """Run ``operation`` on the values in slots ``inputs``; write slots ``outputs``."""

    operation: GraphOperation
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


# One step of the execution plan: (operation, its bound eval, input slots, output
# slot (an int for single-output operations) or slots (a tuple), slots to free after it).
_Step = tuple[Any, Any, tuple[int, ...], Any, tuple[int, ...]]


_REMADE_RUNS = 6
"""How many more interpreted runs a program from :meth:`CompiledProgram.with_operations`
makes before it generates code."""


class CompiledProgram:
    """A flat SSA program. Evaluate it any number of times with :meth:`eval`.

    * ``instructions``: one per materialised operation, in topological order;
    * ``input_slots``: the slots bound by positional inputs, in materialised input
      order (``input_keys`` names them);
    * ``output_slots``: the slot of each requested output (duplicates kept);
    * ``n_slots``: the number of slots (materialised values);
    * ``free_after[i]``: the slots released right after instruction ``i``;
    * ``constants``: slots whose values were computed at compile time (folded).
    """

    __slots__ = (
        "_fast",
        "_input_position",
        "_plan",
        "_runs",
        "constants",
        "free_after",
        "input_keys",
        "input_slots",
        "instructions",
        "n_slots",
        "output_keys",
        "output_slots",
    )

    def __init__(
        self,
        instructions: tuple[Instruction, ...],
        input_slots: tuple[int, ...],
        output_slots: tuple[int, ...],
        n_slots: int,
        input_keys: tuple[ValueKey, ...],
        output_keys: tuple[ValueKey, ...],
        constants: Mapping[int, Any] | None = None,
    ) -> None:
        self.instructions = instructions
        self.constants: dict[int, Any] = dict(constants or {})
        self.input_slots = input_slots
        self.output_slots = output_slots
        self.n_slots = n_slots
        self.input_keys = input_keys
        self.output_keys = output_keys
        self._input_position = {
            (key.key if type(key) is Input else key): position
            for position, key in enumerate(input_keys)
        }
        self.free_after = _last_uses(instructions, output_slots, self.constants)
        self._runs = 0
        self._fast: GeneratedRun | None = None
        self._plan: list[_Step] = [
            (
                ins.operation,
                _eval_function(ins.operation, position),
                ins.inputs,
                ins.outputs[0] if len(ins.outputs) == 1 else ins.outputs,
                self.free_after[position],
            )
            for position, ins in enumerate(instructions)
        ]

    def eval(
        self,
        inputs: Sequence[Any],
        ctx: Any = None,
        *,
        apply: Callable[[Any, Sequence[Any], Any], Sequence[Any]] | None = None,
    ) -> list[Any]:
        """Evaluate with ``inputs`` given positionally, in :attr:`input_keys` order.

        ``ctx`` is passed to every operation's ``eval``. With ``apply``, each
        instruction runs as ``apply(operation, inputs, ctx)`` instead (for example to
        execute through an eager frontend that records what it runs). Returns one
        value per requested output. Exceptions raised by an operation propagate
        unchanged, with a note naming the failing instruction.
        """
        fast = self._fast
        if fast is not None and apply is None and len(inputs) == len(self.input_slots):
            try:  # the steady state: generated code, with no further checks
                return fast.function(inputs, ctx)
            except OperationContractError:
                raise
            except Exception as error:
                self._note_failure(fast, error)
                raise
        if len(inputs) != len(self.input_slots):
            raise BindingError(
                f"CompiledProgram.eval: expected {len(self.input_slots)} input(s) "
                f"({_describe_inputs(self.input_keys)}), got {len(inputs)}"
            )
        if apply is None:
            if fast is None and self._runs > 0:
                fast = self._fast = generate(
                    self._plan, self.input_slots, self.output_slots, self.constants
                )
                return self.eval(inputs, ctx)
            self._runs += 1
        slots: list[Any] = [None] * self.n_slots
        for slot, value in zip(self.input_slots, inputs, strict=True):
            slots[slot] = value
        for slot, value in self.constants.items():
            slots[slot] = value
        plan = self._plan
        if apply is not None:
            plan = [
                (operation, functools.partial(apply, operation), args, out, dead)
                for operation, _, args, out, dead in plan
            ]
        step = None
        try:
            for step in plan:
                _operation, run, args, out, dead = step
                results = run([slots[i] for i in args], ctx)
                if type(out) is int:
                    try:
                        (slots[out],) = results
                    except (TypeError, ValueError):
                        raise _wrong_output_count(plan, step, 1, results) from None
                elif not _store(slots, out, results):
                    raise _wrong_output_count(plan, step, len(out), results)
                for slot in dead:
                    slots[slot] = None
                results = None  # else an output nobody reads lives through the next step
        except OperationContractError:
            raise
        except Exception as error:
            if step is not None:
                error.add_note(
                    f"while evaluating instruction {plan.index(step)} of {len(plan)}: {step[0]!r}"
                )
            raise
        return [slots[slot] for slot in self.output_slots]

    @property
    def generated(self) -> bool:
        """Whether evaluation now runs generated straight-line code (after the first run)."""
        return self._fast is not None

    def _note_failure(self, fast: GeneratedRun, error: Exception) -> None:
        position = fast.failing_instruction(error.__traceback__)
        if position is not None:
            error.add_note(
                f"while evaluating instruction {position} of {len(self._plan)}: "
                f"{self._plan[position][0]!r}"
            )

    def with_operations(self, operations: Sequence[GraphOperation]) -> CompiledProgram:
        """The same program (slots, liveness, inputs and outputs) running ``operations``,
        one per instruction in order, each with its instruction's input and output
        counts: e.g. the instructions re-instantiated for other operand shapes. Costs a
        pass over the instructions, not a compilation; it switches to generated code
        only once it has run ``_REMADE_RUNS`` times more than a compiled program would
        (a re-made program usually serves a few calls, for which generating code
        costs more than it saves)."""
        if len(operations) != len(self.instructions):
            raise BindingError(
                f"CompiledProgram.with_operations: {len(operations)} operation(s) for "
                f"{len(self.instructions)} instruction(s)"
            )
        program: CompiledProgram = object.__new__(CompiledProgram)
        make = tuple.__new__  # Instruction(...) without NamedTuple's Python-level __new__
        program.instructions = tuple(
            [
                make(Instruction, (operation, ins[1], ins[2]))
                for operation, ins in zip(operations, self.instructions, strict=True)
            ]
        )
        program.constants = self.constants
        program.input_slots = self.input_slots
        program.output_slots = self.output_slots
        program.n_slots = self.n_slots
        program.input_keys = self.input_keys
        program.output_keys = self.output_keys
        program._input_position = self._input_position
        program.free_after = self.free_after
        program._runs = -_REMADE_RUNS  # usually serves one node's extents, a few calls
        program._fast = None
        program._plan = [
            (
                operation,
                getattr(operation, "eval", None) or _eval_function(operation, position),
                args,
                out,
                dead,
            )
            for position, (operation, (_, _, args, out, dead)) in enumerate(
                zip(operations, self._plan, strict=True)
            )
        ]
        return program

    def eval_with(self, bindings: Mapping[Hashable, Any], ctx: Any = None) -> list[Any]:
        """Evaluate with inputs bound by input key (``{"x": 1.0, ...}``).

        A graph input is bound by its input key; a boundary input (a derived key made
        an input by ``materialize_merge(..., boundary=...)``) by its value key. Every
        program input must be bound; bindings for keys the program does not use are
        ignored (materialisation drops inputs the outputs do not need).
        """
        values: list[Any] = []
        missing: list[Any] = []
        for key in self.input_keys:
            name = key.key if type(key) is Input else key
            if name in bindings:
                values.append(bindings[name])
            else:
                missing.append(name)
        if missing:
            raise BindingError(
                f"CompiledProgram.eval_with: no binding for input(s) {missing!r}; "
                f"the program needs {_describe_inputs(self.input_keys)}"
            )
        return self.eval(values, ctx)

    def input_position(self, input_key: Hashable) -> int:
        """Position in :attr:`input_keys` of a graph input (by input key) or boundary key."""
        try:
            return self._input_position[input_key]
        except KeyError:
            raise BindingError(
                f"CompiledProgram: {input_key!r} is not an input of this program "
                f"(inputs: {_describe_inputs(self.input_keys)})"
            ) from None

    def __str__(self) -> str:
        from computegraph.render import format_program

        return format_program(self)

    def __repr__(self) -> str:
        return (
            f"<CompiledProgram: {len(self.input_slots)} input(s), "
            f"{len(self.instructions)} instruction(s), {self.n_slots} slot(s)>"
        )


def compile(
    materialized: MaterializedGraph,
    *,
    fold_constants: bool = False,
    fold_limit: int = 1 << 16,
) -> CompiledProgram:
    """Compile a materialised graph into an SSA :class:`CompiledProgram`.

    With ``fold_constants``, instructions that depend on no program input are
    evaluated now (``ctx=None``; only for pure operations) and their results become
    constants of the program, unless a result's ``nbytes`` exceeds ``fold_limit``.
    """
    if not isinstance(materialized, MaterializedGraph):
        raise TypeError(f"compile: expected a MaterializedGraph, got {materialized!r}")
    with gc_paused():
        instructions = [
            Instruction(key.operation, inputs, tuple(materialized.operation_outputs(position)))
            for position, (key, inputs) in enumerate(
                zip(materialized.operation_keys, materialized.operation_inputs, strict=True)
            )
        ]
        output_slots = tuple(materialized.index_of(key) for key in materialized.outputs)
        constants: dict[int, Any] = {}
        if fold_constants:
            instructions, constants = _fold(instructions, output_slots, fold_limit)
        return CompiledProgram(
            tuple(instructions),
            materialized.input_indices(),
            output_slots,
            len(materialized.value_keys),
            materialized.inputs,
            materialized.outputs,
            constants,
        )


def _fold(
    instructions: list[Instruction], output_slots: tuple[int, ...], limit: int
) -> tuple[list[Instruction], dict[int, Any]]:
    """Evaluate the instructions computable without program inputs; keep the values
    that remaining instructions or the outputs read."""
    known: dict[int, Any] = {}
    remaining: list[Instruction] = []
    for instruction in instructions:
        if all(slot in known for slot in instruction.inputs):
            results = instruction.operation.eval(  # type: ignore[attr-defined]
                [known[slot] for slot in instruction.inputs], None
            )
            if len(results) == len(instruction.outputs) and all(
                getattr(value, "nbytes", 0) <= limit for value in results
            ):
                known.update(zip(instruction.outputs, results, strict=True))
                continue
        remaining.append(instruction)
    needed = {slot for instruction in remaining for slot in instruction.inputs}
    needed.update(output_slots)
    return remaining, {slot: value for slot, value in known.items() if slot in needed}


def _last_uses(
    instructions: tuple[Instruction, ...],
    output_slots: tuple[int, ...],
    constants: Mapping[int, Any],
) -> tuple[tuple[int, ...], ...]:
    """The slots to free after each instruction.

    A slot dies after the last instruction reading it; a slot written but never
    read dies right after being written. Output slots and constants never die.
    (Every input slot of a materialised graph is read or is an output.)
    """
    last: dict[int, int] = {}
    for position, instruction in enumerate(instructions):
        for slot in instruction.outputs:
            last[slot] = position
        for slot in instruction.inputs:
            last[slot] = position
    for slot in (*output_slots, *constants):
        last.pop(slot, None)
    free: dict[int, list[int]] = {}
    for slot, position in last.items():
        free.setdefault(position, []).append(slot)
    nothing: tuple[int, ...] = ()
    return tuple(
        tuple(sorted(free[position])) if position in free else nothing
        for position in range(len(instructions))
    )


def _store(slots: list[Any], out: tuple[int, ...], results: Any) -> bool:
    """Write a multi-output operation's results; False if they do not match ``out``."""
    try:
        if len(results) != len(out):
            return False
    except TypeError:
        return False
    for slot, value in zip(out, results, strict=True):
        slots[slot] = value
    return True


def _eval_function(operation: Any, position: int) -> Any:
    """The operation's bound ``eval``, or a stub raising a clear error if it has none."""
    run = getattr(operation, "eval", None)
    if run is not None:
        return run

    def not_evaluable(inputs: Sequence[Any], ctx: Any) -> Sequence[Any]:
        raise OperationContractError(
            f"instruction {position}: operation {operation!r} is not evaluable (it has no eval)"
        )

    return not_evaluable


def _wrong_output_count(
    plan: list[_Step], step: _Step, expected: int, results: Any
) -> OperationContractError:
    try:
        got = f"{len(results)} value(s)"
    except TypeError:
        got = f"a non-sequence {type(results).__name__}"
    return OperationContractError(
        f"instruction {plan.index(step)}: {step[0]!r}.eval returned {got}, expected "
        f"{expected} (its output_count())"
    )


def _describe_inputs(keys: tuple[ValueKey, ...]) -> str:
    shown = ", ".join(repr(key.key) if type(key) is Input else repr(key) for key in keys[:8])
    more = f", ... ({len(keys)} in all)" if len(keys) > 8 else ""
    return f"[{shown}{more}]"
