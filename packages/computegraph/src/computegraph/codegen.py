"""The fast tier of :class:`~computegraph.CompiledProgram`: straight-line Python.

A program that is evaluated repeatedly is turned into one generated function
whose body is the instruction list written out, one statement per instruction,
with local variables for slots and ``del`` statements where slots die::

    def run(inputs, ctx):
        v0 = inputs[0]
        v1 = k0(v0)                      # an operation's kernel, called directly
        v2 = _one(e1([v1, v0], ctx), 1)  # or its eval, with the output count checked
        del v1
        return [v2]

This removes the interpreter loop of :meth:`CompiledProgram.eval` (slot list
indexing, tuple packing and unpacking per instruction). Operations opt into the
direct call by providing ``kernel()`` (see :mod:`computegraph.protocols`).
The generated source never contains operation data: operations, kernels and
folded constants are bound by name in the function's globals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import MethodType, TracebackType
from typing import Any

from computegraph.errors import OperationContractError
from computegraph.gc_pause import gc_paused

__all__ = ["GeneratedRun", "generate"]

_FILENAME = "<computegraph program>"


class GeneratedRun:
    """Generated straight-line functions and the map from their lines to instructions."""

    __slots__ = ("codes", "function", "line_to_instruction")

    def __init__(
        self,
        function: Callable[[Sequence[Any], Any], list[Any]],
        codes: frozenset[Any],
        line_to_instruction: dict[int, int],
    ) -> None:
        self.function = function
        self.codes = codes
        self.line_to_instruction = line_to_instruction

    def failing_instruction(self, traceback: TracebackType | None) -> int | None:
        """The instruction whose statement raised, from an exception's traceback."""
        found = None
        while traceback is not None:
            if traceback.tb_frame.f_code in self.codes:
                found = self.line_to_instruction.get(traceback.tb_lineno)
            traceback = traceback.tb_next
        return found


def _one(results: Any, position: int, operation: Any) -> Any:
    try:
        (value,) = results
    except (TypeError, ValueError):
        raise _wrong_count(position, operation, 1, results) from None
    return value


def _many(results: Any, expected: int, position: int, operation: Any) -> Any:
    try:
        count = len(results)
    except TypeError:
        count = -1
    if count != expected:
        raise _wrong_count(position, operation, expected, results)
    return results


def _wrong_count(position: int, operation: Any, expected: int, results: Any) -> Exception:
    try:
        got = f"{len(results)} value(s)"
    except TypeError:
        got = f"a non-sequence {type(results).__name__}"
    return OperationContractError(
        f"instruction {position}: {operation!r}.eval returned {got}, expected "
        f"{expected} (its output_count())"
    )


SEGMENT = 2000
"""Instructions per generated function: CPython compiles one huge function in time
that grows faster than its length, so long programs are split into segments; values
read in a later segment are handed on in registers (first calls and steady state stay
linear in the program size)."""


def generate(
    steps: Sequence[tuple[Any, Any, tuple[int, ...], Any, tuple[int, ...]]],
    input_slots: Sequence[int],
    output_slots: Sequence[int],
    constants: dict[int, Any],
) -> GeneratedRun:
    """Write the plan ``steps`` (operation, eval, input slots, output slot(s), dead slots)
    as one function ``run(inputs, ctx) -> outputs``. ``constants`` maps slots to values
    known at compile time. Runs with the cyclic garbage collector paused (the source
    and code objects of a long program are many long-lived containers)."""
    with gc_paused():
        return _generate(steps, input_slots, output_slots, constants)


