"""The import graph of a package, read from its source: cycles, layers, deferred imports.

``python tools/import_layers.py report [PACKAGE ...]`` prints, for each package, the
strongly connected components of its import graph (module-level and function-local
imports both count: a cycle held together by a deferred import is still a cycle), the
number of function-local imports and the number of ``Any`` annotations.

``python tools/import_layers.py check`` fails (exit status 1, one line per violation)
when tenferro imports upward across the layers of :data:`TENFERRO_LAYERS` (imports
under ``if TYPE_CHECKING:`` included: they never run, but a layer's types come from
below too), when it has an import cycle other than the one :data:`ALLOWED_CYCLE`
names, when a function-local import (of anything) has no comment on its line or just
above saying why it is deferred (a ``type:``/``noqa`` pragma is not a reason), or when
a module is in no layer. Type-only imports are not edges of the import graph.

Standard library only: ``make lint`` runs it, and the integration tests check it against
the real tree and against small trees built to break each rule.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("computegraph", "tidu", "tenferro")

# Each module of tenferro, by longest matching prefix, sits in one layer; a module may
# import only modules of its own layer or below. The package root (L6) is the facade.
TENFERRO_LAYERS: dict[str, int] = {
    # L0 base: values every layer needs, importing nothing of tenferro's above them.
    "tenferro.errors": 0,
    "tenferro.dtypes": 0,
    "tenferro.meta": 0,
    "tenferro.ieee": 0,
    "tenferro.core": 0,
    "tenferro.core.flags": 0,
    "tenferro.core.params": 0,
    "tenferro.core.keys": 0,
    "tenferro.core.pytree": 0,
    "tenferro.tree_util": 0,
    # L1 core: the primitive base, the values its rules compute with and its shape
    # rules' checks, binding, operands, asarray and the registry of kinds, the methods
    # every kind has (declared; installed by the facade).
    "tenferro.core.primitive": 1,
    "tenferro.core.families": 1,
    "tenferro.core.rules": 1,
    "tenferro.core.checks": 1,
    "tenferro.core.bind": 1,
    "tenferro.core.operands": 1,
    "tenferro.core.kinds": 1,
    "tenferro.core.methods": 1,
    "tenferro.typing": 1,
    # L2 primitives: the catalogue and its batching helpers, lax, the matrix algebra.
    "tenferro.ops": 2,
    "tenferro.ops.lowering": 2,  # the lowering helpers: what primitives' XLA rules use
    "tenferro.lax": 2,
    "tenferro.algebra": 2,
    "tenferro.batching": 2,  # the former name of tenferro.ops.batching
    # L3 tensor kinds.
    "tenferro.concrete": 3,
    "tenferro.eager": 3,
    "tenferro.traced": 3,
    "tenferro.extension": 3,
    # L4 library: the numpy-style surface, einsum, linalg, random, iterative solvers.
    "tenferro.surface": 4,
    "tenferro.einsum": 4,
    "tenferro.linalg": 4,
    "tenferro.random": 4,
    "tenferro.solvers": 4,
    # L5 transforms (and the derivative checks built on them).
    "tenferro.transforms": 5,
    "tenferro.transforms.xla": 5,  # jit's XLA backend driver (imports jax lazily)
    "tenferro.testing": 5,
    # L6 facade.
    "tenferro.array_api": 6,
    "tenferro.models": 6,  # helpers built on the public API (the tutorial's MPS/MPO)
    "tenferro": 6,
}

LAYER_NAMES = ("base", "core", "primitives", "kinds", "library", "transforms", "facade")

ALLOWED_CYCLE = ("tenferro.lax", "tenferro.ops", "tenferro.algebra")
"""The one cycle the design allows: ``lax`` (a function per primitive) and the primitive
catalogue ``ops`` (whose rules are written with lax, and with ``algebra``: matrix
helpers composed of lax functions) refer to each other."""


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``source`` imports ``target`` at ``line``."""

    source: str
    target: str
    line: int
    deferred: bool  # inside a function body
    justified: bool  # a comment on the statement's lines or the line above it
    type_only: bool = False  # under ``if TYPE_CHECKING:``: never runs


