"""No import cycle among the project's modules: every ``import`` of an ``attnscope`` module (at the top
of a file or inside a function, where the old cycles hid) is an edge, and the graph has no cycle.

A module ``attnscope.a.b`` maps to its file through pyproject's ``package-dir``; importing a name
from a package (``from attnscope.models import x``) is an edge to the package's ``__init__``, and
importing ``attnscope.a.b.c`` also runs the ``__init__`` of ``attnscope.a.b``.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def project_modules(root: Path = ROOT, package_dirs: dict = PACKAGE_DIRS) -> dict[str, Path]:
    """``attnscope.*`` dotted name -> file, for every module under the mapped folders."""
    modules = {}
    for dotted, folder in package_dirs.items():
        base = root / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            modules[".".join([dotted, *rel])] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest project module that ``name`` (a module or ``module.attribute``) refers to."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in the file), parents' ``__init__`` included."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        # a module's own packages are initialising already when it runs: importing from them is no edge
        parts = name.split(".")
        ancestors = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import: resolve against this module's package
                    pkg = name.split(".") if is_package else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                hit = _resolve(target, modules)
                while hit is not None and hit not in ancestors:
                    graph[name].add(hit)
                    parent = hit.rpartition(".")[0]
                    hit = parent if parent in modules else None
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle_among_the_project_modules():
    modules = project_modules()
    assert "attnscope.models.loading" in modules and "attnscope.pipelines.explainers" in modules
    cycle = find_cycle(import_graph(modules))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_finds_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from attnscope.x.b import thing\n")
    (pkg / "sub" / "c.py").write_text("import os\n")
    (pkg / "b.py").write_text("def f():\n    from attnscope.x import a\n    return a\n")
    modules = project_modules(tmp_path, {"attnscope.x": "pkg"})
    graph = import_graph(modules)
    assert graph["attnscope.x.a"] == {"attnscope.x.b"}
    assert find_cycle(graph) == ["attnscope.x.a", "attnscope.x.b", "attnscope.x.a"]
    (pkg / "b.py").write_text("import attnscope.x.sub.c\n")
    assert find_cycle(import_graph(project_modules(tmp_path, {"attnscope.x": "pkg"}))) is None
