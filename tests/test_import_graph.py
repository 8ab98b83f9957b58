"""The project's modules import each other without a cycle (lazy imports inside functions count
too), and the package's names load lazily: importing a leaf module does not load the engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ((ROOT / "mcp_retrieval", "mcp_retrieval"), (ROOT / "indexers", "mcp_retrieval.indexers"),
            (ROOT / "prompts", "mcp_retrieval.prompts"))


def import_graph() -> dict[str, set[str]]:
    modules = {}
    for base, package in PACKAGES:
        for f in base.rglob("*.py"):
            if "bench" in f.parts:  # development scripts, not the product
                continue
            name = ".".join([package, *f.relative_to(base).with_suffix("").parts]).removesuffix(".__init__")
            modules[name] = f
    graph = {m: set() for m in modules}
    for name, f in modules.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def test_no_import_cycle_among_the_projects_modules():
    graph = import_graph()
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(n):] + [n]))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_a_leaf_module_loads_without_the_engine():
    code = ("import sys, mcp_retrieval.question_parts; "
            "print(any(m in sys.modules for m in ('tantivy', 'lancedb', 'mcp_retrieval.engine')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