def module_files(src: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name."""
    files = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


Statement = ast.Import | ast.ImportFrom


def _statements(tree: ast.Module) -> Iterator[tuple[Statement, bool, bool]]:
    """Each import statement with whether it sits in a function body and whether it is
    type-only (under ``if TYPE_CHECKING:``)."""
    stack: list[tuple[ast.AST, bool, bool]] = [(tree, False, False)]
    while stack:
        node, deferred, type_only = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, deferred, type_only
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, deferred, True) for child in node.body)
            stack.extend((child, deferred, type_only) for child in node.orelse)
            continue
        inner = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        stack.extend((child, inner, type_only) for child in ast.iter_child_nodes(node))


_PRAGMA = re.compile(r"#\s*(type:\s*ignore(\[[^\]]*\])?|noqa(:[\w, ]+)?|pragma:[^#]*)")


def _reason(text: str) -> str:
    """The words of the comment in a line of source, pragmas removed."""
    if "#" not in text:
        return ""
    comment = _PRAGMA.sub("", text[text.index("#") :])
    return comment.replace("#", " ").strip(" -:")


def _has_comment(lines: Sequence[str], statement: ast.stmt) -> bool:
    """A comment that says something (not only a pragma) on the statement's lines or as
    the whole line just above it."""
    end = statement.end_lineno or statement.lineno
    spanned = lines[statement.lineno - 1 : end]
    above = lines[statement.lineno - 2].strip() if statement.lineno >= 2 else ""
    return any(_reason(line) for line in spanned) or (
        above.startswith("#") and bool(_reason(above))
    )


def deferred_statements(path: Path) -> list[tuple[int, str, bool]]:
    """Every function-local import statement of the module at ``path`` (of any module):
    its line, its text and whether a comment says why."""
    text = path.read_text()
    lines = text.splitlines()
    return [
        (statement.lineno, ast.unparse(statement), _has_comment(lines, statement))
        for statement, deferred, type_only in _statements(ast.parse(text, str(path)))
        if deferred and not type_only
    ]


def module_imports(name: str, path: Path, modules: Iterable[str]) -> list[Import]:
    """The edges from module ``name`` (source at ``path``) to modules of its package."""
    known = set(modules)
    package = name.split(".")[0]
    is_package = path.name == "__init__.py"
    text = path.read_text()
    lines = text.splitlines()
    edges = []
    for statement, deferred, type_only in _statements(ast.parse(text, str(path))):
        targets: list[str] = []
        if isinstance(statement, ast.Import):
            targets = [alias.name for alias in statement.names]
        else:
            base = statement.module or ""
            if statement.level:
                anchor = name.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (statement.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in statement.names:
                child = f"{base}.{alias.name}"
                targets.append(child if child in known else base)
        justified = _has_comment(lines, statement)
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target.split(".")[0] == package and target != name:
                edge = Import(name, target, statement.lineno, deferred, justified, type_only)
                edges.append(edge)
    return edges


def package_imports(src: Path, package: str, *, type_only: bool = False) -> list[Import]:
    """Every import edge between modules of ``package`` that runs (and the type-only
    ones too when ``type_only``)."""
    files = module_files(src, package)
    return [
        edge
        for name, path in files.items()
        for edge in module_imports(name, path, files)
        if type_only or not edge.type_only
    ]


def strongly_connected_components(
    nodes: Iterable[str], edges: Iterable[tuple[str, str]]
) -> list[list[str]]:
    """Tarjan's algorithm without recursion; components sorted, largest first."""
    graph: dict[str, list[str]] = {node: [] for node in nodes}
    for source, target in edges:
        graph[source].append(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph[successor])))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return sorted(components, key=lambda c: (-len(c), c))


def cycles(modules: Iterable[str], edges: Iterable[Import]) -> list[list[str]]:
    """The import cycles: components of more than one module."""
    pairs = [(edge.source, edge.target) for edge in edges if not edge.type_only]
    return [c for c in strongly_connected_components(modules, pairs) if len(c) > 1]


def cycle_path(component: Sequence[str], edges: Iterable[Import]) -> list[Import]:
    """One cycle through the first module of ``component`` (a strongly connected
    component), as the import statements that close it: the shortest, by breadth-first
    search inside the component."""
    members = set(component)
    start = component[0]
    outgoing: dict[str, list[Import]] = {}
    for edge in edges:
        if edge.source in members and edge.target in members and not edge.type_only:
            outgoing.setdefault(edge.source, []).append(edge)
    came: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in outgoing.get(node, []):
                if edge.target == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                if edge.target not in came:
                    came[edge.target] = edge
                    following.append(edge.target)
        frontier = following
    return []