def _generate(
    steps: Sequence[tuple[Any, Any, tuple[int, ...], Any, tuple[int, ...]]],
    input_slots: Sequence[int],
    output_slots: Sequence[int],
    constants: dict[int, Any],
) -> GeneratedRun:
    namespace: dict[str, Any] = {"_one": _one, "_many": _many, "__builtins__": {}}
    for slot, value in constants.items():
        namespace[f"c{slot}"] = value

    kernels: dict[Any, str] = {}  # one global name per distinct kernel, not per instruction
    bounds = list(range(0, len(steps), SEGMENT)) or [0]
    # Values read in a later segment than their own are handed on in one list ``R``, a
    # register per value, written once where the value is made and cleared where it
    # dies: passing every live value as a tuple at each boundary would cost time and
    # code quadratic in the program (a gradient keeps its forward values live).
    registers, handed_on = _registers(steps, bounds, input_slots, output_slots, constants)
    lines: list[str] = []
    line_to_instruction: dict[int, int] = {}
    several = len(bounds) > 1
    for index, start in enumerate(bounds):
        stop = min(start + SEGMENT, len(steps))
        local: set[int] = set()  # the slots this segment holds in local variables
        read = functools.partial(_read, constants=constants, registers=registers)
        lines.append(f"def s{index}(inputs, ctx{', R' if several else ''}):")
        if index == 0 and input_slots:
            lines.append(f"    {', '.join(f'v{slot}' for slot in input_slots)}, = inputs")
            local.update(input_slots)
        for position in range(start, stop):
            operation, evaluate, args, out, dead = steps[position]
            operands = ", ".join([read(slot, local, lines) for slot in args])
            produced = (out,) if type(out) is int else out
            local.update(produced)
            kernel = _kernel(operation) if type(out) is int else None
            if kernel is not None:
                called = _kernel_name(kernel, position, kernels, namespace)
                statement = f"v{out} = {called}({operands})"
            else:
                namespace[f"e{position}"] = evaluate
                namespace[f"o{position}"] = operation
                call = f"e{position}([{operands}], ctx)"
                if type(out) is int:
                    statement = f"v{out} = _one({call}, {position}, o{position})"
                elif out:
                    targets = ", ".join(f"v{slot}" for slot in out)
                    statement = f"{targets}, = _many({call}, {len(out)}, {position}, o{position})"
                else:
                    statement = f"_many({call}, 0, {position}, o{position})"
            lines.append(f"    {statement}")
            line_to_instruction[len(lines)] = position
            if dead:
                lines.append(f"    del {', '.join(f'v{slot}' for slot in dead)}")
                local.difference_update(dead)
                cleared = [registers[slot] for slot in dead if slot in registers]
                if cleared:
                    lines.append(f"    {' = '.join(f'R[{r}]' for r in cleared)} = None")
        for slot in handed_on[index]:  # made here (or a program input), read later
            lines.append(f"    R[{registers[slot]}] = v{slot}")
        if index == len(bounds) - 1:
            outputs = [read(slot, local, lines) for slot in output_slots]
            lines.append(f"    return [{', '.join(outputs)}]")
    if not several:
        lines.append("run = s0")
    else:
        lines.append("def run(inputs, ctx):")
        lines.append(f"    R = [None] * {len(registers)}")
        for index in range(len(bounds) - 1):
            lines.append(f"    s{index}(inputs, ctx, R)")
        lines.append(f"    return s{len(bounds) - 1}(inputs, ctx, R)")
    exec(compile("\n".join(lines), _FILENAME, "exec"), namespace)  # our own source, no user text
    codes = frozenset(namespace[f"s{index}"].__code__ for index in range(len(bounds)))
    return GeneratedRun(namespace["run"], codes, line_to_instruction)


def _read(
    slot: int,
    local: set[int],
    lines: list[str],
    constants: dict[int, Any],
    registers: dict[int, int],
) -> str:
    """The name of ``slot`` in a segment, loading it from its register at its first read
    there (see :func:`_registers`)."""
    if slot in constants:
        return f"c{slot}"
    if slot not in local:
        lines.append(f"    v{slot} = R[{registers[slot]}]")
        local.add(slot)
    return f"v{slot}"


def _registers(
    steps: Sequence[tuple[Any, Any, tuple[int, ...], Any, tuple[int, ...]]],
    bounds: list[int],
    input_slots: Sequence[int],
    output_slots: Sequence[int],
    constants: dict[int, Any],
) -> tuple[dict[int, int], list[list[int]]]:
    """The slots (not constants) read in a later segment than the one that makes them
    (program inputs are made by the first), each with its register; and per segment,
    the slots it hands on (makes and stores in their registers)."""
    home: dict[int, int] = dict.fromkeys(input_slots, 0)
    registers: dict[int, int] = {}
    handed_on: list[list[int]] = [[] for _ in bounds]

    def reads(slot: int, segment: int) -> None:
        if slot in constants or slot in registers or home[slot] == segment:
            return
        registers[slot] = len(registers)
        handed_on[home[slot]].append(slot)

    for segment, start in enumerate(bounds):
        stop = bounds[segment + 1] if segment + 1 < len(bounds) else len(steps)
        for position in range(start, stop):
            _operation, _evaluate, args, out, _dead = steps[position]
            for slot in args:
                reads(slot, segment)
            for slot in (out,) if type(out) is int else out:
                home[slot] = segment
    for slot in output_slots:
        reads(slot, len(bounds) - 1)
    return registers, handed_on


def _kernel_name(
    kernel: Callable[..., Any], position: int, kernels: dict[Any, str], namespace: dict[str, Any]
) -> str:
    """The global name of ``kernel`` in the generated code. Instructions calling one
    kernel (the same ufunc, or a bound method of the same operation object) share one
    name, so the generated globals stay few however long the program: with a name per
    instruction, a 60,000-instruction program's globals outgrow the caches and its
    steady state per instruction nearly doubles. Kernels are told apart by identity
    (never by ``==``); the namespace keeps each named one alive, so ids stay unique."""
    identity: Any = (
        (id(kernel.__self__), id(kernel.__func__)) if type(kernel) is MethodType else id(kernel)
    )
    found = kernels.get(identity)
    if found is None:
        found = f"k{position}"
        namespace[found] = kernel
        kernels[identity] = found
    return found


def _kernel(operation: Any) -> Callable[..., Any] | None:
    make = getattr(operation, "kernel", None)
    return None if make is None else make()
