"""Scale checked from outside: `mcp-retrieval serve` over stdio on a cold index, driven only
through the MCP tools and the `index://status` resource, its memory read from the process.

    python -m mcp_retrieval.bench served --root /path/to/work/tree [--work DIR] [--queries FILE]

Reports (JSON): seconds until the first `know` answer (lexical first; possibly from the first
batches of files), until the lexical index is complete (`state` leaves `indexing`), until every chunk has a
vector (`vectors_pending` 0), the server's peak RSS while indexing, its RSS when idle after the
backlog and its peak while answering, and `packet`/`context` p50/p95 as the client sees them
(JSON-RPC over a pipe included), and the time for one edited file to become searchable through
`reindex`. Index and embedding cache start empty (cold) in `--work`. Then the server is started
again on that index three times (`restart`): the handshake's and the first `packet`'s seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import psutil

from mcp_retrieval.bench.scale import default_queries, percentiles


class ProcessRSS:
    """Samples the resident memory of the server (found as our child running `serve`) every 100 ms."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _server(self) -> psutil.Process | None:
        for child in psutil.Process().children(recursive=True):
            try:
                if "serve" in child.cmdline():
                    return child
            except psutil.Error:
                continue
        return None

    def _run(self) -> None:
        proc = None
        while not self._stop.is_set():
            try:
                proc = proc or self._server()
                if proc is not None:
                    self.samples.append((time.monotonic(), proc.memory_info().rss / 2**20))
            except psutil.Error:
                proc = None
            time.sleep(0.1)

    def peak(self, since: float = 0.0, until: float = float("inf")) -> float:
        return round(max((m for t, m in self.samples if since <= t <= until), default=0.0), 1)

    def start(self) -> "ProcessRSS":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _server_params(root: Path, work: Path):
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "MCP_RETRIEVAL_CACHE_DIR": str(work / "cache")}
    return StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "mcp_retrieval", "serve", "--root", str(root), "--index-dir", str(work / "idx"), "--no-watch"])


async def restart(root: Path, work: Path, probe: str, rounds: int = 3) -> dict:
    """The server started again on its complete index, as a host starts it each session: seconds
    until the handshake is answered, and until the first `packet` (sent at once) comes back; then,
    started again, milliseconds of the first `packet` sent once `index://status` says ready."""
    from mcp import Client

    connected, first, after_ready = [], [], []
    for _ in range(rounds):
        t0 = time.monotonic()
        async with Client(_server_params(root, work), read_timeout_seconds=120) as client:
            connected.append(time.monotonic() - t0)
            await client.call_tool("packet", {"query": probe})
            first.append(time.monotonic() - t0)
    for _ in range(rounds):
        async with Client(_server_params(root, work), read_timeout_seconds=120) as client:
            while json.loads((await client.read_resource("index://status")).contents[0].text)["state"] != "ready":
                await anyio.sleep(0.1)
            t = time.perf_counter()
            await client.call_tool("packet", {"query": probe})
            after_ready.append((time.perf_counter() - t) * 1000)
    return {"connected_s": [round(t, 2) for t in connected], "first_packet_s": [round(t, 2) for t in first],
            "first_packet_after_ready_ms": [round(t, 1) for t in after_ready]}


async def run(root: Path, work: Path, queries: list[str] | None, probe: str, timeout_s: float) -> dict:
    from mcp import Client

    params = _server_params(root, work)
    rss = ProcessRSS().start()
    report: dict = {"root": str(root)}
    t0 = time.monotonic()
    async with Client(params, read_timeout_seconds=120) as client:
        report["connected_s"] = round(time.monotonic() - t0, 1)
        while time.monotonic() - t0 < timeout_s:  # first answer: lexical, while vectors are pending
            r = await client.call_tool("packet", {"query": probe})
            if not r.is_error and r.structured_content.get("know"):
                report["first_know_s"] = round(time.monotonic() - t0, 1)
                report["state_at_first_know"] = r.structured_content["index"]
                break
            await anyio.sleep(0.5)
        while time.monotonic() - t0 < timeout_s:
            status = json.loads((await client.read_resource("index://status")).contents[0].text)
            if status["state"] != "indexing" and "lexical_complete_s" not in report:
                report["lexical_complete_s"] = round(time.monotonic() - t0, 1)
            if status["chunks"] and status["vectors_pending"] == 0 and status["state"] == "ready":
                break
            await anyio.sleep(1)
        done = time.monotonic()
        report["all_vectors_s"] = round(done - t0, 1)
        report["index"] = status
        report["peak_rss_indexing_mb"] = rss.peak(until=done)
        await anyio.sleep(5)
        report["idle_rss_mb"] = round(rss.samples[-1][1], 1) if rss.samples else None
        if queries is None:
            db = sqlite3.connect(str(work / "idx" / "index.db"))
            queries = default_queries(lambda sql: db.execute(sql).fetchall())
            db.close()
        answering = time.monotonic()
        for tool, extra in (("packet", {}), ("context", {"budget_tokens": 6000})):
            times = []
            for q in queries:
                t = time.perf_counter()
                r = await client.call_tool(tool, {"query": q, **extra})
                times.append((time.perf_counter() - t) * 1000)
                if r.is_error:
                    report.setdefault("errors", []).append(r.content[0].text[:200])
            report[f"{tool}_ms"] = percentiles(times)
        report["peak_rss_answering_mb"] = rss.peak(since=answering)
        report["one_file_update"] = await _one_file_update(client, root)
    rss.stop()
    report["queries"] = len(queries)
    report["restart"] = await restart(root, work, probe)
    return report


async def _one_file_update(client, root: Path) -> dict:
    """Append a new function to a large Python file (the largest under 200 KB; files over 1 MB
    are not indexed), `reindex` just that path, and time until `packet` finds the new name (then
    put the file back)."""
    target = max(root.rglob("*.py"), key=lambda p: p.stat().st_size
                 if ".git" not in p.parts and p.stat().st_size < 200_000 else 0)
    rel = target.relative_to(root).as_posix()
    original = target.read_bytes()
    name = f"mcp_retrieval_probe_{int(time.time())}"
    try:
        target.write_bytes(original + f"\n\ndef {name}():\n    return 42\n".encode())
        t0 = time.perf_counter()
        await client.call_tool("reindex", {"paths": [rel]})
        reindexed = (time.perf_counter() - t0) * 1000
        r = await client.call_tool("packet", {"query": name})
        found = bool(r.structured_content["items"]) and r.structured_content["items"][0]["path"] == rel
        searchable = (time.perf_counter() - t0) * 1000
    finally:
        target.write_bytes(original)
        await client.call_tool("reindex", {"paths": [rel]})
    return {"file": rel, "bytes": len(original), "reindex_ms": round(reindexed), "searchable_ms": round(searchable),
            "found": found}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_retrieval.bench served")
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", default=None, help="folder for the cold index and cache (default: temporary)")
    ap.add_argument("--queries", default=None, help="one question per line (default: drawn from the index)")
    ap.add_argument("--probe", default="where is the main entry point defined",
                    help="question polled until the first `know`")
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="mcp-retrieval-served-"))
    queries = Path(args.queries).read_text().splitlines() if args.queries else None
    report = anyio.run(run, Path(args.root).resolve(), work, queries, args.probe, args.timeout)
    print(json.dumps(report, indent=1))
    return 0