def layer_of(module: str, layers: Mapping[str, int]) -> int | None:
    """The layer of the longest prefix of ``module`` that ``layers`` names, other than the
    package itself, whose ``__init__`` is the facade (``None`` when none does)."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        prefix = ".".join(parts[:end])
        if prefix in layers:
            return layers[prefix]
    return layers.get(module)


def _in_allowed(component: Sequence[str], allowed: Sequence[str]) -> bool:
    return all(any(m == a or m.startswith(a + ".") for a in allowed) for m in component)


def violations(
    src: Path,
    package: str,
    layers: Mapping[str, int],
    allowed_cycle: Sequence[str] = (),
) -> list[str]:
    """Every broken rule in ``package``, one readable line each (empty when it is clean)."""
    files = module_files(src, package)
    edges = package_imports(src, package, type_only=True)
    found = []

    def where(module: str, line: int) -> str:
        return f"{files[module].relative_to(src.parent)}:{line}"

    for module in files:
        if layer_of(module, layers) is None:
            found.append(f"{where(module, 1)}: {module} is in no layer (see TENFERRO_LAYERS)")
    for edge in edges:
        source_layer = layer_of(edge.source, layers)
        target_layer = layer_of(edge.target, layers)
        if source_layer is not None and target_layer is not None and target_layer > source_layer:
            kind = "a type-only import" if edge.type_only else "an import"
            found.append(
                f"{where(edge.source, edge.line)}: {edge.source} (L{source_layer} "
                f"{LAYER_NAMES[source_layer]}) has {kind} of {edge.target} (L{target_layer} "
                f"{LAYER_NAMES[target_layer]}): layers import only the layers below them"
            )
    for module, path in files.items():
        for line, text, justified in deferred_statements(path):
            if not justified:
                found.append(
                    f"{where(module, line)}: `{text}` is inside a function with no comment "
                    "saying why it is deferred (import at module level, or say why)"
                )
    for component in cycles(files, edges):
        if allowed_cycle and _in_allowed(component, allowed_cycle):
            continue
        closing = cycle_path(component, edges)
        steps = " -> ".join([f"{e.source} (line {e.line})" for e in closing] + [component[0]])
        found.append(
            f"{package}: an import cycle among {len(component)} modules ({', '.join(component)})"
            f": {steps}"
        )
    return sorted(set(found))


def count_any(src: Path, package: str) -> tuple[int, int]:
    """(uses of ``Any``, functions annotated to return ``Any``) in ``package``'s source."""
    uses = returning = 0
    for path in module_files(src, package).values():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
            if name == "Any" and isinstance(node, ast.Name | ast.Attribute):
                uses += 1
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                annotation = node.returns
                if (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
                    isinstance(annotation, ast.Constant) and annotation.value == "Any"
                ):
                    returning += 1
    return uses, returning


def source_root(package: str) -> Path:
    return ROOT / "packages" / package / "src"


def report(package: str) -> str:
    """The figures of one package, as text."""
    src = source_root(package)
    files = module_files(src, package)
    edges = package_imports(src, package)
    deferred = [edge for edge in edges if edge.deferred]
    statements = {(edge.source, edge.line) for edge in deferred}
    local = [entry for path in files.values() for entry in deferred_statements(path)]
    components = cycles(files, edges)
    module_level = cycles(files, [edge for edge in edges if not edge.deferred])
    uses, returning = count_any(src, package)
    lines = [
        f"{package}: {len(files)} modules, {len(edges)} import edges",
        f"  function-local imports of {package}: {len(statements)} statements "
        f"({len(deferred)} edges), {sum(1 for s in statements if not _justified(deferred, s))} "
        f"without a comment; of anything: {len(local)} statements, "
        f"{sum(1 for entry in local if not entry[2])} without a comment",
        f"  cycles counting deferred imports: {len(components)}, sizes "
        f"{[len(c) for c in components]} ({sum(len(c) for c in components)} modules in cycles)",
        f"  cycles of module-level imports alone: sizes {[len(c) for c in module_level]}",
        f"  Any: {uses} uses, {returning} functions returning Any",
    ]
    for component in components:
        lines.append(f"  cycle of {len(component)}: {', '.join(component)}")
    return "\n".join(lines)


def _justified(deferred: Sequence[Import], statement: tuple[str, int]) -> bool:
    return any(e.justified for e in deferred if (e.source, e.line) == statement)


def check() -> list[str]:
    """Every violation of tenferro's layers."""
    return violations(source_root("tenferro"), "tenferro", TENFERRO_LAYERS, ALLOWED_CYCLE)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["report", "check"])
    parser.add_argument("packages", nargs="*", default=list(PACKAGES))
    args = parser.parse_args(argv)
    if args.command == "report":
        print("\n".join(report(package) for package in args.packages))
        return 0
    found = check()
    for line in found:
        print(line)
    print(f"import layers: {len(found)} violation(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
