"""Structure check of the package tree, run by `make lint`.

DESIGN.md asks for no import cycles, small packages and a data plane that knows nothing of the
wire protocol; import-linter checks the layers between packages but not these, so this script
measures them from the code's own imports and fails (exit 1, one line per problem) when:

* modules import each other in a cycle. Every import in a module counts, wherever it is written
  (function-local and ``TYPE_CHECKING`` imports too: hiding an import does not remove the
  dependency), and ``from pkg import name`` depends on ``pkg`` itself as well as on ``pkg.name``;
* a package directory holds more than `MAX_PACKAGE_MODULES` modules (its ``__init__`` and its
  sub-packages not counted);
* more than `MAX_WIRE_IMPORTERS` modules outside the protocol, node and cli packages import the
  protocol package.

usage: python tools/check_structure.py [SRC_DIR]   (default: tabletdb, from the project root)
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_PACKAGE_MODULES = 25
MAX_WIRE_IMPORTERS = 5
WIRE_PACKAGE = "protocol"
WIRE_USERS = ("protocol", "node", "cli")
"""Packages (under the root package) that may import the wire package freely."""

Graph = Mapping[str, set[str]]


@dataclass(frozen=True)
class Module:
    name: str
    """Dotted name; a package's ``__init__.py`` is the package's own name."""
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def package(self) -> str:
        """The package that relative imports in this module start from."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def find_modules(src: Path) -> dict[str, Module]:
    """Every ``.py`` file under ``src`` by dotted name, ``src``'s directory name being the root."""
    modules: dict[str, Module] = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        modules[name] = Module(name, path)
    return modules


def imported_names(tree: ast.AST, package: str) -> Iterable[str]:
    """Every dotted name an import statement anywhere in ``tree`` may refer to."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _resolve(name: str, modules: Mapping[str, Module]) -> str | None:
    """The module a dotted name lands in: the longest prefix that is one (`pkg.mod.func` -> `pkg.mod`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(modules: Mapping[str, Module], root: str) -> dict[str, set[str]]:
    """Module -> the modules of the ``root`` package it imports (itself excluded)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        for imported in imported_names(tree, module.package):
            if imported.split(".")[0] != root:
                continue
            target = _resolve(imported, modules)
            if target is not None and target != name:
                graph[name].add(target)
    return graph


def import_cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, without recursion,
    so a long import chain cannot hit Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def package_sizes(modules: Mapping[str, Module]) -> dict[str, int]:
    """Package -> how many plain modules its directory holds."""
    sizes: dict[str, int] = {}
    for module in modules.values():
        if not module.is_package:
            sizes[module.package] = sizes.get(module.package, 0) + 1
    return sizes


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def wire_importers(graph: Graph, root: str) -> list[str]:
    """Modules outside `WIRE_USERS` that import the wire package."""
    wire = f"{root}.{WIRE_PACKAGE}"
    allowed = [f"{root}.{package}" for package in WIRE_USERS]
    return sorted(
        name
        for name, deps in graph.items()
        if not any(_within(name, package) for package in allowed) and any(_within(dep, wire) for dep in deps)
    )


def problems(src: Path) -> list[str]:
    """One line per rule the tree under ``src`` breaks; empty when it breaks none."""
    src = src.resolve()
    root = src.name
    modules = find_modules(src)
    graph = import_graph(modules, root)
    lines = [f"import cycle: {' <-> '.join(group)}" for group in import_cycles(graph)]
    for package, size in sorted(package_sizes(modules).items()):
        if size > MAX_PACKAGE_MODULES:
            lines.append(f"package too large: {package} holds {size} modules (limit {MAX_PACKAGE_MODULES})")
    wire = wire_importers(graph, root)
    if len(wire) > MAX_WIRE_IMPORTERS:
        users = ", ".join(f"{root}.{package}" for package in WIRE_USERS)
        lines.append(
            f"wire imports: {len(wire)} modules outside {users} import {root}.{WIRE_PACKAGE}"
            f" (limit {MAX_WIRE_IMPORTERS}): {', '.join(wire)}"
        )
    return lines


def main(argv: Sequence[str]) -> int:
    src = Path(argv[0] if argv else "tabletdb")
    if not src.is_dir():
        print(f"check_structure: no package directory {src}", file=sys.stderr)
        return 2
    found = problems(src)
    for line in found:
        print(line)
    print(f"structure: {len(found)} problem(s) in {src}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
