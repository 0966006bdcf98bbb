"""The benchmark scripts import one another without a cycle (bench/ is not a package: each
script puts bench/ on the path and imports the others by name, at the top or in a function)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def imports() -> dict[str, set[str]]:
    scripts = {path.stem: path for path in BENCH.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in scripts.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        graph[name] = {other for other in found if other in scripts and other != name}
    return graph


def test_no_script_imports_itself_through_others() -> None:
    graph = imports()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, "an import cycle: " + " -> ".join((*path, name))
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
    assert "harness" in graph and graph["harness"] <= {"bench_data", "bench_mix"}
