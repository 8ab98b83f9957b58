"""Broad questions and the corpus map: does a `context` window for an overview question name the
modules a maintainer would name, with and without the map, and at what cost in tokens?

    python -m mcp_retrieval.bench broad --root requests=/path/to/requests --root flask=/path/to/flask \\
        [--budget 2000] [--work DIR]

Without vectors. The built-in questions and "central modules" (for psf/requests and
pallets/flask) are this project's own judgement of what an overview must mention, so the figure
is a sanity check of the mechanism, not a benchmark of record.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from mcp_retrieval.indexers.tokens import budget_tokens
from mcp_retrieval.roots import resolve_workspace
from mcp_retrieval.workspace import open_workspace

QUESTIONS = ["Give me an overview of the architecture of this library",
             "How does this library work at a high level?",
             "Walk me through the main components and how they fit together",
             "What is the structure of the codebase?"]
CENTRAL = {"requests": ["sessions.py", "models.py", "adapters.py", "api.py"],
           "flask": ["app.py", "blueprints.py", "ctx.py", "helpers.py"]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench broad")
    ap.add_argument("--root", action="append", required=True, help="NAME=DIR (names: requests, flask)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--work", default="/tmp/mcp-retrieval-broad")
    args = ap.parse_args(argv)
    os.environ.setdefault("MCP_RETRIEVAL_CACHE_DIR", str(Path(args.work) / "cache"))
    print("| root | map | central modules named (mean of 4 questions) | miss | tokens (median) |\n|---|---|---|---|---|")
    for flag in args.root:
        name = flag.split("=", 1)[0]
        ws = open_workspace(resolve_workspace([flag]), embedder=None, persist_sessions=False)
        try:
            ws.reindex()
            engine = next(iter(ws.engines.values()))
            engine.graph(wait=True)
            for on in (False, True):
                engine.config.corpus_map = on
                named, misses, tokens = [], 0, []
                for q in QUESTIONS:
                    r = ws.context(q, budget_tokens=args.budget)
                    named.append(sum(f"/{m}" in r.window for m in CENTRAL[name]) / len(CENTRAL[name]))
                    misses += r.miss is not None
                    tokens.append(budget_tokens(r.window))
                print(f"| {name} | {'on' if on else 'off'} | {statistics.fmean(named):.2f} | {misses}/{len(QUESTIONS)} | "
                      f"{statistics.median(tokens):.0f} |")
        finally:
            ws.close()
    return 0
