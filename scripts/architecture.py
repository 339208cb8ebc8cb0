"""Measure the module structure of the ``dpstack`` package in a checkout, without importing it.

Every ``.py`` file under ``ROOT/dpstack`` is parsed with :mod:`ast`. Reported: lines per package
group, modules, import cycles (strongly connected components of the module import graph, with and
without imports made inside functions), import statements inside functions, imports of private
names across modules (``from X import _y``), and the modules runnable as command lines.

An edge goes from the importing module to the dpstack module it names: for ``import a.b``, the
deepest module of the dotted name; for ``from pkg import name``, ``pkg.name`` when that is a module
(a ``.py`` file or a compiled extension such as ``dpstack/_fused.c``), else ``pkg``. Relative
imports count levels from the importing module's package (an ``__init__.py``'s is itself). An
import is top level unless it sits in a function or method body (module-level ``if TYPE_CHECKING:``,
``try:`` and class bodies are top level).

Usage: ``python scripts/architecture.py [ROOT]`` (ROOT defaults to the repository holding this
script). Stdlib only; other code may import this file by path and reuse its functions.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "dpstack"
GROUPS = ("experiments", "papers", "companion", "audit", "datasets", "multiparty")
COMPANION = ("experiments", "papers", "companion")
BUCKETS = ("`dpstack.audit`", "`dpstack.datasets`", "companion packages", "other modules")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _extensions(root):
    """Names of compiled extension modules: ``NAME.c``/``.pyx`` sources or built ``NAME*.so``/``.pyd``."""
    return {
        ".".join(path.relative_to(root).parent.parts + (path.name.split(".")[0],))
        for suffix in ("c", "pyx", "so", "pyd")
        for path in (Path(root) / PACKAGE).rglob(f"*.{suffix}")
    }


def modules(root):
    """Map each dpstack module name (a package's ``__init__.py`` as the package name) to its Path."""
    found = {}
    for path in sorted((Path(root) / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _parse(path):
    """The syntax tree of the file at ``path``."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _walk(tree):
    """Yield (node, inside_function) for every node of ``tree``."""
    stack = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        yield node, inside
        inner = inside or isinstance(node, FUNCTIONS)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def imports(root):
    """List import edges (src, dst, at_top_level, names, lineno) between dpstack modules."""
    sources = modules(root)
    mods = set(sources) | _extensions(root)
    edges = []
    for src, path in sources.items():
        package = src if path.name == "__init__.py" else src.rpartition(".")[0]
        for node, inside in _walk(_parse(path)):
            found = defaultdict(list)  # dst -> names imported from it by this statement
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    prefixes = (".".join(parts[:i]) for i in range(len(parts), 0, -1))
                    if dst := next((p for p in prefixes if p in mods), None):
                        found[dst].append(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module
                if node.level:  # level 1 is the importing module's own package
                    up = package.rsplit(".", node.level - 1)[0]
                    base = f"{up}.{node.module}" if node.module else up
                for alias in node.names:
                    dst = f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    if dst in mods:
                        found[dst].append(alias.name)
            for dst, names in found.items():
                edges.append((src, dst, not inside, tuple(names), node.lineno))
    return sorted(edges, key=lambda e: (e[0], e[4], e[1]))


def cycles(edges, include_function_level=True):
    """Strongly connected components (sets of >= 2 modules) of the import graph (iterative Tarjan)."""
    graph = defaultdict(set)
    for src, dst, top, _names, _line in edges:
        if top or include_function_level:
            graph[src].add(dst)
            graph.setdefault(dst, set())
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(node):  # give ``node`` its index and push it on both stacks
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(sorted(graph[node]))))

    for start in sorted(graph):
        if start in index:
            continue
        work = []
        visit(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:  # node finished: propagate its low link, pop a component at a root
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = {stack.pop()}
                    while node not in component:
                        component.add(stack.pop())
                    on_stack -= component
                    if len(component) >= 2:
                        components.append(component)
            elif child not in index:
                visit(child)
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def function_level_imports(edges):
    """Count distinct import statements (src, lineno) of dpstack modules made inside functions."""
    return len({(src, line) for src, _dst, top, _names, line in edges if not top})


def private_imports(root, edges):
    """List (src, dst, name) for ``from X import _y`` where ``_y`` is a private name, not a module.

    An edge whose destination is the module ``X._y`` itself imports a module and is skipped (the
    edges already carry that resolution, made by :func:`imports` against ``root``'s modules).
    """
    return [
        (src, dst, name)
        for src, dst, _top, names, _line in edges
        for name in names
        if name.startswith("_") and not name.startswith("__") and dst.rpartition(".")[2] != name
    ]


def lines(root, prefix):
    """Total line count (as ``wc -l``) of the .py files of modules named ``prefix`` or below it."""
    return sum(
        path.read_bytes().count(b"\n")
        for name, path in modules(root).items()
        if name == prefix or name.startswith(prefix + ".")
    )


def entry_points(root):
    """Module names runnable as command lines: ``__main__`` modules and ``if __name__ == "__main__"``."""
    guard = "__name__ == '__main__'"  # as ast.unparse spells the test, whatever the quotes
    return [
        name
        for name, path in modules(root).items()
        if path.name == "__main__.py"
        or any(isinstance(node, ast.If) and ast.unparse(node.test) == guard for node in _parse(path).body)
    ]


def _bucket(module):
    """The entry of ``BUCKETS`` (where function-level imports are counted) that ``module`` falls in."""
    part = (module.split(".") + [""])[1]
    if part in COMPANION:
        return "companion packages"
    return f"`dpstack.{part}`" if part in ("audit", "datasets") else "other modules"


def _row(label, items, show=str):
    """A table row: the count of ``items``, then the items themselves, separated by semicolons."""
    return label, f"{len(items)}" + (": " + "; ".join(map(show, items)) if items else "")


def main():
    """Print the measurements of ROOT (argv[1], default: this script's repository) as Markdown."""
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    mods, edges = modules(root), imports(root)
    groups = [f"{PACKAGE}.{g}" for g in GROUPS if f"{PACKAGE}.{g}" in mods]
    total = lines(root, PACKAGE)
    rows = [("package .py lines", total)] + [(f"lines: `{g}`", lines(root, g)) for g in groups]
    rows.append(("lines: other top-level modules", total - sum(lines(root, g) for g in groups)))
    rows.append(("modules", len(mods)))
    for label, flag in (("import cycles (all imports)", True), ("import cycles (top-level only)", False)):
        found = sorted((sorted(c) for c in cycles(edges, flag)), key=len)
        rows.append(_row(label, found, lambda c: "{" + ", ".join(c) + "}"))
    inside = {(src, line) for src, _dst, top, _names, line in edges if not top}
    rows.append(("function-level import statements", function_level_imports(edges)))
    rows += [(f"— in {bucket}", sum(_bucket(src) == bucket for src, _ in inside)) for bucket in BUCKETS]
    private = private_imports(root, edges)
    rows.append(_row("private imports across modules", private, lambda p: f"{p[0]} imports {p[1]}.{p[2]}"))
    rows.append(_row("entry points", entry_points(root)))
    print("| measure | value |\n|---|---|")
    for label, value in rows:
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
