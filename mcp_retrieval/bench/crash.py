"""Kill drill: SIGKILL the indexer at several moments on a real repository, then serve.

    python -m mcp_retrieval.bench crash --root /path/to/work/tree [--kills 3,8,15]

Each kill hits `mcp-retrieval index` after the given seconds (walk, lexical or embedding phase).
Then `serve` starts over stdio on the damaged index: reports the time to the first `know`
answer, completes the index with `reindex`, and compares its chunk ids, Tantivy documents and
vector rows with a clean index of the same tree.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine


async def _serve_and_complete(root: Path, index_dir: Path, question: str) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "mcp_retrieval", "serve", "--root", str(root), "--index-dir",
                                         str(index_dir), "--no-watch"])
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=3600) as client:
        first = None
        while time.perf_counter() - t0 < 300:
            r = await client.call_tool("context", {"query": question})
            if r.structured_content and r.structured_content.get("know"):
                first = round(time.perf_counter() - t0, 1)
                break
            await anyio.sleep(1)
        r = await client.call_tool("reindex", {})
    return {"first_know_s": first, "completed_index": r.structured_content["index"]}


def _inventory(root: Path, index_dir: Path, cache: Path) -> dict:
    cfg = Config.resolve(root, index_dir, persist_sessions=False)
    cfg.cache_dir = cache
    engine = Engine(cfg)
    ids = set(engine.store.chunk_ids_for_paths(engine.store.all_paths()))
    out = {"ids": ids, "tantivy_docs": engine.indexer.lexical.num_docs(), "vectors": engine.indexer.vectors.count()
           if engine.indexer.vectors else None}
    engine.close()
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench crash")
    ap.add_argument("--root", required=True)
    ap.add_argument("--kills", default="3,8,15")
    ap.add_argument("--question", default="where is the main configuration handled")
    ap.add_argument("--work", default=None)
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    work = Path(args.work or tempfile.mkdtemp(prefix="mcp-retrieval-crash-"))
    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(work / "cache")}
    os.environ["MCP_RETRIEVAL_CACHE_DIR"] = str(work / "cache")
    kills = []
    for delay in [float(x) for x in args.kills.split(",")]:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_retrieval", "index", "--root", str(root), "--index-dir",
                                 str(work / "index")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        alive = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills.append({"after_s": delay, "killed_while_running": alive})
    report: dict = {"kills": kills}
    report.update(anyio.run(_serve_and_complete, root, work / "index", args.question))
    damaged = _inventory(root, work / "index", work / "cache")
    cfg = Config.resolve(root, work / "clean", persist_sessions=False)
    cfg.cache_dir = work / "cache"
    clean_engine = Engine(cfg)
    clean_engine.reindex()
    clean_engine.close()
    clean = _inventory(root, work / "clean", work / "cache")
    report["same_chunks_as_clean_index"] = damaged["ids"] == clean["ids"]
    report["tantivy_docs"] = {"after_kills": damaged["tantivy_docs"], "clean": clean["tantivy_docs"]}
    report["vector_rows"] = {"after_kills": damaged["vectors"], "clean": clean["vectors"]}
    print(json.dumps(report, indent=1))
    return 0
