#!/usr/bin/env python3
"""Print the import graph of a Python package: modules, arrows, cycles, and dict[str, Any] count.

    python3 scripts/import_graph.py            # the evalarc package of this checkout
    python3 scripts/import_graph.py --edges    # also list every arrow
    python3 scripts/import_graph.py --root DIR --package NAME

Every import counts, including those inside functions (they hide cycles from a reader, not from
Python). An arrow A -> B means module A imports module B (or a name from it) of the same package.
A cycle is a strongly connected set of two or more modules, or a module importing itself.

For the evalarc package it also checks the layers of docs/architecture.md: every arrow must
point to the same layer or one below it; an arrow pointing up is listed. Exit status 1 when
there is a cycle or an upward arrow.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ImportGraph:
    modules: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    dict_any_annotations: int

    def cycles(self) -> list[list[str]]:
        """Strongly connected components with more than one module (Tarjan, iterative)."""
        succ: dict[str, list[str]] = {m: [] for m in self.modules}
        for a, b in self.edges:
            succ[a].append(b)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        found: list[list[str]] = []
        counter = 0
        for root in self.modules:
            if root in index:
                continue
            work: list[tuple[str, int]] = [(root, 0)]
            while work:
                node, i = work.pop()
                if i == 0:
                    index[node] = low[node] = counter
                    counter += 1
                    stack.append(node)
                    on_stack.add(node)
                recurse = False
                while i < len(succ[node]):
                    nxt = succ[node][i]
                    i += 1
                    if nxt not in index:
                        work.append((node, i))
                        work.append((nxt, 0))
                        recurse = True
                        break
                    if nxt in on_stack:
                        low[node] = min(low[node], index[nxt])
                if recurse:
                    continue
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1 or node in succ[node]:
                        found.append(sorted(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
        return sorted(found)


def _module_name(root: Path, package: str, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts]) if parts else package


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _count_dict_any(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "dict"
            and isinstance(node.slice, ast.Tuple)
            and len(node.slice.elts) == 2
        ):
            key, value = node.slice.elts
            if (
                isinstance(key, ast.Name)
                and key.id == "str"
                and isinstance(value, ast.Name)
                and value.id == "Any"
            ):
                count += 1
    return count


LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("evalarc.cli", "evalarc.cli_options", "evalarc.cli_emit", "evalarc.__main__")),
    (
        "commands",
        ("evalarc.demo", "evalarc.action", "evalarc.verify", "evalarc.verify_text", "evalarc.site"),
    ),
    ("reports", ("evalarc.reports",)),
    ("pages", ("evalarc.pages",)),
    ("compute", ("evalarc.review", "evalarc.packs", "evalarc.schedule", "evalarc.ray_executor")),
    ("io", ("evalarc.formats", "evalarc.evidence", "evalarc.runtime", "evalarc.bundle")),
    (
        "base",
        (
            "evalarc.cancel",
            "evalarc.canonical",
            "evalarc.errors",
            "evalarc.schemas",
            "evalarc.clock",
            "evalarc.scoring",
            "evalarc.terminal",
            "evalarc.resources",
            "evalarc",
        ),
    ),
)
"""evalarc's layers, top first: a module may import its own layer and the layers below it."""


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (the longest matching prefix), or None."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def upward_arrows(graph: ImportGraph) -> list[tuple[str, str]]:
    """Arrows from a lower layer to a higher one (and modules in no layer, paired with '?')."""
    found: list[tuple[str, str]] = []
    for module in graph.modules:
        if layer_of(module) is None:
            found.append((module, "?"))
    for a, b in graph.edges:
        la, lb = layer_of(a), layer_of(b)
        if la is not None and lb is not None and lb < la:
            found.append((a, b))
    return found


def build_graph(root: Path, package: str) -> ImportGraph:
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    names = {_module_name(root, package, p): p for p in files}
    edges: set[tuple[str, str]] = set()
    dict_any = 0
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        dict_any += _count_dict_any(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                # The longest module name that the target starts with (a module, not a name in it).
                probe = target
                while probe and probe not in names:
                    probe = probe.rpartition(".")[0]
                if not probe or probe == name:
                    continue
                if probe == package and target != package:
                    continue  # `from evalarc import x` where x is a submodule is caught above
                edges.add((name, probe))
    return ImportGraph(tuple(sorted(names)), tuple(sorted(edges)), dict_any)


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=here / "evalarc")
    parser.add_argument("--package", default="evalarc")
    parser.add_argument("--edges", action="store_true", help="list every arrow")
    args = parser.parse_args(argv)
    graph = build_graph(args.root, args.package)
    cycles = graph.cycles()
    print(f"modules: {len(graph.modules)}")
    print(f"arrows: {len(graph.edges)} (function-level imports included)")
    print(f"cycles: {len(cycles)}")
    for component in cycles:
        print("  cycle: " + " <-> ".join(component))
    print(f"dict[str, Any] annotations: {graph.dict_any_annotations}")
    upward: list[tuple[str, str]] = []
    if args.package == "evalarc":
        upward = upward_arrows(graph)
        print("layers: " + " -> ".join(name for name, _ in LAYERS))
        print(f"upward arrows: {len(upward)}")
        for a, b in upward:
            print(f"  up: {a} -> {b}" if b != "?" else f"  no layer: {a}")
    if args.edges:
        for a, b in graph.edges:
            print(f"  {a} -> {b}")
    return 1 if cycles or upward else 0


if __name__ == "__main__":
    sys.exit(main())
