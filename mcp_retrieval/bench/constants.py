"""How many hand-set numbers rank an answer: the numeric literals assigned at module or class level
(module constants, dataclass defaults such as `RerankWeights`' factors, the fusion weights) in the
modules that write, scale or order a candidate's score, at a git revision or in the work tree.

    python -m mcp_retrieval.bench constants [--rev REV ...]

Learned weights are data (`mcp_retrieval/weights/`), not counted; literals inside functions are
not counted either (they are read as code: `x / 2`). Issue 52 asks for this count before and after
the learned file ranker (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from mcp_retrieval.indexers.listing import run_git

RANKING_MODULES = ("assemble", "classify", "coactivation", "config", "continuation", "decide", "file_features",
                   "file_rank", "file_scorer", "fusion", "graph_fusion", "lead_file", "module_heads", "pipeline",
                   "rerank", "retrieve", "rules", "scoring")
_ROOT = Path(__file__).resolve().parents[2]


_NOT_TUNING_CALLS = {"range", "chr", "ord", "bytes", "uint64"}  # character tables and hash seeds


def numbers(source: str) -> int:
    """Numeric literals (not booleans, not a bare 0: a field's "nothing yet" is no tuning) in the
    module's and its classes' own assignments, less those building character tables and hash
    seeds (`range(128)`, `np.uint64(...)`, `c >= 128`)."""
    tree = ast.parse(source)
    bodies = [tree.body] + [node.body for node in tree.body if isinstance(node, ast.ClassDef)]
    return sum(_literals(stmt.value) for body in bodies for stmt in body
               if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None)


def _literals(node: ast.AST) -> int:
    if isinstance(node, ast.Constant):
        return int(isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value != 0)
    if isinstance(node, ast.Compare):
        return 0
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in _NOT_TUNING_CALLS:
            return 0
    return sum(_literals(child) for child in ast.iter_child_nodes(node))


def source_at(module: str, rev: str | None) -> str | None:
    path = f"mcp_retrieval/{module}.py"
    if rev is None:
        file = _ROOT / path
        return file.read_text(encoding="utf-8") if file.exists() else None
    done = run_git(_ROOT, "show", f"{rev}:{path}")
    return done.stdout.decode("utf-8", errors="replace") if done is not None and done.returncode == 0 else None


def count(rev: str | None) -> dict[str, int]:
    return {m: numbers(src) for m in RANKING_MODULES if (src := source_at(m, rev)) is not None}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench constants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", action="append", default=[], help="a git revision (repeatable); the work tree always")
    args = ap.parse_args(argv)
    columns = {rev: count(rev) for rev in args.rev}
    columns["work tree"] = count(None)
    print("| module | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for module in RANKING_MODULES:
        print(f"| {module} | " + " | ".join(str(c.get(module, "-")) for c in columns.values()) + " |")
    print("| **total** | " + " | ".join(str(sum(c.values())) for c in columns.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
