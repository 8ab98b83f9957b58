"""Changed definitions within a session: what re-delivering them costs as a diff against what the
session saw, against sending them whole again.

    python -m mcp_retrieval.bench diffs --root /path/to/a/repository [--functions 20] [--work DIR]

Works on a scratch copy of the repository (the original is never written). For each of the N
longest definitions (functions and methods of 20-200 lines, not tests): ask `context` for it by
name in a fresh session, change one line in its middle on disk (a literal `1` becomes `2`, or a
comment is appended), re-index that file, ask again in the same session, and compare the tokens
of the definition's chunks (a part the session holds unchanged is a stub and costs only its
header, not counted) with the tokens of the same chunks delivered whole to a new session; also
check the changed line is visible. Without vectors.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path

from mcp_retrieval.engine import Engine
from mcp_retrieval.config import Config
from mcp_retrieval.indexers.languages import is_test_path
from mcp_retrieval.workspace import Workspace


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench diffs")
    ap.add_argument("--root", required=True)
    ap.add_argument("--functions", type=int, default=20)
    ap.add_argument("--work", default="/tmp/mcp-retrieval-diffs")
    args = ap.parse_args(argv)
    work = Path(args.work)
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(args.root, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    os.environ.setdefault("MCP_RETRIEVAL_CACHE_DIR", str(work / "cache"))
    engine = Engine(Config.resolve(tree, work / "index", persist_sessions=False, embedder="none"))
    try:
        engine.reindex()
        rows = engine.store.query("SELECT path, qualname, start_line, end_line FROM symbols WHERE kind IN "
                                  "('function', 'method') AND end_line - start_line BETWEEN 20 AND 200 "
                                  "ORDER BY end_line - start_line DESC")
        rows = [r for r in rows if not is_test_path(r[0])][: args.functions]
        as_diff, whole, shown, used = [], [], 0, 0
        for n, (path, name, start, end) in enumerate(rows):
            session = f"diffs-{n}"
            first = _parts(Workspace.single(engine).context(name, session_id=session, budget_tokens=8000, debug=True), path, name)
            if not first or not first[0].text:
                continue
            file = tree / path
            lines = file.read_text().split("\n")
            middle = (start + end) // 2 - 1
            changed = lines[middle].replace("1", "2", 1) if "1" in lines[middle] else lines[middle] + "  # changed"
            lines[middle] = changed
            file.write_text("\n".join(lines))
            engine.reindex(paths=[path])
            again = _parts(Workspace.single(engine).context(name, session_id=session, budget_tokens=8000, debug=True), path, name)
            fresh = _parts(Workspace.single(engine).context(name, session_id=f"fresh-{n}", budget_tokens=8000, debug=True), path, name)
            if not again or not fresh:
                continue
            used += 1
            as_diff.append(sum(c.tokens for c in again if not c.delivered))
            whole.append(sum(c.tokens for c in fresh))
            shown += any(changed.strip() in (c.text or "") for c in again)
        print(f"definitions changed and asked again: {used}")
        print("| re-delivery | tokens (median) | tokens (total) |\n|---|---|---|")
        print(f"| whole (a new session) | {statistics.median(whole):.0f} | {sum(whole)} |")
        print(f"| as the session gets it (diff when cheaper) | {statistics.median(as_diff):.0f} | {sum(as_diff)} |")
        print(f"changed line visible in the re-delivery: {shown}/{used}")
    finally:
        engine.close()
    return 0


def _parts(result, path: str, name: str) -> list:
    """Every chunk of the definition (a long one is split in parts; a stub costs only its header)."""
    return [c for c in result.chunks if c.path == path and c.symbol == name]
