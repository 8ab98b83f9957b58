"""Known-answer questions through a real MCP client over stdio.

    python -m mcp_retrieval.bench questions --root /path/to/requests-v2.31.0 \\
        --questions fixtures/questions/requests-v2.31.0.jsonl [--index-dir DIR]

Starts `mcp-retrieval serve` as a subprocess, calls `reindex`, asks each question with
`context`, and counts how often the first chunk's file is the answer file; the same questions
are asked of a whole-file BM25 baseline. Also checks the budget and the empty-query error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcp_retrieval.bench.filebm25 import FileBM25


async def _ask(root: Path, index_dir: Path, questions: list[dict]) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "mcp_retrieval", "serve", "--root", str(root), "--index-dir",
                                         str(index_dir), "--no-watch"])
    out = {"hits": 0, "rows": [], "over_budget": 0}
    async with Client(params, read_timeout_seconds=3600) as client:
        t0 = time.perf_counter()
        r = await client.call_tool("reindex", {})
        out["reindex"] = {**r.structured_content, "wall_s": round(time.perf_counter() - t0, 1)}
        for q in questions:
            t0 = time.perf_counter()
            r = await client.call_tool("context", {"query": q["question"], "budget_tokens": 3000})
            ms = (time.perf_counter() - t0) * 1000
            chunks = r.structured_content["chunks"]
            first = chunks[0]["path"] if chunks else None
            out["hits"] += first == q["answer"]
            out["over_budget"] += sum(c["tokens"] for c in chunks if c["text"]) > 3000
            out["rows"].append({"question": q["question"], "answer": q["answer"], "first": first, "ms": round(ms)})
        r = await client.call_tool("context", {"query": ""})
        out["empty_query_error"] = r.is_error and "query" in r.content[0].text
        r = await client.call_tool("context", {"query": "Where is the default User-Agent header string built?"})
        out["works_after_error"] = not r.is_error
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench questions")
    ap.add_argument("--root", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--index-dir", default=None)
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    questions = [json.loads(x) for x in Path(args.questions).read_text().splitlines() if x.strip()]
    index_dir = Path(args.index_dir or tempfile.mkdtemp(prefix="mcp-retrieval-q-"))
    result = anyio.run(_ask, root, index_dir, questions)
    baseline = FileBM25(Path(tempfile.mkdtemp(prefix="filebm25-")))
    from indexers.walk import walk

    baseline.sync(root, [e.path for e in walk(root)])
    result["bm25_file_hits"] = sum(baseline.search(q["question"], 1)[:1] == [q["answer"]] for q in questions)
    print(json.dumps(result, indent=1))
    print(f"first-chunk file correct: {result['hits']}/{len(questions)} "
          f"(whole-file BM25: {result['bm25_file_hits']}/{len(questions)})", file=sys.stderr)
    return 0
