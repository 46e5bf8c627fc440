"""Readable text listings and Graphviz DOT export of graphs and programs.

Every listing shows one line per operation, ``outputs = Operation(arguments)``,
with the role of linear operations (``linear(fixed, active)``), like a JAX jaxpr.
Local values are ``%i`` (graphs), ``v<i>`` (materialised graphs) or ``s<i>``
(program slots); external references of a graph are ``$i`` and are described
under ``where``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from computegraph.gc_pause import gc_paused
from computegraph.graph import External, Graph
from computegraph.keys import Derived, Input, Linearized, OperationRole, ValueKey

if TYPE_CHECKING:
    from computegraph.materialize import MaterializedGraph
    from computegraph.program import CompiledProgram

__all__ = [
    "describe_key",
    "format_graph",
    "format_materialized",
    "format_program",
    "graph_to_dot",
    "materialized_to_dot",
]


def describe_key(key: ValueKey, depth: int = 3, width: int = 4) -> str:
    """A short structural description of ``key``, cut off below ``depth`` levels.

    ``Input('x')`` is shown as ``'x'``; a derived key as ``Operation(args)``, with
    ``[slot]`` appended for multi-output operations and at most ``width`` arguments.
    """
    if type(key) is Input:
        return repr(key.key)
    assert type(key) is Derived
    operation_key = key.operation_key
    slot = f"[{key.output_slot}]" if operation_key.output_count > 1 else ""
    if depth <= 1:
        return f"{operation_key.operation}(...){slot}"
    args = [describe_key(arg, depth - 1, width) for arg in operation_key.inputs[:width]]
    if len(operation_key.inputs) > width:
        args.append("...")
    return f"{operation_key.operation}({', '.join(args)}){slot}"


def _role_suffix(role: OperationRole | None) -> str:
    if isinstance(role, Linearized):
        mask = ", ".join("active" if active else "fixed" for active in role.active_mask)
        return f"linear({mask})"
    return ""


@dataclass
class _Line:
    outputs: list[str]
    operation: Any
    arguments: list[str]
    role: OperationRole | None
    comment: str = ""


@dataclass
class _Listing:
    """A normalised view shared by the text and DOT renderers."""

    title: str
    inputs: list[tuple[str, str]]  # (name, input key description)
    lines: list[_Line]
    outputs: list[str]
    externals: list[tuple[str, str]] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)


def _format(listing: _Listing) -> str:
    header_inputs = ", ".join(f"{name}: {key}" for name, key in listing.inputs)
    header = f"{listing.title}({header_inputs}) -> ({', '.join(listing.outputs)})"
    body = []
    for line in listing.lines:
        text = f"{', '.join(line.outputs) or '()'} = {line.operation}({', '.join(line.arguments)})"
        notes = " ".join(part for part in (_role_suffix(line.role), line.comment) if part)
        body.append(f"  {text:<40} {notes}".rstrip() if notes else f"  {text}")
    for name, description in listing.externals:
        body.append(f"  where {name} = {description}")
    body.extend(f"  {text}" for text in listing.footer)
    return "\n".join([header, *body])


def _graph_listing(graph: Graph) -> _Listing:
    externals: dict[ValueKey, str] = {}

    def argument(ref: Any) -> str:
        if type(ref) is External:
            name = externals.get(ref.key)
            if name is None:
                name = externals[ref.key] = f"${len(externals)}"
            return name
        return f"%{ref.id}"

    lines = [
        _Line(
            [f"%{i}" for i in graph.operation_outputs(op_id)],
            key.operation,
            [argument(ref) for ref in graph.operation_inputs(op_id)],
            key.role,
        )
        for op_id, key in enumerate(graph.operation_keys)
    ]
    footer = [f"parents: {len(graph.parents)} graph(s)"] if graph.parents else []
    return _Listing(
        "graph",
        [(f"%{i}", describe_key(graph.value_keys[i], 1)) for i in graph.inputs],
        lines,
        [f"%{i}" for i in graph.outputs],
        [(name, describe_key(key)) for key, name in externals.items()],
        footer,
    )


def _materialized_listing(materialized: MaterializedGraph, prefix: str = "v") -> _Listing:
    lines = [
        _Line(
            [f"{prefix}{i}" for i in materialized.operation_outputs(position)],
            key.operation,
            [f"{prefix}{i}" for i in inputs],
            key.role,
        )
        for position, (key, inputs) in enumerate(
            zip(materialized.operation_keys, materialized.operation_inputs, strict=True)
        )
    ]
    keys = materialized.value_keys
    inputs = [(f"{prefix}{i}", describe_key(keys[i], 1)) for i in materialized.input_indices()]
    outputs = [f"{prefix}{materialized.index_of(key)}" for key in materialized.outputs]
    return _Listing("materialized", inputs, lines, outputs)


def format_graph(graph: Graph) -> str:
    """Text listing of a :class:`~computegraph.Graph`."""
    with gc_paused():
        return _format(_graph_listing(graph))


def format_materialized(materialized: MaterializedGraph) -> str:
    """Text listing of a :class:`~computegraph.MaterializedGraph`."""
    with gc_paused():
        return _format(_materialized_listing(materialized))


def format_program(program: CompiledProgram) -> str:
    """Text listing of a :class:`~computegraph.CompiledProgram`, with slot releases."""
    with gc_paused():
        return _format(_program_listing(program))


def _program_listing(program: CompiledProgram) -> _Listing:
    lines = []
    for instruction, dead in zip(program.instructions, program.free_after, strict=True):
        comment = f"free {', '.join(f's{i}' for i in dead)}" if dead else ""
        lines.append(
            _Line(
                [f"s{i}" for i in instruction.outputs],
                instruction.operation,
                [f"s{i}" for i in instruction.inputs],
                None,
                comment,
            )
        )
    listing = _Listing(
        "program",
        [
            (f"s{slot}", describe_key(key, 1))
            for slot, key in zip(program.input_slots, program.input_keys, strict=True)
        ],
        lines,
        [f"s{i}" for i in program.output_slots],
        footer=[f"slots: {program.n_slots}"],
    )
    listing.externals = [
        (f"s{slot}", f"folded constant {_short(value)}")
        for slot, value in program.constants.items()
    ]
    return listing


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- DOT


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot(listing: _Listing, name: str) -> str:
    out = [f"digraph {_dot_quote(name)} {{", '  node [fontname="monospace", fontsize=10];']
    producer: dict[str, str] = {}
    for index, (value, description) in enumerate(listing.inputs):
        node = f"in{index}"
        producer[value] = node
        out.append(f"  {node} [shape=ellipse, label={_dot_quote(f'{value} = {description}')}];")
    for index, (value, description) in enumerate(listing.externals):
        node = f"ext{index}"
        producer[value] = node
        label = f"{value} = {description}"
        out.append(f"  {node} [shape=ellipse, style=dashed, label={_dot_quote(label)}];")
    edges: list[str] = []
    for index, line in enumerate(listing.lines):
        node = f"op{index}"
        role = _role_suffix(line.role)
        label = f"{', '.join(line.outputs)} = {line.operation}" + (f"\n{role}" if role else "")
        style = ', style="rounded,filled", fillcolor="#eef3ff"' if role else ""
        out.append(f"  {node} [shape=box{style}, label={_dot_quote(label)}];")
        many = len(line.arguments) > 1
        for position, argument in enumerate(line.arguments):
            source = producer.get(argument, argument)
            attributes = f" [label={_dot_quote(str(position))}]" if many else ""
            edges.append(f"  {source} -> {node}{attributes};")
        for value in line.outputs:
            producer[value] = node
    for index, value in enumerate(listing.outputs):
        out.append(f"  out{index} [shape=plaintext, label={_dot_quote(f'output {index}')}];")
        edges.append(f"  {producer.get(value, value)} -> out{index};")
    out.extend(edges)
    out.append("}")
    return "\n".join(out)


def graph_to_dot(graph: Graph, name: str = "graph") -> str:
    """Graphviz DOT source for a :class:`~computegraph.Graph`."""
    with gc_paused():
        return _dot(_graph_listing(graph), name)


def materialized_to_dot(materialized: MaterializedGraph, name: str = "materialized") -> str:
    """Graphviz DOT source for a :class:`~computegraph.MaterializedGraph`."""
    with gc_paused():
        return _dot(_materialized_listing(materialized), name)
