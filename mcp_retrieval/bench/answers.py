"""Every answer to a set of questions, written down so two versions of the code can be compared
answer by answer (a refactor that claims "same output" is checked with `diff`, not by eye).

    python -m mcp_retrieval.bench answers --root /path/to/tree --work DIR [--queries FILE] \\
        [--no-dense] [--out answers.jsonl]

Indexes the tree into `DIR` (incrementally: a second run, from other code, reuses the index as
long as the chunker is the same), then asks each question of `packet` (`max_items` 20) and of
`context` (1,000 and 4,000 tokens) and writes one JSON line per question with both answers,
as the tools return them with `debug` off, but for `index` (its timings and counts change run
to run). Questions default to `scale`'s draw from the index (identifiers and docstring
sentences) plus, with `--issues`, the problem statements of an instance file for this
repository (pasted issues exercise the report rules).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mcp_retrieval.bench import read_rows
from mcp_retrieval.bench.scale import default_queries
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine
from mcp_retrieval.indexers.store import PRIORITY_LAST
from mcp_retrieval.workspace import Workspace


def answers(ws: Workspace, query: str) -> dict:
    packet = ws.packet(query, max_items=20).model_dump(mode="json", exclude={"index"})
    contexts = {str(b): ws.context(query, budget_tokens=b).model_dump(mode="json", exclude={"index"})
                for b in (1000, 4000)}
    return {"query": query, "packet": packet, "context": contexts}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench answers")
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True, help="the index and embedding cache (kept between runs)")
    ap.add_argument("--queries", default=None, help="one question per line (default: drawn from the index)")
    ap.add_argument("--issues", default=None, help="an instance file; its problem statements for --repo are asked too")
    ap.add_argument("--repo", default=None, help="owner/name of the tree, to pick --issues' rows")
    ap.add_argument("--n", type=int, default=60, help="questions drawn from the index")
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    work = Path(args.work)
    cfg = Config.resolve(args.root, work / "index", persist_sessions=False,
                         embedder="none" if args.no_dense else "static")
    cfg.cache_dir = work / "cache"
    engine = Engine(cfg)
    try:
        engine.indexer.sync()
        engine.indexer.embed_pending(max_priority=PRIORITY_LAST)
        engine.graph(wait=True)
        queries = (Path(args.queries).read_text().splitlines() if args.queries
                   else default_queries(engine.store.query, args.n))
        if args.issues:
            queries += [r["problem_statement"] for r in read_rows(args.issues) if r.get("repo") == args.repo]
        out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
        ws = Workspace.single(engine)
        for q in (q for q in queries if q.strip()):
            out.write(json.dumps(answers(ws, q), sort_keys=True) + "\n")
        if out is not sys.stdout:
            out.close()
    finally:
        engine.close()
    return 0
