"""Freshness benchmarks: save-to-searchable through the tool while serving, and embedding reuse
across a branch switch.

    python -m mcp_retrieval.bench fresh --git-dir /path/to/requests.git --from v2.30.0 --to v2.31.0 \\
        [--edits 10] [--work DIR]

1. Materialises `--from`, indexes it fully, then switches the tree to `--to` and reindexes:
   reports chunks embedded versus reused (the embedding cache is keyed by content hash).
2. Serves the tree over stdio with the watcher on and, `--edits` times, appends a function with
   a fresh name to a file and times how long until `packet` finds it; then rewrites every file of
   that language at once (a burst, at most 2,000) and times until the last one is searchable.
   The probe is written in the tree's first language of `PROBES` (Python, TypeScript, JavaScript,
   Go, Rust).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcp_retrieval.bench.checkout import checkout
from mcp_retrieval.config import Config
from mcp_retrieval.engine import Engine


def branch_switch(git_dir: Path, old: str, new: str, work: Path) -> dict:
    tree = work / "tree"
    checkout(git_dir, old, tree)
    cfg = Config.resolve(tree, work / "index", persist_sessions=False)
    cfg.cache_dir = work / "cache"
    engine = Engine(cfg)
    first = engine.reindex()
    moved = checkout(git_dir, new, tree)
    second = engine.reindex()
    engine.close()
    touched = second.chunks_embedded + second.embeddings_reused
    return {"from": old, "to": new, "files_rewritten": moved["written"], "first_index_s": round(first.duration_ms / 1000, 1),
            "first_chunks": first.chunks_embedded, "switch_chunks_added": second.chunks_added,
            "switch_embedded": second.chunks_embedded, "switch_reused": second.embeddings_reused,
            "reuse_ratio": round(second.embeddings_reused / touched, 3) if touched else None,
            "switch_s": round(second.duration_ms / 1000, 1)}


# a function named NAME returning N, in each language the probes can be written in (the tree's
# first of these that has a file is probed)
PROBES = {".py": "\n\ndef {name}():\n    return {n}\n", ".ts": "\n\nexport function {name}() {{ return {n}; }}\n",
          ".js": "\n\nfunction {name}() {{ return {n}; }}\n", ".go": "\n\nfunc {name}() int {{ return {n} }}\n",
          ".rs": "\n\npub fn {name}() -> u32 {{ {n} }}\n"}


def _probe_suffix(tree: Path) -> str:
    for suffix in PROBES:
        if any(True for _ in tree.rglob(f"*{suffix}")):
            return suffix
    raise SystemExit(f"{tree} holds no file of {', '.join(PROBES)} to probe")


def _probed(data: bytes, suffix: str, name: str, n: int) -> bytes:
    return data + PROBES[suffix].format(name=name, n=n).encode()


async def save_to_searchable(tree: Path, index_dir: Path, edits: int) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "mcp_retrieval", "serve", "--root", str(tree), "--index-dir",
                                         str(index_dir)])
    suffix = _probe_suffix(tree)
    target = next(p for p in sorted(tree.rglob(f"*{suffix}")) if "test" not in str(p.relative_to(tree)))
    original = target.read_bytes()
    times = []
    try:
        async with Client(params, read_timeout_seconds=600) as client:
            await client.call_tool("reindex", {})
            for n in range(edits):
                name = f"freshness_probe_{n}_{int(time.time())}"
                target.write_bytes(_probed(original, suffix, name, n))
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 30:
                    r = await client.call_tool("packet", {"query": name, "max_items": 3})
                    items = r.structured_content["items"]
                    if items and items[0]["symbol"] == name:
                        break
                    await anyio.sleep(0.05)
                times.append(time.perf_counter() - t0)
            target.write_bytes(original)
            burst = await _burst(client, tree, suffix)
    finally:
        target.write_bytes(original)
    return {"file": str(target.relative_to(tree)), "edits": edits, "median_s": round(statistics.median(times), 2),
            "max_s": round(max(times), 2), "all_s": [round(t, 2) for t in times], "burst": burst}


async def _burst(client, tree: Path, suffix: str) -> dict:
    """Rewrite every file of the probed language at once (a checkout, a formatter run), at most
    2,000; time until the last is searchable."""
    files = sorted(tree.rglob(f"*{suffix}"))[:2000]
    originals = {f: f.read_bytes() for f in files}
    stamp = int(time.time())
    try:
        for n, f in enumerate(files):
            f.write_bytes(_probed(originals[f], suffix, f"burst_probe_{stamp}_{n}", n))
        t0 = time.perf_counter()
        last = f"burst_probe_{stamp}_{len(files) - 1}"
        while time.perf_counter() - t0 < 120:
            r = await client.call_tool("packet", {"query": last, "max_items": 3})
            items = r.structured_content["items"]
            if items and items[0]["path"] == str(files[-1].relative_to(tree)):
                break
            await anyio.sleep(0.1)
        return {"files": len(files), "searchable_s": round(time.perf_counter() - t0, 2)}
    finally:
        for f, data in originals.items():
            f.write_bytes(data)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench fresh")
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--from", dest="old", required=True)
    ap.add_argument("--to", dest="new", required=True)
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--work", default=None)
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="mcp-retrieval-fresh-"))
    os.environ.setdefault("MCP_RETRIEVAL_CACHE_DIR", str(work / "cache"))
    report = {"branch_switch": branch_switch(Path(args.git_dir), args.old, args.new, work)}
    report["save_to_searchable"] = anyio.run(save_to_searchable, work / "tree", work / "index", args.edits)
    print(json.dumps(report, indent=1))
    return 0
